"""NVIDIA Xid events in kernel log lines (dmesg, dmesg -T, journalctl -k, /var/log/syslog).

Both forms the driver has printed are read:
    NVRM: Xid (PCI:0000:18:00): 79, pid=1234, name=python, GPU has fallen off the bus.
    NVRM: Xid (PCI:0000:18:00): 79, GPU has fallen off the bus.         (older drivers)
pid/process_name are None when the driver printed none or '<unknown>'. The bus id is
normalised to '0000:18:00.0' (the driver omits the function, which is 0 for GPUs).
`description` names the Xid from NVIDIA's Xid catalogue; judging severity is the
validator's job. A log without Xid events gives `events: []`, but input that does not
look like a kernel log at all raises ParseError.
"""

from __future__ import annotations

import re

from .common import ParseError, normalize_pci_bus_id, not_output, require_content, to_int

KIND = "xid"
FIX = "capture the kernel log with: dmesg > FILE (or journalctl -k -b > FILE)"

XID_DESCRIPTIONS = {
    13: "Graphics engine exception",
    31: "GPU memory page fault",
    32: "Invalid or corrupted push buffer stream",
    38: "Driver firmware error",
    43: "GPU stopped processing",
    45: "Preemptive cleanup, due to previous errors",
    48: "Double bit ECC error (DBE)",
    61: "Internal micro-controller breakpoint/warning",
    62: "Internal micro-controller halt",
    63: "ECC page retirement or row remapping recording event",
    64: "ECC page retirement or row remapper recording failure",
    68: "Video processor exception",
    69: "Graphics engine class error",
    74: "NVLink error",
    79: "GPU has fallen off the bus",
    92: "High single-bit ECC error rate",
    94: "Contained ECC error",
    95: "Uncontained ECC error",
    109: "Context switch timeout",
    119: "GSP RPC timeout",
    120: "GSP error",
    121: "C2C link corrected error",
    140: "Unrecovered ECC error",
    154: "GPU recovery action changed",
}

_XID = re.compile(
    r"NVRM: Xid \((?:PCI:)?([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?)\):\s*(\d+),\s*(.*)$"
)
_PID_NAME = re.compile(r"^pid=('?<unknown>'?|\d+),\s*name=([^,]*),\s*(.*)$")
_GPU_UUID = re.compile(r"NVRM: GPU at PCI:([0-9A-Fa-f:.]+): (GPU-[0-9a-fA-F-]+)")
_FACILITY = re.compile(r"^\s*\w+\s*:\s*\w+\s*:\s*")  # dmesg -x: 'kern  :warn  : '
_TIMESTAMPS = (
    re.compile(r"^(?:<\d+>)?\[\s*(\d+\.\d+)\]"),  # dmesg
    re.compile(
        r"^(?:<\d+>)?\[((?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]"
    ),  # dmesg -T
    re.compile(r"^(\w{3} +\d+ \d\d:\d\d:\d\d) \S+ [^\s:]+:"),  # syslog, journalctl -k
    re.compile(
        r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\S*)\s"
    ),  # ISO: journalctl -o short-iso, dmesg --time-format iso
)
_NOT_READABLE = "read kernel buffer failed"


def _timestamp(line: str) -> str | None:
    line = line.strip()  # pasted logs may be indented
    text = _FACILITY.sub("", line, count=1) if _FACILITY.match(line) and "[" in line else line
    for pattern in _TIMESTAMPS:
        match = pattern.match(text)
        if match:
            return match.group(1)
    return None


def _event(match, line: str, number: int) -> dict:
    pci, xid, rest = match.groups()
    pid = process = None
    details = _PID_NAME.match(rest)
    if details:
        pid = to_int(details.group(1).strip("'"))
        process = details.group(2).strip()
        process = None if process in ("", "<unknown>") else process
        rest = details.group(3)
    xid_number = int(xid)
    return {
        "pci_bus_id": normalize_pci_bus_id(pci),
        "xid": xid_number,
        "message": rest.strip(),
        "description": XID_DESCRIPTIONS.get(xid_number),
        "pid": pid,
        "process_name": process,
        "timestamp": _timestamp(line),
        "line": number,
    }


def parse_xid(text: str) -> dict:
    """Parse kernel log text into {events[] of Xid events, counts, gpu_uuids}."""
    require_content(KIND, text, "kernel log (dmesg)", FIX)
    events: list[dict] = []
    uuids: dict = {}
    log_lines = total = 0
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        total += 1
        if _NOT_READABLE in line:
            raise ParseError(
                KIND,
                "dmesg could not read the kernel log",
                number,
                line,
                fix="run dmesg as root, or set kernel.dmesg_restrict=0",
            )
        if _timestamp(line) is not None or "NVRM:" in line or line.startswith("-- "):
            log_lines += 1
        match = _XID.search(line)
        if match:
            events.append(_event(match, line, number))
            continue
        gpu = _GPU_UUID.search(line)
        if gpu:
            uuids[normalize_pci_bus_id(gpu.group(1))] = gpu.group(2)
    if not events and log_lines * 2 < total:
        raise not_output(KIND, "kernel log (dmesg)", text, FIX, "no line looks like a kernel log line")
    counts: dict = {}
    for event in events:
        key = str(event["xid"])
        counts[key] = counts.get(key, 0) + 1
    return {"events": events, "counts": counts, "gpu_uuids": uuids}
