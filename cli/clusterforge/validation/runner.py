"""Run ClusterForge playbooks through ansible-runner and read their events.

ansible-runner gives one structured event per task result, so results come
from data (the module's `node_result`), never from parsing Ansible's text output.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clusterforge.ansible_env import ansible_env, ansible_tool
from clusterforge.errors import EnvironmentNotReady
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
        text = self.stdout_path.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])


def run_playbook(
    playbook: Path,
    inventory: Path,
    private_dir: Path,
    on_event: Callable[[str, dict[str, Any]], None],
    *,
    extravars: dict[str, Any] | None = None,
    limit: str | None = None,
    forks: int | None = None,
    check_mode: bool = False,
    diff: bool = False,
    timeout_s: int | None = None,
    mitogen: bool = False,
) -> PlaybookRun:
    """Run `playbook` and call on_event(event_name, event_data) for every event (ansible_env's `mitogen`)."""
    import ansible_runner  # imported late: it is slow to import and most commands never need it

    ansible_tool("ansible-playbook")  # a clear error now rather than a runner traceback
    private_dir.mkdir(parents=True, exist_ok=True)
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
            extravars=extravars or {},
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
    stdout = Path(runner.config.artifact_dir) / "stdout" if getattr(runner, "config", None) else None
    return PlaybookRun(rc=runner.rc, status=runner.status, stdout_path=stdout, stats=stats)
