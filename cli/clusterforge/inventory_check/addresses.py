"""IP addresses and networks: well-formed, inside their network, never used twice.

Naming convention of the inventory (docs/design.md, group_vars/all/fabric.yml):
`*_address`, `*_vip`, `*_gateway` hold one IPv4 address, `*_network` and
`*_cidr` one IPv4 network; `X_address` must lie inside `X_network` when both
are set (fabric_storage_address in fabric_storage_network).
"""

from __future__ import annotations

import contextlib
import ipaddress
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from clusterforge.inventory_check.context import UNRESOLVED, Context, HostView
from clusterforge.inventory_check.hosts import valid_port
from clusterforge.inventory_check.problems import Problem

_ADDRESS_SUFFIXES = ("_address", "_vip", "_gateway")
_NETWORK_SUFFIXES = ("_network", "_cidr")


@dataclass(frozen=True)
class AddressUse:
    """One IPv4 address assigned to a host: where it is configured."""

    address: str
    view: HostView
    variable: str
    value: Any  # the raw value, for its origin
    port: int | None = None  # ansible_host only: several lab nodes share 127.0.0.1 with distinct ports


def check_addresses(ctx: Context, npu_uses: list[AddressUse]) -> list[Problem]:
    problems: list[Problem] = []
    uses: list[AddressUse] = list(npu_uses)
    for view in ctx.views:
        own = view.own_vars
        for variable in sorted(view.entry.vars):
            if variable.endswith(_ADDRESS_SUFFIXES):
                problem, address = _address(view, variable)
                problems += problem
                if address and variable in own:
                    uses.append(AddressUse(address, view, variable, view.raw(variable)))
            elif variable.endswith(_NETWORK_SUFFIXES):
                problems += _network(view, variable)
        problems += _inside_networks(view)
        host_ip = view.value("ansible_host")
        if isinstance(host_ip, str) and _is_ipv4(host_ip):
            port = view.value("ansible_port", view.value("ansible_ssh_port", 22))
            uses.append(AddressUse(host_ip, view, "ansible_host", view.raw("ansible_host"), valid_port(port)))
    problems += duplicate_addresses(uses)
    return problems


def _address(view: HostView, variable: str) -> tuple[list[Problem], str | None]:
    value = view.value(variable)
    if value is None or value is UNRESOLVED or value == "":
        return [], None
    if isinstance(value, str) and _is_ipv4(value):
        return [], value
    return [
        view.problem(
            "ip.malformed",
            variable,
            f"{variable} {value!r} is not an IPv4 address",
            f"write one dotted IPv4 address, e.g. {variable}: 10.20.1.11 "
            f"(variables named *{_suffix(variable)} hold one address)",
            of_value=True,
        )
    ], None


def _network(view: HostView, variable: str) -> list[Problem]:
    value = view.value(variable)
    if value is None or value is UNRESOLVED or value == "":
        return []
    try:
        ipaddress.IPv4Network(str(value), strict=True)
        return []
    except ValueError as err:
        hint = ""
        with contextlib.suppress(ValueError):
            hint = f" (did you mean {ipaddress.IPv4Network(str(value), strict=False)}?)"
        return [
            view.problem(
                "ip.network",
                variable,
                f"{variable} {value!r} is not an IPv4 network in CIDR form: {err}{hint}",
                f"write the network address with its prefix length, e.g. {variable}: 10.20.0.0/16",
                of_value=True,
            )
        ]


def _inside_networks(view: HostView) -> list[Problem]:
    problems = []
    for variable in view.entry.vars:
        if not variable.endswith("_address"):
            continue
        network_var = variable[: -len("_address")] + "_network"
        address, network = view.value(variable), view.value(network_var)
        if not (isinstance(address, str) and _is_ipv4(address)):
            continue
        net = _as_network(network)
        if net is not None and ipaddress.IPv4Address(address) not in net:
            problems.append(
                view.problem(
                    "ip.outside_network",
                    variable,
                    f"{variable} {address} is outside {network_var} {net}",
                    f"use an address of {net} (or correct {network_var})",
                )
            )
    return problems


def duplicate_addresses(uses: list[AddressUse]) -> list[Problem]:
    """An address configured on two hosts, or twice on one host's NPU NICs, breaks both."""
    by_address: dict[str, list[AddressUse]] = defaultdict(list)
    for use in uses:
        by_address[use.address].append(use)
    problems = []
    for address, same in by_address.items():
        for use in same:
            clashes = [other for other in same if other is not use and _clash(use, other)]
            if not clashes:
                continue
            others = "; ".join(f"{o.view.name} {o.variable}" for o in clashes)
            problems.append(
                use.view.problem(
                    "ip.duplicate",
                    use.variable,
                    f"address {address} is also assigned to {others}",
                    "give every host and every NIC its own address",
                    value=use.value,
                )
            )
    return problems


def _clash(one: AddressUse, other: AddressUse) -> bool:
    if one.view is other.view:
        # One host may reuse an address across roles (a single-NIC node) but not across NPU NICs.
        return one.variable.startswith("hccn_devices") and other.variable.startswith("hccn_devices")
    if one.variable == other.variable == "ansible_host":
        # Distinct valid ports: one address forwarding to several nodes (the lab). An invalid or
        # templated port hides nothing: the hosts may well be the same node.
        return one.port is None or other.port is None or one.port == other.port
    return True


def _is_ipv4(value: str) -> bool:
    try:
        ipaddress.IPv4Address(value)
    except ValueError:
        return False
    return True


def _as_network(value: Any) -> ipaddress.IPv4Network | None:
    if not isinstance(value, str):
        return None
    try:
        return ipaddress.IPv4Network(value, strict=True)
    except ValueError:
        return None


def _suffix(variable: str) -> str:
    return next(s for s in _ADDRESS_SUFFIXES if variable.endswith(s))
