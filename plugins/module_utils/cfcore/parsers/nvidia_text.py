"""`nvidia-smi -q` (text): an indented tree of 'Key : Value' lines and section headers.

Field names moved between driver branches (535 'Power Draw', 550+ 'Average/Instantaneous
Power Draw'; 'Pending Page Blacklist' vs older 'Pending'); every lookup below lists the
spellings it accepts, and unknown fields are ignored. `nvidia-smi -q -d SECTION` output
parses too, with None for what it does not print.
"""

from __future__ import annotations

import re

from .common import (
    ParseError,
    na,
    normalize_pci_bus_id,
    not_output,
    require_content,
    to_float,
    to_int,
    yes_no,
)
from .nvidia_common import blank_gpu, check_driver_failure, device_handle_errors, lost_gpus_only

KIND = "nvidia-smi-q"
WHAT = "nvidia-smi -q"
FIX = "capture it with: nvidia-smi -q > FILE"

_BANNER = re.compile(r"^=+\s*NVSMI LOG\s*=+$")
_KEY_VALUE = re.compile(r"^(\S.*?)\s+:(?:\s(.*))?$")
_GPU_HEADER = re.compile(r"^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])$")


class Node:
    """One line of the tree: its key, its value (None for a section header) and children."""

    __slots__ = ("children", "key", "line", "norm", "value")

    def __init__(self, key: str, value: str | None, line: int):
        self.key = key
        self.norm = _norm(key)
        self.value = value
        self.line = line
        self.children: list[Node] = []

    def child(self, *names: str) -> Node | None:
        wanted = [_norm(name) for name in names]
        for node in self.children:
            if node.norm in wanted:
                return node
        return None

    def get(self, *path: str) -> str | None:
        """The value at a path of keys; each step may list spellings separated by '|'."""
        node: Node | None = self
        for step in path:
            node = node.child(*step.split("|")) if node else None
        return node.value if node else None


def _norm(key: str) -> str:
    return " ".join(key.lower().split())


def build_tree(text: str) -> tuple[Node, list[str]]:
    """The root node and the top-level lines that fit no 'Key : Value' shape (tool messages)."""
    root = Node("", None, 0)
    stack: list[tuple[int, Node]] = [(-1, root)]
    messages: list[str] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        stripped = line.strip()
        if not stripped or _BANNER.match(stripped):
            continue
        indent = len(line) - len(line.lstrip(" "))
        match = _KEY_VALUE.match(stripped)
        if match:
            node = Node(match.group(1).strip(), (match.group(2) or "").strip(), number)
        elif indent == 0 and not _GPU_HEADER.match(stripped):
            messages.append(stripped)
            continue
        else:
            node = Node(stripped, None, number)
        while stack[-1][0] >= indent:
            stack.pop()
        stack[-1][1].children.append(node)
        stack.append((indent, node))
    return root, messages


def _sum_uncorrectable(volatile: Node | None) -> int | None:
    """Uncorrectable ECC count of an ECC Errors/Volatile (or Aggregate) section."""
    if volatile is None:
        return None
    double_bit = volatile.child("Double Bit")
    if double_bit is not None:  # pre-Ampere layout: Double Bit / Total
        return to_int(double_bit.get("Total"))
    counts = [to_int(node.value) for node in volatile.children if "uncorrectable" in node.norm]
    known = [count for count in counts if count is not None]
    return sum(known) if known else None


def _sum_correctable(volatile: Node | None) -> int | None:
    if volatile is None:
        return None
    single_bit = volatile.child("Single Bit")
    if single_bit is not None:
        return to_int(single_bit.get("Total"))
    counts = [to_int(node.value) for node in volatile.children if node.norm.endswith(" correctable")]
    known = [count for count in counts if count is not None]
    return sum(known) if known else None


def _power_draw(gpu: Node) -> float | None:
    readings = gpu.child("GPU Power Readings", "Power Readings")
    if readings is None:
        return None
    for key in ("Power Draw", "Instantaneous Power Draw", "Average Power Draw"):
        value = to_float(readings.get(key))
        if value is not None:
            return value
    return None


def gpu_record(section: Node, index: int) -> dict:
    gpu = blank_gpu(index)
    bus_id = section.get("PCI", "Bus Id") or _GPU_HEADER.match(section.key).group(1)  # type: ignore[union-attr]
    link = ("PCI", "GPU Link Info")
    ecc_errors = section.child("ECC Errors")
    volatile = ecc_errors.child("Volatile") if ecc_errors else None
    aggregate = ecc_errors.child("Aggregate") if ecc_errors else None
    gpu.update(
        name=na(section.get("Product Name")),
        uuid=na(section.get("GPU UUID")),
        serial=na(section.get("Serial Number")),
        pci_bus_id=normalize_pci_bus_id(bus_id),
        pcie_gen_max=to_int(section.get(*link, "PCIe Generation", "Max|Device Max")),
        pcie_gen_current=to_int(section.get(*link, "PCIe Generation", "Current|Device Current")),
        pcie_width_max=to_int(section.get(*link, "Link Width", "Max")),
        pcie_width_current=to_int(section.get(*link, "Link Width", "Current")),
        persistence_mode=na(section.get("Persistence Mode")),
        mig_mode=na(section.get("MIG Mode", "Current")),
        ecc_mode=na(section.get("ECC Mode", "Current")),
        ecc_uncorrected_volatile=_sum_uncorrectable(volatile),
        retired_pages_pending=yes_no(section.get("Retired Pages", "Pending Page Blacklist|Pending")),
        remapped_rows_pending=yes_no(section.get("Remapped Rows", "Pending")),
        remapped_rows_failure=yes_no(section.get("Remapped Rows", "Remapping Failure Occurred")),
        temperature_c=to_int(section.get("Temperature", "GPU Current Temp")),
        power_draw_w=_power_draw(section),
        memory_total_mib=to_int(section.get("FB Memory Usage", "Total")),
        ecc_corrected_volatile=_sum_correctable(volatile),
        ecc_uncorrected_aggregate=_sum_uncorrectable(aggregate),
        retired_pages_single_bit=to_int(
            section.get("Retired Pages", "Single Bit ECC|Single Bit ECC Retirement")
        ),
        retired_pages_double_bit=to_int(
            section.get("Retired Pages", "Double Bit ECC|Double Bit ECC Retirement")
        ),
        remapped_rows_correctable=to_int(section.get("Remapped Rows", "Correctable Error")),
        remapped_rows_uncorrectable=to_int(section.get("Remapped Rows", "Uncorrectable Error")),
        memory_used_mib=to_int(section.get("FB Memory Usage", "Used")),
        power_limit_w=to_float(
            section.get("GPU Power Readings|Power Readings", "Current Power Limit|Power Limit")
        ),
        vbios_version=na(section.get("VBIOS Version")),
        fabric_state=na(section.get("Fabric", "State")),
        fabric_status=na(section.get("Fabric", "Status")),
        pcie_replays=to_int(section.get("PCI", "Replays Since Reset|Replay Number Changes")),
    )
    return gpu


def _check_complete(section: Node) -> None:
    """A full -q section ends with 'Processes'; one that has 'Product Name' but no
    'Processes' was cut short (a partial capture, a crash of nvidia-smi)."""
    if section.child("Product Name") is not None and section.child("Processes") is None:
        last = section
        while last.children:
            last = last.children[-1]
        raise ParseError(
            KIND,
            f"truncated nvidia-smi -q output: the section of GPU {section.key[4:]} ends before "
            "its 'Processes' entry",
            last.line,
            fix=FIX,
        )


def parse_nvidia_smi_q(text: str) -> dict:
    """Parse `nvidia-smi -q` text into {driver_version, cuda_version, gpus[], ...}."""
    require_content(KIND, text, WHAT, FIX)
    check_driver_failure(KIND, text)
    root, messages = build_tree(text)
    sections = [node for node in root.children if _GPU_HEADER.match(node.key)]
    has_banner = any(_BANNER.match(line.strip()) for line in text.splitlines())
    if not sections:
        errors = device_handle_errors(text)
        if errors:
            raise lost_gpus_only(KIND, text, errors)
        if has_banner or root.get("Driver Version") is not None:
            raise ParseError(KIND, "nvidia-smi -q output lists no GPU section", fix=FIX)
        raise not_output(KIND, WHAT, text, FIX)
    for section in sections:
        _check_complete(section)
    attached = to_int(root.get("Attached GPUs"))
    if attached is not None and len(sections) > attached:
        raise ParseError(
            KIND,
            f"malformed nvidia-smi -q output: {len(sections)} GPU sections but 'Attached GPUs : {attached}'",
            fix=FIX,
        )
    return {
        "driver_version": na(root.get("Driver Version")),
        "cuda_version": na(root.get("CUDA Version")),
        "attached_gpus": attached,
        "timestamp": na(root.get("Timestamp")),
        "gpus": [gpu_record(section, index) for index, section in enumerate(sections)],
        "tool_messages": messages,
    }
