"""The version bill of materials of every host: cfcore.bom's rules (the one
implementation, shared with the roles' pre-check) as inventory problems.

Checked per host on its effective variables, so a group or host override of
the BOM is checked too; each problem is located where the variable was written.
"""

from __future__ import annotations

from cfcore.bom import bom_findings

from clusterforge.inventory_check.context import Context
from clusterforge.inventory_check.problems import Problem


def check_bom(ctx: Context) -> list[Problem]:
    problems: list[Problem] = []
    for view in ctx.views:
        for found in bom_findings(view.value, view.value("node_sku"), ctx.sku(view), ctx.rules):
            problems.append(view.finding_problem(found))
    return problems
