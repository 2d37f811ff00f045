"""`clusterforge inspect install`: the inspection timers on a controller node (role ops_timers)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from clusterforge.inspection.settings import Settings, read_settings
from clusterforge.ops_timers import install_jobs

OWNER = "inspect"


def inspection_jobs(settings: Settings) -> list[dict[str, Any]]:
    """The two jobs: quick daily, full weekly; `{{ clusterforge_inventory }}` is the node's inventory path."""

    def job(level: str, schedule: str, what: str) -> dict[str, Any]:
        args = ["inspect", "run", "-i", "{{ clusterforge_inventory }}", "--level", level]
        return {
            "name": f"inspect-{level}",
            "description": f"ClusterForge {what} inspection",
            "schedule": schedule,
            "args": [*args, "--history", str(settings.history_dir)],
            "randomized_delay_s": 600,
            "success_exit_status": [3],  # unhealthy nodes found: the run worked, the report says which
        }

    return [
        job("quick", settings.quick_schedule, "quick (daily)"),
        job("full", settings.full_schedule, "full (weekly, idle or drained nodes)"),
    ]


def inspect_install(inventory_path: Path, on: str | None, extra_vars: dict[str, Any]) -> str:
    """Apply playbooks/ops_timers.yml on the controller with the inspection jobs; returns the host."""
    return install_jobs(
        inventory_path, on, OWNER, lambda inventory: inspection_jobs(read_settings(inventory)), extra_vars
    )
