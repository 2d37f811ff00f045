"""`clusterforge inspect run`: one scheduled validation run into the history.

The fleet validation of `clusterforge validate` (workflow.validate_fleet) writes
its reports into `HISTORY/.tmp-<id>/`; then the run's record (inspect.json),
new-failure quarantine, the rename into place, pruning and the controller's
textfile. Exit 3 when a node is unhealthy, as `validate`.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cfcore import inspect_metrics
from cfcore.scheduler_drain import SlurmParseError, parse_slurm_node
from cfcore.trend import new_failures, trend
from rich.console import Console

from clusterforge.errors import ChecksFailed, InvalidInput
from clusterforge.inspection import history
from clusterforge.inspection.settings import Settings, read_settings
from clusterforge.paths import project_root
from clusterforge.validation.inventory import Inventory, load_inventory
from clusterforge.validation.quarantine import slurm_node_name
from clusterforge.validation.results import utc_now
from clusterforge.validation.runner import run_playbook
from clusterforge.validation.workflow import Output, QuarantineOptions, quarantine_results, validate_fleet

LEVELS = ("quick", "full")
TREND_WINDOW = 10
SLURM_PLAYBOOK = "inspect_slurm_states.yml"


@dataclass
class Selection:
    """The hosts a run validates, and why the others are left out."""

    hosts: list[str]
    skipped: dict[str, str] = field(default_factory=dict)


def inspect_run(
    inventory_path: Path,
    level: str,
    history_dir: Path | None,
    *,
    quarantine_new: bool = False,
    stderr: Console | None = None,
) -> None:
    stderr = stderr or Console(stderr=True)
    inventory = load_inventory(inventory_path)
    settings = read_settings(inventory)
    folder = history_dir or settings.history_dir
    run_id = history.new_run_id(level)
    staging = _staging(folder, run_id)
    try:
        selection = select_hosts(inventory, level, staging / ".ansible-runner-slurm")
        if not selection.hosts:
            shutil.rmtree(staging, ignore_errors=True)
            stderr.print(
                f"inspect: no node to validate at level {level}: {_skipped_text(selection)}", markup=False
            )
            return
        started, clock = utc_now(), time.monotonic()
        exit_code = _validate(inventory_path, level, staging, selection, stderr)
        record = _record(run_id, level, started, clock, exit_code, selection)
        report = history.read_report(staging)
        earlier = history.readable_reports(folder, TREND_WINDOW - 1, lambda note: _warn(stderr, note))
        record["new_failures"] = new_failures([*earlier, report])
        if quarantine_new or settings.auto_quarantine:
            record["quarantine"] = quarantine_new_failures(
                report, record["new_failures"], inventory, staging, stderr
            )
        history.write_record(staging, record)
        final = history.publish(staging, folder, run_id)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    _after(final, folder, settings, report, [*earlier, history.read_report(final)], record, stderr)
    if exit_code:
        raise ChecksFailed(
            f"inspection {run_id}: unhealthy nodes (see {final}/report.html)",
            "read the report's evidence and remedies; `clusterforge inspect trend --history "
            f"{folder}` shows what changed",
        )


def _warn(stderr: Console, note: str) -> None:
    stderr.print(f"warning: {note}", markup=False, soft_wrap=True)


def _staging(folder: Path, run_id: str) -> Path:
    try:
        return history.staging_dir(folder, run_id)
    except OSError as err:
        raise InvalidInput(
            f"history folder {folder}: cannot write there: {err.strerror or err}",
            "pass --history with a folder you can write to, or set inspect_history_dir",
        ) from None


def _validate(inventory_path: Path, level: str, staging: Path, selection: Selection, stderr: Console) -> int:
    """The fleet validation into `staging`; 0, or 3 when a node is unhealthy."""
    output = Output(out_dir=staging, fmt="table", stdout=Console(), stderr=stderr)
    limit = ",".join(selection.hosts) if selection.skipped else None
    try:
        validate_fleet(inventory_path, level, output, limit=limit)
    except ChecksFailed as err:
        stderr.print(err.render(), markup=False, soft_wrap=True)
        return err.exit_code
    return 0


def _record(
    run_id: str, level: str, started: str, clock: float, exit_code: int, selection: Selection
) -> dict[str, Any]:
    return {
        "schema": "clusterforge.inspect.run/1",
        "id": run_id,
        "level": level,
        "started": started,
        "finished": utc_now(),
        "duration_s": round(time.monotonic() - clock, 3),
        "exit_code": exit_code,
        "targets": selection.hosts,
        "skipped": selection.skipped,
        "new_failures": {},
        "quarantine": None,
    }


def _after(
    final: Path,
    folder: Path,
    settings: Settings,
    report: dict[str, Any],
    window: list[dict[str, Any]],
    record: dict[str, Any],
    stderr: Console,
) -> None:
    """Pruning and the textfile: the run is stored already, so their failures are reported, not fatal."""
    removed = history.prune(folder, settings.keep_runs, settings.keep_days)
    if removed:
        stderr.print(f"inspect: pruned {len(removed)} old run(s)", markup=False, soft_wrap=True)
    try:
        path = inspect_metrics.write(settings.textfile_dir, report, trend(window[-TREND_WINDOW:]), record)
    except OSError as err:
        stderr.print(
            f"error: inspect_textfile_dir {settings.textfile_dir}: {err}\n"
            "  fix: create the folder (node_exporter's textfile collector directory) or unset the variable",
            markup=False,
            soft_wrap=True,
        )
        return
    stderr.print(
        f"inspect: run stored in {final}" + (f"; metrics in {path}" if path else ""),
        markup=False,
        soft_wrap=True,
    )


# ----------------------------------------------------------- host selection ----


def select_hosts(inventory: Inventory, level: str, private_dir: Path) -> Selection:
    """Every target at quick level; at full level only nodes no scheduler runs jobs on."""
    if level == "quick":
        return Selection(list(inventory.targets))
    slurm = set(inventory.group_hosts("slurm_workers"))
    k8s = set(inventory.group_hosts("k8s_workers"))
    states = slurm_states(inventory, private_dir) if slurm & set(inventory.targets) else {}
    selection = Selection([])
    for host in inventory.targets:
        reason = _busy_reason(host, inventory, slurm, k8s, states)
        if reason:
            selection.skipped[host] = reason
        else:
            selection.hosts.append(host)
    return selection


def _busy_reason(host: str, inventory: Inventory, slurm: set, k8s: set, states: dict | None) -> str | None:
    if host in slurm:
        if states is None:
            return "Slurm could not be asked for the node's state: not loaded blindly"
        name = slurm_node_name(host, dict(inventory.vars_of(host)))
        node = states.get(name)
        if node is None:
            return f"Slurm does not list node {name}"
        if node["drained"] or (node["state"] == "IDLE" and not node["drain"]):
            return None
        return f"Slurm node {name} is {'+'.join([node['state'], *node['flags']])}: jobs may run there"
    if host in k8s:
        return "Kubernetes worker: ClusterForge cannot tell whether pods use its accelerators"
    return None


def slurm_states(inventory: Inventory, private_dir: Path) -> dict[str, dict[str, Any]] | None:
    """Slurm node name -> parsed state (scheduler_drain.parse_slurm_node); None when Slurm cannot be asked."""
    if not inventory.group_hosts("slurm_controller"):
        return None
    run = run_playbook(
        project_root() / "playbooks" / SLURM_PLAYBOOK, inventory.path, private_dir, lambda _e, _d: None
    )
    lines = (run.stats.get("artifact_data") or {}).get("inspect_slurm_nodes")
    if run.rc != 0 or not isinstance(lines, list):
        return None
    return parse_states(lines)


def parse_states(lines: list[str]) -> dict[str, dict[str, Any]]:
    states = {}
    for line in lines:
        try:
            node = parse_slurm_node(str(line))
        except SlurmParseError:
            continue  # a line that is not a node (a warning): that node stays unknown, hence skipped
        states[node["name"]] = node
    return states


def _skipped_text(selection: Selection) -> str:
    shown = "; ".join(f"{host}: {why}" for host, why in list(selection.skipped.items())[:10])
    return shown or "the inventory has no target"


# --------------------------------------------------------------- quarantine ----


def quarantine_new_failures(
    report: dict[str, Any],
    new: dict[str, list[str]],
    inventory: Inventory,
    staging: Path,
    stderr: Console,
) -> dict[str, Any]:
    """Quarantine the nodes that fail now and did not before (validate's quarantine, on those only)."""
    chosen = [node for node in report["nodes"] if node["host"] in new and node.get("status") == "fail"]
    if not chosen:
        return {"dry_run": False, "actions": [], "notes": ["no new failure: no node to quarantine"]}
    output = Output(out_dir=staging, fmt="json", stdout=Console(), stderr=stderr)
    return quarantine_results(chosen, inventory, output, QuarantineOptions(enabled=True))
