"""Replayed Huawei Ascend tools: `npu-smi info ...` and `hccn_tool -i N -<item> -g`."""

from __future__ import annotations

from .common import ToolResult, fail

RC_ERROR = 1
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


def info_table(ascend: dict) -> str:
    """`npu-smi info`: the device table and the (empty) process table."""
    version = ascend["driver_version"]
    lines = [
        "+" + "-" * 96 + "+",
        f"| npu-smi {version:<25}Version: {version:<53}|",
        RULE,
        "| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|",
        "| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |",
        DOUBLE_RULE,
    ]
    for npu in ascend["npus"]:
        # Row 1: NPU, name | health | power, temperature, hugepages used / total.
        power = f"{npu['power_w']:.1f}"
        lines.append(
            f"| {npu['id']:<6}{npu['name']:<20}| {npu['health']:<14}| "
            f"{power:<12}{npu['temp_c']:<18}{0:<5}/ {0:<14}|"
        )
        # Row 2: chip | bus id | AI core %, memory used / total, HBM used / total (MB).
        memory = f"{npu['memory_used_mb']:<5}/ {npu['memory_total_mb']:<11}"
        hbm = f"{npu['hbm_used_mb']:<5}/ {npu['hbm_total_mb']:<14}"
        lines.append(f"| {npu['chip_id']:<26}| {npu['bus_id']:<14}| {npu['aicore_pct']:<12}{memory}{hbm}|")
        lines.append(DOUBLE_RULE)
    lines.append(RULE)
    lines.append(
        "| NPU     Chip              | Process id    | Process name             | Process memory(MB)      |"
    )
    lines.append(DOUBLE_RULE)
    for npu in ascend["npus"]:
        message = f"No running processes found in NPU {npu['id']}"
        lines.append(f"| {message:<95}|")
        lines.append(DOUBLE_RULE)
    return "\n".join(lines) + "\n"


def board(ascend: dict, npu: dict, chip: int | None) -> str:
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
            ("Compatibility", "OK"),
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
            ("Chip Count", 1),
        ]
    else:
        rows = [
            ("NPU ID", npu["id"]),
            ("Chip ID", chip),
            ("Chip Type", "Ascend"),
            ("Chip Name", npu["name"]),
            ("Chip Version", "V1"),
            ("Board ID", info["board_id"]),
            ("PCB ID", "NA"),
            ("BOM ID", info["bom_id"]),
            ("VDie ID", info["vdie_id"]),
            ("NDie ID", info["ndie_id"]),
            ("Chip Position ID", npu["id"]),
            ("PCIe Bus Info", npu["bus_id"]),
            ("Firmware Version", ascend["firmware_version"]),
        ]
    return "\n".join(field(label, value) for label, value in rows) + "\n"


def health(npu: dict) -> str:
    rows = [
        ("Health Status", npu["health"]),
        ("Error Code", npu.get("error_code") or "NA"),
        ("Error Information", npu.get("error_info") or "NA"),
    ]
    return "\n".join(field(label, value) for label, value in rows) + "\n"


def usages(npu: dict) -> str:
    hbm_pct = round(100.0 * npu["hbm_used_mb"] / npu["hbm_total_mb"]) if npu["hbm_total_mb"] else 0
    head = [field("NPU ID", npu["id"]), field("Chip Count", 1), ""]
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
    return "\n".join(head + [field(label, value) for label, value in rows]) + "\n"


def mapping(ascend: dict) -> str:
    lines = [f"\t{'NPU ID':<31}{'Chip ID':<31}{'Chip Logic ID':<31}{'Chip Name'}"]
    for logic, npu in enumerate(ascend["npus"]):
        lines.append(f"\t{npu['id']:<31}{npu['chip_id']:<31}{logic:<31}{'Ascend ' + npu['name']}")
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
    rest = args[1:]
    if not rest:
        return ToolResult(stdout=info_table(ascend))
    if rest in (["-h"], ["--help"]):
        return ToolResult(stdout=NPU_SMI_USAGE)
    if rest == ["-m"]:
        return ToolResult(stdout=mapping(ascend))
    flags = parse_flags(rest, ("-t", "-i", "-c"))
    renderers = {"board": None, "health": None, "usages": None}
    if flags is None or flags.get("-t") not in renderers or "-i" not in flags:
        return fail(RC_ERROR, "Invalid parameter.\n" + NPU_SMI_USAGE)
    by_id = {str(npu["id"]): npu for npu in ascend["npus"]}
    npu = by_id.get(flags["-i"])
    if npu is None:
        return fail(RC_ERROR, f"The device id {flags['-i']} is invalid.")
    chip = flags.get("-c")
    if chip is not None and chip != str(npu["chip_id"]):
        return fail(RC_ERROR, f"The chip id {chip} is invalid.")
    kind = flags["-t"]
    if kind == "board":
        return ToolResult(stdout=board(ascend, npu, None if chip is None else int(chip)))
    if kind == "health":
        return ToolResult(stdout=health(npu))
    return ToolResult(stdout=usages(npu))


def hccn_tool(profile: dict, args: list) -> ToolResult:
    """hccn_tool -i <device> -<item> -g for the NPU's on-package RoCE NIC."""
    items = ("-ip", "-link", "-net_health", "-netdetect", "-gateway")
    if len(args) != 4 or args[0] != "-i" or args[2] not in items or args[3] != "-g":
        return fail(RC_ERROR, f"Invalid command. Usage: hccn_tool -i <device_id> {{{','.join(items)}}} -g")
    by_id = {str(npu["id"]): npu for npu in profile["ascend"]["npus"]}
    npu = by_id.get(args[1])
    if npu is None:
        return fail(RC_ERROR, f"device id {args[1]} is invalid")
    nic = npu["nic"]
    item = args[2]
    if item == "-ip":
        if not nic.get("address"):
            return ToolResult()  # no address configured: the tool prints nothing
        return ToolResult(stdout=f"ipaddr:{nic['address']}\nnetmask:{nic['netmask']}\n")
    if item == "-link":
        return ToolResult(stdout=f"link status: {nic['link']}\n")
    if item == "-net_health":
        return ToolResult(stdout=f"net health status: {nic['net_health']}\n")
    if item == "-netdetect":
        return ToolResult(stdout=f"netdetect address: {nic.get('netdetect') or ''}\n")
    return ToolResult(stdout=f"default gateway:{nic.get('gateway') or ''}, Iface:eth{npu['id']}\n")
