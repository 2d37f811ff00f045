"""Replayed `mlnx_qos` and the RoCE parts of the sysfs tree (tests only).

A profile's `roce` section describes the RoCE netdevs of a node with Ethernet
ConnectX ports:

    "roce": {
      "netdev_defaults": {"mtu": 9000, "trust": "dscp", "pfc": [0,0,0,1,0,0,0,0], ...},
      "netdevs": [{"name": "enp24s0np0", "hca": "mlx5_0", "ipv4": "10.40.0.11"}, ...]
    }

Per netdev: `trust` (dscp|pcp), `pfc` (8 x 0/1), `dscp2prio` ({dscp: prio} overrides of
the firmware's default dscp >> 3), `prio_tc` (mlx5's default 1,0,2,...,7), `tsa`,
`cable_len`, `ecn_np` / `ecn_rp` (8 x 0/1: DCQCN per priority), `cnp_dscp`,
`traffic_class` (null: not set), `default_roce_tos` (null: the rdma_cm configfs
directory was never made), `mtu`, `ipv4` (its RoCE v2 / v1 IPv4 GIDs at indexes 3 / 2).

State: what `mlnx_qos --trust/--pfc/--dscp2prio` writes persists in
`<state>/mlnx_qos.json` for the profile it was written under (a switch to another
profile starts from that profile again; `profile set` of the same profile and
`profile refresh` keep it). The sysfs attributes a node's admin writes (ECN
enables, CNP DSCP, traffic class, default_roce_tos, MTU) are plain files under the
sysroot: `profile set` seeds them from the profile when they are missing or when the
profile changed (recorded in `<state>/roce-sysfs.json`), and leaves them as written
otherwise, so a role's writes survive the apt hook's refresh. The read-only parts
(`device/infiniband/<ibdev>`, GID types and values) are rewritten like every sysfs file.

`mlnx_qos` answers are never pre-rendered: they follow the state.

Formats follow NVIDIA's mlnx-tools `mlnx_qos` (DOCA-OFED): see
plugins/module_utils/cfcore/parsers/mlnx_qos.py. Replay wording (the real tool's
message is a netlink error whose text is not documented): an unknown interface
prints "Netlink error: Interface <if> not found" and exits 1.
"""

from __future__ import annotations

import json
import os

from .common import Context, ToolResult

STATE_FILE = "mlnx_qos.json"
SEED_RECORD = "roce-sysfs.json"
# Subtrees of the sysroot this module owns entirely (files not wanted are removed).
SUBTREES = ("sys/class/net", "sys/kernel/config/rdma_cm")
DEFAULT_PRIO_TC = [1, 0, 2, 3, 4, 5, 6, 7]
USAGE = "Usage: mlnx_qos -i <interface> [options]\n"
RECEIVE_BUFFERS = "Receive buffer size (bytes): 130944,130944,0,0,0,0,0,0,total_size=1027728"


def netdevs(profile: dict) -> list:
    """The profile's RoCE netdevs, each merged over netdev_defaults."""
    section = profile.get("roce") or {}
    defaults = section.get("netdev_defaults") or {}
    merged = []
    for netdev in section.get("netdevs") or []:
        item = json.loads(json.dumps(defaults))
        item.update(netdev)
        merged.append(item)
    return merged


def _hca(profile: dict, name: str) -> dict:
    for hca in (profile.get("infiniband") or {}).get("hcas") or []:
        if hca["name"] == name:
            return hca
    return {}


# --------------------------------------------------------------------------- mlnx_qos state


def _state_path(ctx: Context) -> str:
    return os.path.join(ctx.state_dir, STATE_FILE)


def read_state(ctx: Context, profile: dict) -> dict:
    """{netdev: {trust, pfc, dscp2prio}} written under this profile; {} otherwise."""
    try:
        with open(_state_path(ctx)) as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("profile") != profile["profile"]["name"]:
        return {}
    return data.get("netdevs") or {}


def write_state(ctx: Context, profile: dict, netdev_states: dict) -> None:
    os.makedirs(ctx.state_dir, exist_ok=True)
    path = _state_path(ctx)
    tmp = path + ".tmp"
    with open(tmp, "w") as handle:
        json.dump({"profile": profile["profile"]["name"], "netdevs": netdev_states}, handle, sort_keys=True)
    os.replace(tmp, path)


def qos_of(ctx: Context, profile: dict, netdev: dict) -> dict:
    """The netdev's effective QoS: the profile's, then what mlnx_qos wrote."""
    qos = {
        "trust": netdev.get("trust", "pcp"),
        "pfc": list(netdev.get("pfc") or [0] * 8),
        "dscp2prio": {int(k): int(v) for k, v in (netdev.get("dscp2prio") or {}).items()},
    }
    written = read_state(ctx, profile).get(netdev["name"]) or {}
    if "trust" in written:
        qos["trust"] = written["trust"]
    if "pfc" in written:
        qos["pfc"] = list(written["pfc"])
    for dscp, prio in (written.get("dscp2prio") or {}).items():
        qos["dscp2prio"][int(dscp)] = int(prio)
    return qos


def render_qos(netdev: dict, qos: dict) -> str:
    lines = [f"DCBX mode: {netdev.get('dcbx', 'OS controlled')}", f"Priority trust state: {qos['trust']}"]
    if qos["trust"] == "dscp":
        lines.append("dscp2prio mapping:")
        rows = {prio: [] for prio in range(8)}
        for dscp in range(63, -1, -1):
            rows[qos["dscp2prio"].get(dscp, dscp >> 3)].append(f"{dscp:02d},")
        for prio in range(8):
            cells = rows[prio]
            for start in range(0, len(cells), 8):
                lines.append(f"\tprio:{prio} dscp:" + "".join(cells[start : start + 8]))
    lines.append("default priority:")
    lines.append(RECEIVE_BUFFERS)
    lines.append(f"Cable len: {netdev.get('cable_len', 7)}")
    lines.append("PFC configuration:")
    lines.append("\tpriority    0   1   2   3   4   5   6   7")
    lines.append("\tenabled     " + "".join(f"{value:1d}   " for value in qos["pfc"]))
    lines.append("\tbuffer      " + "".join(f"{1 if value else 0:1d}   " for value in qos["pfc"]))
    prio_tc = netdev.get("prio_tc") or DEFAULT_PRIO_TC
    tsa = netdev.get("tsa") or ["vendor"] * 8
    tc2up: dict = {}
    for prio, tc in enumerate(prio_tc):
        tc2up.setdefault(tc, []).append(prio)
    for tc, prios in tc2up.items():
        lines.append(f"tc: {tc} ratelimit: unlimited, tsa: {tsa[tc]}")
        lines += [f"\t priority:  {prio}" for prio in prios]
    return "\n".join(lines) + "\n"


def _option(args: list, index: int, names: tuple) -> tuple:
    """(value, next index) of option args[index] in `names` (`--opt V` or `--opt=V`), or (None, index)."""
    arg = args[index]
    for name in names:
        if arg == name:
            if index + 1 >= len(args):
                return "", index + 1
            return args[index + 1], index + 2
        if name.startswith("--") and arg.startswith(name + "="):
            return arg[len(name) + 1 :], index + 1
    return None, index


def _bad(message: str) -> ToolResult:
    # mlnx_qos prints its own errors with print(): on stdout.
    return ToolResult(rc=1, stdout=message + "\n")


def mlnx_qos(profile: dict, args: list, ctx: Context) -> ToolResult:
    iface = trust = pfc = None
    dscp2prio: list = []
    index = 0
    while index < len(args):
        for names, slot in (
            (("-i", "--interface"), "iface"),
            (("--trust",), "trust"),
            (("-f", "--pfc"), "pfc"),
            (("--dscp2prio",), "dscp2prio"),
        ):
            value, after = _option(args, index, names)
            if value is not None:
                if slot == "iface":
                    iface = value
                elif slot == "trust":
                    trust = value
                elif slot == "pfc":
                    pfc = value
                else:
                    dscp2prio.append(value)
                index = after
                break
        else:
            if args[index] == "-a":
                index += 1
                continue
            if not args[index].startswith("-"):
                return ToolResult(rc=1, stdout="Bad arguments\n" + USAGE)
            return ToolResult(
                rc=2,
                stderr=f"hwreplay: mlnx_qos option {args[index]} is not replayed "
                "(only -i, --trust, --pfc/-f, --dscp2prio, -a)\n",
            )
    if not iface:
        return ToolResult(rc=1, stdout="Interface name is required\n" + USAGE)
    by_name = {netdev["name"]: netdev for netdev in netdevs(profile)}
    if iface not in by_name:
        return ToolResult(rc=1, stdout=f"Netlink error: Interface {iface} not found\n")
    netdev = by_name[iface]
    writes: dict = {}
    if pfc is not None:
        parts = pfc.split(",")
        if len(parts) > 8:
            return _bad("Too many items for PFC")
        try:
            values = [int(part) for part in parts]
        except ValueError:
            return _bad(
                f"Bad value for PFC: invalid literal for int() with base 10: {pfc!r}\n{USAGE.rstrip()}"
            )
        if any(value not in (0, 1) for value in values):
            bad = next(value for value in values if value not in (0, 1))
            return _bad(f"Bad value for PFC: {bad} is not in the range 0..1\n{USAGE.rstrip()}")
        if len(values) != 8:
            return _bad("pfc list must have 8 items")
        writes["pfc"] = values
    if dscp2prio and trust:
        return _bad("trust and dscp2prio commands cannot be used at the same time.")
    mapping = {}
    for item in dscp2prio:
        fields = item.split(",")
        try:
            action, dscp, prio = fields[0], int(fields[1]), int(fields[2])
        except (IndexError, ValueError):
            return _bad("Invalid dscp2prio command. Refer to the help.")
        if action not in ("set", "del") or not 0 <= dscp <= 63 or not 0 <= prio <= 7:
            return _bad("Invalid dscp2prio command. Refer to the help.")
        mapping[str(dscp)] = prio if action == "set" else dscp >> 3
    if mapping:
        writes["dscp2prio"] = mapping
    if trust is not None:
        if trust not in ("dscp", "pcp"):
            return _bad("Invalid trust state command. Refer to the help.")
        writes["trust"] = trust
    if writes:
        states = read_state(ctx, profile)
        current = states.setdefault(iface, {})
        if "dscp2prio" in writes:
            current.setdefault("dscp2prio", {}).update(writes.pop("dscp2prio"))
        current.update(writes)
        write_state(ctx, profile, states)
    return ToolResult(stdout=render_qos(netdev, qos_of(ctx, profile, netdev)))


# --------------------------------------------------------------------------- sysfs


def _hex4(number: int) -> str:
    return f"{number:04x}"


def ipv4_gid(address: str) -> str:
    octets = [int(part) for part in address.split(".")]
    return (
        "0000:0000:0000:0000:0000:ffff:"
        + _hex4(octets[0] << 8 | octets[1])
        + ":"
        + _hex4(octets[2] << 8 | octets[3])
    )


def link_local_gid(port_guid: str) -> str:
    digits = port_guid[2:].rjust(16, "0")
    return "fe80:0000:0000:0000:" + ":".join(digits[i : i + 4] for i in range(0, 16, 4))


def fixed_files(profile: dict) -> dict:
    """Read-only RoCE sysfs files: relative path -> content."""
    files = {}
    for netdev in netdevs(profile):
        name, ibdev = netdev["name"], netdev["hca"]
        hca = _hca(profile, ibdev)
        files[f"sys/class/net/{name}/device/infiniband/{ibdev}/node_guid"] = hca.get("node_guid", "0x0")
        port = f"sys/class/infiniband/{ibdev}/ports/1"
        guid = ((hca.get("ports") or [{}])[0]).get("port_guid", "0x0")
        gids = [("IB/RoCE v1", link_local_gid(guid)), ("RoCE v2", link_local_gid(guid))]
        if netdev.get("ipv4"):
            gids += [("IB/RoCE v1", ipv4_gid(netdev["ipv4"])), ("RoCE v2", ipv4_gid(netdev["ipv4"]))]
        for gid_index, (kind, gid) in enumerate(gids):
            files[f"{port}/gid_attrs/types/{gid_index}"] = kind
            files[f"{port}/gid_attrs/ndevs/{gid_index}"] = name
            files[f"{port}/gids/{gid_index}"] = gid
    return {path: content + "\n" for path, content in files.items()}


def seeded_files(profile: dict) -> dict:
    """Writable RoCE attributes as the profile starts them: relative path -> content."""
    files = {}
    for netdev in netdevs(profile):
        name, ibdev = netdev["name"], netdev["hca"]
        net = f"sys/class/net/{name}"
        files[f"{net}/mtu"] = str(netdev.get("mtu", 1500))
        for point in ("np", "rp"):
            values = netdev.get(f"ecn_{point}") or [1] * 8
            for prio, value in enumerate(values):
                files[f"{net}/ecn/roce_{point}/enable/{prio}"] = str(value)
        files[f"{net}/ecn/roce_np/cnp_dscp"] = str(netdev.get("cnp_dscp", 48))
        if netdev.get("traffic_class") is not None:
            files[f"sys/class/infiniband/{ibdev}/tc/1/traffic_class"] = (
                f"Global tclass={netdev['traffic_class']}"
            )
        else:
            files[f"sys/class/infiniband/{ibdev}/tc/1/traffic_class"] = ""
        if netdev.get("default_roce_tos") is not None:
            path = f"sys/kernel/config/rdma_cm/{ibdev}/ports/1/default_roce_tos"
            files[path] = str(netdev["default_roce_tos"])
    return {path: (content + "\n" if content else "") for path, content in files.items()}


def _read(path: str) -> str | None:
    try:
        with open(path) as handle:
            return handle.read()
    except OSError:
        return None


def seed(ctx: Context, profile: dict, seeded: dict, write) -> int:
    """Write the seeded files missing, or all of them when the profile changed; returns how many."""
    record = os.path.join(ctx.state_dir, SEED_RECORD)
    name = profile["profile"]["name"]
    previous = None
    try:
        with open(record) as handle:
            previous = json.load(handle).get("profile")
    except (OSError, ValueError, AttributeError):
        pass
    switched = previous != name
    written = 0
    for rel, content in sorted(seeded.items()):
        path = os.path.join(ctx.sysroot, rel)
        if switched or _read(path) is None:
            written += write(path, content, 0o644)
    if switched:
        # Other hardware: what mlnx_qos wrote on the previous profile's ports is gone with it.
        if os.path.exists(_state_path(ctx)):
            os.unlink(_state_path(ctx))
        if seeded or previous is not None:
            os.makedirs(ctx.state_dir, exist_ok=True)
            with open(record, "w") as handle:
                json.dump({"profile": name}, handle)
    return written
