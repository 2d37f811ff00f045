"""Compare vendor version strings: NVIDIA `535.183.01`, Ascend `24.1.rc2`, CANN `8.0.RC2`."""

from __future__ import annotations

import re


def version_key(text: str) -> tuple:
    """A sortable key: numbers compare numerically, a release candidate sorts before its release.

    `24.1.rc2` < `24.1.rc3` < `24.1.0` < `24.1.1`; `535.183.01` < `550.54.15`.
    """
    key = []
    for part in re.split(r"[.\-_]", str(text).strip().lower()):
        if not part:
            continue
        match = re.match(r"^(rc|alpha|beta|t)(\d*)$", part)
        if part.isdigit():
            key.append((1, int(part), ""))
        elif match:
            # Pre-releases sort below any final number at the same position.
            key.append((0, int(match.group(2) or 0), match.group(1)))
        else:
            digits = re.match(r"^(\d+)(.*)$", part)
            if digits:
                key.append((1, int(digits.group(1)), digits.group(2)))
            else:
                key.append((0, 0, part))
    return tuple(key)


def at_least(version: str, minimum: str) -> bool:
    """Whether `version` is `minimum` or newer; a bare branch `525` means 525.x.y or newer."""
    have = version_key(version)
    want = version_key(minimum)
    return have[: len(want)] >= want


def same_version(a: str, b: str) -> bool:
    """Equal as versions, ignoring case (`8.0.RC2` = `8.0.rc2`)."""
    return version_key(a) == version_key(b)
