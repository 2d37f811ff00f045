"""Find the few decisive lines of a raw tool output for a check's evidence.

Checks decide on parsed dicts; a report shows the operator the original lines
(the `<remapped_rows>` block of the failing GPU, the ibstat port block, the
npu-smi row). When the raw text is not at hand (unit tests on dicts) the
callers fall back to lines built from the parsed values.

Each lookup takes the `Output` and builds its index of the text once
(`Output.index`), so a check that reports thousands of devices of a huge output
stays linear in the output's size instead of rescanning it per device.
"""

from __future__ import annotations

import re

from .pci import norm_bus_id

_XML_GPU = re.compile(r'<gpu id="([^"]+)"')
_TEXT_GPU = re.compile(r"^GPU (\S+)\s*$")
_IBSTAT_CA = re.compile(r"\s*CA\s+'([^']+)'")
_IBSTAT_PORT = re.compile(r"\s*Port\s+(\d+)\s*:\s*$")
_NVLINK_GPU = re.compile(r"\s*GPU\s+(\d+)\s*:")
_LINK_SPEED = re.compile(r"\d+(\.\d+)?\s*GB/s")
_LINK_FIELD = re.compile(r"\s*(LnkCap|LnkSta):")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _block_end(lines: list[str], start: int, depth: int) -> int:
    """Index after the lines below `start` indented deeper than `depth` (a section's body)."""
    end = start + 1
    while end < len(lines) and lines[end].strip() and _indent(lines[end]) > depth:
        end += 1
    return end


def _sections(lines: list[str], header, key) -> dict:
    """key(header's group 1) -> (first, end) line indexes of each section that starts with a `header` line."""
    starts = []
    for index, line in enumerate(lines):
        match = header.match(line)
        if match:
            starts.append((index, key(match.group(1))))
    spans = {}
    for number, (index, name) in enumerate(starts):
        end = starts[number + 1][0] if number + 1 < len(starts) else len(lines)
        spans.setdefault(name, (index, end))
    return spans


def _xml_gpu_spans(lines: list[str]) -> dict:
    """Bus id -> (first, last) line indexes of its `<gpu id="...">` element."""
    spans, start, bus = {}, None, None
    for index, line in enumerate(lines):
        match = _XML_GPU.search(line)
        if match:
            start, bus = index, norm_bus_id(match.group(1))
        elif start is not None and "</gpu>" in line:
            spans.setdefault(bus, (start, index))
            start = None
    return spans


def _text_gpu_spans(lines: list[str]) -> dict:
    """Bus id -> (first, end) line indexes of its 'GPU 00000000:18:00.0' section of nvidia-smi -q."""
    starts = [
        (index, norm_bus_id(m.group(1))) for index, line in enumerate(lines) if (m := _TEXT_GPU.match(line))
    ]
    spans = {}
    for number, (index, bus) in enumerate(starts):
        end = starts[number + 1][0] if number + 1 < len(starts) else len(lines)
        spans.setdefault(bus, (index, end))
    return spans


def nvidia_gpu_block(output, bus_id: str, xml_tag: str, text_heading: str) -> list[str]:
    """The lines of one section of one GPU in `nvidia-smi -q -x` (xml_tag) or `nvidia-smi -q` (heading)."""
    lines = output.lines()
    want = norm_bus_id(bus_id)
    span = output.index("xml-gpus", _xml_gpu_spans).get(want)
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
    span = output.index("text-gpus", _text_gpu_spans).get(want)
    if span is None:
        return []
    first, end = span
    for index in range(first + 1, end):
        line = lines[index]
        if line.strip().split(":")[0].strip() == text_heading:
            stop = _block_end(lines, index, _indent(line))
            return [lines[first].strip()] + [ln.rstrip() for ln in lines[index:stop]]
    return []


def _ibstat_ports(lines: list[str]) -> dict:
    """(CA name, port number) -> index of its `Port N:` line."""
    ports, ca = {}, None
    for index, line in enumerate(lines):
        match = _IBSTAT_CA.match(line)
        if match:
            ca = match.group(1)
            continue
        port = _IBSTAT_PORT.match(line)
        if port and ca is not None:
            ports.setdefault((ca, int(port.group(1))), index)
    return ports


def ibstat_port_block(output, ca: str, port) -> list[str]:
    """The `CA '<ca>'` header and the `Port <n>:` block of ibstat."""
    lines = output.lines()
    try:
        start = output.index("ibstat-ports", _ibstat_ports).get((ca, int(port)))
    except (TypeError, ValueError):
        return []
    if start is None:
        return []
    stop = _block_end(lines, start, _indent(lines[start]))
    return [f"CA '{ca}'"] + [line.rstrip() for line in lines[start:stop]]


def _npu_rows(lines: list[str]) -> dict:
    """NPU id -> line indexes of its name/health rows in `npu-smi info` (each followed by its chip row)."""
    rows: dict = {}
    for index, line in enumerate(lines):
        if "Process id" in line:
            break  # the process table below reuses the NPU/Chip columns
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) < 3:
            continue
        first = cells[0].split()
        # The name/health row: "| 3     910B3     | Alarm   | 96.5   40 ..."
        if len(first) >= 2 and first[0].isdigit() and not re.match(r"^[0-9a-fA-F]{4}:", cells[1]):
            rows.setdefault(int(first[0]), []).append(index)
    return rows


def npu_smi_rows(output, npu_id) -> list[str]:
    """The two table rows of one NPU in `npu-smi info` (name/health row and chip/bus-id row)."""
    lines = output.lines()
    found: list[str] = []
    for index in output.index("npu-rows", _npu_rows).get(npu_id, []):
        found.extend(line.rstrip() for line in lines[index : index + 2])
    return found


def lines_at(output, numbers, limit: int = 10) -> list[str]:
    """The output's lines at 1-based `numbers` (as parsers record them), at most `limit`."""
    lines = output.lines()
    return [lines[n - 1].rstrip() for n in list(numbers)[:limit] if 0 < n <= len(lines)]


def key_value_lines(text: str, keys: tuple) -> list[str]:
    """Lines `Key : value` of a vendor's key/value output whose key is one of `keys` (case-insensitive)."""
    wanted = {key.lower() for key in keys}
    hits = []
    for line in text.splitlines():
        key = line.split(":", 1)[0].strip().lower()
        if ":" in line and key in wanted:
            hits.append(line.strip())
    return hits


def _lspci_links(lines: list[str]) -> dict:
    """Bus id -> indexes of its header line and its LnkCap/LnkSta lines in `lspci -vvv`."""
    devices: dict = {}
    current = None
    for index, line in enumerate(lines):
        if line and not line[0].isspace():
            current = devices.setdefault(norm_bus_id(line.split(" ", 1)[0]), [index])
        elif current is not None and _LINK_FIELD.match(line):
            current.append(index)
    return devices


def lspci_link_lines(output, bus_id: str) -> list[str]:
    """The header and LnkCap/LnkSta lines of one device in `lspci -vvv`."""
    lines = output.lines()
    return [lines[i].rstrip() for i in output.index("lspci-links", _lspci_links).get(norm_bus_id(bus_id), [])]


def _nvlink_gpus(lines: list[str]) -> dict:
    """GPU index -> (first, end) line indexes of its block in `nvidia-smi nvlink -s`."""
    return _sections(lines, _NVLINK_GPU, int)


def nvlink_gpu_lines(output, gpu_index: int, only_down: bool = True) -> list[str]:
    """`nvidia-smi nvlink -s` lines of one GPU: its header and (inactive) link lines."""
    lines = output.lines()
    span = output.index("nvlink-gpus", _nvlink_gpus).get(gpu_index)
    if span is None:
        return []
    first, end = span
    body = [ln.rstrip() for ln in lines[first + 1 : end] if ln.strip()]
    if only_down:
        body = [ln for ln in body if not _LINK_SPEED.search(ln)]
    return [lines[first].rstrip(), *body]
