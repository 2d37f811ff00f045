"""Filter of playbooks/quarantine.yml: the checked request, before any command runs.

    {{ quarantine_nodes | clusterforge.cluster.cf_quarantine_nodes('slurm') }}  -> [{name, reason}, ...]

`quarantine_nodes` is a list of `{name, reason, scheduler}`. Every entry of the
whole list is checked at each use, whatever the scheduler asked for, so the
first play that runs refuses a bad request before any controller runs a
command. The rules live in cfcore/quarantine_rules.py, shared with the CLI.
"""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.quarantine_rules import (
    SCHEDULERS,
    entry_problem,
)


def cf_quarantine_nodes(nodes: Any, scheduler: str) -> list[dict[str, str]]:
    """The `{name, reason}` entries for `scheduler`, once every entry of `nodes` passed the rules."""
    if scheduler not in SCHEDULERS:
        raise AnsibleFilterError(f"cf_quarantine_nodes: scheduler must be one of {', '.join(SCHEDULERS)}")
    if not isinstance(nodes, list):
        raise AnsibleFilterError(
            f"quarantine_nodes must be a list of {{name, reason, scheduler}}, got {type(nodes).__name__}"
        )
    problems = []
    for index, entry in enumerate(nodes):
        problem = entry_problem(entry)
        if problem:
            problems.append(f"quarantine_nodes[{index}]: {problem}")
    if problems:
        raise AnsibleFilterError(
            "quarantine refused, nothing was run: "
            + "; ".join(problems)
            + ". Pass node names and reasons only (clusterforge validate --quarantine builds them)."
        )
    return [{"name": e["name"], "reason": e["reason"]} for e in nodes if e["scheduler"] == scheduler]


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"cf_quarantine_nodes": cf_quarantine_nodes}
