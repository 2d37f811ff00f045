"""systemd naming rules shared by roles, filters and checks (one implementation).

Stdlib only, Python 3.8-safe.
"""

from __future__ import annotations

import string

from .inputs import InputError

_UNIT_SAFE = set(string.ascii_letters + string.digits + ":_.")


def path_unit(path: str, suffix: str = "mount") -> str:
    """The unit name `systemd-escape --path --suffix=SUFFIX PATH` prints (/mnt/cephfs -> mnt-cephfs.mount)."""
    if not isinstance(path, str) or not path.startswith("/"):
        raise InputError(f"{path!r} is not an absolute path", "give the mount point as an absolute path")
    parts = [part for part in path.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise InputError(f"{path!r} contains '..'", "give the mount point without '..'")
    if not parts:
        return f"-.{suffix}"
    out = []
    for index, char in enumerate("/".join(parts)):
        if char == "/":
            out.append("-")
        elif char in _UNIT_SAFE and not (index == 0 and char == "."):
            out.append(char)
        else:
            out.extend(f"\\x{byte:02x}" for byte in char.encode("utf-8"))
    return "".join(out) + "." + suffix
