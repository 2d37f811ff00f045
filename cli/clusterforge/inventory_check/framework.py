"""The training frameworks of every host's BOM: cfcore.framework_compat's rules (PyTorch against the
CUDA major, torch_npu against CANN and PyTorch, data/framework_compat.yml) as inventory problems,
located where each variable was written, like the BOM's (bom.py); and the `framework_*` settings of
`validate --level framework` (cfcore.framework_run.settings_findings: framework_env, the backend,
world size, time limits, CANN version files), each reported once where its value is written."""

from __future__ import annotations

from cfcore.framework_compat import compat_findings, load_compat
from cfcore.framework_run import SETTINGS, settings_findings

from clusterforge.inventory_check.context import UNRESOLVED, Context
from clusterforge.inventory_check.problems import Problem

SETTING_VARIABLES = (
    "framework_env",
    "framework_backend",
    *(variable for variable, *_rest in SETTINGS),
    "framework_cann_version_files",
)


def check_framework(ctx: Context) -> list[Problem]:
    compat = load_compat()
    problems: list[Problem] = []
    for view in ctx.views:
        for found in compat_findings(view.value, ctx.sku(view), compat, ctx.rules):
            problems.append(view.finding_problem(found))
        values = {}
        for variable in SETTING_VARIABLES:
            value = view.value(variable)
            if value is not None and value is not UNRESOLVED:  # unresolved: reported by the view
                values[variable] = value
        # A group's value is one problem at its file (Report.finalize merges the hosts' copies).
        problems += [view.finding_problem(found) for found in settings_findings(values)]
    return problems
