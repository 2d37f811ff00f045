"""`nvidia-smi --query-gpu=FIELDS --format=csv[,nounits]`: one row per GPU.

Columns are found by their header names ("power.draw [W]" is read as power.draw), so
any field order and extra fields work, with or without units. `--format=csv,noheader`
has no header row: pass the requested field list as `fields` (a list or the
comma-separated string given to --query-gpu); without it such input is refused, because
guessing the columns would silently mix values up. Aliases nvidia-smi accepts
(gpu_name, gpu_bus_id, gpu_uuid, gpu_serial) are understood.
"""

from __future__ import annotations

import csv
import re

from .common import ParseError, na, normalize_pci_bus_id, require_content, to_float, to_int, yes_no
from .nvidia_common import QUERY_GPU_FIELDS, blank_gpu, check_driver_failure

KIND = "nvidia-smi-csv"
WHAT = "nvidia-smi --query-gpu --format=csv"
FIX = f"capture it with: nvidia-smi --query-gpu={QUERY_GPU_FIELDS} --format=csv > FILE"

_FIELD_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*(?: \[[^\]]+\])?$")

# GPU record key -> query fields that fill it, first present wins.
_COLUMNS = {
    "index": ("index",),
    "name": ("name", "gpu_name"),
    "uuid": ("uuid", "gpu_uuid"),
    "serial": ("serial", "gpu_serial"),
    "pci_bus_id": ("pci.bus_id", "gpu_bus_id"),
    "pcie_gen_max": ("pcie.link.gen.max", "pcie.link.gen.gpumax"),
    "pcie_gen_current": ("pcie.link.gen.current", "pcie.link.gen.gpucurrent"),
    "pcie_width_max": ("pcie.link.width.max",),
    "pcie_width_current": ("pcie.link.width.current",),
    "persistence_mode": ("persistence_mode",),
    "mig_mode": ("mig.mode.current",),
    "ecc_mode": ("ecc.mode.current",),
    "ecc_uncorrected_volatile": ("ecc.errors.uncorrected.volatile.total",),
    "retired_pages_pending": ("retired_pages.pending",),
    "remapped_rows_pending": ("remapped_rows.pending",),
    "remapped_rows_failure": ("remapped_rows.failure",),
    "temperature_c": ("temperature.gpu",),
    "power_draw_w": ("power.draw", "power.draw.instant", "power.draw.average"),
    "memory_total_mib": ("memory.total",),
    "ecc_corrected_volatile": ("ecc.errors.corrected.volatile.total",),
    "ecc_uncorrected_aggregate": ("ecc.errors.uncorrected.aggregate.total",),
    "retired_pages_single_bit": ("retired_pages.single_bit_ecc.count", "retired_pages.sbe"),
    "retired_pages_double_bit": ("retired_pages.double_bit.count", "retired_pages.dbe"),
    "remapped_rows_correctable": ("remapped_rows.correctable",),
    "remapped_rows_uncorrectable": ("remapped_rows.uncorrectable",),
    "memory_used_mib": ("memory.used",),
    "power_limit_w": ("power.limit", "enforced.power.limit"),
    "vbios_version": ("vbios_version",),
    "fabric_state": ("fabric.state",),
    "fabric_status": ("fabric.status",),
}

_CONVERT = {
    "index": to_int,
    "pci_bus_id": normalize_pci_bus_id,
    "pcie_gen_max": to_int,
    "pcie_gen_current": to_int,
    "pcie_width_max": to_int,
    "pcie_width_current": to_int,
    "ecc_uncorrected_volatile": to_int,
    "retired_pages_pending": yes_no,
    "remapped_rows_pending": yes_no,
    "remapped_rows_failure": yes_no,
    "temperature_c": to_int,
    "power_draw_w": to_float,
    "memory_total_mib": to_int,
    "ecc_corrected_volatile": to_int,
    "ecc_uncorrected_aggregate": to_int,
    "retired_pages_single_bit": to_int,
    "retired_pages_double_bit": to_int,
    "remapped_rows_correctable": to_int,
    "remapped_rows_uncorrectable": to_int,
    "memory_used_mib": to_int,
    "power_limit_w": to_float,
}

# Columns that only other --query-* modes print: such CSVs are not --query-gpu output.
_OTHER_QUERIES = {
    "retired_pages.address": "--query-retired-pages",
    "retired_pages.cause": "--query-retired-pages",
    "pid": "--query-compute-apps",
    "process_name": "--query-compute-apps",
    "used_memory": "--query-compute-apps",
    "used_gpu_memory": "--query-compute-apps",
    "remapped_rows.bank": "--query-remapped-rows",
}

_IDENTITY = ("index", "name", "gpu_name", "uuid", "gpu_uuid", "pci.bus_id", "gpu_bus_id", "serial")


def _field(header_cell: str) -> str:
    """'power.draw [W]' -> 'power.draw'."""
    return header_cell.split(" [", 1)[0].strip()


def _row(number: int, line: str) -> list[str]:
    """One line's cells. Each line is read alone, so a stray quote cannot swallow the lines after it."""
    try:
        cells = next(csv.reader([line.strip()], skipinitialspace=True), [])
    except csv.Error as err:  # e.g. a field over the csv module's 128 KiB limit
        raise ParseError(KIND, f"malformed {WHAT} output: {err}", number, line, fix=FIX) from None
    return [cell.strip() for cell in cells]


def _rows(text: str) -> list[tuple[int, list[str]]]:
    return [(number, _row(number, line)) for number, line in enumerate(text.splitlines(), 1) if line.strip()]


def _looks_like_header(cells: list[str]) -> bool:
    return all(_FIELD_NAME.match(cell) for cell in cells) and any(
        _field(cell) in _IDENTITY or "." in cell or "_" in cell for cell in cells
    )


def _header(rows: list[tuple[int, list[str]]], fields) -> tuple[list[str], list[tuple[int, list[str]]]]:
    first_line, first = rows[0]
    if _looks_like_header(first):
        return [_field(cell) for cell in first], rows[1:]
    if fields:
        names = fields.split(",") if isinstance(fields, str) else list(fields)
        return [_field(name.strip()) for name in names], rows
    raise ParseError(
        KIND,
        f"not {WHAT} output: no header row (for --format=csv,noheader pass the --query-gpu field list)",
        first_line,
        ",".join(first),
        fix=FIX,
    )


def _check_columns(names: list[str], line: int) -> None:
    for name in names:
        if name in _OTHER_QUERIES:
            raise ParseError(
                KIND,
                f"not {WHAT} output: this is nvidia-smi {_OTHER_QUERIES[name]} output (column {name!r})",
                line,
                fix=FIX,
            )
    if not any(name in _IDENTITY for name in names):
        raise ParseError(
            KIND,
            f"not {WHAT} output: no GPU identity column (index, name, uuid or pci.bus_id)",
            line,
            fix=FIX,
        )


def _column_map(names: list[str]) -> dict:
    """GPU record key -> column position, for the keys the header provides."""
    positions = {name: position for position, name in reversed(list(enumerate(names)))}
    mapping = {}
    for key, sources in _COLUMNS.items():
        found = next((positions[source] for source in sources if source in positions), None)
        if found is not None:
            mapping[key] = found
    return mapping


def _gpu(cells: list[str], mapping: dict, position: int) -> dict:
    gpu = blank_gpu(position)
    for key, column in mapping.items():
        gpu[key] = _CONVERT.get(key, na)(cells[column])
    if gpu["index"] is None:
        gpu["index"] = position
    return gpu


def parse_nvidia_smi_csv(text: str, fields=None) -> dict:
    """Parse `nvidia-smi --query-gpu=... --format=csv` into {driver_version, gpus[], ...}."""
    require_content(KIND, text, WHAT, FIX)
    check_driver_failure(KIND, text)
    rows = _rows(text)
    names, data = _header(rows, fields)
    _check_columns(names, rows[0][0])
    if not data:
        raise ParseError(KIND, f"{WHAT} output has a header but no GPU row", rows[0][0], fix=FIX)
    gpus, seen = [], {}
    mapping = _column_map(names)
    driver_column = names.index("driver_version") if "driver_version" in names else None
    driver_version = None
    for position, (line, cells) in enumerate(data):
        if len(cells) != len(names):
            raise ParseError(
                KIND,
                f"malformed {WHAT} output: {len(cells)} values for {len(names)} columns",
                line,
                ", ".join(cells),
                fix=FIX,
            )
        gpu = _gpu(cells, mapping, position)
        # masked captures zero the UUIDs, so the bus id and index identify a GPU first
        identity = gpu["pci_bus_id"] or gpu["index"]
        if identity in seen:
            raise ParseError(
                KIND,
                f"not {WHAT} output: GPU {identity} appears twice (rows {seen[identity]} and {line})",
                line,
                fix=FIX,
            )
        seen[identity] = line
        if driver_column is not None:
            driver_version = driver_version or na(cells[driver_column])
        gpus.append(gpu)
    return {
        "driver_version": driver_version,
        "cuda_version": None,
        "fields": names,
        "gpus": gpus,
        "tool_messages": [],
    }
