"""Comparable keys of the vendors' version strings.

NVIDIA driver "535.183.01" and CUDA "12.2": dotted integers. Ascend HDK
"24.1.rc2" < "24.1.0" < "24.1.0.1" and CANN "8.0.RC2" < "8.0.0": a release
candidate sorts before the release of the same major.minor. Missing parts
count as zero ("580" == "580.0.0"). Callers validate the format first
(bom_rules.yml `version_formats`); these functions raise ValueError otherwise.
"""

from __future__ import annotations

import re

_RC = re.compile(r"^rc(\d+)$", re.IGNORECASE)
_PRERELEASE = re.compile(r"^(alpha|beta)\d+$", re.IGNORECASE)


def dotted_key(version: str, width: int = 3) -> tuple[int, ...]:
    """NVIDIA driver/branch, CUDA: "535.183.01" -> (535, 183, 1)."""
    parts = [int(part) for part in version.split(".")]
    return tuple(parts + [0] * (width - len(parts)))


def branch(driver_version: str) -> int:
    """The driver branch (major): "535.183.01" -> 535."""
    return int(driver_version.split(".")[0])


def cuda_major_minor(cuda_version: str) -> tuple[int, int]:
    major, minor = dotted_key(cuda_version)[:2]
    return major, minor


def huawei_key(version: str) -> tuple[int, ...]:
    """Ascend HDK driver or CANN: "24.1.rc2" -> (24, 1, 0, 2); "24.1.0.1" -> (24, 1, 1, 0, 1).

    The third field is 0 for a release candidate, 1 for a release, so every
    RC of a major.minor sorts before its releases. CANN pre-release suffixes
    (".alpha003") are dropped: they need what their base release needs.
    """
    parts = version.split(".")
    if len(parts) < 3:
        raise ValueError(f"not a Huawei version: {version!r}")
    major, minor, third, rest = int(parts[0]), int(parts[1]), parts[2], parts[3:]
    rc = _RC.match(third)
    key = [major, minor, 0, int(rc.group(1))] if rc else [major, minor, 1, int(third)]
    key += [int(part) for part in rest if not _PRERELEASE.match(part)]
    return tuple(key)
