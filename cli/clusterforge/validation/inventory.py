"""The inventory as the validate command needs it: target hosts, their variables and group membership.

Read once, in-process, through Ansible's inventory API (the same loader as
`clusterforge inventory check`: inventory_check/ansible_load.py), so every
inventory form Ansible accepts works, group_vars/host_vars included, with
Ansible's own precedence, and nothing from the inventory runs: no lookups,
executable inventory files only with allow_scripts. `--limit` is resolved by
Ansible's own pattern logic after malformed patterns are refused.

Variables come resolved where that is safe (vault-decrypted, templates free
of side effects rendered); anything else stays as written, for the playbook
to resolve at run time (`is_template`, `is_encrypted` tell those apart).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clusterforge.ansible_env import ansible_env, ansible_tool  # noqa: F401  (re-exported for callers)
from clusterforge.errors import InvalidInput
from clusterforge.inventory_check.problems import ERROR, Problem
from clusterforge.inventory_check.sources import ALLOW_SCRIPTS_FLAG, is_host_list
from clusterforge.inventory_check.values import is_encrypted  # noqa: F401  (re-exported for callers)

# Problems that leave the loaded inventory incomplete or wrong: validation must not run on it.
_BLOCKING = ("file.", "inventory.", "yaml.", "vars.load")


@dataclass
class Inventory:
    path: Path
    hostvars: Mapping[str, Mapping[str, Any]]
    groups: dict[str, list[str]]  # every group's hosts, children's hosts included
    targets: list[str]  # hosts selected by --limit (all when none), inventory order
    _membership: dict[str, list[str]] | None = field(default=None, repr=False)

    def group_hosts(self, group: str) -> list[str]:
        return self.groups.get(group, [])

    def vars_of(self, host: str) -> Mapping[str, Any]:
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


class HostVars(Mapping):
    """One host's variables, each resolved on first read (safely, or left as written)."""

    def __init__(self, view: Any):
        self._view = view

    def __getitem__(self, name: str) -> Any:
        from clusterforge.inventory_check.context import UNRESOLVED

        value = self._view.value(name, _ABSENT)
        if value is _ABSENT:
            raise KeyError(name)
        if value is not UNRESOLVED:
            return value
        problem = self._view.unresolved[name]
        if problem.rule == "vars.too_large":  # an alias bomb: nothing may walk it, not even the playbook
            raise InvalidInput(f"{problem.location}: {problem.message}", problem.fix)
        return self._view.raw(name)  # templated or encrypted: the playbook resolves it at run time

    def __iter__(self) -> Iterator[str]:
        return iter(self._view.entry.vars)

    def __len__(self) -> int:
        return len(self._view.entry.vars)


_ABSENT = object()


def checked_inventory(
    path: Path | str,
    limit: str | None = None,
    *,
    allow_scripts: bool = False,
    console: Any = None,
    note: Any = None,
) -> Inventory:
    """`clusterforge inventory check` in-process (its report on `console`, exit 2 before anything
    runs on a bad inventory; warnings counted through `note`), then the inventory loaded."""
    from rich.console import Console

    from clusterforge.inventory_check import check_inventory
    from clusterforge.inventory_check.render import render_text

    report = check_inventory([str(path)], allow_scripts=allow_scripts)
    if not report.valid:
        console = console or Console(stderr=True, highlight=False, soft_wrap=True)
        console.print(render_text(report), markup=False, highlight=False, soft_wrap=True)
        raise InvalidInput(
            f"the inventory {path} has {len(report.errors)} error(s), listed above; nothing ran",
            "fix each problem at the location shown (`clusterforge inventory check -i INV`), then rerun",
        )
    if report.warnings and note is not None:
        note(
            f"inventory check: {len(report.warnings)} warning(s) (`clusterforge inventory check` lists them)"
        )
    return load_inventory(path, limit, allow_scripts=allow_scripts)


def load_inventory(path: Path | str, limit: str | None = None, allow_scripts: bool = False) -> Inventory:
    """The inventory at `path` (a file, a directory or a host list such as 'a,b,'), limited by `limit`."""
    from clusterforge.inventory_check.ansible_load import load_inventory as load_with_ansible
    from clusterforge.inventory_check.context import HostView
    from clusterforge.inventory_check.templating import TemplateCache

    source = str(path)
    if not is_host_list(source) and not Path(source).exists():
        raise InvalidInput(
            f"inventory {path} does not exist",
            "pass -i with an inventory file or directory (e.g. -i inventories/lab) or a host list ('a,b,')",
        )
    loaded = load_with_ansible([source], allow_scripts=allow_scripts)
    _refuse_blocking(path, loaded.problems + [e.vars_error for e in loaded.hosts.values() if e.vars_error])
    if not loaded.hosts:
        raise InvalidInput(f"inventory {path} has no hosts", "add hosts, or point -i at the right inventory")
    templates = TemplateCache()
    hostvars = {
        name: HostVars(HostView(entry, loaded.loader, templates=templates, vault=loaded.vault))
        for name, entry in loaded.hosts.items()
    }
    groups = {group: [h for h in loaded.hosts if h in members] for group, members in loaded.groups.items()}
    if limit is None:
        targets = list(loaded.hosts)
    else:
        from clusterforge.inventory_check.limit import resolve_limit

        targets = resolve_limit(loaded.manager, limit)
    return Inventory(path=Path(source), hostvars=hostvars, groups=groups, targets=targets)


def _refuse_blocking(path: Path | str, problems: list[Problem]) -> None:
    blocking = [p for p in problems if p.severity == ERROR and p.rule.startswith(_BLOCKING)]
    if not blocking:
        return
    shown = "\n  ".join(f"{p.location}: {p.message}" for p in blocking[:5])
    more = f"\n  ... and {len(blocking) - 5} more" if len(blocking) > 5 else ""
    scripts = any(p.rule == "inventory.script" for p in blocking)
    fix = (
        f"rerun with {ALLOW_SCRIPTS_FLAG} if you trust the inventory's scripts"
        if scripts
        else f"fix the file named; `clusterforge inventory check -i {path}` lists every problem"
    )
    raise InvalidInput(f"inventory {path} could not be read:\n  {shown}{more}", fix)
