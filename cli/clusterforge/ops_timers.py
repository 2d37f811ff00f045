"""Scheduled ClusterForge jobs on a controller node (role ops_timers, playbooks/ops_timers.yml):
one installer for every caller (`clusterforge inspect install`, `clusterforge backup install`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from clusterforge.errors import ChecksFailed, InvalidInput
from clusterforge.paths import project_root
from clusterforge.validation.inventory import Inventory, load_inventory
from clusterforge.validation.runner import run_playbook

CONTROLLER_GROUP = "clusterforge_controller"
PLAYBOOK = "ops_timers.yml"
RUNNER_DIR = Path(".clusterforge") / "timers-install"


def controller_host(inventory: Inventory, on: str | None) -> str:
    if on:
        if on not in inventory.hostvars:
            raise InvalidInput(f"--on {on}: no such host in {inventory.path}", "name a host of the inventory")
        return on
    hosts = inventory.group_hosts(CONTROLLER_GROUP)
    if not hosts:
        raise InvalidInput(
            f"no host to install the timers on: {inventory.path} has no group {CONTROLLER_GROUP}",
            f"pass --on HOST, or add the controller node to group {CONTROLLER_GROUP}",
        )
    return hosts[0]


def install_jobs(
    inventory_path: Path,
    on: str | None,
    owner: str,
    jobs: Any,
    extra_vars: dict[str, Any],
    stderr: Console | None = None,
) -> str:
    """`jobs(inventory)` (the caller's timers, from the inventory's settings) installed on the
    controller under `owner` (a caller's run never removes another caller's units); the host."""
    stderr = stderr or Console(stderr=True)
    inventory = load_inventory(inventory_path)
    host = controller_host(inventory, on)
    planned = jobs(inventory)
    run = run_playbook(
        project_root() / "playbooks" / PLAYBOOK,
        inventory.path,
        RUNNER_DIR / owner,
        lambda _event, _data: None,
        extravars={"ops_timers_hosts": host, "ops_timers_owner": owner},
        # The jobs: the CLI's own templates ({{ clusterforge_inventory }}) and the inventory's
        # settings, with -e: the operator's own input, passed as given.
        operator_vars={**extra_vars, "ops_timers_jobs": planned},
        limit=host,
    )
    if run.rc != 0:
        raise ChecksFailed(
            f"installing the {owner} timers on {host} failed (rc {run.rc}, {run.status}):\n"
            + run.stdout_tail(),
            f"read {run.stdout_path}; fix what the failed task names and rerun",
        )
    names = ", ".join(f"clusterforge-{job['name']}" for job in planned)
    stderr.print(f"{owner}: timers {names} installed on {host}", markup=False)
    return host
