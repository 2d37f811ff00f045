"""Replayed `nvidia-smi`: default table, -q (text/XML), --query-gpu CSV, -L, topo -m, nvlink -s."""

from __future__ import annotations

import time

from . import nvidia_query
from .common import ToolResult, ctime

INVALID_ARGS = "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n"
RC_INVALID_ARGS = 2  # nvidia-smi(1): "A supplied argument or flag is invalid"
RC_NOT_FOUND = 6  # "A query to find an object was unsuccessful"


def usage_error(message: str = INVALID_ARGS) -> ToolResult:
    # nvidia-smi prints its errors on stdout, not stderr.
    return ToolResult(rc=RC_INVALID_ARGS, stdout=message)


def yes_no(flag) -> str:
    return "Yes" if flag else "No"


def na(value) -> str:
    return "[N/A]" if value is None else str(value)


def ecc_total(gpu: dict, kind: str, scope: str) -> int:
    counts = gpu["ecc_errors"][scope]
    if kind == "uncorrected":
        return (
            counts["sram_uncorrectable_parity"]
            + counts["sram_uncorrectable_secded"]
            + counts["dram_uncorrectable"]
        )
    return counts["sram_correctable"] + counts["dram_correctable"]


def pages(gpu: dict, key: str):
    retired = gpu.get("retired_pages")
    if retired is None:
        return None
    return yes_no(retired[key]) if key == "pending" else retired[key]


# --query-gpu fields: name -> (unit shown in the header and after values, getter(gpu, nvidia, now)).
# Aliases map to the same getter, as in `nvidia-smi --help-query-gpu`.
def _field_table() -> dict:
    mem = "MiB"
    fields = {
        "timestamp": (None, lambda g, n, t: nvidia_timestamp(t)),
        "driver_version": (None, lambda g, n, t: n["driver_version"]),
        "count": (None, lambda g, n, t: len(n["gpus"])),
        "name": (None, lambda g, n, t: g["name"]),
        "serial": (None, lambda g, n, t: g["serial"]),
        "uuid": (None, lambda g, n, t: g["uuid"]),
        "pci.bus_id": (None, lambda g, n, t: g["bus_id"]),
        "pci.domain": (None, lambda g, n, t: "0x" + g["bus_id"].split(":")[0][-4:]),
        "pci.bus": (None, lambda g, n, t: "0x" + g["bus_id"].split(":")[1]),
        "pci.device": (None, lambda g, n, t: "0x" + g["bus_id"].split(":")[2].split(".")[0]),
        "pci.device_id": (None, lambda g, n, t: g["pci_device_id"]),
        "pci.sub_device_id": (None, lambda g, n, t: g["pci_sub_system_id"]),
        "pcie.link.gen.current": (None, lambda g, n, t: g["pcie"]["gen_current"]),
        "pcie.link.gen.max": (None, lambda g, n, t: g["pcie"]["gen_max"]),
        "pcie.link.width.current": (None, lambda g, n, t: g["pcie"]["width_current"]),
        "pcie.link.width.max": (None, lambda g, n, t: g["pcie"]["width_max"]),
        "index": (None, lambda g, n, t: g["index"]),
        "display_mode": (None, lambda g, n, t: g["display_mode"]),
        "display_active": (None, lambda g, n, t: "Disabled"),
        "persistence_mode": (None, lambda g, n, t: g["persistence_mode"]),
        "vbios_version": (None, lambda g, n, t: g["vbios_version"]),
        "inforom.img": (None, lambda g, n, t: g["inforom"]["image"]),
        "pstate": (None, lambda g, n, t: g["pstate"]),
        "memory.total": (mem, lambda g, n, t: g["memory"]["total_mib"]),
        "memory.reserved": (mem, lambda g, n, t: g["memory"]["reserved_mib"]),
        "memory.used": (mem, lambda g, n, t: g["memory"]["used_mib"]),
        "memory.free": (
            mem,
            lambda g, n, t: g["memory"]["total_mib"] - g["memory"]["reserved_mib"] - g["memory"]["used_mib"],
        ),
        "compute_mode": (None, lambda g, n, t: g["compute_mode"]),
        "compute_cap": (None, lambda g, n, t: g["compute_cap"]),
        "utilization.gpu": ("%", lambda g, n, t: g.get("utilization_pct", 0)),
        "utilization.memory": ("%", lambda g, n, t: 0),
        "ecc.mode.current": (None, lambda g, n, t: g["ecc_mode"]),
        "ecc.mode.pending": (None, lambda g, n, t: g["ecc_mode"]),
        "ecc.errors.corrected.volatile.total": (None, lambda g, n, t: ecc_total(g, "corrected", "volatile")),
        "ecc.errors.corrected.aggregate.total": (
            None,
            lambda g, n, t: ecc_total(g, "corrected", "aggregate"),
        ),
        "ecc.errors.uncorrected.volatile.total": (
            None,
            lambda g, n, t: ecc_total(g, "uncorrected", "volatile"),
        ),
        "ecc.errors.uncorrected.aggregate.total": (
            None,
            lambda g, n, t: ecc_total(g, "uncorrected", "aggregate"),
        ),
        "ecc.errors.uncorrected.volatile.dram": (
            None,
            lambda g, n, t: g["ecc_errors"]["volatile"]["dram_uncorrectable"],
        ),
        "ecc.errors.uncorrected.aggregate.dram": (
            None,
            lambda g, n, t: g["ecc_errors"]["aggregate"]["dram_uncorrectable"],
        ),
        "retired_pages.single_bit_ecc.count": (None, lambda g, n, t: pages(g, "single_bit")),
        "retired_pages.double_bit.count": (None, lambda g, n, t: pages(g, "double_bit")),
        "retired_pages.pending": (None, lambda g, n, t: pages(g, "pending")),
        "remapped_rows.correctable": (None, lambda g, n, t: g["remapped_rows"]["correctable"]),
        "remapped_rows.uncorrectable": (None, lambda g, n, t: g["remapped_rows"]["uncorrectable"]),
        "remapped_rows.pending": (None, lambda g, n, t: yes_no(g["remapped_rows"]["pending"])),
        "remapped_rows.failure": (None, lambda g, n, t: yes_no(g["remapped_rows"]["failure"])),
        "temperature.gpu": (None, lambda g, n, t: g["temperature"]["gpu_c"]),
        "temperature.memory": (None, lambda g, n, t: g["temperature"]["memory_c"]),
        "power.draw": ("W", lambda g, n, t: f"{g['power']['draw_w']:.2f}"),
        "power.limit": ("W", lambda g, n, t: f"{g['power']['limit_w']:.2f}"),
        "enforced.power.limit": ("W", lambda g, n, t: f"{g['power']['limit_w']:.2f}"),
        "power.default_limit": ("W", lambda g, n, t: f"{g['power']['default_limit_w']:.2f}"),
        "power.max_limit": ("W", lambda g, n, t: f"{g['power']['max_limit_w']:.2f}"),
        "clocks.current.sm": ("MHz", lambda g, n, t: g["clocks"]["sm"]),
        "clocks.max.sm": ("MHz", lambda g, n, t: g["clocks"]["max_sm"]),
        "mig.mode.current": (None, lambda g, n, t: g["mig_mode"]),
        "mig.mode.pending": (None, lambda g, n, t: g["mig_mode"]),
        "fabric.state": (None, lambda g, n, t: g["fabric"]["state"]),
        "fabric.status": (None, lambda g, n, t: g["fabric"]["status"]),
    }
    aliases = {
        "gpu_name": "name",
        "gpu_serial": "serial",
        "gpu_uuid": "uuid",
        "gpu_bus_id": "pci.bus_id",
        "clocks.sm": "clocks.current.sm",
        "gpu.power.requested_limit": "power.limit",
    }
    for alias, target in aliases.items():
        fields[alias] = fields[target]
    return fields


QUERY_FIELDS = _field_table()


def nvidia_timestamp(now: float) -> str:
    millis = int((now - int(now)) * 1000)
    return time.strftime("%Y/%m/%d %H:%M:%S", time.localtime(now)) + f".{millis:03d}"


def select_gpus(gpus: list, selector: str | None):
    """-i/--id: index, PCI bus id or UUID, comma-separated; None when nothing matches."""
    if selector is None:
        return gpus
    chosen = []
    for part in selector.split(","):
        part = part.strip()
        match = [
            gpu
            for gpu in gpus
            if part == str(gpu["index"])
            or part.upper() in (gpu["bus_id"].upper(), gpu["bus_id"].upper()[4:])
            or part == gpu["uuid"]
        ]
        if not match:
            return None
        chosen.extend(match)
    return chosen


def query_csv(nvidia: dict, gpus: list, fields_arg: str, fmt: str, now: float) -> ToolResult:
    options = [opt.strip() for opt in fmt.split(",")]
    if (
        not options
        or options[0] != "csv"
        or any(opt not in ("csv", "noheader", "nounits") for opt in options)
    ):
        return usage_error(f'"{fmt}" is not a valid format.\n') if fmt else usage_error()
    names = [name.strip() for name in fields_arg.split(",")]
    for name in names:
        if name not in QUERY_FIELDS:
            return usage_error(f'Field "{name}" is not a valid field to query.\n\n')
    units = "nounits" not in options
    lines = []
    if "noheader" not in options:
        header = []
        for name in names:
            suffix = QUERY_FIELDS[name][0]
            header.append(f"{name} [{suffix}]" if suffix and units else name)
        lines.append(", ".join(header))
    for gpu in gpus:
        row = []
        for name in names:
            suffix, getter = QUERY_FIELDS[name]
            value = getter(gpu, nvidia, now)
            text = na(value)
            if value is not None and suffix and units:
                text = f"{text} {suffix}"
            row.append(text)
        lines.append(", ".join(row))
    return ToolResult(stdout="\n".join(lines) + "\n")


def default_table(nvidia: dict, gpus: list, now: float) -> str:
    """The plain `nvidia-smi` table: 89 columns up to 535, 91 from 545 on (wider Bus-Id cell)."""
    wide = int(nvidia["driver_version"].split(".")[0]) >= 545
    mid = 24 if wide else 22
    width = 41 + mid + 22 + 4
    version = nvidia["driver_version"]
    dash = "+" + "-" * (width - 2) + "+"
    lines = [ctime(now) if wide else ctime(now) + "       ", dash]
    version_width = 15 if wide else 13
    lines.append(
        f"| NVIDIA-SMI {version:<23}Driver Version: {version:<{version_width}}"
        f"CUDA Version: {nvidia['cuda_version']:<9}|"
    )
    lines.append("|" + "-" * 41 + "+" + "-" * mid + "+" + "-" * 22 + "+")
    lines.append(
        "| GPU  Name                 Persistence-M | "
        + "Bus-Id".ljust(mid - 8)
        + "Disp.A | Volatile Uncorr. ECC |"
    )
    lines.append(
        "| Fan  Temp   Perf          Pwr:Usage/Cap | "
        + "Memory-Usage".rjust(mid - 2)
        + " | GPU-Util  Compute M. |"
    )
    lines.append("|" + " " * 41 + "|" + " " * mid + "|               MIG M. |")
    lines.append("|" + "=" * 41 + "+" + "=" * mid + "+" + "=" * 22 + "|")
    for gpu in gpus:
        persist = "On" if gpu["persistence_mode"] == "Enabled" else "Off"
        ecc = str(ecc_total(gpu, "uncorrected", "volatile")) if gpu["ecc_mode"] == "Enabled" else "N/A"
        mem = gpu["memory"]
        power = f"{round(gpu['power']['draw_w'])}W"
        cap = f"{round(gpu['power']['limit_w'])}W"
        temp = f"{gpu['temperature']['gpu_c']}C"
        lines.append(
            f"| {gpu['index']:3d}  {gpu['name'][:26]:<26}{persist:>7}  "
            f"| {gpu['bus_id']:>{mid - 6}} Off | {ecc:>20} |"
        )
        used, total = f"{mem['used_mib']}MiB", f"{mem['total_mib']}MiB"
        if wide:
            left = f" N/A  {temp:>4}    {gpu['pstate']:<2}{power:>16} / {cap:>5} "
            middle = f"{used:>11} / {total:>9} "
        else:
            left = f" N/A  {temp:>4}    {gpu['pstate']:<2}{power:>17} / {cap:>4} "
            middle = f"{used:>10} / {total:>8} "
        util = f"{gpu.get('utilization_pct', 0)}%"
        lines.append(f"|{left}|{middle}|{util:>8}{gpu['compute_mode']:>13} |")
        lines.append("|" + " " * 41 + "|" + " " * mid + f"|{gpu['mig_mode']:>21} |")
        lines.append("+" + "-" * 41 + "+" + "-" * mid + "+" + "-" * 22 + "+")
    inner = width - 2
    lines.extend(
        [
            "" if wide else " " * width,
            dash,
            "|" + " Processes:".ljust(inner) + "|",
            "|  GPU   GI   CI        PID   Type   Process name".ljust(width - 12) + "GPU Memory |",
            "|        ID   ID".ljust(width - 12) + "Usage      |",
            "|" + "=" * inner + "|",
            "|" + "  No running processes found".ljust(inner) + "|",
            dash,
        ]
    )
    return "\n".join(lines) + "\n"


def list_gpus(gpus: list) -> str:
    return "".join(f"GPU {gpu['index']}: {gpu['name']} (UUID: {gpu['uuid']})\n" for gpu in gpus)


def nvlink_status(gpus: list) -> str:
    lines = []
    for gpu in gpus:
        nvlink = gpu["nvlink"]
        lines.append(f"GPU {gpu['index']}: {gpu['name']} (UUID: {gpu['uuid']})")
        if not nvlink["links"]:
            continue
        inactive = set(nvlink.get("inactive", []))
        if len(inactive) == nvlink["links"]:
            lines.append("NVML: Unable to retrieve NVLink information as all links are inactive")
            continue
        for link in range(nvlink["links"]):
            lines.append(f"\t Link {link}: {'<inactive>' if link in inactive else nvlink['speed']}")
    return "\n".join(lines) + "\n"


def topo_matrix(profile: dict) -> str:
    """`nvidia-smi topo -m`: GPU/NIC connection matrix, CPU/NUMA affinity and the legends."""
    nvidia = profile["nvidia"]
    gpus = nvidia["gpus"]
    hcas = (profile.get("infiniband") or {}).get("hcas", [])
    cpus = nvidia.get("numa_cpus", {})
    devices = [(f"GPU{gpu['index']}", gpu) for gpu in gpus] + [(f"NIC{i}", hca) for i, hca in enumerate(hcas)]

    def link(a, b) -> str:
        if a is b:
            return " X "
        if "nvlink" in a and "nvlink" in b and nvidia.get("nvswitches"):
            active = min(
                a["nvlink"]["links"] - len(a["nvlink"].get("inactive", [])),
                b["nvlink"]["links"] - len(b["nvlink"].get("inactive", [])),
            )
            if active > 0:
                return f"NV{active}"
        if a.get("pcie_switch") is not None and a.get("pcie_switch") == b.get("pcie_switch"):
            return "PIX" if a.get("pcie_device") and a.get("pcie_device") == b.get("pcie_device") else "PXB"
        return "NODE" if a["numa_node"] == b["numa_node"] else "SYS"

    header = "\t\x1b[4m" + "\t".join(name for name, _ in devices)
    header += "\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m"
    lines = [header]
    for name, device in devices:
        cells = [link(device, other) for _, other in devices]
        row = name + "\t" + "\t".join(cells)
        if name.startswith("GPU"):
            row += f"\t{cpus.get(str(device['numa_node']), 'N/A')}\t{device['numa_node']}\t\tN/A"
        lines.append(row)
    lines.extend(
        [
            "",
            "Legend:",
            "",
            "  X    = Self",
            "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes "
            "(e.g., QPI/UPI)",
            "  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges "
            "within a NUMA node",
            "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)",
            "  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)",
            "  PIX  = Connection traversing at most a single PCIe bridge",
            "  NV#  = Connection traversing a bonded set of # NVLinks",
        ]
    )
    if hcas:
        lines.extend(["", "NIC Legend:", ""])
        lines.extend(f"  NIC{i}: {hca['name']}" for i, hca in enumerate(hcas))
    return "\n".join(lines) + "\n"


def parse_main_args(args: list):
    """nvidia-smi's own option syntax (-q, -x, -d X, -i N, --opt=value); None on invalid input."""
    opts = {
        "query": False,
        "xml": False,
        "display": None,
        "id": None,
        "list": False,
        "query_gpu": None,
        "format": None,
    }
    position = 0
    while position < len(args):
        arg = args[position]
        value = None
        if arg.startswith("--") and "=" in arg:
            arg, value = arg.split("=", 1)
        if arg in ("-q", "--query"):
            opts["query"] = True
        elif arg in ("-x", "--xml-format"):
            opts["xml"] = True
        elif arg in ("-L", "--list-gpus"):
            opts["list"] = True
        elif arg in ("-d", "--display", "-i", "--id", "--query-gpu", "--format"):
            if value is None:
                position += 1
                if position >= len(args):
                    return None
                value = args[position]
            key = {
                "-d": "display",
                "--display": "display",
                "-i": "id",
                "--id": "id",
                "--query-gpu": "query_gpu",
                "--format": "format",
            }[arg]
            opts[key] = value
        else:
            return None
        position += 1
    return opts


def run(profile: dict, args: list, now: float) -> ToolResult:
    nvidia = profile["nvidia"]
    if args[:1] == ["topo"]:
        if args[1:] in (["-m"], ["--matrix"]):
            return ToolResult(stdout=topo_matrix(profile))
        return usage_error()
    if args[:1] == ["nvlink"]:
        rest = args[1:]
        selector = None
        if len(rest) >= 2 and rest[-2] in ("-i", "--id"):
            selector, rest = rest[-1], rest[:-2]
        if rest not in (["-s"], ["--status"]):
            return usage_error()
        gpus = select_gpus(nvidia["gpus"], selector)
        if gpus is None:
            return ToolResult(rc=RC_NOT_FOUND, stdout="No devices were found\n")
        return ToolResult(stdout=nvlink_status(gpus))
    opts = parse_main_args(args)
    if opts is None:
        return usage_error()
    gpus = select_gpus(nvidia["gpus"], opts["id"])
    if gpus is None:
        return ToolResult(rc=RC_NOT_FOUND, stdout="No devices were found\n")
    if opts["query_gpu"] is not None:
        if opts["format"] is None or opts["query"] or opts["list"]:
            return usage_error()
        return query_csv(nvidia, gpus, opts["query_gpu"], opts["format"], now)
    if opts["format"] is not None:
        return usage_error()
    if opts["list"]:
        return ToolResult(stdout=list_gpus(gpus)) if not (opts["query"] or opts["xml"]) else usage_error()
    if opts["query"]:
        if opts["xml"]:
            if opts["display"] is not None:
                return usage_error()
            return ToolResult(stdout=nvidia_query.render_xml(nvidia, gpus, now))
        sections = None
        if opts["display"] is not None:
            sections = ()
            for name in opts["display"].split(","):
                if name.strip().upper() not in nvidia_query.DISPLAY_SECTIONS:
                    return usage_error()
                sections += nvidia_query.DISPLAY_SECTIONS[name.strip().upper()]
        return ToolResult(stdout=nvidia_query.render_text(nvidia, gpus, now, sections))
    if opts["xml"] or opts["display"] is not None:
        return usage_error()
    return ToolResult(stdout=default_table(nvidia, gpus, now))
