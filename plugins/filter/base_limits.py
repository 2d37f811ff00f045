"""Filters of role base: resource limits a container can actually grant.

    {{ pid1_limits_text | base_hard_limits }}        -> {"memlock": "8192", "nofile": "20000"}
    {{ base_memlock_limit | base_cap_limit(ceiling) }} -> the lower of the two

Limits are strings in limits.conf(5) terms: "unlimited" or a number (memlock in
KiB, nofile in descriptors). /proc/<pid>/limits gives memlock in bytes.
"""

from __future__ import annotations

import re
from typing import Any

from ansible.errors import AnsibleFilterError

UNLIMITED = "unlimited"
_ROWS = {"memlock": "Max locked memory", "nofile": "Max open files"}


def base_hard_limits(proc_limits: str) -> dict[str, str]:
    """Hard memlock (KiB) and nofile limits from the text of /proc/<pid>/limits."""
    limits = {}
    for name, row in _ROWS.items():
        match = re.search(rf"^{row}\s+\S+\s+(\S+)", proc_limits or "", re.MULTILINE)
        if match is None:
            raise AnsibleFilterError(f"no '{row}' row in /proc/1/limits: {proc_limits[:200]!r}")
        hard = match.group(1)
        if hard != UNLIMITED and name == "memlock":
            hard = str(int(hard) // 1024)
        limits[name] = hard
    return limits


def _as_limit(value: Any, what: str) -> str:
    text = str(value).strip()
    if text == UNLIMITED or (text.isdigit() and int(text) > 0):
        return text
    raise AnsibleFilterError(f"{what} must be 'unlimited' or a positive number, got {value!r}")


def base_cap_limit(wanted: Any, ceiling: Any, name: str = "limit") -> str:
    """`wanted` (the variable `name`) lowered to `ceiling` when the ceiling is lower."""
    wanted, ceiling = _as_limit(wanted, name), _as_limit(ceiling, f"the node's ceiling for {name}")
    if ceiling == UNLIMITED:
        return wanted
    if wanted == UNLIMITED:
        return ceiling
    return str(min(int(wanted), int(ceiling)))


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"base_hard_limits": base_hard_limits, "base_cap_limit": base_cap_limit}
