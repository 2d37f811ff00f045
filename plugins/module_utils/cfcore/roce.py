"""Lossless RoCE: the plan, what a port has, the differences and the commands that fix them.

One implementation (docs/design.md, "High-speed fabric"), used by the `roce_qos`
module (read, compare, apply, read back), the filters `cf_roce_plan` and
`cf_roce_commands` (the boot-time script `clusterforge-roce-apply`) and the
`roce.qos` check of node validation.

    plan = normalize_plan({"interfaces": [...], "trust": "dscp", "pfc_priority": 3, ...})
    sysfs = read_sysfs(iface, plan, sysfs_root, reader, lister)   # the attributes of one netdev
    state = {iface: observe(mlnx_qos_text, sysfs)}
    differences = compare(plan, state)      # [{interface, setting, planned, found, fix}]
    argv_list = apply_commands(plan, iface, ibdev, sysfs_root)

What is set where (NVIDIA's ConnectX / mlx5 with DOCA-OFED or MLNX_OFED):

| setting | read from | written with |
| --- | --- | --- |
| trust | `mlnx_qos -i IF` "Priority trust state" | `mlnx_qos -i IF --trust dscp` |
| pfc | `mlnx_qos -i IF` PFC "enabled" row | `mlnx_qos -i IF --pfc 0,0,0,1,0,0,0,0` |
| dscp2prio | `mlnx_qos -i IF` dscp2prio mapping (trust dscp) | `mlnx_qos -i IF --dscp2prio set,DSCP,PRIO` |
| ecn_np / ecn_rp | `<sys>/class/net/IF/ecn/roce_{np,rp}/enable/PRIO` | write 1 (0 when ecn is false) |
| cnp_dscp | `<sys>/class/net/IF/ecn/roce_np/cnp_dscp` | write the DSCP |
| traffic_class | `<sys>/class/infiniband/IBDEV/tc/1/traffic_class` | write dscp << 2 |
| roce_tos | `<sys>/kernel/config/rdma_cm/IBDEV/ports/1/default_roce_tos` | mkdir its dir, write dscp << 2 |
| mtu | `<sys>/class/net/IF/mtu` | `ip link set dev IF mtu N` |
| gid | `<sys>/class/infiniband/IBDEV/ports/1/gid_attrs/types/N`, `gids/N` | nothing (see below) |

The traffic class file reads "Global tclass=N" once set (MLNX_OFED / DOCA's mlx5).
The RoCE v2 IPv4 GID cannot be written: it appears once IF has its IPv4 address.

The IB device of a netdev is the one entry of `<sys>/class/net/IF/device/infiniband/`;
ConnectX netdevs are port 1 of their own IB device. `sysfs_root` prefixes every
sysfs and configfs path (the hardware replay's tree in tests; `/` on nodes).
Stdlib only, Python 3.8-safe: it runs on nodes.
"""

from __future__ import annotations

import os
import re
import shlex

from .inputs import InputError
from .parsers.common import ParseError
from .parsers.mlnx_qos import parse_mlnx_qos

PORT = 1
PRIORITIES = 8
# The plan's variables (without the `fabric_roce_` prefix) and their defaults (docs/design.md).
DEFAULTS = {
    "trust": "dscp",
    "pfc_priority": 3,
    "dscp": 26,
    "cnp_dscp": 48,
    "ecn": True,
    "mtu": 9000,
    "gid_index": 3,
}
KEYS = ("interfaces", *DEFAULTS)
TRUSTS = ("dscp", "pcp")
# 1280: the smallest MTU carrying RoCE's 1024-byte path MTU with headroom; 9978: mlx5's max_mtu.
MTU_RANGE = (1280, 9978)
# Order of the settings (and of the commands that apply them).
SETTINGS = (
    "trust",
    "pfc",
    "dscp2prio",
    "ecn_np",
    "ecn_rp",
    "cnp_dscp",
    "traffic_class",
    "roce_tos",
    "mtu",
    "gid",
)
IPV4_GID_PREFIX = "0000:0000:0000:0000:0000:ffff:"
ROCE_V2 = "roce v2"
_NETDEV = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:@-]{0,14}$")
_TRUE = ("true", "yes", "on", "1")
_FALSE = ("false", "no", "off", "0")


# --------------------------------------------------------------------------- the plan


def normalize_plan(values: dict | None) -> dict | None:
    """The checked RoCE plan, or None when no interface is planned. InputError names the variable."""
    if values is None:
        return None
    if not isinstance(values, dict):
        raise InputError(
            f"the RoCE plan must be a mapping of the fabric_roce_* variables, got {type(values).__name__}",
            "pass {interfaces, trust, pfc_priority, dscp, cnp_dscp, ecn, mtu, gid_index}",
        )
    unknown = sorted(set(values) - set(KEYS))
    if unknown:
        raise InputError(
            f"unknown RoCE plan key(s) {', '.join(map(str, unknown))}",
            f"use only {', '.join(KEYS)} (the fabric_roce_* variables without the prefix)",
        )
    interfaces = _interfaces(values.get("interfaces"))
    if not interfaces:
        return None
    trust = values.get("trust")
    trust = DEFAULTS["trust"] if trust is None else str(trust).strip().lower()
    if trust not in TRUSTS:
        raise InputError(
            f"fabric_roce_trust must be dscp or pcp, got {values.get('trust')!r}",
            "set fabric_roce_trust: dscp (RoCE v2 is routed: classify by DSCP) or pcp (VLAN priority)",
        )
    plan = {
        "interfaces": interfaces,
        "trust": trust,
        "pfc_priority": _int(values, "pfc_priority", 0, PRIORITIES - 1, "the one lossless priority, e.g. 3"),
        "dscp": _int(values, "dscp", 0, 63, "the DSCP of RoCE data, e.g. 26"),
        "cnp_dscp": _int(values, "cnp_dscp", 0, 63, "the DSCP of congestion notifications, e.g. 48"),
        "ecn": _bool(values, "ecn"),
        "mtu": _int(values, "mtu", MTU_RANGE[0], MTU_RANGE[1], "the netdev MTU, e.g. 9000"),
        "gid_index": _int(values, "gid_index", 0, 255, "the RoCE v2 IPv4 GID's index (show_gids), e.g. 3"),
    }
    plan["traffic_class"] = plan["dscp"] << 2
    plan["roce_tos"] = plan["dscp"] << 2
    return plan


def _interfaces(value) -> list:
    if value is None or value == []:
        return []
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise InputError(
            f"fabric_roce_interfaces must be a list of netdev names, got {value!r}",
            "write it as a YAML list, e.g. fabric_roce_interfaces: [enp24s0np0, enp64s0np0]",
        )
    names = []
    for position, name in enumerate(value):
        if not isinstance(name, str) or not _NETDEV.match(name):
            raise InputError(
                f"fabric_roce_interfaces[{position}] is not a netdev name: {name!r}",
                "use the kernel's interface names (ip -br link), at most 15 characters, e.g. enp24s0np0",
            )
        if name in names:
            raise InputError(f"fabric_roce_interfaces lists {name} twice", "list each RoCE netdev once")
        names.append(name)
    return names


def _int(values: dict, key: str, low: int, high: int, meaning: str) -> int:
    raw = values.get(key)
    if raw is None:
        return DEFAULTS[key]
    value = None
    if isinstance(raw, int) and not isinstance(raw, bool):
        value = raw
    elif isinstance(raw, str) and raw.strip().isdigit():
        value = int(raw.strip())
    if value is None or not low <= value <= high:
        raise InputError(
            f"fabric_roce_{key} must be {low}-{high}, got {raw!r}",
            f"set fabric_roce_{key} to {meaning} (default {DEFAULTS[key]})",
        )
    return value


def _bool(values: dict, key: str) -> bool:
    raw = values.get(key)
    if raw is None:
        return DEFAULTS[key]
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise InputError(
        f"fabric_roce_{key} must be true or false, got {raw!r}",
        f"set fabric_roce_{key}: true (DCQCN on the PFC priority) or false",
    )


def pfc_list(plan: dict) -> list:
    """The planned PFC row: 1 on the lossless priority only."""
    return [1 if priority == plan["pfc_priority"] else 0 for priority in range(PRIORITIES)]


# --------------------------------------------------------------------------- paths


def sys_path(sysfs_root: str, *parts) -> str:
    return os.path.join(sysfs_root or "/", "sys", *[str(part) for part in parts])


def paths(iface: str, ibdev: str | None, plan: dict, sysfs_root: str = "/") -> dict:
    """Where each sysfs/configfs attribute of `iface` lives (None: needs the IB device, unknown)."""
    prio = plan["pfc_priority"]
    net = ("class", "net", iface)
    found = {
        "ibdevs": sys_path(sysfs_root, *net, "device", "infiniband"),
        "mtu": sys_path(sysfs_root, *net, "mtu"),
        "ecn_np": sys_path(sysfs_root, *net, "ecn", "roce_np", "enable", prio),
        "ecn_rp": sys_path(sysfs_root, *net, "ecn", "roce_rp", "enable", prio),
        "cnp_dscp": sys_path(sysfs_root, *net, "ecn", "roce_np", "cnp_dscp"),
        "traffic_class": None,
        "rdma_cm": None,
        "roce_tos": None,
        "gid_type": None,
        "gid": None,
    }
    if ibdev:
        ib = ("class", "infiniband", ibdev)
        found["traffic_class"] = sys_path(sysfs_root, *ib, "tc", PORT, "traffic_class")
        found["rdma_cm"] = sys_path(sysfs_root, "kernel", "config", "rdma_cm", ibdev)
        found["roce_tos"] = os.path.join(found["rdma_cm"], "ports", str(PORT), "default_roce_tos")
        port = (*ib, "ports", PORT)
        found["gid_type"] = sys_path(sysfs_root, *port, "gid_attrs", "types", plan["gid_index"])
        found["gid"] = sys_path(sysfs_root, *port, "gids", plan["gid_index"])
    return found


# --------------------------------------------------------------------------- reading


def read_sysfs(iface: str, plan: dict, sysfs_root: str, reader, lister) -> dict:
    """The raw sysfs/configfs values of `iface`: {name: text or None (absent)}, plus `ibdev`.

    `reader(path) -> text | None` and `lister(path) -> [names] | None` are the caller's
    (plain files in the module, the collector's source in node validation).
    """
    where = paths(iface, None, plan, sysfs_root)
    names = lister(where["ibdevs"])
    present = reader(where["mtu"]) is not None or names is not None
    ibdev = sorted(names)[0] if names else None
    where = paths(iface, ibdev, plan, sysfs_root)
    raw = {"present": present, "ibdev": ibdev, "ibdevs": sorted(names or []), "paths": where}
    for name in ("mtu", "ecn_np", "ecn_rp", "cnp_dscp", "traffic_class", "roce_tos", "gid_type", "gid"):
        raw[name] = reader(where[name]) if where[name] else None
    return raw


def observe(mlnx_qos_text: str | None, sysfs: dict) -> dict:
    """One netdev's state from `mlnx_qos -i IF` (None: not run or failed) and `read_sysfs`'s values.

    Values are None where nothing could be read; `errors` says why per setting.
    """
    state = {
        "present": bool(sysfs.get("present")),
        "ibdev": sysfs.get("ibdev"),
        "trust": None,
        "pfc": None,
        "dscp2prio": None,
        "mtu": _number(sysfs.get("mtu")),
        "ecn_np": _flag(sysfs.get("ecn_np")),
        "ecn_rp": _flag(sysfs.get("ecn_rp")),
        "cnp_dscp": _number(sysfs.get("cnp_dscp")),
        "traffic_class": _tclass(sysfs.get("traffic_class")),
        "roce_tos": _number(sysfs.get("roce_tos")),
        "gid_type": _text(sysfs.get("gid_type")),
        "gid": _text(sysfs.get("gid")),
        "qos_warnings": [],
        "errors": {},
        "raw": {
            key: _text(sysfs.get(key))
            for key in ("mtu", "ecn_np", "ecn_rp", "cnp_dscp", "traffic_class", "roce_tos", "gid_type", "gid")
        },
        "paths": sysfs.get("paths") or {},
    }
    if len(sysfs.get("ibdevs") or []) > 1:
        state["errors"]["ibdev"] = f"several IB devices: {', '.join(sysfs['ibdevs'])}"
    if mlnx_qos_text is None:
        state["errors"]["mlnx_qos"] = "mlnx_qos did not run"
        return state
    try:
        qos = parse_mlnx_qos(mlnx_qos_text)
    except ParseError as exc:
        state["errors"]["mlnx_qos"] = str(exc)
        return state
    state["trust"] = qos["trust"]
    state["pfc"] = qos["pfc"]
    state["dscp2prio"] = qos["dscp2prio"]
    state["qos_warnings"] = qos["warnings"]
    return state


def _text(value) -> str | None:
    if value is None:
        return None
    return str(value).strip()


def _number(value) -> int | None:
    text = _text(value)
    if text is None or not re.match(r"^-?\d+$", text):
        return None
    return int(text)


def _flag(value) -> bool | None:
    number = _number(value)
    return None if number is None else number != 0


def _tclass(value) -> int | None:
    """`Global tclass=106` (MLNX_OFED/DOCA's mlx5 tc sysfs) or a plain number; None when unset."""
    text = _text(value)
    if not text:
        return None
    match = re.search(r"tclass\s*=\s*(-?\d+)", text) or re.match(r"^(-?\d+)$", text)
    if match is None:
        return None
    number = int(match.group(1))
    return number if number >= 0 else None


# --------------------------------------------------------------------------- commands


def _write(value, path: str) -> list:
    """argv writing `value` into a sysfs/configfs file (no shell parsing of the value or the path)."""
    return ["sh", "-c", 'printf "%s\\n" "$1" > "$2"', "sh", str(value), path]


def setting_commands(plan: dict, iface: str, ibdev: str | None, sysfs_root: str = "/") -> dict:
    """{setting: [argv]} that sets each setting of `iface` (gid: none, it cannot be set)."""
    where = paths(iface, ibdev, plan, sysfs_root)
    enable = 1 if plan["ecn"] else 0
    commands = {
        "trust": [["mlnx_qos", "-i", iface, "--trust", plan["trust"]]],
        "pfc": [["mlnx_qos", "-i", iface, "--pfc", ",".join(str(v) for v in pfc_list(plan))]],
        "dscp2prio": [],
        "ecn_np": [_write(enable, where["ecn_np"])],
        "ecn_rp": [_write(enable, where["ecn_rp"])],
        "cnp_dscp": [_write(plan["cnp_dscp"], where["cnp_dscp"])],
        "traffic_class": [],
        "roce_tos": [],
        "mtu": [["ip", "link", "set", "dev", iface, "mtu", str(plan["mtu"])]],
        "gid": [],
    }
    if plan["trust"] == "dscp":
        setting = f"set,{plan['dscp']},{plan['pfc_priority']}"
        commands["dscp2prio"] = [["mlnx_qos", "-i", iface, "--dscp2prio", setting]]
    if ibdev:
        commands["traffic_class"] = [_write(plan["traffic_class"], where["traffic_class"])]
        commands["roce_tos"] = [
            ["mkdir", "-p", where["rdma_cm"]],
            _write(plan["roce_tos"], where["roce_tos"]),
        ]
    return commands


def apply_commands(plan: dict, iface: str, ibdev: str | None, sysfs_root: str = "/") -> list:
    """Every command that puts `iface` (IB device `ibdev`) into the plan, in order (the boot script)."""
    if iface not in plan["interfaces"]:
        raise InputError(
            f"{iface} is not in fabric_roce_interfaces ({', '.join(plan['interfaces'])})",
            "pass one of the planned interfaces",
        )
    if not ibdev:
        raise InputError(
            f"no IB device given for {iface}",
            f"pass the entry of {sys_path(sysfs_root, 'class', 'net', iface, 'device', 'infiniband')}/",
        )
    by_setting = setting_commands(plan, iface, ibdev, sysfs_root)
    return [argv for setting in SETTINGS for argv in by_setting[setting]]


def shell_line(argv: list) -> str:
    return " ".join(shlex.quote(part) for part in argv)


def fix_text(commands: list) -> str:
    """Commands as an operator types them (a sysfs write as `echo V > PATH`)."""
    lines = []
    for argv in commands:
        if argv[:3] == ["sh", "-c", 'printf "%s\\n" "$1" > "$2"']:
            lines.append(f"echo {shlex.quote(argv[4])} > {shlex.quote(argv[5])}")
        else:
            lines.append(shell_line(argv))
    return "; ".join(lines)


# --------------------------------------------------------------------------- comparing


def _difference(iface, setting, planned, found, fix) -> dict:
    return {"interface": iface, "setting": setting, "planned": planned, "found": found, "fix": fix}


def compare(plan: dict, state: dict, sysfs_root: str = "/") -> list:
    """Differences between the plan and `state` ({iface: observe(...)}), in plan order.

    A value that could not be read (None) is a difference too: unknown is never as planned.
    """
    differences = []
    for iface in plan["interfaces"]:
        seen = state.get(iface)
        if not seen or not seen.get("present"):
            differences.append(
                _difference(
                    iface,
                    "interface",
                    "present",
                    "absent",
                    f"check the name in fabric_roce_interfaces against `ip -br link` on the node "
                    f"(no {sys_path(sysfs_root, 'class', 'net', iface)})",
                )
            )
            continue
        ibdev = seen.get("ibdev")
        commands = setting_commands(plan, iface, ibdev, sysfs_root)
        where = paths(iface, ibdev, plan, sysfs_root)

        def add(setting, planned, found, fix=None, iface=iface, commands=commands):
            differences.append(
                _difference(iface, setting, planned, found, fix or fix_text(commands[setting]))
            )

        if not ibdev:
            add(
                "ibdev",
                "an IB device",
                None,
                f"load mlx5_ib (DOCA-OFED / rdma-core); {iface} has no "
                f"{where['ibdevs']}/ entry, so it is not an RDMA (RoCE) port",
            )
        qos_error = seen.get("errors", {}).get("mlnx_qos")
        if seen.get("trust") != plan["trust"]:
            add("trust", plan["trust"], seen.get("trust") or _unknown(qos_error))
        planned_pfc = pfc_list(plan)
        if seen.get("pfc") != planned_pfc:
            add("pfc", _pfc_text(planned_pfc), _pfc_text(seen.get("pfc")) or _unknown(qos_error))
        mapping = seen.get("dscp2prio")
        if plan["trust"] == "dscp" and seen.get("trust") == "dscp" and mapping is not None:
            got = mapping.get(plan["dscp"])
            if got != plan["pfc_priority"]:
                add(
                    "dscp2prio",
                    f"dscp {plan['dscp']} -> prio {plan['pfc_priority']}",
                    f"dscp {plan['dscp']} -> prio {got}" if got is not None else "unmapped",
                )
        for setting in ("ecn_np", "ecn_rp"):
            if seen.get(setting) != plan["ecn"]:
                add(setting, int(plan["ecn"]), _found(seen, setting, where))
        for setting, planned in (
            ("cnp_dscp", plan["cnp_dscp"]),
            ("traffic_class", plan["traffic_class"]),
            ("roce_tos", plan["roce_tos"]),
            ("mtu", plan["mtu"]),
        ):
            # traffic_class and roce_tos live under the IB device: without one, `ibdev` says so.
            if seen.get(setting) != planned and (ibdev or setting in ("cnp_dscp", "mtu")):
                add(setting, planned, _found(seen, setting, where))
        if ibdev:
            _compare_gid(plan, seen, where, add, iface)
    return differences


def _compare_gid(plan, seen, where, add, iface) -> None:
    index = plan["gid_index"]
    gid_type, gid = seen.get("gid_type"), seen.get("gid")
    planned = f"index {index}: RoCE v2, IPv4"
    if gid_type is None or gid_type.lower() != ROCE_V2 or not (gid or "").startswith(IPV4_GID_PREFIX):
        found = f"index {index}: {gid_type or 'no GID type'} {gid or '(no GID)'}"
        add(
            "gid",
            planned,
            found,
            f"give {iface} its IPv4 address (the RoCE v2 IPv4 GID appears with it), or set "
            f"fabric_roce_gid_index to the RoCE v2 IPv4 index `show_gids` lists for {seen.get('ibdev')}",
        )


def _pfc_text(values) -> str | None:
    if values is None:
        return None
    return ",".join(str(value) for value in values)


def _unknown(error: str | None) -> str:
    return f"unknown ({error})" if error else "unknown"


def _found(seen: dict, setting: str, where: dict):
    value = seen.get(setting)
    if value is not None:
        return int(value) if isinstance(value, bool) else value
    raw = (seen.get("raw") or {}).get(setting)
    path = where.get(setting) or (seen.get("paths") or {}).get(setting)
    if raw:
        return f"unreadable {raw!r} in {path}"
    return f"absent ({path})"


def describe(difference: dict) -> str:
    """One line for a report: `enp24s0np0: pfc planned 0,0,0,1,0,0,0,0, found 0,0,0,0,0,0,0,0`."""
    return (
        f"{difference['interface']}: {difference['setting']} planned {difference['planned']}, "
        f"found {difference['found']}"
    )


def summary(plan: dict) -> str:
    """What the plan sets, in words (a passing check's message)."""
    ecn = f"ECN (DCQCN) {'on' if plan['ecn'] else 'off'} on priority {plan['pfc_priority']}"
    mapping = f", DSCP {plan['dscp']} -> priority {plan['pfc_priority']}" if plan["trust"] == "dscp" else ""
    return (
        f"trust {plan['trust']}{mapping}, PFC on priority {plan['pfc_priority']} only, {ecn}, "
        f"CNP DSCP {plan['cnp_dscp']}, traffic class and default_roce_tos {plan['traffic_class']}, "
        f"MTU {plan['mtu']}, GID {plan['gid_index']} RoCE v2 IPv4"
    )
