"""Node checks (`node.*`): what the node needs beside its accelerators."""

from __future__ import annotations

from ..results import evidence, failed, passed, skipped
from .common import unavailable


def mount_points(text: str) -> dict:
    """Mount point -> (device, fstype) from /proc/self/mounts (octal escapes such as \\040 decoded)."""
    points = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 3:
            points[_unescape(parts[1])] = (_unescape(parts[0]), parts[2])
    return points


def _unescape(value: str) -> str:
    # The kernel writes space, tab, newline and backslash in mount fields as \ooo.
    out = []
    index = 0
    while index < len(value):
        chunk = value[index : index + 4]
        if len(chunk) == 4 and chunk[0] == "\\" and chunk[1:].isdigit():
            out.append(chr(int(chunk[1:], 8)))
            index += 4
        else:
            out.append(value[index])
            index += 1
    return "".join(out)


def node_mounts(mounts, required: list[str]) -> dict:
    check = "node.mounts"
    if not required:
        return skipped(check, "no required mounts configured (validate_required_mounts)")
    if not mounts.ok:
        return unavailable(check, mounts)
    points = mount_points(mounts.text)
    wanted = [path.rstrip("/") or "/" for path in required]
    present = [f"{points[p][0]} {p} {points[p][1]}" for p in wanted if p in points]
    missing = [p for p in wanted if p not in points]
    if not missing:
        return passed(
            check,
            f"required mounts present: {', '.join(wanted)}",
            evidence(mounts.command, present, mounts.file),
        )
    return failed(
        check,
        f"not mounted: {', '.join(missing)}",
        evidence(mounts.command, present + [f"(no entry for {p})" for p in missing], mounts.file),
        "mount it (check the storage client service, e.g. systemctl status of the JuiceFS/Ceph mount unit, "
        "and the storage role); jobs on this node would not find their data",
    )
