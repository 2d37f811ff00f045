"""Replayed Huawei Ascend tools: `npu-smi info ...` and `hccn_tool -i N -<item> -g|-s ...`.

`ascend.npus` holds one entry per chip as npu-smi lists them: `id` (the NPU),
`chip_id` and, on A3 (two dies per NPU), `phy_id`, which is also hccn_tool's
device id there (on 910B the NPU id is). Installed versions, the board
compatibility and /etc/hccn.conf come in through ascend_installed.apply().
"""

from __future__ import annotations

import ipaddress

from . import ascend_installed, perf
from .ascend_installed import nic_device_id
from .common import Context, ToolResult, fail

RC_ERROR = 1
BROADCAST = ipaddress.IPv4Address("255.255.255.255")
RULE = "+" + "-" * 27 + "+" + "-" * 15 + "+" + "-" * 52 + "+"
DOUBLE_RULE = "+" + "=" * 27 + "+" + "=" * 15 + "+" + "=" * 52 + "+"
NPU_SMI_USAGE = """Usage: npu-smi info <watch|proc|-h|-m|-l|-t type> [Options...]

Commands:
       -h, --help     Show this help text and exit
       -m             Show all device's mapping information
       -t type        Show information for type (board, health, usages, ...)

Options:
       -i %d          Card ID
       -c %d          Chip ID
"""


def field(label: str, value) -> str:
    """One 'key : value' line of npu-smi's detail views (tab-indented, 31-column keys)."""
    return f"\t{label:<31}: {value}"


def npu_ids(ascend: dict) -> list:
    """The NPU ids in npu-smi's order, once each (an A3 NPU has two chip entries)."""
    return list(dict.fromkeys(npu["id"] for npu in ascend["npus"]))


def chips_of(ascend: dict, npu_id: int) -> list:
    return [npu for npu in ascend["npus"] if npu["id"] == npu_id]


def multi_die(ascend: dict) -> bool:
    """A3 (910C) style: chips carry a Phy-ID, and npu-smi's chip column names it."""
    return any(npu.get("phy_id") is not None for npu in ascend["npus"])


def info_table(ascend: dict) -> str:
    """`npu-smi info`: the device table and the (empty) process table.

    One block per chip; an A3 NPU's two dies are two blocks (the NPU line repeated,
    power '-' on the second die) parted by a plain rule, NPUs by a double rule.
    """
    version = ascend["driver_version"]
    chip_header = "Chip  Phy-ID" if multi_die(ascend) else "Chip"
    lines = [
        "+" + "-" * 96 + "+",
        f"| npu-smi {version:<25}Version: {version:<53}|",
        RULE,
        "| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|",
        f"| {chip_header:<26}| Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |",
        DOUBLE_RULE,
    ]
    npus = ascend["npus"]
    for position, npu in enumerate(npus):
        # Row 1: NPU, name | health | power, temperature, hugepages used / total.
        power = "-" if npu.get("power_w") is None else f"{npu['power_w']:.1f}"
        lines.append(
            f"| {npu['id']:<6}{npu['name']:<20}| {npu['health']:<14}| "
            f"{power:<12}{npu['temp_c']:<18}{0:<5}/ {0:<14}|"
        )
        # Row 2: chip (and Phy-ID) | bus id | AI core %, memory used / total, HBM used / total (MB).
        memory = f"{npu['memory_used_mb']:<5}/ {npu['memory_total_mb']:<11}"
        hbm = f"{npu['hbm_used_mb']:<5}/ {npu['hbm_total_mb']:<14}"
        chip = f"{npu['chip_id']:<6}{npu['phy_id']}" if npu.get("phy_id") is not None else npu["chip_id"]
        lines.append(f"| {chip:<26}| {npu['bus_id']:<14}| {npu['aicore_pct']:<12}{memory}{hbm}|")
        same_npu = position + 1 < len(npus) and npus[position + 1]["id"] == npu["id"]
        lines.append("+" + "-" * 96 + "+" if same_npu else DOUBLE_RULE)
    lines.append(RULE)
    lines.append(
        "| NPU     Chip              | Process id    | Process name             | Process memory(MB)      |"
    )
    lines.append(DOUBLE_RULE)
    for npu_id in npu_ids(ascend):
        message = f"No running processes found in NPU {npu_id}"
        lines.append(f"| {message:<95}|")
        lines.append(DOUBLE_RULE)
    return "\n".join(lines) + "\n"


def compatibility(ascend: dict) -> str:
    """The driver record's verdict (ascend_installed.apply), else the profile's `compatible` (default yes)."""
    if ascend.get("compatibility"):
        return ascend["compatibility"]
    return "OK" if ascend.get("compatible", True) else "NOK"


def board(ascend: dict, chips: list, chip: dict | None) -> str:
    """`-t board -i N` (the card: first chip's board data, Chip Count) or `-t board -i N -c C` (one chip)."""
    npu = chips[0] if chip is None else chip
    info = npu["board"]
    if chip is None:
        rows = [
            ("NPU ID", npu["id"]),
            ("Product Name", info["product_name"]),
            ("Model", "NA"),
            ("Manufacturer", "Huawei"),
            ("Serial Number", info["serial"]),
            ("Software Version", ascend["driver_version"]),
            ("Firmware Version", ascend["firmware_version"]),
            ("Compatibility", compatibility(ascend)),
            ("Board ID", info["board_id"]),
            ("PCB ID", info["pcb_id"]),
            ("BOM ID", info["bom_id"]),
            ("PCIe Bus Info", npu["bus_id"]),
            ("Slot ID", npu["id"]),
            ("Class ID", "NA"),
            ("PCI Vendor ID", "0x19E5"),
            ("PCI Device ID", info["pci_device_id"]),
            ("Subsystem Vendor ID", "0x0200"),
            ("Subsystem Device ID", "0x0100"),
            ("Chip Count", len(chips)),
        ]
    else:
        rows = [
            ("NPU ID", npu["id"]),
            ("Chip ID", npu["chip_id"]),
            ("Chip Type", "Ascend"),
            ("Chip Name", npu["name"]),
            ("Chip Version", "V1"),
            ("Board ID", info["board_id"]),
            ("PCB ID", "NA"),
            ("BOM ID", info["bom_id"]),
            ("VDie ID", info["vdie_id"]),
            ("NDie ID", info["ndie_id"]),
            ("Chip Position ID", nic_device_id(npu)),
            ("PCIe Bus Info", npu["bus_id"]),
            ("Firmware Version", ascend["firmware_version"]),
        ]
    return "\n".join(field(label, value) for label, value in rows) + "\n"


def health_rows(npu: dict) -> list:
    return [
        field("Health Status", npu["health"]),
        field("Error Code", npu.get("error_code") or "NA"),
        field("Error Information", npu.get("error_info") or "NA"),
    ]


def health(chips: list, chip: dict | None) -> str:
    """One chip: its three lines; a multi-chip NPU without -c: a block per chip, closed by its Chip ID."""
    if chip is not None or len(chips) == 1:
        return "\n".join(health_rows(chip or chips[0])) + "\n"
    lines = [field("NPU ID", chips[0]["id"]), field("Chip Count", len(chips))]
    for npu in chips:
        lines += ["", *health_rows(npu), field("Chip ID", npu["chip_id"])]
    return "\n".join(lines) + "\n"


def usage_rows(npu: dict) -> list:
    hbm_pct = round(100.0 * npu["hbm_used_mb"] / npu["hbm_total_mb"]) if npu["hbm_total_mb"] else 0
    rows = [
        ("DDR Capacity(MB)", npu["memory_total_mb"]),
        ("DDR Usage Rate(%)", 0),
        ("DDR Hugepages Total(page)", 0),
        ("DDR Hugepages Usage Rate(%)", 0),
        ("HBM Capacity(MB)", npu["hbm_total_mb"]),
        ("HBM Usage Rate(%)", hbm_pct),
        ("Aicore Usage Rate(%)", npu["aicore_pct"]),
        ("Aivector Usage Rate(%)", 0),
        ("Aicpu Usage Rate(%)", 0),
        ("Ctrlcpu Usage Rate(%)", 0),
        ("DDR Bandwidth Usage Rate(%)", 0),
        ("HBM Bandwidth Usage Rate(%)", 0),
        ("Chip ID", npu["chip_id"]),
    ]
    return [field(label, value) for label, value in rows]


def usages(chips: list, chip: dict | None) -> str:
    shown = [chip] if chip is not None else chips
    lines = [field("NPU ID", shown[0]["id"]), field("Chip Count", len(shown))]
    for npu in shown:
        lines += ["", *usage_rows(npu)]
    return "\n".join(lines) + "\n"


def mapping(ascend: dict) -> str:
    lines = [f"\t{'NPU ID':<31}{'Chip ID':<31}{'Chip Logic ID':<31}{'Chip Name'}"]
    for logic, npu in enumerate(ascend["npus"]):
        name = npu["name"] if npu["name"].startswith("Ascend") else "Ascend " + npu["name"]
        lines.append(f"\t{npu['id']:<31}{npu['chip_id']:<31}{logic:<31}{name}")
    return "\n".join(lines) + "\n"


def parse_flags(args: list, allowed: tuple):
    """'-t board -i 0 -c 0' -> {'-t': 'board', '-i': '0', '-c': '0'}; None when malformed."""
    flags = {}
    if len(args) % 2:
        return None
    for position in range(0, len(args), 2):
        if args[position] not in allowed or args[position] in flags:
            return None
        flags[args[position]] = args[position + 1]
    return flags


def npu_smi(profile: dict, args: list) -> ToolResult:
    ascend = profile["ascend"]
    if not args or args[0] != "info":
        return fail(RC_ERROR, "Invalid command.\n" + NPU_SMI_USAGE)
    if ascend.get("driver_chip_mismatch"):
        # The installed driver is for another chip (ascend_installed.py): DCMI cannot start.
        return ToolResult(rc=RC_ERROR, stdout="dcmi module initialize failed. ret is -8005\n")
    rest = args[1:]
    if not rest:
        return ToolResult(stdout=info_table(ascend))
    if rest in (["-h"], ["--help"]):
        return ToolResult(stdout=NPU_SMI_USAGE)
    if rest == ["-m"]:
        return ToolResult(stdout=mapping(ascend))
    flags = parse_flags(rest, ("-t", "-i", "-c"))
    if flags is None or flags.get("-t") not in ("board", "health", "usages") or "-i" not in flags:
        return fail(RC_ERROR, "Invalid parameter.\n" + NPU_SMI_USAGE)
    chips = [npu for npu in ascend["npus"] if str(npu["id"]) == flags["-i"]]
    if not chips:
        return fail(RC_ERROR, f"The device id {flags['-i']} is invalid.")
    chip = None
    if "-c" in flags:
        chip = next((npu for npu in chips if str(npu["chip_id"]) == flags["-c"]), None)
        if chip is None:
            return fail(RC_ERROR, f"The chip id {flags['-c']} is invalid.")
    kind = flags["-t"]
    if kind == "board":
        return ToolResult(stdout=board(ascend, chips, chip))
    if kind == "health":
        return ToolResult(stdout=health(chips, chip))
    return ToolResult(stdout=usages(chips, chip))


# ------------------------------------------------------------------ hccn_tool

HCCN_ITEMS = ("-ip", "-link", "-net_health", "-netdetect", "-gateway")
# `-s` forms: item -> the key/value words it takes -> the /etc/hccn.conf key each sets.
HCCN_SET = {
    "-ip": {"address": "address", "netmask": "netmask"},
    "-gateway": {"gateway": "gateway"},
    "-netdetect": {"address": "netdetect"},
}
HCCN_USAGE = (
    "Usage: hccn_tool -i <device_id> {" + ",".join(HCCN_ITEMS) + "} -g\n"
    "       hccn_tool -i <device_id> -ping -g address <ip> [pkt <count>]\n"
    "       hccn_tool -i <device_id> -ip -s address <ip> netmask <mask>\n"
    "       hccn_tool -i <device_id> -gateway -s gateway <ip>\n"
    "       hccn_tool -i <device_id> -netdetect -s address <ip>"
)


def unicast_error(word: str, value: str) -> str | None:
    """Why `value` is no usable IPv4 unicast address for `word`, or None."""
    try:
        address = ipaddress.IPv4Address(value)
    except ValueError:
        return f"{word} {value} is not a valid IPv4 address"
    if address.is_unspecified or address.is_loopback or address.is_multicast or address == BROADCAST:
        return f"{word} {value} is not a unicast address"
    return None


def netmask_error(value: str) -> str | None:
    try:
        mask = int(ipaddress.IPv4Address(value))
    except ValueError:
        return f"netmask {value} is not a valid IPv4 netmask"
    hosts = ~mask & 0xFFFFFFFF
    if mask == 0 or hosts & (hosts + 1):
        return f"netmask {value} is not a valid netmask (the ones must be contiguous)"
    return None


def hccn_set(ctx: Context, npu: dict, item: str, pairs: dict) -> ToolResult:
    """`-s`: check the values as the tool does, then keep them in /etc/hccn.conf."""
    wanted = HCCN_SET[item]
    for word, value in pairs.items():
        problem = netmask_error(value) if word == "netmask" else unicast_error(word, value)
        if problem:
            return fail(RC_ERROR, f"Invalid parameter: {problem}.")
    if item == "-ip":
        network = ipaddress.IPv4Network(f"{pairs['address']}/{pairs['netmask']}", strict=False)
        address = ipaddress.IPv4Address(pairs["address"])
        if network.prefixlen < 31 and address in (network.network_address, network.broadcast_address):
            return fail(
                RC_ERROR,
                f"Invalid parameter: address {address} is the network or broadcast address of {network}.",
            )
    values = {wanted[word]: value for word, value in pairs.items()}
    try:
        ascend_installed.write_conf(ctx, nic_device_id(npu), values)
    except PermissionError:
        return fail(RC_ERROR, f"set {item[1:]} failed: permission denied ({ascend_installed.conf_path(ctx)})")
    return ToolResult()


def hccn_ping_command(profile: dict, args: list) -> ToolResult:
    """`-i N -ping -g address A [pkt C]` (perf validation's NPU NIC pair test; perf.hccn_ping)."""
    by_id = {str(nic_device_id(npu)): npu for npu in profile["ascend"]["npus"]}
    npu = by_id.get(args[1])
    if npu is None:
        return fail(RC_ERROR, f"device id {args[1]} is invalid")
    result = perf.hccn_ping(profile, npu, args)
    return result if result is not None else fail(RC_ERROR, f"Invalid command. {HCCN_USAGE}")


def hccn_tool(profile: dict, args: list, ctx: Context | None = None) -> ToolResult:
    """hccn_tool -i <device> -<item> -g|-s ... for the NPU's on-package RoCE NIC (device: the chip's id).

    A well-formed `-s` call on a known device is logged (ascend_installed.log_call), refused or not.
    """
    ctx = ctx or Context()
    if len(args) >= 4 and args[0] == "-i" and args[2] == "-ping" and args[3] == "-g":
        return hccn_ping_command(profile, args)
    getting = len(args) == 4 and args[3] == "-g"
    setting = len(args) > 4 and args[3] == "-s" and args[2] in HCCN_SET
    if len(args) < 4 or args[0] != "-i" or args[2] not in HCCN_ITEMS or not (getting or setting):
        return fail(RC_ERROR, f"Invalid command. {HCCN_USAGE}")
    by_id = {str(nic_device_id(npu)): npu for npu in profile["ascend"]["npus"]}
    npu = by_id.get(args[1])
    if npu is None:
        return fail(RC_ERROR, f"device id {args[1]} is invalid")
    item = args[2]
    if setting:
        pairs = parse_flags(args[4:], tuple(HCCN_SET[item]))
        if pairs is None or set(pairs) != set(HCCN_SET[item]):
            return fail(RC_ERROR, f"Invalid command. {HCCN_USAGE}")
        result = hccn_set(ctx, npu, item, pairs)
        ascend_installed.log_call(ctx, args, result.rc)
        return result
    nic = npu["nic"]
    if item == "-ip":
        if not nic.get("address"):
            return ToolResult()  # no address configured: the tool prints nothing
        return ToolResult(stdout=f"ipaddr:{nic['address']}\nnetmask:{nic.get('netmask') or ''}\n")
    if item == "-link":
        return ToolResult(stdout=f"link status: {nic['link']}\n")
    if item == "-net_health":
        return ToolResult(stdout=f"net health status: {nic['net_health']}\n")
    if item == "-netdetect":
        return ToolResult(stdout=f"netdetect address: {nic.get('netdetect') or ''}\n")
    return ToolResult(stdout=f"default gateway:{nic.get('gateway') or ''}, Iface:eth{nic_device_id(npu)}\n")
