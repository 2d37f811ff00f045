"""The two ways to validate: a fleet through Ansible, or one node from a capture.

Both end the same way (`finish`): fleet outliers and fleet rules (cfcore/fleet.py:
`fleet.hca_firmware`), one report, every report file written, the chosen format
on stdout, exit 3 when any node is unhealthy.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from cfcore.expected import InvalidExpectation, SkuResolver, inputs_of, with_run_skips
from cfcore.expected import build_expected as _build_expected
from cfcore.files import UnsafeFile, read_text
from cfcore.fleet import apply as apply_fleet_rule
from cfcore.fleet import hca_firmware
from cfcore.inputs import is_template
from cfcore.juicefs import REDIS_ADDRESS_VARIABLES, default_meta_url
from cfcore.versions import FORMATS as BOM_FORMATS
from cfcore.versions import format_problem
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from clusterforge import __version__
from clusterforge.errors import ChecksFailed, EnvironmentNotReady, InvalidInput
from clusterforge.paths import project_root
from clusterforge.validation import reports
from clusterforge.validation.collect import ResultCollector
from clusterforge.validation.inventory import Inventory, is_encrypted, load_inventory
from clusterforge.validation.outliers import apply_outliers, find_outliers
from clusterforge.validation.results import is_bad, normalise, summarise, utc_now
from clusterforge.validation.runner import run_playbook

RUNNER_DIR = ".ansible-runner"  # ansible-runner's private data dir, inside the report folder
MAX_BOM_BYTES = 1024 * 1024  # a BOM is a few lines; anything near this is not one
BOM_FIX = 'pass a YAML or JSON mapping of BOM variables, e.g. nvidia_driver_version: "535.183.01"'


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


def build_expected(
    host: str, hostvars: dict[str, Any], resolver: SkuResolver | None = None
) -> dict[str, Any]:
    """cfcore's build_expected, its input errors as the CLI's InvalidInput (exit 2)."""
    try:
        return _build_expected(host, hostvars, resolver)
    except InvalidExpectation as err:
        raise InvalidInput(err.message, err.fix) from None


def default_out_dir() -> Path:
    return Path("reports") / f"validate-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"


def prepare_out_dir(out_dir: Path) -> None:
    """Create the report folder and prove it writable before anything runs.

    Found after validating, an unwritable folder would cost the verdict; found
    here it is bad input (exit 2) and nothing has run yet.
    """
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=out_dir):
            pass
    except OSError as err:
        raise InvalidInput(
            f"--out {out_dir}: cannot write reports there: {err.strerror or err}",
            "pass --out with a folder you can write to (the default is reports/ under the current folder)",
        ) from None


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
    allow_scripts: bool = False,
) -> None:
    started, clock = utc_now(), time.monotonic()
    inventory = load_inventory(inventory_path, limit, allow_scripts=allow_scripts)
    node_skus = preflight(inventory)
    prepare_out_dir(output.out_dir)
    # The playbook's own fleet-rule task is for plain ansible-playbook runs: finish() applies the rule here.
    extravars: dict[str, Any] = {
        "validate_level": level,
        "validate_block_on_fail": False,
        "validate_fleet_rules": False,
    }
    if skip_checks:
        extravars["validate_extra_skip_checks"] = skip_checks

    results, run = run_node_playbook(
        "validate.yml",
        inventory,
        inventory.targets,
        node_skus,
        level,
        output,
        output.out_dir / RUNNER_DIR,
        extravars,
        limit=limit,
        forks=forks,
    )
    run_meta = ansible_run_meta(inventory_path, limit, level, started, run)
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
        inputs = _validation_inputs(inventory, host)
        skus[host] = inputs.get("node_sku") if isinstance(inputs.get("node_sku"), str) else None
        if is_template(inputs) or is_encrypted(inputs):
            continue  # only Ansible can resolve it (a template, a vault value): the playbook checks this host
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


def accelerator_targets(
    inventory: Inventory, groups: tuple[str, ...], inventory_path, limit, fix: str
) -> list[str]:
    """The targets of the run in `groups`; InvalidInput (exit 2) naming the groups when there is none."""
    targets = [host for host in inventory.targets if set(inventory.groups_of(host)) & set(groups)]
    if not targets:
        raise InvalidInput(
            f"no host of {' or '.join(groups)} among the targets of {inventory_path}"
            + (f" (--limit {limit})" if limit else ""),
            fix,
        )
    return targets


def run_node_playbook(
    playbook: str,
    inventory: Inventory,
    targets: list[str],
    node_skus: dict[str, str | None],
    level: str,
    output: Output,
    runner_dir: Path,
    extravars: dict[str, Any],
    *,
    limit: str | None,
    forks: int | None,
):
    """One playbook whose tasks return `node_result`, over `targets`, with the progress bar: (the node
    results, a missing one saying why; the run). EnvironmentNotReady when ansible-playbook stopped
    before any node answered."""
    with _progress(output.stderr, len(targets)) as advance:
        collector = ResultCollector(targets, node_skus, level, on_done=advance)
        run = run_playbook(
            project_root() / "playbooks" / playbook,
            inventory.path,
            runner_dir,
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
    return results, run


def ansible_run_meta(
    inventory_path, limit, level: str, started: str, run=None, **more: Any
) -> dict[str, Any]:
    """report.json's `run` of a fleet validation through Ansible (`run`: the one playbook run, if one)."""
    meta: dict[str, Any] = {
        "source": "ansible",
        "inventory": str(inventory_path),
        "limit": limit,
        "level": level,
        "started": started,
        "clusterforge_version": __version__,
    }
    if run is not None:
        meta["ansible_rc"] = run.rc
        meta["ansible_stdout"] = str(run.stdout_path) if run.stdout_path else None
    return {**meta, **more}


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
    skip_checks: list[str] | None = None,
    allow_scripts: bool = False,
) -> None:
    """Validate one node from a directory of captured tool outputs; runs nothing on any node."""
    started, clock = utc_now(), time.monotonic()
    if host and not inventory_path:
        raise InvalidInput(
            "--host needs -i: it names the capture's host in an inventory",
            "add -i INVENTORY, or drop --host (the capture's meta.json names the node)",
        )
    if inventory_path and not host:
        raise InvalidInput(
            "-i with --from-capture needs --host", "name the inventory host the capture is from"
        )
    source = _open_capture(capture_dir)
    hostvars, origin = (
        _inventory_inputs(inventory_path, host, allow_scripts) if inventory_path and host else ({}, {})
    )
    if bom_file:
        bom = inputs_of(_bom_vars(bom_file))
        hostvars.update(bom)
        origin.update(dict.fromkeys(bom, f"--bom {bom_file}"))
    if sku:
        hostvars["node_sku"], origin["node_sku"] = sku, "--sku"
    elif not hostvars.get("node_sku") and source.meta.get("node_sku"):
        hostvars["node_sku"], origin["node_sku"] = source.meta["node_sku"], "the capture's meta.json"
    if skip_checks:
        hostvars = with_run_skips(hostvars, skip_checks)
    label = host or str(source.meta.get("hostname") or capture_dir.resolve().name)
    if not hostvars.get("node_sku"):
        raise InvalidInput(
            f"no SKU for the capture {capture_dir}",
            "pass --sku NAME, or -i INV --host HOST, or put node_sku in the capture's meta.json",
        )
    _refuse_unresolved(label, hostvars, origin)
    expected = build_expected(label, hostvars)
    prepare_out_dir(output.out_dir)

    from cfcore.validate import validate_node

    try:
        raw = validate_node(source, expected, level)
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


def _open_capture(capture_dir: Path) -> Any:
    """The capture as a cfcore CaptureSource (its meta.json read safely), or InvalidInput."""
    from cfcore.collect import CaptureSource

    if not capture_dir.is_dir():
        raise InvalidInput(
            f"--from-capture {capture_dir} is not a directory", "pass the unpacked capture folder"
        )
    try:
        return CaptureSource(str(capture_dir))
    except ValueError as err:  # meta.json: not JSON, not an object, or not a regular file in the capture
        raise InvalidInput(str(err), "fix or remove meta.json (tools/cf-capture.sh writes it)") from None


def _inventory_inputs(
    inventory_path: Path, host: str, allow_scripts: bool
) -> tuple[dict[str, Any], dict[str, str]]:
    """The host's validation inputs from the inventory, and where each came from."""
    inventory = load_inventory(inventory_path, allow_scripts=allow_scripts)
    if host not in inventory.hostvars and host not in inventory.groups.get("all", []):
        raise InvalidInput(f"host {host} is not in inventory {inventory_path}", "check --host")
    inputs = _validation_inputs(inventory, host)
    origin = dict.fromkeys(inputs, f"inventory {inventory_path}")
    return {**inputs, "group_names": inventory.groups_of(host)}, origin


def _validation_inputs(inventory: Inventory, host: str) -> dict[str, Any]:
    """The host's validation inputs, with what playbooks/validate.yml adds from other hosts: the
    default JuiceFS meta URL (the first juicefs_meta host's Redis) where the host mounts JuiceFS."""
    hostvars = inventory.vars_of(host)
    inputs = inputs_of(hostvars)
    if inputs.get("juicefs_mounts"):
        meta_hosts = inventory.group_hosts("juicefs_meta")
        meta_vars: dict[str, Any] = {}
        if meta_hosts:
            view = inventory.vars_of(meta_hosts[0])
            wanted = (*REDIS_ADDRESS_VARIABLES, "juicefs_redis_port")
            meta_vars = {"inventory_hostname": meta_hosts[0], **{n: view[n] for n in wanted if n in view}}
        inputs["juicefs_default_meta_url"] = default_meta_url(hostvars.get("juicefs_meta_url"), meta_vars)
    return inputs


def _refuse_unresolved(label: str, hostvars: dict[str, Any], origin: dict[str, str]) -> None:
    """A value still templated or vaulted is never compared raw with the capture.

    The inventory reader resolves what is safe (templates without side effects,
    vault values with a password); what is left only Ansible can resolve, on
    the node's own run.
    """
    encrypted = [name for name, value in hostvars.items() if is_encrypted(value)]
    templated = [name for name, value in hostvars.items() if name not in encrypted and is_template(value)]
    if not encrypted and not templated:
        return
    shown = "; ".join(
        f"{name} from {origin.get(name, '?')}: "
        + ("vault-encrypted, no password given" if name in encrypted else _short(hostvars[name]))
        for name in [*encrypted, *templated]
    )
    fixes = []
    if encrypted:
        fixes.append("give the vault password (ANSIBLE_VAULT_PASSWORD_FILE)")
    if any(name in BOM_FORMATS for name in [*encrypted, *templated]):
        fixes.append("give --bom FILE with the literal versions")
    if "node_sku" in templated:
        fixes.append("pass --sku NAME")
    if any(name not in BOM_FORMATS and name != "node_sku" for name in templated):
        fixes.append("write the literal value where it is set, or validate the node live (-i INV)")
    raise InvalidInput(
        f"host {label}: value(s) only Ansible can resolve, not compared with the capture: {shown}",
        "; ".join(fixes),
    )


def _short(value: Any, limit: int = 80) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _BomLoader(yaml.SafeLoader):
    """SafeLoader without aliases: a BOM needs none, and an alias bomb would blow up in the checks."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark
            raise yaml.composer.ComposerError(None, None, "YAML aliases (*name) are not allowed here", mark)
        return super().compose_node(parent, index)


def _bom_vars(path: Path) -> dict[str, Any]:
    """The --bom file as a mapping: a regular UTF-8 file of at most 1 MiB holding YAML or JSON."""
    try:
        text = read_text(str(path), MAX_BOM_BYTES, errors="strict")
    except UnsafeFile as err:
        raise InvalidInput(f"--bom {err}", BOM_FIX) from None
    except UnicodeDecodeError as err:
        raise InvalidInput(
            f"--bom {path} is not UTF-8 text (undecodable byte at offset {err.start}): a binary file?",
            BOM_FIX,
        ) from None
    try:
        data = yaml.load(text, Loader=_BomLoader)  # a SafeLoader
    except yaml.YAMLError as err:
        where = getattr(err, "problem_mark", None)
        at = f" (line {where.line + 1}, column {where.column + 1})" if where else ""
        problem = getattr(err, "problem", None) or str(err)
        raise InvalidInput(
            f"--bom {path} is not valid YAML or JSON{at}: {_short(problem, 200)}", BOM_FIX
        ) from None
    except RecursionError:  # a BOM is a flat mapping of versions
        raise InvalidInput(f"--bom {path} is not a BOM: its YAML or JSON nests too deep", BOM_FIX) from None
    if not isinstance(data, dict):
        got = "an empty file" if data is None else f"a YAML {type(data).__name__}"
        raise InvalidInput(
            f"--bom {path} must be a mapping of BOM variables, got {got}",
            f"{BOM_FIX} (group_vars/all/versions.yml works as is)",
        )
    # A float 12.1, `latest` or a template is the file's fault, not the node's: refuse it here.
    # An empty entry means "not pinned", as in the inventory.
    problems = [
        _short(problem, 400)
        for name, value in data.items()
        if name in BOM_FORMATS and value not in (None, "") and (problem := format_problem(name, value))
    ]
    if problems:
        raise InvalidInput(
            f"--bom {path}: " + "; ".join(problems),
            f"correct {path}: each version a quoted string in the vendor's form",
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
    perf: dict[str, Any] | None = None,
) -> None:
    """Outliers and fleet rules, the table, quarantine, report files, stdout, and the exit verdict."""
    outliers = find_outliers(results)
    apply_outliers(results, outliers)
    # Fleet rules: warn checks (fleet.hca_firmware) on the nodes off their SKU's majority, like outliers.
    rules = hca_firmware(results)
    apply_fleet_rule(results, rules)
    outliers.notes.extend(rules["notes"])
    run_meta = {**run_meta, "finished": utc_now(), "duration_s": round(time.monotonic() - clock, 3)}
    summary = summarise(results)
    if output.fmt == "table":  # before quarantine: the operator sees why nodes are being drained
        from clusterforge.validation.reports.table import render_table

        report = reports.assemble(results, summary, outliers.as_dict(), run_meta, perf=perf)
        render_table(report, output.stdout)
    quarantine_section = None
    if quarantine and quarantine.enabled and inventory is not None:
        quarantine_section = quarantine_results(results, inventory, output, quarantine)
    report = reports.assemble(results, summary, outliers.as_dict(), run_meta, quarantine_section, perf)
    written = _write_reports(report, output)
    if written and output.fmt != "table":
        sys.stdout.write(written[output.fmt].read_text(encoding="utf-8"))
        sys.stdout.flush()
    if written:
        folder = written["json"].parent
        names = ", ".join(p.name for p in written.values())
        output.stderr.print(f"reports: {folder}/ ({names})", markup=False, soft_wrap=True)
    unhealthy = [r["host"] for r in results if is_bad(r["status"])]
    if unhealthy:
        listed = ", ".join(unhealthy[:10]) + (
            f" and {len(unhealthy) - 10} more" if len(unhealthy) > 10 else ""
        )
        where = f"see {written['html']}" if written else "see the errors above"
        raise ChecksFailed(
            f"{len(unhealthy)} of {len(results)} node(s) failed validation: {listed}",
            f"{where} (evidence and remedy per check); {rerun_hint}",
        )


def _write_reports(report: dict[str, Any], output: Output) -> dict[str, Path] | None:
    """Every report file into --out or, when that fails now (disk full, folder gone), a temporary folder.

    --out was proved writable before anything ran; if writing still fails, the
    error is printed and the exit code stays the verdict's (0 or 3), never 1.
    """
    try:
        return reports.write_all(report, output.out_dir)
    except OSError as err:
        output.stderr.print(
            f"error: cannot write the reports into {output.out_dir}/: {err}", markup=False, soft_wrap=True
        )
    fallback = None
    try:
        fallback = Path(tempfile.mkdtemp(prefix="clusterforge-validate-"))
        written = reports.write_all(report, fallback)
    except OSError as err:
        if fallback is not None:
            shutil.rmtree(fallback, ignore_errors=True)
        output.stderr.print(
            f"error: no report file written (a temporary folder failed too: {err})",
            markup=False,
            soft_wrap=True,
        )
        return None
    output.stderr.print(
        f"  fix: the reports were written to {fallback}/ instead; copy them from there",
        markup=False,
        soft_wrap=True,
    )
    return written


def quarantine_results(
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
