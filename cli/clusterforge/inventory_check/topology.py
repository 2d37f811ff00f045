"""The fabric topology (`rack`, `leaf`, `spine`, `nvlink_domain` per host; `topology_*` in
group_vars/all): cfcore.topology's rules (the one implementation, shared with the Slurm and
Volcano roles' filters) as inventory problems.

A finding about one host is located where its offending value was written; a finding about a
leaf or an NVLink domain names every host on it; a finding about a fleet-wide setting is located
at the file that sets it. The fleet-wide settings are read from the first host's view (keep them
in group_vars/all).
"""

from __future__ import annotations

from typing import Any

from cfcore import topology

from clusterforge.inventory_check.context import UNRESOLVED, Context, HostView
from clusterforge.inventory_check.problems import Problem

_SETTINGS = (
    "topology_leaf_downlinks",
    "topology_leaf_ports",
    "topology_spanning_domains",
    "topology_root_name",
)


def _values(view: HostView, names: tuple[str, ...]) -> dict[str, Any] | None:
    """The variables as checks read them; None when one cannot be resolved here (reported elsewhere)."""
    values = {}
    for name in names:
        value = view.value(name)
        if value is UNRESOLVED:
            return None
        values[name] = value
    return values


def check_topology(ctx: Context) -> list[Problem]:
    views = sorted(ctx.views, key=lambda v: v.name)
    if not views:
        return []
    entries, by_host = [], {}
    for view in views:
        values = _values(view, ("rack", *topology.HOST_VARIABLES, "topology_ports_per_host"))
        if values is None:
            continue
        entries.append(topology.host_entry(view.name, values, view.groups))
        by_host[view.name] = view
    first = views[0]
    settings_values = _values(first, _SETTINGS)
    if settings_values is None:
        return []
    findings = topology.check(entries, topology.settings_of(settings_values))
    return [_problem(found, by_host, first) for found in findings]


def _problem(found: dict[str, Any], by_host: dict[str, HostView], first: HostView) -> Problem:
    host = found.get("host")
    if host in by_host:
        return by_host[host].finding_problem(found, of_value=False)
    if found.get("hosts"):  # a leaf or an NVLink domain: every host on it, no single place
        return Problem(
            rule=found["rule"],
            message=found["message"],
            fix=found["fix"],
            severity=found["severity"],
            hosts=tuple(found["hosts"]),
            variable=found["variable"],
        )
    # A fleet-wide setting: at the file that sets it, whichever host reads it.
    return first.finding_problem(found, of_value=True)
