"""Parsers of Huawei `npu-smi` output (Ascend 310/310B/310P, 910A, 910B, A3/910C).

`npu-smi info` prints, between two borders, an NPU line and the line(s) of its chips:
    | 0     910B1         | OK            | 88.4        46                0    / 0       |
    | 0                   | 0000:C1:00.0  | 0           0    / 0          4175 / 65536   |
the NPU line gives id, name, health, power, temperature, hugepages; a chip line the chip
id (and a Phy-ID or Device column when the header names one), bus id, AICore %, memory,
HBM. 910B has one chip per NPU; A3 (910C) repeats the NPU line for each of its two dies
(16 chips on an 8-NPU node); 310/310P cards list several chip lines under one NPU line.
Columns are read by the header's names, so layouts without hugepages, HBM or Phy-ID
(310, 310B, 910A on older npu-smi) parse with None there. `npus[]` holds one entry per
chip with the NPU line's values; power_w is None where npu-smi prints '-' or 'NA'.

`npu-smi info -t board -i N [-c C]` and `npu-smi info -t health -i N [-c C]` print
'Key : Value' lines; every key is kept in `fields` (snake_case) beside the named ones.
Health values are the tool's words: OK, Warning, Alarm, Critical.

hccn_tool parsers live in hccn.py and are re-exported here.
"""

from __future__ import annotations

import re

from .common import (
    ParseError,
    na,
    normalize_pci_bus_id,
    not_output,
    require_content,
    snake_key,
    to_float,
    to_int,
)
from .hccn import parse_hccn_ip, parse_hccn_link, parse_hccn_net_health

INFO_KIND = "npu-smi-info"
BOARD_KIND = "npu-smi-board"
HEALTH_KIND = "npu-smi-health"
INFO_FIX = "capture it with: npu-smi info > FILE"
BOARD_FIX = "capture it with: npu-smi info -t board -i NPU_ID > FILE"
HEALTH_FIX = "capture it with: npu-smi info -t health -i NPU_ID > FILE"
DRIVER_FIX = (
    "check the Ascend driver is installed and loaded (lsmod | grep drv_davinci; ls /dev/davinci*) "
    "and that no other process holds the device manager, then capture again"
)

HEALTH_SEVERITY = {"ok": 0, "warning": 1, "alarm": 2, "critical": 3}

_VERSION_ROW = re.compile(r"npu-smi\s+(\S+)\s+Version:\s*(\S+)", re.IGNORECASE)
_USAGE = re.compile(r"^(\d+(?:\.\d+)?)\s*/\s*(\d+(?:\.\d+)?)$")
_VALUE_TOKEN = re.compile(r"\d+(?:\.\d+)?\s*/\s*\d+(?:\.\d+)?|\S+")
_KEY_VALUE = re.compile(r"^\s*([^:]+?)\s+:\s?(.*)$")
_FAILURES = (
    ("dcmi", "fail"),
    ("error while loading shared libraries",),
    ("can not find", "davinci"),
    ("permission denied",),
)

# header column name (lower case) -> (key for a single value, keys for a used/total pair)
_COLUMNS = {
    "power(w)": ("power_w", None),
    "temp(c)": ("temperature_c", None),
    "hugepages-usage(page)": (None, ("hugepages_used", "hugepages_total")),
    "aicore(%)": ("aicore_pct", None),
    "memory-usage(mb)": (None, ("memory_used_mb", "memory_total_mb")),
    "hbm-usage(mb)": (None, ("hbm_used_mb", "hbm_total_mb")),
}

_CHIP_KEYS = (
    "npu_id",
    "chip_id",
    "name",
    "health",
    "power_w",
    "temperature_c",
    "hbm_used_mb",
    "hbm_total_mb",
    "aicore_pct",
    "bus_id",
    "phy_id",
    "device_id",
    "memory_used_mb",
    "memory_total_mb",
    "hugepages_used",
    "hugepages_total",
)


def check_npu_smi_failure(kind: str, text: str) -> None:
    """Raise ParseError when npu-smi printed a driver/DCMI failure instead of its output."""
    for number, line in enumerate(text.splitlines(), 1):
        lowered = line.lower()
        if any(all(word in lowered for word in words) for words in _FAILURES):
            raise ParseError(
                kind, "npu-smi could not talk to the Ascend driver", number, line, fix=DRIVER_FIX
            )


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _header_cells(cells: list[str], anchor: str) -> list[str]:
    """A header row as its three cells, also when one '|' is missing (a hand-edited paste).

    The second cell's name (`Health`, `Bus-Id`) is the anchor to split a merged cell at.
    """
    if len(cells) >= 3:
        return cells
    joined = " ".join(cells)
    match = re.search(rf"(?<!\S){re.escape(anchor)}(?!\S)", joined)
    if match is None:
        return cells
    return [joined[: match.start()].strip(), anchor, joined[match.end() :].strip()]


def _number(token: str | None) -> int | float | None:
    value = to_float(token)
    if value is None:
        return None
    return int(value) if value.is_integer() and "." not in (token or "") else value


def _values(header_cell: str, value_cell: str, record: dict) -> None:
    """Map the tokens of a value cell onto the column names of the header cell."""
    names = header_cell.split()
    tokens = _VALUE_TOKEN.findall(value_cell)
    for name, token in zip(names, tokens):
        single, pair = _COLUMNS.get(name.lower(), (None, None))
        if single:
            record[single] = _number(token)
        elif pair:
            usage = _USAGE.match(token.replace(" ", ""))
            if usage:
                record[pair[0]], record[pair[1]] = _number(usage.group(1)), _number(usage.group(2))
        else:
            record.setdefault("extra", {})[name] = na(token)


def _chip(npu_row: list[str], chip_row: list[str], headers: list[list[str]]) -> dict:
    record = dict.fromkeys(_CHIP_KEYS)
    npu_tokens = npu_row[0].split(None, 1)
    record["npu_id"] = to_int(npu_tokens[0])
    record["name"] = npu_tokens[1].strip() if len(npu_tokens) > 1 else None
    record["health"] = na(npu_row[1])
    chip_tokens = chip_row[0].split()
    record["chip_id"] = to_int(chip_tokens[0]) if chip_tokens else None
    # the second word of the chip header names the second id column: Phy-ID (A3) or Device (310P)
    second = headers[1][0].split()[1:2]
    if len(chip_tokens) > 1 and second:
        record["device_id" if second[0].lower() == "device" else "phy_id"] = to_int(chip_tokens[1])
    record["bus_id"] = normalize_pci_bus_id(chip_row[1])
    _values(headers[0][2], npu_row[2], record)
    _values(headers[1][2], chip_row[2], record)
    return record


def _process(cells: list[str]) -> dict | None:
    ids = cells[0].split()
    if len(cells) < 4 or len(ids) < 2 or to_int(ids[0]) is None:
        return None  # 'No running processes found in NPU 0'
    return {
        "npu_id": to_int(ids[0]),
        "chip_id": to_int(ids[1]),
        "pid": to_int(cells[1]),
        "name": na(cells[2]),
        "memory_mb": _number(cells[3]),
    }


def _table(text: str) -> tuple[str | None, list[list[str]], list[list[tuple[int, list[str]]]], list[dict]]:
    """(version, the two header rows, blocks of data rows between borders, processes)."""
    version = None
    headers: list[list[str]] = []
    blocks: list[list[tuple[int, list[str]]]] = [[]]
    processes: list[dict] = []
    in_processes = False
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if line.startswith("+"):
            blocks.append([])  # a border closes the block of rows above it
            continue
        if not line.startswith("|"):
            continue  # prompts, '...' elisions of documentation excerpts
        cells = _cells(line)
        version_match = _VERSION_ROW.search(line)
        if version_match:
            version = version_match.group(2)
        elif "process id" in line.lower():
            in_processes = True
        elif in_processes:
            record = _process(cells)
            if record:
                processes.append(record)
        elif cells[0].startswith("NPU") and "Health" in line and not headers:
            headers = [_header_cells(cells, "Health")]
        elif cells[0].startswith("Chip") and len(headers) == 1:
            headers.append(_header_cells(cells, "Bus-Id"))
        elif len(headers) == 2 and len(cells) >= 3:
            blocks[-1].append((number, cells))
        elif len(headers) == 2:
            raise ParseError(
                INFO_KIND,
                f"malformed npu-smi info row: {len(cells)} cells, the table has 3",
                number,
                raw,
                fix=INFO_FIX,
            )
    return version, headers, [block for block in blocks if block], processes


def parse_npu_smi_info(text: str) -> dict:
    """Parse `npu-smi info` into {version, npus[] (one per chip), npu_count, chip_count, processes[]}."""
    require_content(INFO_KIND, text, "npu-smi info", INFO_FIX)
    check_npu_smi_failure(INFO_KIND, text)
    version, headers, blocks, processes = _table(text)
    if len(headers) < 2:
        raise not_output(INFO_KIND, "npu-smi info", text, INFO_FIX, "no 'NPU Name | Health' table header")
    if any(len(header) < 3 for header in headers):
        raise ParseError(INFO_KIND, "malformed npu-smi info table header: fewer than 3 cells", fix=INFO_FIX)
    npus = []
    for block in blocks:
        if len(block) < 2:
            number, cells = block[0]
            raise ParseError(
                INFO_KIND,
                "truncated npu-smi info output: NPU row without a chip row",
                number,
                " | ".join(cells),
                fix=INFO_FIX,
            )
        npus.extend(_chip(block[0][1], cells, headers) for _number, cells in block[1:])
    if not npus:
        raise ParseError(INFO_KIND, "npu-smi info output lists no NPU", fix=INFO_FIX)
    return {
        "version": version,
        "npu_count": len({chip["npu_id"] for chip in npus}),
        "chip_count": len(npus),
        "npus": npus,
        "processes": processes,
    }


def _key_values(kind: str, text: str, what: str, fix: str) -> list[tuple[int, str, str]]:
    require_content(kind, text, what, fix)
    check_npu_smi_failure(kind, text)
    pairs = []
    for number, line in enumerate(text.splitlines(), 1):
        match = _KEY_VALUE.match(line)
        if match:
            pairs.append((number, match.group(1).strip(), match.group(2).strip()))
    return pairs


def parse_npu_smi_board(text: str) -> dict:
    """Parse `npu-smi info -t board -i N [-c C]`."""
    pairs = _key_values(BOARD_KIND, text, "npu-smi info -t board", BOARD_FIX)
    fields = {snake_key(key): value for _number, key, value in pairs}
    if "npu_id" not in fields or not ({"board_id", "pcie_bus_info", "firmware_version"} & set(fields)):
        raise not_output(BOARD_KIND, "npu-smi info -t board", text, BOARD_FIX)
    return {
        "npu_id": to_int(fields.get("npu_id")),
        "chip_id": to_int(fields.get("chip_id")),
        "chip_count": to_int(fields.get("chip_count")),
        "chip_name": na(fields.get("chip_name")),
        "chip_type": na(fields.get("chip_type")),
        "software_version": na(fields.get("software_version")),
        "firmware_version": na(fields.get("firmware_version")),
        "compatibility": na(fields.get("compatibility")),
        "board_id": na(fields.get("board_id")),
        "bus_id": normalize_pci_bus_id(fields.get("pcie_bus_info")),
        "pci_vendor_id": _hex_id(fields.get("pci_vendor_id")),
        "pci_device_id": _hex_id(fields.get("pci_device_id")),
        "fields": fields,
    }


def _hex_id(value: str | None) -> str | None:
    """'0x19E5' -> '19e5' (lspci's spelling)."""
    text = na(value)
    if text is None:
        return None
    return text.lower()[2:] if text.lower().startswith("0x") else text.lower()


def _error_codes(value: str | None) -> list[str]:
    text = na(value)
    if text is None:
        return []
    return [code for code in re.split(r"[\s,;]+", text) if code and code.upper() != "NA"]


def worst_health(values) -> str | None:
    """The most severe of npu-smi health words; unknown words rank as Alarm."""
    known = [value for value in values if value]
    if not known:
        return None
    return max(known, key=lambda value: HEALTH_SEVERITY.get(value.lower(), 2))


def parse_npu_smi_health(text: str) -> dict:
    """Parse `npu-smi info -t health -i N [-c C]` into {npu_id, health, error_codes, chips[]}."""
    pairs = _key_values(HEALTH_KIND, text, "npu-smi info -t health", HEALTH_FIX)
    npu_id = None
    chips: list[dict] = []
    pending_chip = None
    for _number, key, value in pairs:
        label = key.lower()
        if label == "npu id":
            npu_id = to_int(value)
        elif label == "chip id":
            # 'Chip ID' comes before a chip's block in some versions and after it in others
            if chips and chips[-1]["chip_id"] is None:
                chips[-1]["chip_id"] = to_int(value)
            else:
                pending_chip = to_int(value)
        elif label == "health status":
            chips.append(
                {"chip_id": pending_chip, "health": na(value), "error_codes": [], "error_information": None}
            )
            pending_chip = None
        elif label == "error code" and chips:
            chips[-1]["error_codes"] = _error_codes(value)
        elif label == "error information" and chips:
            chips[-1]["error_information"] = na(value)
    if not chips:
        raise not_output(HEALTH_KIND, "npu-smi info -t health", text, HEALTH_FIX, "no 'Health Status' line")
    return {
        "npu_id": npu_id,
        "chip_id": chips[0]["chip_id"] if len(chips) == 1 else None,
        "health": worst_health(chip["health"] for chip in chips),
        "error_codes": [code for chip in chips for code in chip["error_codes"]],
        "chips": chips,
    }


__all__ = [
    "HEALTH_SEVERITY",
    "check_npu_smi_failure",
    "parse_hccn_ip",
    "parse_hccn_link",
    "parse_hccn_net_health",
    "parse_npu_smi_board",
    "parse_npu_smi_health",
    "parse_npu_smi_info",
    "worst_health",
]
