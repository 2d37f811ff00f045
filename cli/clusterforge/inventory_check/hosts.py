"""Per-host checks: required variables, host names, management addresses, racks."""

from __future__ import annotations

import ipaddress
import re
from collections import defaultdict
from dataclasses import replace

from clusterforge.inventory_check.context import UNRESOLVED, Context, HostView, kind
from clusterforge.inventory_check.problems import Problem
from clusterforge.inventory_check.requirements import GROUP_REQUIRED, HOST_REQUIRED, VENDOR_REQUIRED, home_of

# RFC 1123 labels: Kubernetes node names and Slurm NodeName need them lowercase.
_LABEL = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")


def is_managed(view: HostView) -> bool:
    """Hosts Ansible reaches over SSH; a `local` connection entry is the controller itself."""
    return view.raw("ansible_connection") != "local"


def check_hosts(ctx: Context) -> list[Problem]:
    problems: list[Problem] = []
    for view in ctx.views:
        if not is_managed(view):
            continue
        problems += _required(ctx, view)
        problems += _hostname(view)
        problems += _management_address(view)
        problems += _rack(view)
    problems += _duplicate_names(ctx)
    return problems


def required_variables(ctx: Context, view: HostView) -> list[str]:
    needed = list(HOST_REQUIRED)
    for group in sorted(view.groups):
        needed += GROUP_REQUIRED.get(group, ())
    sku = ctx.sku(view)
    vendor = (sku.get("accelerator") or {}).get("vendor") if sku else None
    needed += VENDOR_REQUIRED.get(vendor, ())
    return list(dict.fromkeys(needed))


def _required(ctx: Context, view: HostView) -> list[Problem]:
    problems = []
    for variable in required_variables(ctx, view):
        if view.is_set(variable):
            continue
        per_host = variable in HOST_REQUIRED or variable == "hccn_devices"
        state = "is empty" if variable in view.entry.vars else "is not set"
        because = _because(ctx, view, variable)
        problem = view.problem(
            "vars.required",
            variable,
            f"required variable {variable} {state}{because}",
            f"set {variable} in {home_of(variable, view.name)}",
            at_host=True,
        )
        if not per_host:
            # Group-wide variables: one problem listing every host, not one per host entry.
            problem = replace(problem, file=None, line=None)
        problems.append(problem)
    return problems


def _because(ctx: Context, view: HostView, variable: str) -> str:
    if variable in HOST_REQUIRED:
        return ""
    groups = [g for g in sorted(view.groups) if variable in GROUP_REQUIRED.get(g, ())]
    if groups:
        return f" (needed by hosts of group {groups[0]})"
    sku = ctx.sku(view) or {}
    vendor = (sku.get("accelerator") or {}).get("vendor")
    return f" (needed by hosts with {vendor} accelerators)" if vendor else ""


def _hostname(view: HostView) -> list[Problem]:
    name = view.name
    labels = name.split(".")
    if len(name) <= 253 and all(_LABEL.match(label) for label in labels):
        return []
    suggestion = re.sub(r"[^a-z0-9.-]+", "-", name.lower()).strip("-.")
    return [
        view.problem(
            "host.name",
            None,
            f"host name {name!r} is not a valid lowercase DNS name (RFC 1123: a-z, 0-9 and '-', "
            "labels of at most 63 characters); Kubernetes and Slurm reject it as a node name",
            f"rename the host, e.g. {suggestion!r}, and keep its address in ansible_host",
            at_host=True,
        )
    ]


def _management_address(view: HostView) -> list[Problem]:
    value = view.value("ansible_host")
    if value is None or value is UNRESOLVED:
        return []
    try:
        ipaddress.IPv4Address(str(value))
    except ValueError:
        return [
            view.problem(
                "ip.malformed",
                "ansible_host",
                f"ansible_host {value!r} is not an IPv4 address",
                "set ansible_host to the node's management IPv4 address, e.g. 10.10.1.11 "
                "(no leading zeros, no port: use ansible_port)",
            )
        ]
    return []


def _rack(view: HostView) -> list[Problem]:
    value = view.value("rack")
    if (
        value is None
        or value is UNRESOLVED
        or (isinstance(value, (str, int)) and not isinstance(value, bool))
    ):
        return []
    return [
        view.problem(
            "host.rack",
            "rack",
            f"rack must be a name or number, got {kind(value)} {value!r}",
            "set rack to the rack's name as in the DC inventory, e.g. r1",
        )
    ]


def _duplicate_names(ctx: Context) -> list[Problem]:
    """The same node under two names: differing only in case, or short name and FQDN."""
    by_key: dict[str, list[HostView]] = defaultdict(list)
    for view in ctx.views:
        by_key[view.name.lower().split(".")[0]].append(view)
    problems = []
    for views in by_key.values():
        if len(views) < 2:
            continue
        names = sorted(v.name for v in views)
        for view in views:
            others = ", ".join(n for n in names if n != view.name)
            problems.append(
                view.problem(
                    "host.duplicate_name",
                    None,
                    f"host {view.name!r} names the same node as {others} (case or domain differs): "
                    "Ansible treats them as different hosts and configures the node twice",
                    "keep one name per node (lowercase short names are the convention)",
                    at_host=True,
                )
            )
    return problems
