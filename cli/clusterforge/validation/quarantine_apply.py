"""Carry out a quarantine plan through playbooks/quarantine.yml and record each command's outcome.

The playbook is given node names and reasons only (`quarantine_nodes`) and
builds the commands itself. A scheduler is acted on only when its controller
group has hosts in the inventory and its CLI is installed on the first of
them; otherwise every command is reported as "not run" with the reason, so the
operator can run it by hand.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from clusterforge.paths import project_root
from clusterforge.validation.inventory import Inventory
from clusterforge.validation.quarantine import K8S_GROUP, SLURM_GROUP, Action, Plan
from clusterforge.validation.runner import run_playbook

_SCHEDULERS = {
    # scheduler: (controller group, set_stats key, CLI)
    "slurm": (SLURM_GROUP, "quarantine_slurm", "scontrol"),
    "kubernetes": (K8S_GROUP, "quarantine_kubernetes", "kubectl"),
}


def apply_plan(plan: Plan, inventory: Inventory, private_dir: Path, *, dry_run: bool) -> dict[str, Any]:
    """Run the plan's commands on the schedulers' controllers; returns the report's quarantine section."""
    notes = list(plan.notes)
    request: list[dict[str, str]] = []
    sent: list[str] = []
    for scheduler, (group, _, _) in _SCHEDULERS.items():
        actions = plan.for_scheduler(scheduler)
        if not actions:
            continue
        if not inventory.group_hosts(group):
            _mark(actions, "not run", f"no host in inventory group {group}")
            notes.append(
                f"{scheduler}: no host in group {group}; run the commands below by hand if it runs there"
            )
            continue
        request.extend(plan.request(scheduler))
        sent.append(scheduler)
    if request:
        run = run_playbook(
            project_root() / "playbooks" / "quarantine.yml",
            inventory.path,
            private_dir,
            lambda _event, _data: None,
            extravars={"quarantine_nodes": request},
            check_mode=dry_run,
        )
        custom = run.stats.get("artifact_data") or {}
        for scheduler in sent:
            group, key, tool = _SCHEDULERS[scheduler]
            _record(plan.for_scheduler(scheduler), custom.get(key), group, tool, dry_run, run.stdout_tail(5))
            notes.extend(_notes_for(scheduler, custom.get(key), group, tool, dry_run))
    return {
        "dry_run": dry_run,
        "actions": [a.as_dict() for a in plan.actions],
        "notes": notes,
    }


def _mark(actions: list[Action], outcome: str, detail: str) -> None:
    for action in actions:
        action.outcome, action.detail = outcome, detail


def _record(
    actions: list[Action], stats: dict[str, Any] | None, group: str, tool: str, dry_run: bool, tail: str
) -> None:
    if not stats:
        _mark(actions, "failed", f"the quarantine play on {group} did not finish (unreachable?): {tail}")
        return
    controller = stats.get("controller", group)
    if not stats.get("tool"):
        _mark(actions, "not run", f"{tool} is not installed on {controller}")
        return
    # The playbook reports one loop result per node and kind of command (drain, taint, label).
    by_command = {
        (kind, (result.get("item") or {}).get("name")): result
        for kind, results in (stats.get("results") or {}).items()
        for result in results or []
    }
    for action in actions:
        result = by_command.get((action.kind, action.target))
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
