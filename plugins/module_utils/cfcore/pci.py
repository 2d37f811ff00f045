"""PCI bus ids in the one form ClusterForge compares and reports: `0000:18:00.0`."""

from __future__ import annotations

import re

_BUS_ID = re.compile(r"^(?:([0-9a-fA-F]{4,8}):)?([0-9a-fA-F]{2}):([0-9a-fA-F]{2})(?:\.([0-7]))?$")


def norm_bus_id(text: str | None) -> str | None:
    """`00000000:18:00.0`, `18:00.0`, `PCI:0000:18:00` -> `0000:18:00.0`; None when not a bus id."""
    if not text:
        return None
    value = text.strip()
    if value.upper().startswith("PCI:"):
        value = value[4:]
    match = _BUS_ID.match(value)
    if match is None:
        return None
    domain, bus, device, function = match.groups()
    domain = (domain or "0000")[-4:]
    return f"{domain}:{bus}:{device}.{function or '0'}".lower()


def same_device(a: str | None, b: str | None) -> bool:
    """Whether two bus ids name the same device (the kernel log omits the function number)."""
    left, right = norm_bus_id(a), norm_bus_id(b)
    if left is None or right is None:
        return False
    return left.rsplit(".", 1)[0] == right.rsplit(".", 1)[0]
