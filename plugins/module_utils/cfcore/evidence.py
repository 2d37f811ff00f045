"""Find the few decisive lines of a raw tool output for a check's evidence.

Checks decide on parsed dicts; a report shows the operator the original lines
(the `<remapped_rows>` block of the failing GPU, the ibstat port block, the
npu-smi row). When the raw text is not at hand (unit tests on dicts) the
callers fall back to lines built from the parsed values.
"""

from __future__ import annotations

import re

from .pci import norm_bus_id


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _xml_gpu_span(lines: list[str], bus_id: str) -> tuple | None:
    """(first, last) line indexes of the `<gpu id="...">` element of `bus_id`."""
    want = norm_bus_id(bus_id)
    start = None
    for index, line in enumerate(lines):
        match = re.search(r'<gpu id="([^"]+)"', line)
        if match and norm_bus_id(match.group(1)) == want:
            start = index
        elif start is not None and "</gpu>" in line:
            return start, index
    return None


def nvidia_gpu_block(text: str, bus_id: str, xml_tag: str, text_heading: str) -> list[str]:
    """The lines of one section of one GPU in `nvidia-smi -q -x` (xml_tag) or `nvidia-smi -q` (heading)."""
    lines = text.splitlines()
    span = _xml_gpu_span(lines, bus_id)
    if span is not None:
        first, last = span
        for index in range(first, last + 1):
            if re.search(rf"<{xml_tag}[\s>]", lines[index]) or lines[index].strip() == f"<{xml_tag}>":
                block = [lines[first].strip()]
                for inner in range(index, last + 1):
                    block.append(lines[inner].rstrip())
                    if f"</{xml_tag}>" in lines[inner] or lines[inner].rstrip().endswith("/>"):
                        break
                return block
        return []
    return _text_gpu_block(lines, bus_id, text_heading)


def _text_gpu_block(lines: list[str], bus_id: str, heading: str) -> list[str]:
    want = norm_bus_id(bus_id)
    in_gpu = False
    header = ""
    for index, line in enumerate(lines):
        if line.startswith("GPU "):
            in_gpu = norm_bus_id(line[4:].strip()) == want
            header = line.strip()
            continue
        if in_gpu and line.strip().split(":")[0].strip() == heading:
            depth = _indent(line)
            block = [header, line.rstrip()]
            for inner in lines[index + 1 :]:
                if not inner.strip() or _indent(inner) <= depth:
                    break
                block.append(inner.rstrip())
            return block
    return []


def ibstat_port_block(text: str, ca: str, port: int) -> list[str]:
    """The `CA '<ca>'` header and the `Port <n>:` block of ibstat."""
    lines = text.splitlines()
    in_ca = False
    for index, line in enumerate(lines):
        match = re.match(r"\s*CA '([^']+)'", line)
        if match:
            in_ca = match.group(1) == ca
            continue
        if in_ca and re.match(rf"\s*Port {port}:\s*$", line):
            depth = _indent(line)
            block = [f"CA '{ca}'", line.rstrip()]
            for inner in lines[index + 1 :]:
                if not inner.strip() or _indent(inner) <= depth:
                    break
                block.append(inner.rstrip())
            return block
    return []


def npu_smi_rows(text: str, npu_id: int) -> list[str]:
    """The two table rows of one NPU in `npu-smi info` (name/health row and chip/bus-id row)."""
    lines = text.splitlines()
    found: list[str] = []
    for index, line in enumerate(lines):
        if "Process id" in line:
            break  # the process table below reuses the NPU/Chip columns
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) < 3:
            continue
        first = cells[0].split()
        # The name/health row: "| 3     910B3     | Alarm   | 96.5   40 ..."
        if len(first) >= 2 and first[0] == str(npu_id) and not re.match(r"^[0-9a-fA-F]{4}:", cells[1]):
            found.append(line.rstrip())
            if index + 1 < len(lines):
                found.append(lines[index + 1].rstrip())
    return found


def matching_lines(text: str, pattern: str, limit: int = 10) -> list[str]:
    regex = re.compile(pattern)
    hits = [line.rstrip() for line in text.splitlines() if regex.search(line)]
    return hits[:limit]


def key_value_lines(text: str, keys: tuple) -> list[str]:
    """Lines `Key : value` of a vendor's key/value output whose key is one of `keys` (case-insensitive)."""
    wanted = {key.lower() for key in keys}
    hits = []
    for line in text.splitlines():
        key = line.split(":", 1)[0].strip().lower()
        if ":" in line and key in wanted:
            hits.append(line.strip())
    return hits


def lspci_link_lines(text: str, bus_id: str) -> list[str]:
    """The header and LnkCap/LnkSta lines of one device in `lspci -vvv`."""
    want = norm_bus_id(bus_id)
    found: list[str] = []
    in_device = False
    for line in text.splitlines():
        if line and not line[0].isspace():
            if in_device:
                break
            in_device = norm_bus_id(line.split(" ", 1)[0]) == want
            if in_device:
                found.append(line.rstrip())
            continue
        if in_device and re.match(r"\s*(LnkCap|LnkSta):", line):
            found.append(line.rstrip())
    return found


def nvlink_gpu_lines(text: str, gpu_index: int, only_down: bool = True) -> list[str]:
    """`nvidia-smi nvlink -s` lines of one GPU: its header and (inactive) link lines."""
    found: list[str] = []
    in_gpu = False
    for line in text.splitlines():
        match = re.match(r"GPU (\d+):", line)
        if match:
            in_gpu = int(match.group(1)) == gpu_index
            if in_gpu:
                found.append(line.rstrip())
            continue
        if in_gpu and line.strip() and (not only_down or not re.search(r"\d+(\.\d+)?\s*GB/s", line)):
            found.append(line.rstrip())
    return found
