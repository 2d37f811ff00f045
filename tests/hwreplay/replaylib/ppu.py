"""Replayed Alibaba T-Head PPU tool: `ppu-smi -L`, `ppu-smi -q [-i N]`.

ASSUMPTION: no public sample of ppu-smi's output exists here. The formats are the
ones cfcore/parsers/ppu.py documents (modelled on nvidia-smi and T-Head's SAIL
PPU-SMI manual); change both together when a real node shows otherwise.

The tool is installed at /opt/hwreplay/bin/ppu-smi (tools.VENDOR_BIN_DIR), not on
PATH: on a real node ppu-smi comes with the PPU SDK (<prefix>/ppu-smi/bin), and the
test SDK package's ppu-smi execs this one, so ppu-smi is on PATH only once the ppu
role has installed the SDK and linked it into /usr/local/bin.

Profile key `ppu`:
    {"driver_version": "1.3.2-d7f5a2", "smi_version": "1.22", "sdk_version": "2.1.0-a5f865",
     "ppu_defaults": {name, memory_total_mib, memory_used_mib, temperature_c, power_draw_w,
                      max_cu_clock_mhz, health, ecc_correctable_volatile, ecc_uncorrectable_volatile},
     "ppus": [{"index", "bus_id", "uuid", "serial", ...overrides of the defaults}]}
"""

from __future__ import annotations

from .common import ToolResult, ctime, fail

RC_USAGE = 2  # nvidia-smi's status for bad arguments; assumed the same for ppu-smi
RC_NOT_FOUND = 6  # nvidia-smi's "not found" status for a bad -i; assumed the same
USAGE = """PPU-SMI: the SAIL PPU System Management Interface (hwreplay stand-in, tests only)

    ppu-smi -L             list the PPUs and their UUIDs
    ppu-smi -q [-i ID]     detailed query of all PPUs, or of PPU ID
"""
KEY_WIDTH = 38


def _line(indent: int, key: str, value=None) -> str:
    pad = " " * (4 * indent)
    if value is None:
        return pad + key
    return f"{pad}{key:<{KEY_WIDTH - len(pad)}}: {value}"


def list_text(ppu: dict) -> str:
    lines = [f"PPU {dev['index']}: {dev['name']} (UUID: {dev['uuid']})" for dev in ppu["ppus"]]
    return "\n".join(lines) + "\n"


def device_lines(dev: dict) -> list:
    return [
        f"PPU {dev['bus_id']}",
        _line(1, "Product Name", dev["name"]),
        _line(1, "PPU UUID", dev["uuid"]),
        _line(1, "Minor Number", dev["index"]),
        _line(1, "Serial Number", dev.get("serial", "N/A")),
        _line(1, "PCI"),
        _line(2, "Bus Id", dev["bus_id"]),
        _line(1, "FB Memory Usage"),
        _line(2, "Total", f"{dev['memory_total_mib']} MiB"),
        _line(2, "Used", f"{dev['memory_used_mib']} MiB"),
        _line(2, "Free", f"{dev['memory_total_mib'] - dev['memory_used_mib']} MiB"),
        _line(1, "Temperature"),
        _line(2, "PPU Current Temp", f"{dev['temperature_c']} C"),
        _line(1, "Power Readings"),
        _line(2, "Power Draw", f"{dev['power_draw_w']:.2f} W"),
        _line(1, "Max Clocks"),
        _line(2, "CU", f"{dev.get('max_cu_clock_mhz', 1700)} MHz"),
        _line(1, "ECC Errors"),
        _line(2, "Volatile"),
        _line(3, "Correctable", dev["ecc_correctable_volatile"]),
        _line(3, "Uncorrectable", dev["ecc_uncorrectable_volatile"]),
        _line(1, "Health", dev["health"]),
        "",
    ]


def query_text(ppu: dict, devices: list, now: float) -> str:
    lines = [
        "",
        "==============PPU-SMI LOG==============",
        "",
        _line(0, "Timestamp", ctime(now)),
        _line(0, "Driver Version", ppu["driver_version"]),
        _line(0, "PPU-SMI Version", ppu["smi_version"]),
        _line(0, "SDK Version", ppu["sdk_version"]),
        "",
        _line(0, "Attached PPUs", len(ppu["ppus"])),
    ]
    for dev in devices:
        lines += device_lines(dev)
    return "\n".join(lines) + "\n"


def ppu_smi(profile: dict, args: list, now: float) -> ToolResult:
    ppu = profile["ppu"]
    if args in (["-h"], ["--help"]):
        return ToolResult(stdout=USAGE)
    if args in (["-L"], ["--list-gpus"]):
        return ToolResult(stdout=list_text(ppu))
    if args in (["-q"], ["--query"]):
        return ToolResult(stdout=query_text(ppu, ppu["ppus"], now))
    if len(args) == 3 and args[0] in ("-q", "--query") and args[1] in ("-i", "--id"):
        wanted = [dev for dev in ppu["ppus"] if str(dev["index"]) == args[2] or dev["uuid"] == args[2]]
        if not wanted:
            return fail(RC_NOT_FOUND, f"No PPU with the id {args[2]} was found.")
        return ToolResult(stdout=query_text(ppu, wanted, now))
    return fail(RC_USAGE, "Invalid combination of input arguments. Please run 'ppu-smi -h' for help.")
