"""What role ascend_driver reads back after an install: the card list, version.info, DKMS, the verdict.

- `npu-smi info -l` prints `Total Count : N`, then one block per card (`NPU ID`, `Product Name`,
  `Serial Number`, `Chip Count`) as 'Key : Value' lines.
- `/usr/local/Ascend/driver/version.info` and `.../firmware/version.info` hold `Key=Value` lines
  (`Version=25.2.0`, `ascendhal_version=...`).
- `dkms status` prints `name/version, kernel, arch: installed` (DKMS 3; DKMS 2 wrote
  `name, version, kernel, arch: installed`).
- `board_verdict` judges the boards of `npu-smi info -t board -i N` (parsed by
  parsers/ascend.py `parse_npu_smi_board`): every card must say Compatibility OK and report the
  installed driver (Software Version) and firmware.

Stdlib only, Python 3.8: runs inside Ansible modules on the nodes.
"""

from __future__ import annotations

import re

from .common import ParseError, na, require_content, to_int
from .common import snake_key as _snake

LIST_KIND = "npu-smi-list"
LIST_FIX = "capture it with: npu-smi info -l > FILE"
_KEY_VALUE = re.compile(r"^\s*([^:]+?)\s+:\s?(.*)$")
_INFO_LINE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$")
# DKMS 3: "name/version, kernel, arch: status"; DKMS 2: "name, version, kernel, arch: status"
_DKMS3 = re.compile(r"^([^,/\s]+)/([^,\s]+),\s*([^,\s]+),\s*([^:\s]+):\s*(.+?)\s*$")
_DKMS2 = re.compile(r"^([^,\s]+),\s*([^,\s]+),\s*([^,\s]+),\s*([^:\s]+):\s*(.+?)\s*$")
_DKMS_ADDED = re.compile(r"^([^,/\s]+)[/,]\s*([^,:\s]+):\s*(added|built)\s*$")


def parse_npu_smi_list(text: str) -> dict:
    """`npu-smi info -l` -> {total, npus: [{npu_id, product_name, serial_number, chip_count}]}."""
    require_content(LIST_KIND, text, "npu-smi info -l", LIST_FIX)
    total = None
    npus: list = []
    for line in text.splitlines():
        match = _KEY_VALUE.match(line)
        if not match:
            continue
        key, value = _snake(match.group(1).strip()), match.group(2).strip()
        if key == "total_count":
            total = to_int(value)
        elif key == "npu_id":
            npus.append(
                {"npu_id": to_int(value), "product_name": None, "serial_number": None, "chip_count": None}
            )
        elif npus and key in ("product_name", "serial_number"):
            npus[-1][key] = na(value)
        elif npus and key == "chip_count":
            npus[-1]["chip_count"] = to_int(value)
    if total is None and not npus:
        raise ParseError(
            LIST_KIND, "no 'Total Count' or 'NPU ID' line: not npu-smi info -l output", fix=LIST_FIX
        )
    if any(npu["npu_id"] is None for npu in npus):
        raise ParseError(LIST_KIND, "an 'NPU ID' that is not a number", fix=LIST_FIX)
    if total is not None and total != len(npus):
        raise ParseError(
            LIST_KIND, f"Total Count says {total} cards but {len(npus)} 'NPU ID' blocks follow", fix=LIST_FIX
        )
    return {"total": len(npus), "npus": npus}


def parse_version_info(text: str) -> dict:
    """`Key=Value` lines of an Ascend version.info; `version` is the `Version=` (any case) or None."""
    fields = {}
    for line in (text or "").splitlines():
        match = _INFO_LINE.match(line)
        if match:
            fields[match.group(1)] = match.group(2)
    version = next((value for key, value in fields.items() if key.lower() == "version" and value), None)
    return {"version": version, "fields": fields}


def parse_dkms_status(text: str) -> list:
    """`dkms status` lines -> [{module, version, kernel, arch, status}] (kernel/arch None when only added)."""
    entries = []
    for line in (text or "").splitlines():
        line = line.strip()
        if not line:
            continue
        match = _DKMS3.match(line) or _DKMS2.match(line)
        if match:
            module, version, kernel, arch, status = match.groups()
            entries.append(
                {
                    "module": module,
                    "version": version,
                    "kernel": kernel,
                    "arch": arch,
                    "status": status.lower(),
                }
            )
            continue
        added = _DKMS_ADDED.match(line)
        if added:
            entries.append(
                {
                    "module": added.group(1),
                    "version": added.group(2),
                    "kernel": None,
                    "arch": None,
                    "status": added.group(3),
                }
            )
    return entries


def dkms_verdict(entries: list, kernel: str, module_pattern: str) -> dict:
    """Whether a module matching `module_pattern` is built and installed for `kernel`."""
    pattern = re.compile(module_pattern)
    ours = [entry for entry in entries if pattern.search(entry["module"])]
    for_kernel = [entry for entry in ours if entry["kernel"] == kernel]
    # "installed" (DKMS 2/3), possibly with a warning after it: "installed (WARNING! Diff between ...)"
    built = [entry for entry in for_kernel if entry["status"].startswith("installed")]
    if built:
        reason = f"DKMS has built {', '.join(e['module'] + '/' + e['version'] for e in built)} for {kernel}"
    elif for_kernel:
        reason = f"DKMS module(s) for {kernel} are only {', '.join(e['status'] for e in for_kernel)}"
    elif ours:
        kernels = sorted({str(e["kernel"]) for e in ours if e["kernel"]}) or ["none"]
        reason = (
            f"DKMS knows {', '.join(sorted({e['module'] for e in ours}))} but has built it for "
            f"{', '.join(kernels)}, not for the running kernel {kernel}"
        )
    else:
        reason = f"DKMS has no Ascend driver module (pattern {module_pattern!r})"
    return {"built": bool(built), "modules": ours, "reason": reason}


def board_verdict(boards: list, driver, firmware, check_firmware: bool = True) -> dict:
    """Every card's board view: Compatibility OK and the installed versions; reasons for each that is not.

    `compatible` is True when every card says OK, False when one says anything else, None when no
    card was read. `versions_match` is False when a card runs other versions than the installed
    version.info files (the new driver is not loaded yet: a reboot is due).
    """
    if not boards:
        return {"compatible": None, "versions_match": None, "reasons": ["no NPU board was read"]}
    reasons = []
    compatible = True
    versions_match = True
    for board in boards:
        npu = board.get("npu_id")
        word = board.get("compatibility")
        if str(word or "").strip().upper() != "OK":
            compatible = False
            reasons.append(
                f"NPU {npu}: npu-smi board Compatibility is {word or 'not reported'} (driver "
                f"{board.get('software_version')}, firmware {board.get('firmware_version')})"
            )
        software = board.get("software_version")
        if driver and software and software.lower() != str(driver).lower():
            versions_match = False
            reasons.append(f"NPU {npu} runs driver {software}, version.info says {driver} is installed")
        board_fw = board.get("firmware_version")
        if check_firmware and firmware and board_fw and board_fw.lower() != str(firmware).lower():
            versions_match = False
            reasons.append(f"NPU {npu} runs firmware {board_fw}, version.info says {firmware} is installed")
    return {"compatible": compatible, "versions_match": versions_match, "reasons": reasons}


__all__ = [
    "board_verdict",
    "dkms_verdict",
    "parse_dkms_status",
    "parse_npu_smi_list",
    "parse_version_info",
]
