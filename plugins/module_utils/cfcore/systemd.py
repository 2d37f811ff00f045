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


# How a role asks for a daemon to be started (module service_running). A daemon that needs
# hardware (nvidia-persistenced, nvidia-fabricmanager) may have nothing to drive on a node:
# "unless_failed" does not restart one that already failed here on every run.
START_POLICIES = ("always", "unless_failed", "never")


def start_decision(policy: str, active_state: str, device_present: bool = False) -> tuple[bool, str]:
    """Whether to start a unit now, and why not when not.

    `active_state` is systemd's ActiveState (active, inactive, failed, activating, ...);
    `device_present`: one of the paths that prove the daemon can run exists (a device node),
    which starts it whatever the policy.
    """
    if policy not in START_POLICIES:
        choices = ", ".join(START_POLICIES)
        raise InputError(f"start policy {policy!r} is not one of {choices}", "use one of them")
    if active_state in ("active", "reloading", "activating"):
        return False, "it is running"
    if device_present or policy == "always":
        return True, ""
    if policy == "unless_failed":
        if active_state == "failed":
            return False, "it failed here already and is not restarted on every run"
        return True, ""
    return False, "the role does not start it on this node"
