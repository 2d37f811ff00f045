"""The inventory as the validate command needs it: target hosts, their
variables and group membership, read once through `ansible-inventory`.

Going through Ansible (not our own YAML reading) means every inventory form
Ansible accepts works, group_vars/host_vars included, with Ansible's own
precedence.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clusterforge.errors import EnvironmentNotReady, InvalidInput
from clusterforge.paths import project_root


@dataclass
class Inventory:
    path: Path
    hostvars: dict[str, dict[str, Any]]
    groups: dict[str, list[str]]  # every group's hosts, children's hosts included
    targets: list[str]  # hosts selected by --limit (all when none), inventory order
    _membership: dict[str, list[str]] | None = field(default=None, repr=False)

    def group_hosts(self, group: str) -> list[str]:
        return self.groups.get(group, [])

    def vars_of(self, host: str) -> dict[str, Any]:
        return self.hostvars.get(host, {})

    def groups_of(self, host: str) -> list[str]:
        """Like Ansible's group_names: the groups holding the host, but not `all`/`ungrouped`."""
        if self._membership is None:
            membership: dict[str, list[str]] = {}
            for group in sorted(self.groups):
                if group not in ("all", "ungrouped"):
                    for member in self.groups[group]:
                        membership.setdefault(member, []).append(group)
            self._membership = membership
        return self._membership.get(host, [])


def ansible_tool(name: str) -> str:
    """An Ansible executable: the one next to this Python first (the venv), then PATH."""
    local = Path(sys.executable).parent / name
    if local.is_file() and os.access(local, os.X_OK):
        return str(local)
    found = shutil.which(name)
    if not found:
        raise EnvironmentNotReady(
            f"{name} not found next to {sys.executable} nor on PATH",
            "install ClusterForge with its dependencies (scripts/setup-venv.sh) and run it from that venv",
        )
    return found


def ansible_env() -> dict[str, str]:
    """Environment for Ansible runs: ClusterForge's ansible.cfg and the venv's tools first on PATH."""
    env = dict(os.environ)
    env["ANSIBLE_CONFIG"] = str(project_root() / "ansible.cfg")
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env.setdefault("ANSIBLE_NOCOLOR", "1")
    return env


def load_inventory(path: Path, limit: str | None = None) -> Inventory:
    if not path.exists():
        raise InvalidInput(
            f"inventory {path} does not exist",
            "pass -i with an inventory file or directory, e.g. -i inventories/lab",
        )
    data = _run_json([ansible_tool("ansible-inventory"), "-i", str(path), "--list"], path)
    hostvars = data.get("_meta", {}).get("hostvars", {})
    groups = _expand_groups(data)
    everything = groups.get("all", [])
    if not everything:
        raise InvalidInput(f"inventory {path} has no hosts", "add hosts, or point -i at the right inventory")
    targets = everything if not limit else _limited(path, limit, everything)
    return Inventory(path=path, hostvars=hostvars, groups=groups, targets=targets)


def _run_json(argv: list[str], path: Path) -> dict[str, Any]:
    proc = _run(argv)
    if proc.returncode != 0:
        raise InvalidInput(
            f"inventory {path} could not be read: {_last_lines(proc.stderr or proc.stdout)}",
            f"run `{' '.join(argv)}` to see the full message, and fix the file it names",
        )
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError as err:
        raise InvalidInput(f"ansible-inventory printed no JSON for {path}: {err}", None) from None


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            argv, capture_output=True, text=True, env=ansible_env(), check=False, timeout=600
        )
    except subprocess.TimeoutExpired:
        raise EnvironmentNotReady(
            f"`{' '.join(argv)}` took more than 10 minutes", "check dynamic inventory scripts and plugins"
        ) from None


def _last_lines(text: str, count: int = 3) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return " / ".join(lines[-count:]) or "(no output)"


def _expand_groups(data: dict[str, Any]) -> dict[str, list[str]]:
    """group -> hosts (own and children's, first-seen order), from `ansible-inventory --list`."""
    cache: dict[str, list[str]] = {}

    def hosts_of(group: str, seen: frozenset[str]) -> list[str]:
        if group in cache:
            return cache[group]
        entry = data.get(group) or {}
        ordered = dict.fromkeys(entry.get("hosts", []))
        for child in entry.get("children", []):
            if child not in seen:
                ordered.update(dict.fromkeys(hosts_of(child, seen | {child})))
        cache[group] = list(ordered)
        return cache[group]

    names = [name for name in data if name != "_meta"]
    return {name: hosts_of(name, frozenset({name})) for name in names}


_LIMIT_FIX = "check the pattern against `ansible-inventory -i INV --graph`"


def _limited(path: Path, limit: str, everything: list[str]) -> list[str]:
    """Hosts matching an Ansible --limit pattern, resolved by Ansible itself."""
    argv = [ansible_tool("ansible"), "all", "-i", str(path), "--list-hosts", "--limit", limit]
    proc = _run(argv)
    if proc.returncode != 0 and "no hosts" in proc.stderr:
        raise InvalidInput(f"--limit {limit!r} matches no host of {path}", _LIMIT_FIX)
    if proc.returncode != 0:
        raise InvalidInput(
            f"--limit {limit!r} could not be applied to {path}: {_last_lines(proc.stderr or proc.stdout)}",
            "use an Ansible host pattern: a host, a group, host1:host2, 'gpu_*', group:!host",
        )
    listed = {line.strip() for line in proc.stdout.splitlines()[1:] if line.strip()}
    targets = [host for host in everything if host in listed]
    if not targets:
        raise InvalidInput(f"--limit {limit!r} matches no host of {path}", _LIMIT_FIX)
    return targets
