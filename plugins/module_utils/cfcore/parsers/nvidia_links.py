"""`nvidia-smi topo -m` (the connection matrix) and `nvidia-smi nvlink -s` (per-link speed).

topo -m: rows GPU<n> / NIC<n> (older drivers: mlx5_<n>) against the same columns, then
'CPU Affinity', 'NUMA Affinity' and (535+) 'GPU NUMA ID'; cells X, SYS, NODE, PHB, PXB,
PIX, NV<n>. nvidia-smi underlines the header with ANSI escapes and pads some rows with
an empty tab cell; both are tolerated. The 'NIC Legend' maps NIC<n> to device names.

nvlink -s: 'GPU <i>: <name> (UUID: ...)' then 'Link <n>: <speed> GB/s' or
'Link <n>: <inactive>'. `speed_gbps` holds the figure nvidia-smi prints, which is in
GB/s (gigabytes per second, per direction), not gigabits.
"""

from __future__ import annotations

import re

from .common import ParseError, na, not_output, require_content, to_int
from .nvidia_common import blank_gpu, check_driver_failure

TOPO_KIND = "nvidia-smi-topo"
TOPO_FIX = "capture it with: nvidia-smi topo -m > FILE"
NVLINK_KIND = "nvidia-smi-nvlink"
NVLINK_FIX = "capture it with: nvidia-smi nvlink -s > FILE"

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_TRAILING_COLUMNS = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")
_TRAILING_WORDS = tuple((name, name.split()) for name in _TRAILING_COLUMNS)
_DEVICE_LABEL = re.compile(r"^(GPU|NIC)(\d+)$|^mlx\d+_\d+$")
_NIC_LEGEND = re.compile(r"^\s*(NIC\d+)\s*:\s*(\S+)\s*$")

_NVLINK_GPU = re.compile(r"^GPU\s+(\d+)\s*:\s*(.+?)\s+\(UUID:\s*([^)]+)\)\s*$")
_NVLINK_LINK = re.compile(r"^\s*Link\s+(\d+)\s*:\s*(.+?)\s*$")
_SPEED = re.compile(r"^(\d+(?:\.\d*)?|\.\d+)\s*GB/s$")
_LINK_WORD = re.compile(r"^<?\s*([A-Za-z][A-Za-z /_-]*?)\s*>?$")


def _header_columns(tokens: list[str]) -> list[str] | None:
    """Column names of a header row's tokens (trailing names span several words); None if not one."""
    columns: list[str] = []
    position = 0
    while position < len(tokens):
        phrase = next(
            (words for name, words in _TRAILING_WORDS if tokens[position : position + len(words)] == words),
            None,
        )
        if phrase is not None:
            columns.append(" ".join(phrase))
            position += len(phrase)
        elif _DEVICE_LABEL.match(tokens[position]):
            columns.append(tokens[position])
            position += 1
        else:
            return None
    return columns if columns and _DEVICE_LABEL.match(columns[0]) else None


def _topo_header(lines: list[str]) -> tuple[int, list[str]] | None:
    """(index, column names) of the header row: GPU0 ... then the affinity columns; None if absent.

    Cells are separated by tabs in nvidia-smi's own output and by runs of spaces in text
    pasted from a terminal or a ticket, with or without the leading empty cell.
    """
    for number, line in enumerate(lines):
        columns = _header_columns(line.split())
        if columns is not None:
            return number, columns
    return None


def parse_nvidia_smi_topo(text: str) -> dict:
    """Parse `nvidia-smi topo -m` into {gpus[], nics[], devices[]}."""
    require_content(TOPO_KIND, text, "nvidia-smi topo -m", TOPO_FIX)
    check_driver_failure(TOPO_KIND, text)
    lines = _ANSI.sub("", text).splitlines()
    header = _topo_header(lines)
    if header is None:
        raise not_output(TOPO_KIND, "nvidia-smi topo -m", text, TOPO_FIX, "no GPU0 header row")
    header_at, columns = header
    devices = [column for column in columns if column not in _TRAILING_COLUMNS]
    trailing = [column for column in columns if column in _TRAILING_COLUMNS]
    legend = {}
    rows = {}
    for offset, line in enumerate(lines[header_at + 1 :], header_at + 2):
        legend_match = _NIC_LEGEND.match(line)
        if legend_match:
            legend[legend_match.group(1)] = legend_match.group(2)
            continue
        # Any whitespace separates cells; nvidia-smi's empty padding cells carry no value.
        cells = line.split()
        if not cells or cells[0] not in devices:
            continue
        links = cells[1 : 1 + len(devices)]
        if len(links) < len(devices):
            raise ParseError(
                TOPO_KIND,
                f"malformed nvidia-smi topo -m row: {len(links)} cells for {len(devices)} devices",
                offset,
                line,
                fix=TOPO_FIX,
            )
        extra = cells[1 + len(devices) :]
        rows[cells[0]] = {
            "line": offset,
            "links": {peer: value for peer, value in zip(devices, links) if peer != cells[0]},
            "trailing": dict(zip(trailing, extra)),
        }
    missing = [device for device in devices if device not in rows]
    if missing:
        raise ParseError(
            TOPO_KIND,
            f"truncated nvidia-smi topo -m output: no row for {', '.join(missing)}",
            fix=TOPO_FIX,
        )
    gpus, nics = [], []
    for label in devices:
        row = rows[label]
        match = _DEVICE_LABEL.match(label)
        if match and match.group(1) == "GPU":
            gpu = blank_gpu(int(match.group(2)))
            gpu.update(
                links=row["links"],
                cpu_affinity=na(row["trailing"].get("CPU Affinity")),
                numa_affinity=to_int(row["trailing"].get("NUMA Affinity")),
                gpu_numa_id=to_int(row["trailing"].get("GPU NUMA ID")),
            )
            gpus.append(gpu)
        else:
            nics.append({"name": label, "device": legend.get(label, label), "links": row["links"]})
    return {"driver_version": None, "cuda_version": None, "devices": devices, "gpus": gpus, "nics": nics}


def _link(number: str, value: str) -> dict:
    """One link; a value that is neither a speed nor a state word is `unreadable`, keeping the text."""
    speed = _SPEED.match(value)
    if speed:
        return {"link": int(number), "state": "active", "speed_gbps": float(speed.group(1))}
    word = _LINK_WORD.match(value)
    if word and "GB/s" not in value:
        return {"link": int(number), "state": word.group(1).lower(), "speed_gbps": None}
    return {"link": int(number), "state": "unreadable", "speed_gbps": None, "text": value}


def parse_nvidia_smi_nvlink(text: str) -> dict:
    """Parse `nvidia-smi nvlink -s` into {gpus[] with links[] of {link, state, speed_gbps}}.

    Read line by line: a link line whose value is garbled (`Link 0: . GB/s`) becomes an
    `unreadable` link and a note in `tool_messages`, so one bad line does not lose the rest.
    """
    require_content(NVLINK_KIND, text, "nvidia-smi nvlink -s", NVLINK_FIX)
    check_driver_failure(NVLINK_KIND, text)
    gpus: list[dict] = []
    messages: list[str] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        header = _NVLINK_GPU.match(line)
        if header:
            gpu = blank_gpu(int(header.group(1)))
            gpu.update(name=header.group(2), uuid=header.group(3), links=[], nvlink_error=None)
            gpus.append(gpu)
            continue
        link = _NVLINK_LINK.match(line)
        if link and gpus:
            entry = _link(link.group(1), link.group(2))
            gpus[-1]["links"].append(entry)
            if entry["state"] == "unreadable":
                messages.append(f"line {number}: unreadable link value {entry['text']!r}: {line}")
        elif gpus and line.startswith("NVML:"):
            # e.g. 'NVML: Unable to retrieve NVLink information as all links are inactive'
            gpus[-1]["nvlink_error"] = line
        elif gpus:
            messages.append(line)
        else:
            raise not_output(NVLINK_KIND, "nvidia-smi nvlink -s", text, NVLINK_FIX)
    if not gpus:
        raise not_output(NVLINK_KIND, "nvidia-smi nvlink -s", text, NVLINK_FIX)
    return {"driver_version": None, "cuda_version": None, "gpus": gpus, "tool_messages": messages}
