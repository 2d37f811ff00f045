"""`--limit`: a host pattern resolved by Ansible itself, after refusing what would widen the run.

Ansible skips empty parts of a pattern, and an empty list of parts means no
limit at all: `''`, `','`, `':'`, `'['` or `']'` select every host, and an
unclosed `gpu_nvidia[0:1` the whole group. Here each part must be well formed
(a name or glob, `~regex`, `group[N]`, `group[N:M]`, `@file`, with `!`/`&`
in front), each positive part must match a host, a subscript must be inside its
group (`gpu_nvidia[99]`: Ansible raises), and the selection must not be empty;
otherwise InvalidInput (exit 2) names the part.
"""

from __future__ import annotations

import re
from typing import Any

from cfcore.files import UnsafeFile, check_regular

from clusterforge.errors import InvalidInput

_FIX = "use an Ansible host pattern: a host, a group, 'gpu_*', 'gpu_nvidia[0:3]', 'a,b', 'group,!host'"
_BRACKETS = re.compile(r"[\[\]]")


def split_limit(limit: str) -> list[str]:
    """The parts of a --limit pattern, as Ansible splits them; InvalidInput when one is malformed."""
    from ansible.inventory.manager import PATTERN_WITH_SUBSCRIPT, split_host_pattern

    if not limit.strip():
        raise InvalidInput("--limit is empty: it would select every host", f"{_FIX}; or leave --limit out")
    # Checked on the whole pattern: Ansible's ':' splitting drops unbalanced brackets from the parts.
    # A `~regex` may hold any brackets; re.compile judges it below.
    if "~" not in limit and limit.count("[") != limit.count("]"):
        raise InvalidInput(f"--limit {limit!r} has an unclosed bracket", _FIX)
    parts = split_host_pattern(limit)
    if not parts or any(not part.strip() for part in parts):
        raise InvalidInput(
            f"--limit {limit!r} has an empty part (Ansible would ignore it and may select every host)", _FIX
        )
    if "," not in limit and ":".join(parts) != re.sub(r"\s", "", limit):
        raise InvalidInput(
            f"--limit {limit!r} is not a list of host patterns (Ansible would drop part of it and run "
            f"{':'.join(parts)!r})",
            _FIX,
        )
    for part in parts:
        bare = part.lstrip("!&")
        if not bare:
            raise InvalidInput(f"--limit {limit!r}: {part!r} names no host or group", _FIX)
        if bare.startswith("~"):
            _check_regex(limit, bare[1:])
        elif bare.startswith("@"):
            _check_limit_file(bare[1:])
        elif _BRACKETS.search(bare) and not PATTERN_WITH_SUBSCRIPT.match(bare):
            raise InvalidInput(
                f"--limit {limit!r}: {part!r} is not NAME[N] or NAME[N:M]",
                f"{_FIX} (subscripts count from 0)",
            )
    return parts


def resolve_limit(manager: Any, limit: str) -> list[str]:
    """Host names the pattern selects, in inventory order, by Ansible's own pattern logic (in-process)."""
    parts = split_limit(limit)
    for part in parts:
        bare = part.lstrip("!&")
        if bare.startswith("@"):
            continue
        hosts = _hosts_of(manager, limit, bare)
        if not hosts and not part.startswith(("!", "&")):
            raise InvalidInput(
                f"--limit part {part!r} matches no host of the inventory",
                "check the name against `ansible-inventory -i INV --graph` (host and group names are "
                "case-sensitive)",
            )
    from ansible.errors import AnsibleError

    manager.subset(limit)
    try:
        hosts = [host.name for host in manager.get_hosts("all")]
    except AnsibleError as err:  # every part was resolved above: only Ansible changing its mind
        raise InvalidInput(f"--limit {limit!r}: {getattr(err, 'message', None) or err}", _FIX) from None
    finally:
        manager.subset(None)
    if not hosts:
        raise InvalidInput(f"--limit {limit!r} selects no host (its parts exclude each other)", _FIX)
    return hosts


def _hosts_of(manager: Any, limit: str, pattern: str) -> list[Any]:
    """The hosts of one part; InvalidInput for a subscript out of the group's range (Ansible raises)."""
    from ansible.errors import AnsibleError

    try:
        return manager.get_hosts(pattern)
    except AnsibleError as err:
        name = pattern.split("[", 1)[0]
        try:
            size = len(manager.get_hosts(name)) if "[" in pattern else None
        except AnsibleError:
            size = None
        if size:
            fix = f"{name} has {size} host(s): subscripts count from 0, use {name}[0] to {name}[{size - 1}]"
        else:
            fix = _FIX
        raise InvalidInput(
            f"--limit {limit!r}: {pattern!r} selects no host ({getattr(err, 'message', None) or err})", fix
        ) from None


def _check_regex(limit: str, expression: str) -> None:
    try:
        re.compile(expression)
    except re.error as err:
        raise InvalidInput(
            f"--limit {limit!r}: ~{expression} is not a valid regular expression: {err}", _FIX
        ) from None


def _check_limit_file(path: str) -> None:
    try:
        check_regular(path)
    except UnsafeFile as err:
        raise InvalidInput(
            f"--limit @{path}: {err}", "name a regular file listing one host per line"
        ) from None
