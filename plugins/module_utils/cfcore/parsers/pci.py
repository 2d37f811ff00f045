"""`lspci -vvv` (best `lspci -vvv -nn -D`, as root): PCIe link capability and status per device.

    {"devices": [{"bus_id": "0000:19:00.0", "vendor_id": "10de", "device_id": "2330",
                  "link_cap_speed_gts": 32.0, "link_cap_width": 16,
                  "link_sta_speed_gts": 32.0, "link_sta_width": 16, "downgraded": False, ...}]}

`downgraded` is True when LnkSta's speed or width is below LnkCap's, None when the device
has no PCIe link (or lspci could not read its capabilities). Some devices lower their
link speed when idle, so the raw values are there for the validator to judge; lspci's
own '(downgraded)' marks (newer pciutils) are kept in `link_sta_marks`.

Vendor and device ids: `-nn` prints them ('[10de:2330]'). Plain `-vvv` prints names;
the vendor id is then looked up from the vendor names below and the device id read from
'Device 2330' when pci.ids has no name for it, else None. Without root, lspci prints
'Capabilities: <access denied>': `capabilities_readable` is False, the link fields are
None and `warnings` says so.
"""

from __future__ import annotations

import re

from .common import ParseError, na, normalize_pci_bus_id, not_output, require_content, to_int

KIND = "lspci"
FIX = "capture it as root with: lspci -vvv -nn -D > FILE"

# pci.ids vendor names of the hardware ClusterForge handles -> PCI vendor id.
VENDOR_IDS = {
    "nvidia corporation": "10de",
    "mellanox technologies": "15b3",
    "huawei technologies co., ltd.": "19e5",
    "intel corporation": "8086",
    "advanced micro devices, inc. [amd]": "1022",
    "advanced micro devices, inc. [amd/ati]": "1002",
    "broadcom / lsi": "1000",
    "broadcom inc. and subsidiaries": "14e4",
    "samsung electronics co ltd": "144d",
    "matrox electronics systems ltd.": "102b",
    "red hat, inc.": "1af4",
    "amazon.com, inc.": "1d0f",
}

_DEVICE_HEADER = re.compile(
    r"^((?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+(.+?)(?:\s\[([0-9a-fA-F]{4})\])?:\s+(.*)$"
)
_IDS = re.compile(r"\[([0-9a-fA-F]{4}):([0-9a-fA-F]{4})\]")
_REV = re.compile(r"\s*\(rev [0-9a-fA-F]+\)|\s*\(prog-if [^)]*\)")
_PLAIN_DEVICE = re.compile(r"\bDevice ([0-9a-fA-F]{4})$")
_SPEED = re.compile(r"Speed (unknown|[\d.]+GT/s)(?: \((ok|downgraded)\))?")
_DETAIL_LABELS = ("LnkCap", "LnkSta", "Capabilities", "NUMA node", "Kernel driver in use", "Kernel modules")
_WIDTH = re.compile(r"Width x(\d+)(?: \((ok|downgraded)\))?")


def _speed(match) -> float | None:
    if not match or match.group(1) == "unknown":
        return None
    return float(match.group(1)[:-4])


def _device(bus_id: str, class_name: str, description: str, line: int) -> dict:
    ids = _IDS.findall(description)
    name = _REV.sub("", description).strip()
    vendor_id = device_id = None
    if ids:
        vendor_id, device_id = (part.lower() for part in ids[-1])
    else:
        vendor_id = next((vid for vname, vid in VENDOR_IDS.items() if name.lower().startswith(vname)), None)
        plain = _PLAIN_DEVICE.search(name)
        device_id = plain.group(1).lower() if plain else None
    return {
        "bus_id": normalize_pci_bus_id(bus_id),
        "vendor_id": vendor_id,
        "device_id": device_id,
        "class": class_name,
        "description": _IDS.sub("", name).strip(),
        "link_cap_speed_gts": None,
        "link_cap_width": None,
        "link_sta_speed_gts": None,
        "link_sta_width": None,
        "downgraded": None,
        "link_sta_marks": [],
        "capabilities_readable": True,
        "numa_node": None,
        "kernel_driver": None,
        "line": line,
    }


def _read_detail(device: dict, line: str) -> None:
    label, _sep, rest = line.strip().partition(":")
    if label == "LnkCap":
        device["link_cap_speed_gts"] = _speed(_SPEED.search(rest))
        width = _WIDTH.search(rest)
        device["link_cap_width"] = int(width.group(1)) if width else None
    elif label == "LnkSta":
        speed, width = _SPEED.search(rest), _WIDTH.search(rest)
        device["link_sta_speed_gts"] = _speed(speed)
        device["link_sta_width"] = int(width.group(1)) if width else None
        device["link_sta_marks"] = [
            f"{what} {match.group(2)}"
            for what, match in (("speed", speed), ("width", width))
            if match and match.group(2)
        ]
    elif label == "Capabilities" and "<access denied>" in rest:
        device["capabilities_readable"] = False
    elif label == "NUMA node":
        device["numa_node"] = to_int(rest)
    elif label == "Kernel driver in use":
        device["kernel_driver"] = na(rest)


def _downgraded(device: dict) -> bool | None:
    cap_speed, cap_width = device["link_cap_speed_gts"], device["link_cap_width"]
    if cap_speed is None and cap_width is None:
        return None
    sta_speed, sta_width = device["link_sta_speed_gts"], device["link_sta_width"]
    slower = cap_speed is not None and (sta_speed is None or sta_speed < cap_speed)
    narrower = cap_width is not None and (sta_width is None or sta_width < cap_width)
    return slower or narrower


def parse_lspci(text: str) -> dict:
    """Parse `lspci -vvv` into {devices[] with LnkCap/LnkSta values, warnings[]}."""
    require_content(KIND, text, "lspci -vvv", FIX)
    devices: list[dict] = []
    messages: list[str] = []
    details = 0
    for number, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        # A device line is known by its leading bus address, not by indentation: text pasted
        # from a terminal or ticket may be indented as a whole.
        header = _DEVICE_HEADER.match(raw.strip())
        if header:
            bus_id, class_name, _class_code, description = header.groups()
            devices.append(_device(bus_id, class_name.strip(), description, number))
        elif raw.strip().startswith("pcilib:"):
            messages.append(raw.strip())  # e.g. 'pcilib: sysfs_read_vpd: read failed'
        elif devices and (raw[:1].isspace() or raw.partition(":")[0] in _DETAIL_LABELS):
            details += 1
            _read_detail(devices[-1], raw)
        elif devices:
            messages.append(raw.strip())
        else:
            raise not_output(
                KIND, "lspci -vvv", text, FIX, "no device line such as '19:00.0 3D controller: ...'"
            )
    if not devices:
        raise not_output(KIND, "lspci -vvv", text, FIX)
    if not details:
        raise ParseError(KIND, "not lspci -vvv output: no device has detail lines (plain lspci?)", fix=FIX)
    for device in devices:
        device["downgraded"] = _downgraded(device)
    warnings = []
    hidden = sum(1 for device in devices if not device["capabilities_readable"])
    if hidden:
        warnings.append(
            f"lspci could not read the capabilities of {hidden} device(s): "
            "run it as root to see link speed/width"
        )
    return {"devices": devices, "warnings": warnings, "tool_messages": messages}
