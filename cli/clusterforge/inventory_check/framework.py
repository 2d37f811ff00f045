"""The training frameworks of every host's BOM: cfcore.framework_compat's rules (PyTorch against the
CUDA major, torch_npu against CANN and PyTorch, data/framework_compat.yml) as inventory problems,
located where each variable was written, like the BOM's (bom.py)."""

from __future__ import annotations

from cfcore.framework_compat import compat_findings, load_compat

from clusterforge.inventory_check.context import Context
from clusterforge.inventory_check.problems import Problem


def check_framework(ctx: Context) -> list[Problem]:
    compat = load_compat()
    problems: list[Problem] = []
    for view in ctx.views:
        for found in compat_findings(view.value, ctx.sku(view), compat, ctx.rules):
            problems.append(view.finding_problem(found))
    return problems
