"""Filters of playbooks/quarantine.yml and role scheduler_drain: checked requests and their commands.

    {{ quarantine_nodes | clusterforge.cluster.cf_quarantine_nodes('slurm') }}  -> [{name, reason}, ...]
    {{ 'gpu-01' | clusterforge.cluster.cf_drain_argv('kubernetes', 'taint', 'gpu.xid') }}  -> argv
    {{ nodes | clusterforge.cluster.cf_drain_plan('drain', 600) }}  -> [{name, scheduler, reason, argv}]
    {{ scontrol_show.stdout | clusterforge.cluster.cf_slurm_node_state }}  -> {state, drain, drained, ...}

The argument vectors come from cfcore/scheduler_drain.py (the one drain
interface, shared with the node's health check and the CLI).

`quarantine_nodes` is a list of `{name, reason, scheduler}`. Every entry of the
whole list is checked at each use, whatever the scheduler asked for, so the
first play that runs refuses a bad request before any controller runs a
command. The rules live in cfcore/quarantine_rules.py, shared with the CLI.
"""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore import scheduler_drain
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


def cf_drain_argv(
    name: Any, scheduler: str, kind: str, reason: Any = None, timeout_s: Any = 600
) -> list[str]:
    """One command of the drain interface (scheduler_drain.KINDS), name and reason checked first."""
    try:
        return scheduler_drain.argv(scheduler, kind, name, reason, int(timeout_s))
    except (TypeError, ValueError) as err:
        raise AnsibleFilterError(f"cf_drain_argv: {err}") from None


def cf_drain_plan(nodes: Any, action: str, timeout_s: Any = 600) -> list[dict[str, Any]]:
    """Role scheduler_drain's commands, one {name, scheduler, reason, argv} per entry; all checked first."""
    try:
        return scheduler_drain.plan(nodes, action, int(timeout_s))
    except (TypeError, ValueError) as err:
        raise AnsibleFilterError(f"nothing was run: {err}") from None


def cf_slurm_node_state(text: Any) -> dict[str, Any]:
    """`scontrol show node -o NAME` parsed (scheduler_drain.parse_slurm_node)."""
    try:
        return scheduler_drain.parse_slurm_node(text)
    except ValueError as err:
        raise AnsibleFilterError(f"cf_slurm_node_state: {err}") from None


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "cf_quarantine_nodes": cf_quarantine_nodes,
            "cf_drain_argv": cf_drain_argv,
            "cf_drain_plan": cf_drain_plan,
            "cf_slurm_node_state": cf_slurm_node_state,
        }
