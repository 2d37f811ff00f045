"""Alibaba T-Head PPU: `ppu-smi -L` and `ppu-smi -q` (SAIL PPU-SMI), and the ACK node labels.

ASSUMPTION: no public sample of ppu-smi's output was found. T-Head's manual (SAIL
PPU-SMI, SDK v2.1.1) documents `-L`, `-q`, `-q -d CLOCK` and an nvidia-smi-compatible
`--query-gpu ... --format=csv`; public scripts read `-L` lines as
`PPU <index>: <name> (UUID: <uuid>)` and MIG children by their `MIG-` UUIDs. The
formats below are modelled on nvidia-smi and those facts, and every field name is
an assumption until checked against a real node (then adjust only this module and
tests/fixtures/ppu):

    ppu-smi -L
        PPU 0: PPU-ZW810E (UUID: PPU-1b6c0f7e-...)
          MIG 4u.4g48gb Device 0: (UUID: MIG-4416c2c4-...)      (MIG children, optional)

    ppu-smi -q
        ==============PPU-SMI LOG==============
        Timestamp                       : Fri Jun 21 02:03:08 2024
        Driver Version                  : 1.3.2-d7f5a2
        PPU-SMI Version                 : 1.22
        SDK Version                     : 2.1.0-a5f865
        Attached PPUs                   : 16
        PPU 00000000:3B:00.0
            Product Name                : PPU-ZW810E
            PPU UUID                    : PPU-1b6c0f7e-...
            Minor Number                : 0
            PCI
                Bus Id                  : 00000000:3B:00.0
            FB Memory Usage
                Total                   : 97920 MiB
                Used                    : 2 MiB
            Temperature
                PPU Current Temp        : 35 C
            Power Readings
                Power Draw              : 85.00 W
            ECC Errors
                Volatile
                    Correctable         : 0
                    Uncorrectable       : 0
            Health                      : OK

Tolerated: CRLF line ends, any indentation width, any key order, unknown keys and
sections (ignored), spellings listed per field, values "N/A". Refused with ParseError:
empty input, an HTML page, another tool's output (nvidia-smi's `GPU 0: ...` lines or its
NVSMI LOG), and ppu-smi's own failure messages (driver not loaded, HGML failed, no
devices found).

Shapes:
    parse_ppu_smi_list -> {"ppus": [{"index", "name", "uuid", "migs": [{"name", "device", "uuid"}]}]}
    parse_ppu_smi_q    -> {"driver_version", "smi_version", "sdk_version", "attached",
                           "ppus": [{"index", "name", "uuid", "bus_id", "serial",
                                     "memory_total_mib", "memory_used_mib", "temperature_c",
                                     "power_draw_w", "health", "ecc_correctable_volatile",
                                     "ecc_uncorrectable_volatile"}]}
"""

from __future__ import annotations

import re

from .common import ParseError, na, normalize_pci_bus_id, not_output, require_content, to_float, to_int

LIST_KIND = "ppu-smi-list"
Q_KIND = "ppu-smi-q"
LIST_FIX = "capture it with: ppu-smi -L > FILE"
Q_FIX = "capture it with: ppu-smi -q > FILE"
DRIVER_FIX = (
    "check the PPU kernel driver is loaded (ls /dev/alixpu*; dmesg) and the SDK installed "
    "(<ppu_sdk_prefix>/ppu-smi/bin/ppu-smi), then capture the output again"
)

PPU_FIELDS = (
    "index",
    "name",
    "uuid",
    "bus_id",
    "serial",
    "memory_total_mib",
    "memory_used_mib",
    "temperature_c",
    "power_draw_w",
    "health",
    "ecc_correctable_volatile",
    "ecc_uncorrectable_volatile",
)

_LIST_LINE = re.compile(r"^PPU\s+(\d+)\s*:\s*(.*?)\s*\(UUID:\s*([^)\s]+)\s*\)\s*$", re.IGNORECASE)
_MIG_LINE = re.compile(
    r"^MIG\s+(\S+)\s+Device\s+(\d+)\s*:\s*\(UUID:\s*([^)\s]+)\s*\)\s*$",
    re.IGNORECASE,
)
_NVIDIA_LIST = re.compile(r"^GPU\s+\d+\s*:.*\(UUID:\s*GPU-", re.IGNORECASE)
_BANNER = re.compile(r"^=+\s*(PPU-SMI|NVSMI)\s+LOG\s*=+$", re.IGNORECASE)
_KEY_VALUE = re.compile(r"^(\S.*?)\s+:(?:\s*(.*))?$")
_DEVICE_HEADER = re.compile(r"^PPU\s+([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])$")
# ppu-smi prints one of these instead of its output when it cannot use the driver (assumed wording,
# as nvidia-smi's; matched loosely).
_FAILURES = (
    "failed to initialize hgml",
    "couldn't communicate with the ppu driver",
    "could not communicate with the ppu driver",
    "driver not loaded",
    "no devices were found",
    "no ppu devices",
    "hgml: driver/library version mismatch",
)
_FAILURE_SCAN_LINES = 40


def _lines(text: str) -> list:
    # splitlines() takes CRLF, CR and LF alike.
    return text.splitlines()


def _check_failure(kind: str, text: str, fix: str) -> None:
    for number, line in enumerate(_lines(text)[:_FAILURE_SCAN_LINES], 1):
        lowered = line.strip().lower()
        if not any(phrase in lowered for phrase in _FAILURES):
            continue
        if "no devices were found" in lowered or "no ppu devices" in lowered:
            raise ParseError(
                kind,
                "ppu-smi found no PPU (the driver is loaded but sees no device)",
                number,
                line,
                fix="check the PPUs are on the PCI bus (lspci -nn) and dmesg for driver errors",
            )
        raise ParseError(kind, "ppu-smi could not talk to the PPU driver", number, line, fix=DRIVER_FIX)


def parse_ppu_smi_list(text: str) -> dict:
    """`ppu-smi -L` -> {"ppus": [...]} (see the module docstring)."""
    require_content(LIST_KIND, text, "ppu-smi -L", LIST_FIX)
    _check_failure(LIST_KIND, text, LIST_FIX)
    ppus: list = []
    unknown = []
    for number, raw in enumerate(_lines(text), 1):
        line = raw.strip()
        if not line:
            continue
        match = _LIST_LINE.match(line)
        if match:
            index, name, uuid = match.groups()
            ppus.append({"index": int(index), "name": na(name), "uuid": uuid, "migs": []})
            continue
        mig = _MIG_LINE.match(line)
        if mig and ppus:
            ppus[-1]["migs"].append({"name": mig.group(1), "device": int(mig.group(2)), "uuid": mig.group(3)})
            continue
        if _NVIDIA_LIST.match(line):
            raise ParseError(
                LIST_KIND,
                "not ppu-smi -L output: this is nvidia-smi -L (NVIDIA GPUs)",
                number,
                line,
                LIST_FIX,
            )
        unknown.append((number, line))
    if not ppus:
        raise not_output(LIST_KIND, "ppu-smi -L", text, LIST_FIX, "no 'PPU <n>: <name> (UUID: ...)' line")
    if unknown:
        # A line of another shape among device lines: a new ppu-smi release or a corrupted capture.
        number, line = unknown[0]
        raise ParseError(LIST_KIND, "not ppu-smi -L output: unexpected line", number, line, LIST_FIX)
    indices = [ppu["index"] for ppu in ppus]
    if len(set(indices)) != len(indices):
        raise ParseError(LIST_KIND, f"ppu-smi -L lists a PPU index twice: {indices}", fix=LIST_FIX)
    return {"ppus": ppus}


class _Node:
    __slots__ = ("children", "key", "line", "value")

    def __init__(self, key: str, value, line: int):
        self.key = " ".join(key.lower().split())
        self.value = value
        self.line = line
        self.children: list = []

    def find(self, *path: str):
        """The node at a path of keys; each step may list spellings separated by '|'."""
        node = self
        for step in path:
            wanted = [" ".join(name.lower().split()) for name in step.split("|")]
            node = next((child for child in node.children if child.key in wanted), None)
            if node is None:
                return None
        return node

    def get(self, *path: str):
        node = self.find(*path)
        return node.value if node is not None else None


def _tree(text: str) -> tuple:
    """(root, devices, saw_banner): an indentation tree of 'Key : Value' lines and section headers."""
    root = _Node("", None, 0)
    devices: list = []
    stack: list = [(-1, root)]
    saw_banner = False
    for number, raw in enumerate(_lines(text), 1):
        line = raw.rstrip().expandtabs(4)
        stripped = line.strip()
        if not stripped:
            continue
        if _BANNER.match(stripped):
            if "nvsmi" in stripped.lower():
                raise ParseError(
                    Q_KIND, "not ppu-smi -q output: this is nvidia-smi -q (NVIDIA GPUs)", number, raw, Q_FIX
                )
            saw_banner = True
            continue
        indent = len(line) - len(line.lstrip(" "))
        header = _DEVICE_HEADER.match(stripped)
        if header and indent == 0:
            node = _Node("ppu", header.group(1), number)
            root.children.append(node)
            devices.append(node)
            stack = [(-1, root), (0, node)]
            continue
        match = _KEY_VALUE.match(stripped)
        if match:
            node = _Node(match.group(1), (match.group(2) or "").strip(), number)
        else:
            node = _Node(stripped, None, number)  # a section header ("FB Memory Usage")
        while stack[-1][0] >= indent:
            stack.pop()
        stack[-1][1].children.append(node)
        stack.append((indent, node))
    return root, devices, saw_banner


def _device(node: _Node, position: int) -> dict:
    ppu = dict.fromkeys(PPU_FIELDS)
    index = to_int(node.get("Minor Number|Index|PPU Index"))
    ppu["index"] = position if index is None else index
    ppu["name"] = na(node.get("Product Name|Name"))
    ppu["uuid"] = na(node.get("PPU UUID|UUID"))
    ppu["serial"] = na(node.get("Serial Number|Serial"))
    ppu["bus_id"] = normalize_pci_bus_id(node.get("PCI", "Bus Id")) or normalize_pci_bus_id(node.value)
    ppu["memory_total_mib"] = to_int(node.get("FB Memory Usage|Memory Usage", "Total"))
    ppu["memory_used_mib"] = to_int(node.get("FB Memory Usage|Memory Usage", "Used"))
    ppu["temperature_c"] = to_float(node.get("Temperature", "PPU Current Temp|Current Temp|PPU Temp"))
    ppu["power_draw_w"] = to_float(node.get("Power Readings", "Power Draw|Average Power Draw"))
    ppu["health"] = na(node.get("Health|Health Status"))
    ppu["ecc_correctable_volatile"] = to_int(node.get("ECC Errors", "Volatile", "Correctable"))
    ppu["ecc_uncorrectable_volatile"] = to_int(node.get("ECC Errors", "Volatile", "Uncorrectable"))
    return ppu


def parse_ppu_smi_q(text: str) -> dict:
    """`ppu-smi -q` -> {driver_version, smi_version, sdk_version, attached, ppus} (module docstring)."""
    require_content(Q_KIND, text, "ppu-smi -q", Q_FIX)
    _check_failure(Q_KIND, text, Q_FIX)
    root, devices, saw_banner = _tree(text)
    if not devices:
        why = "no 'PPU <bus id>' device section" if saw_banner else "no PPU-SMI LOG banner or PPU section"
        raise not_output(Q_KIND, "ppu-smi -q", text, Q_FIX, why)
    ppus = [_device(node, position) for position, node in enumerate(devices)]
    for node, ppu in zip(devices, ppus):
        if ppu["name"] is None and ppu["uuid"] is None:
            raise ParseError(
                Q_KIND,
                "not ppu-smi -q output: a PPU section without Product Name or UUID",
                node.line,
                fix=Q_FIX,
            )
    return {
        "driver_version": na(root.get("Driver Version")),
        "smi_version": na(root.get("PPU-SMI Version|SMI Version")),
        "sdk_version": na(root.get("SDK Version|PPU SDK Version")),
        "attached": to_int(root.get("Attached PPUs")),
        "ppus": ppus,
    }


# --- ACK node labels ------------------------------------------------------------------------

RESOURCE_NAME = "alibabacloud.com/ppu"
LABEL_PREFIX = "aliyun.accelerator/"


def ack_labels(listed: dict, detail: dict | None = None) -> dict:
    """The ACK PPU device plugin's node labels from parsed `ppu-smi -L` (and `-q` for memory).

    {"resource": "alibabacloud.com/ppu", "count": N, "labels": {
        "aliyun.accelerator/xpu_type": "ppu", ".../ppu_name": "PPU-ZW810E",
        ".../ppu_count": "16", ".../ppu_mem": "97920"}}
    Label values are strings (Kubernetes). ppu_mem is the smallest per-device total memory in
    MiB (the label's unit is an assumption: ACK documents the label, not its unit); it is left
    out when `-q` gave no memory. Raises ValueError for no devices or mixed models, since a
    node's labels name one model.
    """
    ppus = list((listed or {}).get("ppus") or [])
    if not ppus:
        raise ValueError("ppu-smi -L lists no PPU: no node labels can be computed")
    names = sorted({str(ppu.get("name") or "") for ppu in ppus})
    if len(names) != 1 or not names[0]:
        raise ValueError(
            f"the node's PPUs are not one model ({', '.join(names)}): one ppu_name label fits none"
        )
    labels = {
        LABEL_PREFIX + "xpu_type": "ppu",
        LABEL_PREFIX + "ppu_name": names[0],
        LABEL_PREFIX + "ppu_count": str(len(ppus)),
    }
    memories = [ppu.get("memory_total_mib") for ppu in (detail or {}).get("ppus") or []]
    memories = [m for m in memories if isinstance(m, int) and m > 0]
    if memories:
        labels[LABEL_PREFIX + "ppu_mem"] = str(min(memories))
    return {"resource": RESOURCE_NAME, "count": len(ppus), "labels": labels}


def sdk_version_matches(have: str | None, want: str | None) -> bool:
    """'2.1.0-a5f865' (SDK version with build id) matches the BOM's '2.1.0' or '2.1.0-a5f865'."""
    if not have or not want:
        return False
    have, want = str(have).strip().lower(), str(want).strip().lower()
    return have == want or have.startswith(want + "-")
