"""Run ClusterForge playbooks through ansible-runner and read their events.

ansible-runner gives one structured event per task result, so results come
from data (the module's `node_result`), never from parsing Ansible's text output.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cfcore.files import UnsafeFile, read_end
from cfcore.inputs import is_template

from clusterforge.ansible_env import ansible_env, ansible_tool
from clusterforge.errors import EnvironmentNotReady, InvalidInput
from clusterforge.inventory_check.sources import is_host_list

# Events worth keeping on disk for a post-mortem; results themselves go to
# report.json and the full text to artifacts/<id>/stdout. Dropping the rest
# keeps a 10,000-node run from writing 100,000 small files.
_KEPT_EVENTS = {"runner_on_failed", "runner_on_unreachable", "runner_item_on_failed", "playbook_on_stats"}


@dataclass
class PlaybookRun:
    rc: int
    status: str  # ansible-runner's: successful, failed, timeout, canceled
    stdout_path: Path | None
    stats: dict[str, Any] = field(
        default_factory=dict
    )  # playbook_on_stats event data (set_stats in artifact_data)

    def stdout_tail(self, lines: int = 15) -> str:
        if not self.stdout_path or not self.stdout_path.is_file():
            return ""
        try:  # a fleet's output runs to gigabytes: its last 64 KiB hold the lines shown
            text = read_end(str(self.stdout_path), 64 * 1024, tail=True).decode(errors="replace")
        except UnsafeFile:
            return ""
        return "\n".join(text.splitlines()[-lines:])


def unplain_extravars(extravars: dict[str, Any]) -> list[str]:
    """The extra variables (dotted paths) whose key or value holds template syntax: ansible-playbook
    would template them (docs/design.md, "Data that reaches Ansible")."""
    found: list[str] = []

    def walk(value: Any, where: str) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                path = f"{where}.{key}" if where else str(key)
                if _unplain_text(key):
                    found.append(path)
                walk(item, path)
        elif isinstance(value, (list, tuple)):
            for index, item in enumerate(value):
                walk(item, f"{where}[{index}]")
        elif _unplain_text(value):
            found.append(where)

    walk(extravars, "")
    return found


def _unplain_text(value: Any) -> bool:
    return isinstance(value, str) and is_template(value)


def run_playbook(
    playbook: Path,
    inventory: Path,
    private_dir: Path,
    on_event: Callable[[str, dict[str, Any]], None],
    *,
    extravars: dict[str, Any] | None = None,
    operator_vars: dict[str, Any] | None = None,
    limit: str | None = None,
    forks: int | None = None,
    check_mode: bool = False,
    diff: bool = False,
    timeout_s: int | None = None,
    mitogen: bool = False,
) -> PlaybookRun:
    """Run `playbook` and call on_event(event_name, event_data) for every event (ansible_env's `mitogen`).

    The one door to ansible-playbook. `extravars`: values the CLI computed or read (a file, a node,
    a ledger, a bundle): refused (InvalidInput, nothing runs) when any key or string holds template
    syntax, since ansible-playbook templates extra variables.
    `operator_vars`: the operator's own `-e` from this command line (templates are theirs to
    write), passed as given; `extravars` override them. ansible-runner's copy of them
    (`env/extravars`) is removed when the playbook ends: it may hold the operator's secrets.
    """
    import ansible_runner  # imported late: it is slow to import and most commands never need it

    bad = unplain_extravars(extravars or {})
    if bad:
        raise InvalidInput(
            f"{playbook.name}: the extra variable(s) {', '.join(bad[:10])} hold template syntax, "
            "from data (a file, a node, a ledger or a bundle); nothing ran",
            "correct the data named above; a template is only taken from your own -e",
        )
    ansible_tool("ansible-playbook")  # a clear error now rather than a runner traceback
    private_dir.mkdir(mode=0o700, parents=True, exist_ok=True)  # its env/ holds the extra variables
    stats: dict[str, Any] = {}

    def handle(event: dict[str, Any]) -> bool:
        name = event.get("event", "")
        data = event.get("event_data") or {}
        if name == "playbook_on_stats":
            stats.update(data)
        on_event(name, data)
        return name in _KEPT_EVENTS

    env = ansible_env(mitogen=mitogen)
    try:
        runner = ansible_runner.run(
            private_data_dir=str(private_dir),
            playbook=str(playbook),
            inventory=str(inventory) if is_host_list(str(inventory)) else str(inventory.resolve()),
            extravars={**(operator_vars or {}), **(extravars or {})},
            limit=limit,
            forks=forks,
            cmdline=" ".join(flag for flag, on in (("--check", check_mode), ("--diff", diff)) if on) or None,
            # ansible_env's settings and the operator's own ANSIBLE_* ones (vault password file, ...).
            envvars={k: v for k, v in env.items() if k.startswith("ANSIBLE_") or k == "PATH"},
            quiet=True,
            event_handler=handle,
            timeout=timeout_s,
        )
    except OSError as err:
        raise EnvironmentNotReady(
            f"could not start ansible-playbook through ansible-runner: {err}",
            "check that the ClusterForge venv is complete (scripts/setup-venv.sh)",
        ) from None
    finally:
        (private_dir / "env" / "extravars").unlink(missing_ok=True)
    stdout = Path(runner.config.artifact_dir) / "stdout" if getattr(runner, "config", None) else None
    return PlaybookRun(rc=runner.rc, status=runner.status, stdout_path=stdout, stats=stats)
