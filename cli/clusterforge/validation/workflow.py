"""The two ways to validate: a fleet through Ansible, or one node from a capture.

Both end the same way (`finish`): fleet outliers, one report, every report
file written, the chosen format on stdout, exit 3 when any node is unhealthy.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from clusterforge import __version__
from clusterforge.errors import ChecksFailed, EnvironmentNotReady, InvalidInput
from clusterforge.paths import project_root
from clusterforge.validation import reports
from clusterforge.validation.collect import ResultCollector
from clusterforge.validation.expected import SkuResolver, build_expected, inputs_of, is_template
from clusterforge.validation.inventory import Inventory, load_inventory
from clusterforge.validation.outliers import apply_outliers, find_outliers
from clusterforge.validation.results import is_bad, normalise, summarise, utc_now
from clusterforge.validation.runner import run_playbook

RUNNER_DIR = ".ansible-runner"  # ansible-runner's private data dir, inside the report folder


@dataclass
class Output:
    out_dir: Path
    fmt: str
    stdout: Console
    stderr: Console


@dataclass
class QuarantineOptions:
    enabled: bool = False
    on_error: bool = False
    dry_run: bool = False


def default_out_dir() -> Path:
    return Path("reports") / f"validate-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"


# ---------------------------------------------------------------- fleet ----


def validate_fleet(
    inventory_path: Path,
    level: str,
    output: Output,
    *,
    limit: str | None = None,
    forks: int | None = None,
    skip_checks: list[str] | None = None,
    quarantine: QuarantineOptions | None = None,
) -> None:
    started, clock = utc_now(), time.monotonic()
    inventory = load_inventory(inventory_path, limit)
    node_skus = preflight(inventory)
    output.out_dir.mkdir(parents=True, exist_ok=True)
    extravars: dict[str, Any] = {"validate_level": level, "validate_block_on_fail": False}
    if skip_checks:
        extravars["validate_extra_skip_checks"] = skip_checks

    with _progress(output.stderr, len(inventory.targets)) as advance:
        collector = ResultCollector(inventory.targets, node_skus, level, on_done=advance)
        run = run_playbook(
            project_root() / "playbooks" / "validate.yml",
            inventory.path,
            output.out_dir / RUNNER_DIR,
            collector,
            extravars=extravars,
            limit=limit,
            forks=forks,
        )
    if not collector.heard_from_any() and run.rc != 0:
        raise EnvironmentNotReady(
            f"ansible-playbook stopped (rc {run.rc}, {run.status}) before validating any node:\n"
            + run.stdout_tail(),
            f"read {run.stdout_path} for the whole output",
        )
    results = collector.results(
        f"no result: ansible-playbook ended (rc {run.rc}) first; see {run.stdout_path}"
    )
    run_meta = {
        "source": "ansible",
        "inventory": str(inventory_path),
        "limit": limit,
        "level": level,
        "started": started,
        "clusterforge_version": __version__,
        "ansible_rc": run.rc,
        "ansible_stdout": str(run.stdout_path) if run.stdout_path else None,
    }
    finish(results, run_meta, clock, output, inventory=inventory, quarantine=quarantine)


def preflight(inventory: Inventory) -> dict[str, str | None]:
    """Check every target's variables before touching a node; returns host -> node_sku.

    Problems of all hosts are gathered into one error (exit 2), so a bad
    inventory is fixed in one go rather than one host per run.
    """
    resolver = SkuResolver()
    skus: dict[str, str | None] = {}
    problems: list[InvalidInput] = []
    for host in inventory.targets:
        inputs = inputs_of(inventory.vars_of(host))
        skus[host] = inputs.get("node_sku") if isinstance(inputs.get("node_sku"), str) else None
        if is_template(inputs):
            continue  # only Ansible can template it: the playbook checks this host
        try:
            build_expected(host, {**inputs, "group_names": inventory.groups_of(host)}, resolver)
        except InvalidInput as err:
            problems.append(err)
    if problems:
        shown = "\n  ".join(p.message for p in problems[:10])
        more = f"\n  ... and {len(problems) - 10} more" if len(problems) > 10 else ""
        raise InvalidInput(
            f"{len(problems)} host(s) of {inventory.path} cannot be validated:\n  {shown}{more}",
            problems[0].fix,
        )
    return skus


@contextmanager
def _progress(console: Console, total: int) -> Iterator[Callable[[str, str], None]]:
    """A progress bar on stderr; yields the callback that counts one finished node."""
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )
    task = progress.add_task("validating", total=total)

    def advance(host: str, status: str) -> None:
        progress.update(task, advance=1, description=f"validating (last: {host} {status})")

    with progress:
        yield advance


# -------------------------------------------------------------- capture ----


def validate_capture(
    capture_dir: Path,
    level: str,
    output: Output,
    *,
    sku: str | None = None,
    bom_file: Path | None = None,
    inventory_path: Path | None = None,
    host: str | None = None,
) -> None:
    """Validate one node from a directory of captured tool outputs; runs nothing on any node."""
    started, clock = utc_now(), time.monotonic()
    if not capture_dir.is_dir():
        raise InvalidInput(
            f"--from-capture {capture_dir} is not a directory", "pass the unpacked capture folder"
        )
    meta = _capture_meta(capture_dir)
    hostvars: dict[str, Any] = {}
    if inventory_path:
        if not host:
            raise InvalidInput(
                "-i with --from-capture needs --host", "name the inventory host the capture is from"
            )
        inventory = load_inventory(inventory_path)
        if host not in inventory.hostvars and host not in inventory.groups.get("all", []):
            raise InvalidInput(f"host {host} is not in inventory {inventory_path}", "check --host")
        hostvars = {**inputs_of(inventory.vars_of(host)), "group_names": inventory.groups_of(host)}
    if bom_file:
        hostvars.update(_bom_vars(bom_file))
    if sku:
        hostvars["node_sku"] = sku
    elif not hostvars.get("node_sku") and meta.get("node_sku"):
        hostvars["node_sku"] = meta["node_sku"]
    label = host or str(meta.get("hostname") or capture_dir.resolve().name)
    if not hostvars.get("node_sku"):
        raise InvalidInput(
            f"no SKU for the capture {capture_dir}",
            "pass --sku NAME, or -i INV --host HOST, or put node_sku in the capture's meta.json",
        )
    if is_template(hostvars["node_sku"]):
        raise InvalidInput(
            f"host {label}: node_sku is a template only Ansible can resolve", "pass --sku NAME"
        )
    expected = build_expected(label, hostvars)

    from cfcore.collect import CaptureSource
    from cfcore.expected import InvalidExpectation
    from cfcore.validate import validate_node

    try:
        raw = validate_node(CaptureSource(str(capture_dir)), expected, level)
    except InvalidExpectation as err:
        raise InvalidInput(f"host {label}: {err}", "fix the SKU or BOM variables it names") from None
    result = normalise(label, raw, level, expected["node_sku"])
    run_meta = {
        "source": "capture",
        "capture_dir": str(capture_dir),
        "inventory": str(inventory_path) if inventory_path else None,
        "limit": None,
        "level": level,
        "started": started,
        "clusterforge_version": __version__,
    }
    finish([result], run_meta, clock, output, rerun_hint="capture the node again after fixing")


def _capture_meta(capture_dir: Path) -> dict[str, Any]:
    path = capture_dir / "meta.json"
    if not path.is_file():
        return {}
    try:
        meta = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise InvalidInput(f"{path} is not valid JSON: {err}", "fix or remove meta.json") from None
    if not isinstance(meta, dict):
        raise InvalidInput(f"{path} must hold a JSON object", "fix or remove meta.json")
    return meta


def _bom_vars(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as err:
        raise InvalidInput(
            f"--bom {path} could not be read: {err}", "pass a YAML or JSON mapping of BOM variables"
        ) from None
    if not isinstance(data, dict):
        raise InvalidInput(
            f"--bom {path} must be a mapping of BOM variables",
            'e.g. nvidia_driver_version: "535.183.01" (group_vars/all/versions.yml works as is)',
        )
    return data


# --------------------------------------------------------------- common ----


def finish(
    results: list[dict[str, Any]],
    run_meta: dict[str, Any],
    clock: float,
    output: Output,
    *,
    inventory: Inventory | None = None,
    quarantine: QuarantineOptions | None = None,
    rerun_hint: str = "after fixing, rerun with --limit",
) -> None:
    """Outliers, the table, quarantine, report files, stdout, and the exit verdict."""
    outliers = find_outliers(results)
    apply_outliers(results, outliers)
    run_meta = {**run_meta, "finished": utc_now(), "duration_s": round(time.monotonic() - clock, 3)}
    summary = summarise(results)
    if output.fmt == "table":  # before quarantine: the operator sees why nodes are being drained
        from clusterforge.validation.reports.table import render_table

        render_table(reports.assemble(results, summary, outliers.as_dict(), run_meta), output.stdout)
    quarantine_section = None
    if quarantine and quarantine.enabled and inventory is not None:
        quarantine_section = _quarantine(results, inventory, output, quarantine)
    report = reports.assemble(results, summary, outliers.as_dict(), run_meta, quarantine_section)
    written = reports.write_all(report, output.out_dir)
    if output.fmt != "table":
        sys.stdout.write(written[output.fmt].read_text(encoding="utf-8"))
        sys.stdout.flush()
    output.stderr.print(f"reports: {output.out_dir}/ ({', '.join(p.name for p in written.values())})")
    unhealthy = [r["host"] for r in results if is_bad(r["status"])]
    if unhealthy:
        listed = ", ".join(unhealthy[:10]) + (
            f" and {len(unhealthy) - 10} more" if len(unhealthy) > 10 else ""
        )
        raise ChecksFailed(
            f"{len(unhealthy)} of {len(results)} node(s) failed validation: {listed}",
            f"see {written['html']} (evidence and remedy per check); {rerun_hint}",
        )


def _quarantine(
    results: list[dict[str, Any]], inventory: Inventory, output: Output, options: QuarantineOptions
) -> dict[str, Any]:
    from clusterforge.validation.quarantine import WORKER_GROUPS, plan
    from clusterforge.validation.quarantine_apply import apply_plan

    workers = {scheduler: set(inventory.group_hosts(group)) for scheduler, group in WORKER_GROUPS.items()}
    the_plan = plan(results, inventory.hostvars, on_error=options.on_error, workers=workers)
    if not the_plan.actions:
        section = {
            "dry_run": options.dry_run,
            "actions": [],
            "notes": [*the_plan.notes, "no node to quarantine"],
        }
    else:
        section = apply_plan(
            the_plan, inventory, output.out_dir / (RUNNER_DIR + "-quarantine"), dry_run=options.dry_run
        )
    # Whole lines (soft wrap): an operator copies these commands to run them by hand.
    for note in section["notes"]:
        output.stderr.print(f"quarantine: {note}", markup=False, soft_wrap=True)
    for action in section["actions"]:
        line = f"quarantine: [{action['outcome']}] {action['host']}: {action['command']}"
        output.stderr.print(line, markup=False, soft_wrap=True)
    return section
