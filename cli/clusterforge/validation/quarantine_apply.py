"""Carry out a quarantine plan through playbooks/quarantine.yml and record each command's outcome.

A scheduler is acted on only when its controller group has hosts in the
inventory and its CLI is installed on the first of them; otherwise every
command is reported as "not run" with the reason, so the operator can run it
by hand.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from clusterforge.paths import project_root
from clusterforge.validation.inventory import Inventory
from clusterforge.validation.quarantine import K8S_GROUP, SLURM_GROUP, Plan
from clusterforge.validation.runner import run_playbook

_SCHEDULERS = {
    # scheduler: (controller group, extravar with the commands, set_stats key, CLI)
    "slurm": (SLURM_GROUP, "quarantine_slurm_commands", "quarantine_slurm", "scontrol"),
    "kubernetes": (K8S_GROUP, "quarantine_k8s_commands", "quarantine_kubernetes", "kubectl"),
}


def apply_plan(plan: Plan, inventory: Inventory, private_dir: Path, *, dry_run: bool) -> dict[str, Any]:
    """Run the plan's commands on the schedulers' controllers; returns the report's quarantine section."""
    notes = list(plan.notes)
    extravars: dict[str, Any] = {}
    for scheduler, (group, var, _, _) in _SCHEDULERS.items():
        actions = plan.for_scheduler(scheduler)
        if not actions:
            continue
        if not inventory.group_hosts(group):
            _mark(actions, "not run", f"no host in inventory group {group}")
            notes.append(
                f"{scheduler}: no host in group {group}; run the commands below by hand if it runs there"
            )
            continue
        extravars[var] = [a.argv for a in actions]
    if extravars:
        run = run_playbook(
            project_root() / "playbooks" / "quarantine.yml",
            inventory.path,
            private_dir,
            lambda _event, _data: None,
            extravars=extravars,
            check_mode=dry_run,
        )
        custom = run.stats.get("artifact_data") or {}
        for scheduler, (group, var, key, tool) in _SCHEDULERS.items():
            if var in extravars:
                _record(
                    plan.for_scheduler(scheduler), custom.get(key), group, tool, dry_run, run.stdout_tail(5)
                )
                notes.extend(_notes_for(scheduler, custom.get(key), group, tool, dry_run))
    return {
        "dry_run": dry_run,
        "actions": [a.as_dict() for a in plan.actions],
        "notes": notes,
    }


def _mark(actions: list[Any], outcome: str, detail: str) -> None:
    for action in actions:
        action.outcome, action.detail = outcome, detail


def _record(
    actions: list[Any], stats: dict[str, Any] | None, group: str, tool: str, dry_run: bool, tail: str
) -> None:
    if not stats:
        _mark(actions, "failed", f"the quarantine play on {group} did not finish (unreachable?): {tail}")
        return
    controller = stats.get("controller", group)
    if not stats.get("tool"):
        _mark(actions, "not run", f"{tool} is not installed on {controller}")
        return
    by_argv = {tuple(r.get("item") or ()): r for r in stats.get("results") or []}
    for action in actions:
        result = by_argv.get(tuple(action.argv))
        if result is None:
            action.outcome, action.detail = "failed", f"no result from {controller}"
        elif result.get("skipped"):
            action.outcome = "would run" if dry_run else "not run"
            action.detail = f"check mode on {controller}" if dry_run else str(result.get("msg") or "skipped")
        elif result.get("rc") == 0:
            action.outcome, action.detail = (
                "ran",
                f"on {controller}: {str(result.get('stdout') or 'ok')[:300]}",
            )
        else:
            error = str(result.get("stderr") or result.get("msg") or "").strip()
            action.outcome, action.detail = "failed", f"on {controller}: rc {result.get('rc')}: {error[:500]}"


def _notes_for(
    scheduler: str, stats: dict[str, Any] | None, group: str, tool: str, dry_run: bool
) -> list[str]:
    if stats and not stats.get("tool"):
        return [f"{scheduler}: {tool} not found on {stats.get('controller', group)}: commands not run"]
    if stats and dry_run:
        return [f"{scheduler}: check mode on {stats.get('controller', group)}: commands reported, not run"]
    return []
