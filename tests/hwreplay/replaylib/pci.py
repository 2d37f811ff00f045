"""Replayed `lspci` ([-v|-vv|-vvv] [-n|-nn] [-D] [-k] [-d V:D[:C]] [-s [[D:]B:]S[.F]])."""

from __future__ import annotations

from .common import ToolResult, pci_domain4

CLASS_CODES = {
    "Host bridge": "0600",
    "PCI bridge": "0604",
    "Bridge": "0680",
    "3D controller": "0302",
    "Ethernet controller": "0200",
    "Infiniband controller": "0207",
    "Processing accelerators": "1200",
    "SATA controller": "0106",
    "Non-Volatile memory controller": "0108",
}
VENDORS = {
    "10de": "NVIDIA Corporation",
    "15b3": "Mellanox Technologies",
    "19e5": "Huawei Technologies Co., Ltd.",
    "8086": "Intel Corporation",
    "144d": "Samsung Electronics Co Ltd",
}
GT_PER_GEN = {1: "2.5GT/s", 2: "5GT/s", 3: "8GT/s", 4: "16GT/s", 5: "32GT/s", 6: "64GT/s"}
CONTROL_LINE = (
    "\tControl: I/O- Mem+ BusMaster+ SpecCycle- MemWINV- VGASnoop- ParErr- Stepping- SERR- FastB2B- DisINTx+"
)
STATUS_LINE = (
    "\tStatus: Cap+ 66MHz- UDF- FastB2B- ParErr- DEVSEL=fast >TAbort- <TAbort- <MAbort- >SERR- <PERR- INTx-"
)
AER_UESTA_LINE = (
    "\t\tUESta:\tDLP- SDES- TLP- FCP- CmpltTO- CmpltAbrt- UnxCmplt- RxOF- MalfTLP- ECRC- UnsupReq- ACSViol-"
)
USAGE = (
    "Usage: lspci [<switches>]\n\n"
    "Basic display modes:\n-mm\t\tProduce machine-readable output (single -m for an obsolete format)\n"
    "Display options:\n-v\t\tBe verbose (-vv or -vvv for higher verbosity)\n-k\t\tShow kernel drivers\n"
    "-D\t\tAlways show domain numbers\n"
    "Resolving of device ID's to names:\n-n\t\tShow numeric ID's\n-nn\t\tShow both textual and numeric ID's\n"
    "Selection of devices:\n"
    "-s [[[[<domain>]:]<bus>]:][<slot>][.[<func>]]\tShow only devices in selected slots\n"
    "-d [<vendor>]:[<device>][:<class>]\t\tShow only devices with specified ID's\n"
)


def device_records(profile: dict) -> list:
    """Every PCI function the profile's hardware shows, as lspci needs it."""
    records = [dict(record) for record in profile.get("pci_other", [])]
    nvidia = profile.get("nvidia") or {}
    for gpu in nvidia.get("gpus", []):
        info = gpu["lspci"]
        records.append(
            {
                "bus": pci_domain4(gpu["bus_id"]),
                "class": "3D controller",
                "vendor": "10de",
                "device": gpu["pci_device_id"][2:6].lower(),
                "name": info["name"],
                "rev": info["rev"],
                "subsystem": gpu["pci_sub_system_id"][6:10].lower()
                + ":"
                + gpu["pci_sub_system_id"][2:6].lower(),
                "numa_node": gpu["numa_node"],
                "driver": "nvidia",
                "modules": "nvidiafb, nouveau, nvidia_drm, nvidia",
                "link_cap": (gpu["pcie"]["gen_max"], gpu["pcie"]["width_max"]),
                "link_sta": (gpu["pcie"]["gen_current"], gpu["pcie"]["width_current"]),
            }
        )
    for switch in nvidia.get("nvswitches", []):
        if "lspci" not in switch:
            continue  # NVLink 5 switch chips are no PCI functions of the host (managed through NVLSM)
        records.append(dict(switch["lspci"], bus=switch["bus_id"], numa_node=switch["numa_node"]))
    for hca in (profile.get("infiniband") or {}).get("hcas", []):
        info = hca["lspci"]
        layer = hca["ports"][0]["link_layer"]
        records.append(
            dict(
                info,
                bus=hca["pci_bus"],
                numa_node=hca["numa_node"],
                driver="mlx5_core",
                modules="mlx5_core",
                **{"class": "Infiniband controller" if layer == "InfiniBand" else "Ethernet controller"},
            )
        )
    for npu in (profile.get("ascend") or {}).get("npus", []):
        info = npu["lspci"]
        records.append(dict(info, bus=npu["bus_id"].lower(), numa_node=npu["numa_node"]))
    return sorted(records, key=lambda record: record["bus"])


def link_lines(record: dict) -> list:
    cap_gen, cap_width = record["link_cap"]
    sta_gen, sta_width = record.get("link_sta") or record["link_cap"]
    speed_state = "ok" if sta_gen >= cap_gen else "downgraded"
    width_state = "ok" if sta_width >= cap_width else "downgraded"
    return [
        f"\t\tLnkCap:\tPort #0, Speed {GT_PER_GEN[cap_gen]}, Width x{cap_width}, ASPM not supported",
        "\t\t\tClockPM- Surprise- LLActRep- BwNot- ASPMOptComp+",
        "\t\tLnkCtl:\tASPM Disabled; RCB 64 bytes, Disabled- CommClk-",
        "\t\t\tExtSynch- ClockPM- AutWidDis- BWInt- AutBWInt-",
        f"\t\tLnkSta:\tSpeed {GT_PER_GEN[sta_gen]} ({speed_state}), Width x{sta_width} ({width_state})",
        "\t\t\tTrErr- Train- SlotClk+ DLActive- BWMgmt- ABWMgmt-",
        f"\t\tLnkCap2: Supported Link Speeds: 2.5-{GT_PER_GEN[cap_gen]}, Crosslink- Retimer+ 2Retimers+ DRS-",
        f"\t\tLnkCtl2: Target Link Speed: {GT_PER_GEN[cap_gen]}, EnterCompliance- SpeedDis-",
    ]


def header(record: dict, numeric: int, domains: bool) -> str:
    bus = record["bus"] if domains else record["bus"].split(":", 1)[1]
    cls = CLASS_CODES[record["class"]]
    rev = f" (rev {record['rev']})" if record.get("rev") else ""
    if numeric == 1:
        return f"{bus} {cls}: {record['vendor']}:{record['device']}{rev}"
    vendor = VENDORS.get(record["vendor"], "Device")
    text = f"{vendor} {record['name']}"
    if numeric == 2:
        return f"{bus} {record['class']} [{cls}]: {text} [{record['vendor']}:{record['device']}]{rev}"
    return f"{bus} {record['class']}: {text}{rev}"


def subsystem(record: dict, numeric: int) -> str:
    sub_vendor, sub_device = record["subsystem"].split(":")
    if numeric == 1:
        return f"\tSubsystem: {sub_vendor}:{sub_device}"
    name = f"{VENDORS.get(sub_vendor, 'Device')} Device {sub_device}"
    return f"\tSubsystem: {name} [{sub_vendor}:{sub_device}]" if numeric == 2 else "\tSubsystem: " + name


def block(record: dict, verbose: int, numeric: int, domains: bool, kernel: bool) -> list:
    lines = [header(record, numeric, domains)]
    if verbose == 0:
        if kernel and record.get("driver"):
            lines.append(subsystem(record, numeric))
            lines.append("\tKernel driver in use: " + record["driver"])
            lines.append("\tKernel modules: " + record.get("modules", record["driver"]))
        return lines
    lines.append(subsystem(record, numeric))
    express = "\tCapabilities: [60] Express (v2) Endpoint, MSI 00"
    if verbose == 1:
        lines.append(f"\tFlags: bus master, fast devsel, latency 0, IRQ 16, NUMA node {record['numa_node']}")
        lines.append(express)
    else:
        lines.extend(
            [
                CONTROL_LINE,
                STATUS_LINE,
                "\tLatency: 0",
                "\tInterrupt: pin A routed to IRQ 16",
                f"\tNUMA node: {record['numa_node']}",
                express,
                "\t\tDevCap:\tMaxPayload 256 bytes, PhantFunc 0, Latency L0s <64ns, L1 <1us",
                "\t\t\tExtTag+ AttnBtn- AttnInd- PwrInd- RBE+ FLReset+ SlotPowerLimit 25.000W",
                "\t\tDevCtl:\tCorrErr+ NonFatalErr+ FatalErr+ UnsupReq+",
                "\t\t\tRlxdOrd+ ExtTag+ PhantFunc- AuxPwr- NoSnoop- FLReset-",
                "\t\t\tMaxPayload 256 bytes, MaxReadReq 4096 bytes",
                "\t\tDevSta:\tCorrErr- NonFatalErr- FatalErr- UnsupReq- AuxPwr- TransPend-",
            ]
        )
        if record.get("link_cap"):
            lines.extend(link_lines(record))
    if verbose >= 2:
        lines.append("\tCapabilities: [100 v1] Advanced Error Reporting")
        lines.append(AER_UESTA_LINE)
        lines.append("\t\tCESta:\tRxErr- BadTLP- BadDLLP- Rollover- Timeout- AdvNonFatalErr-")
    else:
        lines.append("\tCapabilities: [100] Advanced Error Reporting")
    if record.get("driver"):
        lines.append("\tKernel driver in use: " + record["driver"])
        lines.append("\tKernel modules: " + record.get("modules", record["driver"]))
    lines.append("")
    return lines


def hex_matches(want: str, have: str) -> bool:
    """One field of a -s/-d selector: empty or '*' matches anything (ValueError if not hex)."""
    return want in ("", "*") or int(want, 16) == int(have, 16)


def matches_slot(bus: str, spec: str) -> bool:
    """-s [[[[<domain>]:]<bus>]:][<slot>][.[<func>]] against '0000:1b:00.0'."""
    domain, bus_no, devfn = bus.split(":")
    slot, func = devfn.split(".")
    slot_part, _, func_part = spec.partition(".")
    parts = slot_part.split(":")
    if len(parts) > 3:
        raise ValueError(spec)
    wanted = [""] * (3 - len(parts)) + parts  # domain, bus, slot: the spec names the rightmost ones
    actual = (domain, bus_no, slot)
    return all(hex_matches(wanted[i], actual[i]) for i in range(3)) and hex_matches(func_part, func)


def matches_id(record: dict, spec: str) -> bool:
    """-d [<vendor>]:[<device>][:<class>]."""
    parts = spec.split(":")
    if len(parts) > 3:
        raise ValueError(spec)
    fields = (record["vendor"], record["device"], CLASS_CODES[record["class"]])
    return all(hex_matches(want, fields[i]) for i, want in enumerate(parts))


def parse_args(args: list):
    opts = {"verbose": 0, "numeric": 0, "domains": False, "kernel": False, "slot": None, "id": None}
    position = 0
    while position < len(args):
        arg = args[position]
        if arg in ("-s", "-d"):
            if position + 1 >= len(args):
                return None, f"lspci: option requires an argument -- '{arg[1]}'"
            opts["slot" if arg == "-s" else "id"] = args[position + 1]
            position += 2
            continue
        if not arg.startswith("-") or arg == "-":
            return None, f"lspci: unexpected argument '{arg}'"
        for letter in arg[1:]:
            if letter == "v":
                opts["verbose"] += 1
            elif letter == "n":
                opts["numeric"] += 1
            elif letter == "D":
                opts["domains"] = True
            elif letter == "k":
                opts["kernel"] = True
            else:
                return None, f"lspci: invalid option -- '{letter}'"
        position += 1
    return opts, None


def lspci(profile: dict, args: list) -> ToolResult:
    opts, error = parse_args(args)
    if opts is None:
        return ToolResult(rc=2, stderr=error + "\n" + USAGE)
    records = device_records(profile)
    try:
        if opts["slot"]:
            records = [record for record in records if matches_slot(record["bus"], opts["slot"])]
        if opts["id"]:
            records = [record for record in records if matches_id(record, opts["id"])]
    except ValueError:
        return ToolResult(rc=2, stderr=f"lspci: -{'s' if opts['slot'] else 'd'}: Invalid slot/id number\n")
    numeric = min(opts["numeric"], 2)
    lines = []
    for record in records:
        lines.extend(block(record, min(opts["verbose"], 3), numeric, opts["domains"], opts["kernel"]))
    return ToolResult(stdout="".join(line + "\n" for line in lines))
