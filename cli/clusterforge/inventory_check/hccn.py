"""The Ascend NPU NIC plan (`hccn_devices`): complete, well-formed, and wired by the model's subnet rule.

Each Ascend NPU (A3: each die) has its own RoCE port, configured with
hccn_tool / /etc/hccn.conf: address, netmask, gateway and the netdetect
address it pings. Collective communication (HCCL) only works when the ports
are addressed the way the server's topology expects:
  single-subnet      Atlas 800T A2: all 8 device IPs in one subnet
  four-subnet-pairs  Atlas 800 9000 (910): devices i and i+4 share a subnet, 4 subnets in all
  die-pairs-split    Atlas 800T A3: the two dies of NPU k (devices 2k, 2k+1) on different subnets
"""

from __future__ import annotations

import ipaddress
from typing import Any

from clusterforge.inventory_check.addresses import AddressUse
from clusterforge.inventory_check.context import UNRESOLVED, Context, HostView, kind
from clusterforge.inventory_check.problems import WARNING, Problem

ENTRY_KEYS = ("id", "address", "netmask", "gateway", "netdetect")
_PLAN_FIX = "one entry per NPU NIC: {id, address, netmask, gateway, netdetect} (docs/design.md)"


def check_hccn(ctx: Context) -> tuple[list[Problem], list[AddressUse]]:
    """Problems of every Ascend host's plan, and the NIC addresses (for the fleet-wide duplicate check)."""
    problems: list[Problem] = []
    uses: list[AddressUse] = []
    for view in ctx.views:
        sku = ctx.sku(view)
        nics = (sku or {}).get("npu_nics")
        devices = view.value("hccn_devices")
        if not nics or devices is None or devices is UNRESOLVED:
            continue
        plan_problems, interfaces = _plan(view, devices, nics["count"])
        problems += plan_problems
        planned_once = not any(p.rule == "hccn.duplicate_id" for p in plan_problems)
        if planned_once and set(interfaces) == set(range(nics["count"])):
            problems += _subnet_rule(view, interfaces, nics["subnet_rule"], view.value("node_sku"))
        problems += _inside_npu_network(view, interfaces)
        uses += [
            AddressUse(str(iface.ip), view, f"hccn_devices[{index}].address", entry.get("address"))
            for index, (entry, iface) in interfaces.items()
        ]
    return problems, uses


def _plan(
    view: HostView, devices: Any, count: int
) -> tuple[list[Problem], dict[int, tuple[dict[str, Any], ipaddress.IPv4Interface]]]:
    """Shape of the plan; returns device id -> (entry, interface) of entries with valid address/netmask."""
    if not isinstance(devices, list):
        return [
            view.problem(
                "hccn.shape",
                "hccn_devices",
                f"hccn_devices must be a list, got {kind(devices)}",
                _PLAN_FIX,
            )
        ], {}
    problems = []
    interfaces: dict[int, tuple[dict[str, Any], ipaddress.IPv4Interface]] = {}
    seen_ids: dict[int, int] = {}
    for index, entry in enumerate(devices):
        where = f"hccn_devices[{index}]"
        if not isinstance(entry, dict):
            problems.append(
                view.problem("hccn.shape", where, f"{where} must be a mapping", _PLAN_FIX, value=entry)
            )
            continue
        entry_problems = _entry(view, where, entry, count)
        problems += entry_problems
        device_id = entry.get("id")
        if _is_int(device_id) and 0 <= device_id < count:
            if device_id in seen_ids:
                problems.append(
                    view.problem(
                        "hccn.duplicate_id",
                        f"{where}.id",
                        f"device id {device_id} is planned twice (hccn_devices[{seen_ids[device_id]}] too)",
                        f"give each NPU NIC exactly one entry, ids 0..{count - 1}",
                        value=entry,
                    )
                )
            seen_ids[device_id] = index
            if _is_ipv4(entry.get("address")) and _netmask_prefix(entry.get("netmask")) is not None:
                interfaces[device_id] = (entry, _interface(entry))
    missing = sorted(set(range(count)) - set(seen_ids))
    if missing:
        problems.append(
            view.problem(
                "hccn.count",
                "hccn_devices",
                f"the SKU {view.value('node_sku')!r} has {count} NPU NICs but hccn_devices has no entry for "
                f"device id {', '.join(map(str, missing))} ({len(devices)} entries)",
                f"plan every NPU NIC: ids 0..{count - 1}",
            )
        )
    return problems, interfaces


def _entry(view: HostView, where: str, entry: dict[str, Any], count: int) -> list[Problem]:
    problems = []
    missing = [key for key in ENTRY_KEYS if key not in entry or entry[key] in (None, "")]
    if missing:
        problems.append(
            view.problem(
                "hccn.shape",
                where,
                f"{where} lacks {', '.join(missing)}",
                _PLAN_FIX,
                value=entry,
            )
        )
    unknown = sorted(set(map(str, entry)) - set(ENTRY_KEYS))
    if unknown:
        problems.append(
            view.problem(
                "hccn.unknown_key",
                where,
                f"{where} has unknown key(s) {', '.join(unknown)} (ignored by the roles)",
                f"use only {', '.join(ENTRY_KEYS)}",
                severity=WARNING,
                value=entry,
            )
        )
    device_id = entry.get("id")
    if "id" in entry and not (_is_int(device_id) and 0 <= device_id < count):
        problems.append(
            view.problem(
                "hccn.id",
                f"{where}.id",
                f"device id {device_id!r} is not an integer 0..{count - 1}",
                "use the NPU's device id as npu-smi / hccn_tool -i <id> number it",
                value=device_id,
            )
        )
    for key in ("address", "gateway", "netdetect"):
        if key in entry and entry[key] not in (None, "") and not _is_ipv4(entry[key]):
            problems.append(
                view.problem(
                    "ip.malformed",
                    f"{where}.{key}",
                    f"{where}.{key} {entry[key]!r} is not an IPv4 address",
                    "write a dotted IPv4 address, e.g. 10.30.2.11",
                    value=entry[key],
                )
            )
    if (
        "netmask" in entry
        and entry["netmask"] not in (None, "")
        and _netmask_prefix(entry["netmask"]) is None
    ):
        problems.append(
            view.problem(
                "ip.netmask",
                f"{where}.netmask",
                f"{where}.netmask {entry['netmask']!r} is not a dotted netmask",
                "write a contiguous dotted netmask, e.g. 255.255.0.0",
                value=entry["netmask"],
            )
        )
    if _is_ipv4(entry.get("address")) and _netmask_prefix(entry.get("netmask")) is not None:
        problems += _entry_subnet(view, where, entry)
    return problems


def _entry_subnet(view: HostView, where: str, entry: dict[str, Any]) -> list[Problem]:
    iface = _interface(entry)
    net = iface.network
    problems = []
    if net.prefixlen < 31 and iface.ip in (net.network_address, net.broadcast_address):
        problems.append(
            view.problem(
                "hccn.address",
                f"{where}.address",
                f"{where}.address {iface.ip} is the network or broadcast address of {net}",
                f"use a host address of {net}",
                value=entry["address"],
            )
        )
    if not _is_ipv4(entry.get("gateway")):
        return problems
    gateway = ipaddress.IPv4Address(entry["gateway"])
    if gateway not in net or gateway == iface.ip:
        what = "is the NIC's own address" if gateway == iface.ip else f"is outside the NIC's subnet {net}"
        problems.append(
            view.problem(
                "hccn.gateway",
                f"{where}.gateway",
                f"{where}.gateway {gateway} {what}",
                f"use the leaf switch's address in {net}",
                value=entry["gateway"],
            )
        )
    return problems


def _subnet_rule(
    view: HostView, interfaces: dict[int, tuple[dict[str, Any], ipaddress.IPv4Interface]], rule: str, sku: str
) -> list[Problem]:
    nets = {device: iface.network for device, (_entry, iface) in interfaces.items()}
    problems = []
    if rule == "single-subnet":
        first = nets[0]
        for device in sorted(nets):
            if nets[device] != first:
                problems.append(
                    _rule_problem(
                        view,
                        interfaces,
                        device,
                        f"device {device} is in {nets[device]} but device 0 in {first}: {sku} needs all "
                        "NPU NIC addresses in one subnet",
                        f"move device {device} into {first} (same netmask on every entry)",
                    )
                )
    elif rule == "four-subnet-pairs":
        for device in range(4):
            if nets[device] != nets[device + 4]:
                problems.append(
                    _rule_problem(
                        view,
                        interfaces,
                        device + 4,
                        f"devices {device} and {device + 4} must share a subnet on {sku} but are in "
                        f"{nets[device]} and {nets[device + 4]}",
                        f"put device {device + 4} in {nets[device]}",
                    )
                )
        for device in range(4):
            for other in range(device + 1, 4):
                if nets[device] == nets[other]:
                    problems.append(
                        _rule_problem(
                            view,
                            interfaces,
                            other,
                            f"devices {device} and {other} are both in {nets[device]}: {sku} needs four "
                            "subnets, one per pair (0,4), (1,5), (2,6), (3,7)",
                            f"give the pair ({other},{other + 4}) its own subnet",
                        )
                    )
    elif rule == "die-pairs-split":
        for device in range(0, len(nets), 2):
            if nets[device] == nets[device + 1]:
                problems.append(
                    _rule_problem(
                        view,
                        interfaces,
                        device + 1,
                        f"devices {device} and {device + 1} (the two dies of NPU {device // 2}) are both in "
                        f"{nets[device]}: {sku} needs them on different subnets",
                        f"put device {device + 1} on the other plane's subnet",
                    )
                )
    return problems


def _rule_problem(view: HostView, interfaces: dict, device: int, message: str, fix: str) -> Problem:
    entry = interfaces[device][0]
    index = next(i for i, d in enumerate(view.value("hccn_devices")) if d is entry)
    return view.problem(
        "hccn.subnet_rule", f"hccn_devices[{index}].address", message, fix, value=entry["address"]
    )


def _inside_npu_network(view: HostView, interfaces: dict) -> list[Problem]:
    network = view.value("fabric_npu_network")
    try:
        net = ipaddress.IPv4Network(str(network), strict=True) if isinstance(network, str) else None
    except ValueError:
        return []  # malformed: reported by the address checks
    if net is None:
        return []
    problems = []
    devices = view.value("hccn_devices")
    for _device, (entry, iface) in sorted(interfaces.items()):
        if iface.ip not in net:
            index = next(i for i, d in enumerate(devices) if d is entry)
            problems.append(
                view.problem(
                    "hccn.outside_network",
                    f"hccn_devices[{index}].address",
                    f"NPU NIC address {iface.ip} is outside fabric_npu_network {net}",
                    f"use an address of {net} (or correct fabric_npu_network)",
                    value=entry["address"],
                )
            )
    return problems


def _interface(entry: dict[str, Any]) -> ipaddress.IPv4Interface:
    return ipaddress.IPv4Interface(f"{entry['address']}/{_netmask_prefix(entry['netmask'])}")


def _netmask_prefix(mask: Any) -> int | None:
    try:
        return ipaddress.IPv4Network(f"0.0.0.0/{mask}").prefixlen if _is_ipv4(mask) else None
    except ValueError:
        return None


def _is_ipv4(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        ipaddress.IPv4Address(value)
    except ValueError:
        return False
    return True


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
