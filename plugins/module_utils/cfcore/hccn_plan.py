"""The Ascend NPU NIC plan (`hccn_devices`): complete, well-formed, and wired by the model's subnet rule.

One implementation for `clusterforge inventory check` (every Ascend host of an
inventory) and for the roles (the `cf_hccn_findings` filter: a host whose plan
breaks a rule fails before any `hccn_tool -s` runs), so both say the same thing
in the same words. Also what the `hccn_config` module needs to compare a
device with its plan: the readers of `hccn_tool -gateway -g` / `-netdetect -g`
and of `/etc/hccn.conf`, and the `-s` command lines.

Each Ascend NPU (A3: each die) has its own RoCE port, configured with
hccn_tool / /etc/hccn.conf: address, netmask, gateway and the netdetect
address it pings. Collective communication (HCCL) only works when the ports
are addressed the way the server's topology expects:
  single-subnet      Atlas 800T A2: all 8 device IPs in one subnet
  four-subnet-pairs  Atlas 800 9000 (910): devices i and i+4 share a subnet, 4 subnets in all
  die-pairs-split    Atlas 800T A3: the two dies of NPU k (devices 2k, 2k+1) on different subnets

A finding is a dict: rule (stable id such as "hccn.subnet_rule"), severity
("error" | "warning"), variable (the path, e.g. "hccn_devices[3].address"),
message, fix, and value (the offending value exactly as given, or None: the
CLI locates the problem at the file and line that value came from).

Stdlib only, Python 3.8-safe: it runs on the controller and in modules on nodes.
"""

from __future__ import annotations

import ipaddress
import re

ERROR = "error"
WARNING = "warning"
ENTRY_KEYS = ("id", "address", "netmask", "gateway", "netdetect")
RULES = ("single-subnet", "four-subnet-pairs", "die-pairs-split")
PLAN_FIX = "one entry per NPU NIC: {id, address, netmask, gateway, netdetect} (docs/design.md)"
# The address checks of `inventory check` report a malformed fabric_npu_network themselves.
NPU_NETWORK_RULE = "hccn.npu_network"
_NATIVE_TYPES = (bool, int, float, str, list, dict)


def finding(rule, variable, message, fix, severity=ERROR, value=None) -> dict:
    return {
        "rule": rule,
        "severity": severity,
        "variable": variable,
        "message": message,
        "fix": fix,
        "value": value,
    }


def kind(value) -> str:
    """The plain type name of a value (Ansible wraps loaded values in tagged subclasses)."""
    if value is None:
        return "null"
    return next((t.__name__ for t in _NATIVE_TYPES if isinstance(value, t)), type(value).__name__)


def plan_findings(devices, nics, node_sku=None, npu_network=None) -> list:
    """Every finding of one host's plan (see check_plan)."""
    return check_plan(devices, nics, node_sku, npu_network)[0]


def check_plan(devices, nics, node_sku=None, npu_network=None) -> tuple:
    """(findings, interfaces) of one host's plan.

    nics: the SKU's `npu_nics` ({count, subnet_rule, ...}). npu_network: the
    host's `fabric_npu_network` (a CIDR string) or None. interfaces maps device
    id -> (index in hccn_devices, entry, IPv4Interface) for the entries whose
    address and netmask are valid (the CLI's fleet-wide duplicate check uses them).
    """
    count = nics["count"]
    findings, interfaces = _plan(devices, count, node_sku)
    planned_once = not any(f["rule"] == "hccn.duplicate_id" for f in findings)
    if planned_once and set(interfaces) == set(range(count)):
        findings += _subnet_rule(interfaces, nics.get("subnet_rule"), node_sku)
    findings += _inside_npu_network(interfaces, npu_network)
    return findings, interfaces


def _plan(devices, count: int, node_sku) -> tuple:
    if not isinstance(devices, list):
        return [
            finding(
                "hccn.shape", "hccn_devices", f"hccn_devices must be a list, got {kind(devices)}", PLAN_FIX
            )
        ], {}
    findings = []
    interfaces = {}
    seen_ids = {}
    for index, entry in enumerate(devices):
        where = f"hccn_devices[{index}]"
        if not isinstance(entry, dict):
            findings.append(finding("hccn.shape", where, f"{where} must be a mapping", PLAN_FIX, value=entry))
            continue
        findings += _entry(where, entry, count)
        device_id = entry.get("id")
        if _is_int(device_id) and 0 <= device_id < count:
            if device_id in seen_ids:
                findings.append(
                    finding(
                        "hccn.duplicate_id",
                        f"{where}.id",
                        f"device id {device_id} is planned twice (hccn_devices[{seen_ids[device_id]}] too)",
                        f"give each NPU NIC exactly one entry, ids 0..{count - 1}",
                        value=entry,
                    )
                )
            seen_ids[device_id] = index
            if is_ipv4(entry.get("address")) and netmask_prefix(entry.get("netmask")) is not None:
                interfaces[device_id] = (index, entry, interface(entry))
    missing = sorted(set(range(count)) - set(seen_ids))
    if missing:
        findings.append(
            finding(
                "hccn.count",
                "hccn_devices",
                f"the SKU {node_sku!r} has {count} NPU NICs but hccn_devices has no entry for "
                f"device id {', '.join(map(str, missing))} ({len(devices)} entries)",
                f"plan every NPU NIC: ids 0..{count - 1}",
            )
        )
    return findings, interfaces


def _entry(where: str, entry: dict, count: int) -> list:
    findings = []
    missing = [key for key in ENTRY_KEYS if key not in entry or entry[key] in (None, "")]
    if missing:
        findings.append(
            finding("hccn.shape", where, f"{where} lacks {', '.join(missing)}", PLAN_FIX, value=entry)
        )
    unknown = sorted(set(map(str, entry)) - set(ENTRY_KEYS))
    if unknown:
        findings.append(
            finding(
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
        findings.append(
            finding(
                "hccn.id",
                f"{where}.id",
                f"device id {device_id!r} is not an integer 0..{count - 1}",
                "use the NPU's device id as npu-smi / hccn_tool -i <id> number it",
                value=device_id,
            )
        )
    for key in ("address", "gateway", "netdetect"):
        if key in entry and entry[key] not in (None, "") and not is_ipv4(entry[key]):
            findings.append(
                finding(
                    "ip.malformed",
                    f"{where}.{key}",
                    f"{where}.{key} {entry[key]!r} is not an IPv4 address",
                    "write a dotted IPv4 address, e.g. 10.30.2.11",
                    value=entry[key],
                )
            )
    if "netmask" in entry and entry["netmask"] not in (None, "") and netmask_prefix(entry["netmask"]) is None:
        findings.append(
            finding(
                "ip.netmask",
                f"{where}.netmask",
                f"{where}.netmask {entry['netmask']!r} is not a dotted netmask",
                "write a contiguous dotted netmask, e.g. 255.255.0.0",
                value=entry["netmask"],
            )
        )
    if is_ipv4(entry.get("address")) and netmask_prefix(entry.get("netmask")) is not None:
        findings += _entry_subnet(where, entry)
    return findings


def _entry_subnet(where: str, entry: dict) -> list:
    iface = interface(entry)
    net = iface.network
    findings = []
    if net.prefixlen < 31 and iface.ip in (net.network_address, net.broadcast_address):
        findings.append(
            finding(
                "hccn.address",
                f"{where}.address",
                f"{where}.address {iface.ip} is the network or broadcast address of {net}",
                f"use a host address of {net}",
                value=entry["address"],
            )
        )
    if not is_ipv4(entry.get("gateway")):
        return findings
    gateway = ipaddress.IPv4Address(entry["gateway"])
    if gateway not in net or gateway == iface.ip:
        what = "is the NIC's own address" if gateway == iface.ip else f"is outside the NIC's subnet {net}"
        findings.append(
            finding(
                "hccn.gateway",
                f"{where}.gateway",
                f"{where}.gateway {gateway} {what}",
                f"use the leaf switch's address in {net}",
                value=entry["gateway"],
            )
        )
    return findings


def _subnet_rule(interfaces: dict, rule, sku) -> list:
    nets = {device: iface.network for device, (_index, _entry, iface) in interfaces.items()}
    findings = []
    if rule == "single-subnet":
        first = nets[0]
        for device in sorted(nets):
            if nets[device] != first:
                findings.append(
                    _rule_finding(
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
                findings.append(
                    _rule_finding(
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
                    findings.append(
                        _rule_finding(
                            interfaces,
                            other,
                            f"devices {device} and {other} are both in {nets[device]}: {sku} needs four "
                            "subnets, one per pair (0,4), (1,5), (2,6), (3,7)",
                            f"give the pair ({other},{other + 4}) its own subnet",
                        )
                    )
    elif rule == "die-pairs-split":
        for device in range(0, len(nets) - 1, 2):
            if nets[device] == nets[device + 1]:
                findings.append(
                    _rule_finding(
                        interfaces,
                        device + 1,
                        f"devices {device} and {device + 1} (the two dies of NPU {device // 2}) are both in "
                        f"{nets[device]}: {sku} needs them on different subnets",
                        f"put device {device + 1} on the other plane's subnet",
                    )
                )
    return findings


def _rule_finding(interfaces: dict, device: int, message: str, fix: str) -> dict:
    index, entry, _iface = interfaces[device]
    return finding("hccn.subnet_rule", f"hccn_devices[{index}].address", message, fix, value=entry["address"])


def _inside_npu_network(interfaces: dict, network) -> list:
    if network is None or network == "":
        return []
    try:
        net = ipaddress.IPv4Network(network, strict=True) if isinstance(network, str) else None
    except ValueError:
        net = None
    if net is None:
        return [
            finding(
                NPU_NETWORK_RULE,
                "fabric_npu_network",
                f"fabric_npu_network {network!r} is not an IPv4 network",
                "write the NPU fabric's network in CIDR form, e.g. 10.30.0.0/16",
                value=network,
            )
        ]
    findings = []
    for _device, (index, entry, iface) in sorted(interfaces.items()):
        if iface.ip not in net:
            findings.append(
                finding(
                    "hccn.outside_network",
                    f"hccn_devices[{index}].address",
                    f"NPU NIC address {iface.ip} is outside fabric_npu_network {net}",
                    f"use an address of {net} (or correct fabric_npu_network)",
                    value=entry["address"],
                )
            )
    return findings


def interface(entry: dict) -> ipaddress.IPv4Interface:
    return ipaddress.IPv4Interface(f"{entry['address']}/{netmask_prefix(entry['netmask'])}")


def netmask_prefix(mask):
    """The prefix length of a dotted netmask, or None when it is not one."""
    try:
        return ipaddress.IPv4Network(f"0.0.0.0/{mask}").prefixlen if is_ipv4(mask) else None
    except ValueError:
        return None


def is_ipv4(value) -> bool:
    if not isinstance(value, str):
        return False
    try:
        ipaddress.IPv4Address(value)
    except ValueError:
        return False
    return True


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# --- a device against its plan (module hccn_config) ---------------------------------------

ITEMS = ("ip", "gateway", "netdetect")
_GATEWAY = re.compile(r"default\s+gateway\s*:\s*([^,\s]*)", re.IGNORECASE)
_NETDETECT = re.compile(r"netdetect\s+address\s*:\s*(\S*)", re.IGNORECASE)
_CONF_LINE = re.compile(r"^\s*([A-Za-z_]+_\d+)\s*=\s*(.*?)\s*$")


class ReadError(ValueError):
    """hccn_tool printed something that is not the answer asked for."""


def parse_gateway(text: str):
    """`hccn_tool -i N -gateway -g` ('default gateway:10.0.0.1, Iface:eth0') -> the address, None if unset."""
    match = _GATEWAY.search(text or "")
    if match is None:
        raise ReadError(f"not hccn_tool -gateway -g output: {_first_line(text)!r}")
    return _address_or_none(match.group(1), "-gateway")


def parse_netdetect(text: str):
    """`hccn_tool -i N -netdetect -g` ('netdetect address: 10.0.0.1') -> the address or None (unset)."""
    match = _NETDETECT.search(text or "")
    if match is None:
        raise ReadError(f"not hccn_tool -netdetect -g output: {_first_line(text)!r}")
    return _address_or_none(match.group(1), "-netdetect")


def _address_or_none(value: str, option: str):
    if value in ("", "0.0.0.0"):
        return None
    if not is_ipv4(value):
        raise ReadError(f"hccn_tool {option} -g: {value!r} is not an IPv4 address")
    return value


def _first_line(text) -> str:
    lines = [line for line in (text or "").splitlines() if line.strip()]
    return lines[0].strip() if lines else ""


def parse_conf(text: str) -> dict:
    """/etc/hccn.conf (`address_0=10.0.0.2` lines) -> {key: value}; other lines are ignored."""
    values = {}
    for line in (text or "").splitlines():
        match = _CONF_LINE.match(line)
        if match:
            values[match.group(1)] = match.group(2)
    return values


def planned_state(entry: dict) -> dict:
    """The four values one device should have, normalised."""
    return {
        "address": str(entry["address"]),
        "netmask": str(entry["netmask"]),
        "gateway": str(entry["gateway"]),
        "netdetect": str(entry["netdetect"]),
    }


def conf_state(conf: dict, device: int) -> dict:
    """What /etc/hccn.conf records for one device (None for an absent key)."""
    return {key: conf.get(f"{key}_{device}") for key in ("address", "netmask", "gateway", "netdetect")}


def items_to_write(planned: dict, live: dict, conf=None) -> list:
    """The hccn_tool items ("ip", "gateway", "netdetect") to set: live state or conf differs from the plan.

    conf None: /etc/hccn.conf is not judged (check mode before the file exists, or a tool that keeps none).
    """
    states = [live] if conf is None else [live, conf]
    keys = {"ip": ("address", "netmask"), "gateway": ("gateway",), "netdetect": ("netdetect",)}
    return [
        item
        for item in ITEMS
        if any(not same_value(state.get(key), planned[key]) for state in states for key in keys[item])
    ]


def same_value(current, planned) -> bool:
    if current is None:
        return planned is None
    try:
        return ipaddress.IPv4Address(str(current).strip()) == ipaddress.IPv4Address(str(planned))
    except ValueError:
        return str(current).strip() == str(planned)


def set_argv(tool: str, device: int, item: str, planned: dict) -> list:
    """The hccn_tool command line that sets one item of one device."""
    head = [tool, "-i", str(device)]
    if item == "ip":
        return [*head, "-ip", "-s", "address", planned["address"], "netmask", planned["netmask"]]
    if item == "gateway":
        return [*head, "-gateway", "-s", "gateway", planned["gateway"]]
    if item == "netdetect":
        return [*head, "-netdetect", "-s", "address", planned["netdetect"]]
    raise ValueError(f"unknown hccn_tool item {item!r}")


def conf_lines(device: int, state: dict) -> str:
    """One device's values as hccn.conf lines (for --diff)."""
    return "".join(
        f"{key}_{device}={'' if state.get(key) is None else state[key]}\n"
        for key in ("address", "netmask", "gateway", "netdetect")
    )
