"""Per-host checks: required variables, host names, management addresses, racks."""

from __future__ import annotations

import ipaddress
import re
from collections import defaultdict
from dataclasses import replace

from cfcore.topology import NAME_WORDS, rack_problem, suggest

from clusterforge.ansible_env import checkout
from clusterforge.inventory_check.context import UNRESOLVED, Context, HostView, kind
from clusterforge.inventory_check.origin import origin_of
from clusterforge.inventory_check.problems import Problem, display_path
from clusterforge.inventory_check.requirements import (
    HOST_REQUIRED,
    VALIDATE_GROUP_REQUIRED,
    VENDOR_REQUIRED,
    home_of,
    role_requirements,
)
from clusterforge.inventory_check.values import ciphertext_of

# RFC 1123 labels: Kubernetes node names and Slurm NodeName need them lowercase.
_LABEL = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?", re.ASCII)  # matched in full: no trailing newline
PORT_VARIABLES = ("ansible_port", "ansible_ssh_port")


def is_managed(view: HostView) -> bool:
    """Hosts Ansible reaches over SSH; a `local` connection entry is the controller itself."""
    return view.value("ansible_connection") != "local"


def check_hosts(ctx: Context) -> list[Problem]:
    problems: list[Problem] = []
    for view in ctx.views:
        if not is_managed(view):
            continue
        problems += _required(ctx, view)
        problems += _hostname(view)
        problems += _management_address(view)
        problems += _ports(view)
        problems += _rack(view)
    problems += _duplicate_names(ctx)
    problems += _redefinitions(ctx)
    return problems


def valid_port(value: object) -> int | None:
    """The SSH port as an int when `value` is one (1-65535; an ASCII-digit string counts), else None."""
    if isinstance(value, str) and re.fullmatch(r"[0-9]{1,5}", value):
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 65535:
        return value
    return None


def _ports(view: HostView) -> list[Problem]:
    problems = []
    for variable in PORT_VARIABLES:
        value = view.value(variable)
        if value is None or value is UNRESOLVED or valid_port(value) is not None:
            continue
        problems.append(
            view.problem(
                "host.port",
                variable,
                f"{variable} must be a TCP port, an integer 1-65535, got {kind(value)} {value!r}",
                f"set {variable} to the node's SSH port (22 unless sshd listens elsewhere), or remove it",
                of_value=True,
            )
        )
    return problems


def _redefinitions(ctx: Context) -> list[Problem]:
    """A host whose entries (two groups, two files) set a variable differently: Ansible keeps the last."""
    problems = []
    views = {view.name: view for view in ctx.views}
    for found in ctx.inventory.redefinitions:
        view = views.get(found.host)
        if view is None:
            continue
        first_at = _place(found.first)
        problem = view.problem(
            "host.redefined",
            found.variable,
            f"host {found.host} is defined more than once with different values of {found.variable}: "
            f"{_shown(found.first)}{first_at} and {_shown(found.second)}; Ansible silently keeps the last",
            f"define {found.variable} of {found.host} once (or give both entries the same value)",
            value=found.second,
        )
        problems.append(problem)
    return problems


def _place(value: object) -> str:
    path, line = origin_of(value)
    return f" ({display_path(path)}{f':{line}' if line else ''})" if path else ""


def _shown(value: object) -> str:
    if ciphertext_of(value) is not None:
        return "a vaulted value"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def required_variables(ctx: Context, view: HostView) -> dict[str, str]:
    """Variable -> why this host needs it (the text after "is not set")."""
    needed = dict.fromkeys(HOST_REQUIRED, "")
    for group in sorted(view.groups):
        for variable in VALIDATE_GROUP_REQUIRED.get(group, ()):
            needed.setdefault(
                variable, f" (needed by hosts of group {group}: playbooks/validate.yml reads it)"
            )
    sku = ctx.sku(view)
    vendor = (sku.get("accelerator") or {}).get("vendor") if sku else None
    for variable in VENDOR_REQUIRED.get(vendor, ()):
        needed.setdefault(variable, f" (needed by hosts with {vendor} accelerators)")
    for requirement in role_requirements(checkout()):
        if view.name in ctx.hosts_matching(requirement.hosts):
            needed.setdefault(requirement.variable, requirement.because)
    return needed


def _required(ctx: Context, view: HostView) -> list[Problem]:
    problems = []
    for variable, because in required_variables(ctx, view).items():
        if view.is_set(variable):
            continue
        per_host = variable in HOST_REQUIRED or variable == "hccn_devices"
        state = "is empty" if variable in view.entry.vars else "is not set"
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


def _hostname(view: HostView) -> list[Problem]:
    name = view.name
    labels = name.split(".")
    if len(name) <= 253 and all(_LABEL.fullmatch(label) for label in labels):
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
    """The rack is a Kubernetes label value, a Slurm and Prometheus name as written: the topology's
    name rule (cfcore.topology.rack_problem), so no two racks are merged by rewriting them."""
    value = view.value("rack")
    if value is None or value is UNRESOLVED:
        return []
    wrong = rack_problem(value)
    if not wrong:
        return []
    return [
        view.problem(
            "host.rack",
            "rack",
            f"rack {wrong}",
            f"set rack to the rack's name as in the DC inventory, e.g. {suggest(value, 'r1')!r} "
            f"({NAME_WORDS}; the same on every host of that rack)",
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
