"""`clusterforge bringup`: the fleet through the stages, recorded in the run ledger.

docs/design.md, "Bring-up runs and the run ledger", is the contract: which hosts
take part in which stage, when a run stops, what --check and --resume do, and
what the ledger holds. Each stage is one ansible-playbook process through
ansible-runner; its results come from the event stream (recorder.py).
"""

from __future__ import annotations

import hashlib
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from cfcore.expected import BOM_VARIABLES
from cfcore.files import UnsafeFile, read_end
from rich.console import Console

from clusterforge.bringup.progress import BringupDisplay
from clusterforge.bringup.recorder import BAD, FINISHED, StageRecorder
from clusterforge.bringup.stages import ADD_NODE_STAGE_NAMES, STAGE_NAMES, shards_of, stage
from clusterforge.errors import ChecksFailed, ClusterForgeError, InvalidInput
from clusterforge.inventory_check.sources import is_host_list
from clusterforge.paths import project_root
from clusterforge.runs.ledger import (
    ARTIFACTS_DIR,
    Ledger,
    RecordProblems,
    Run,
    controller,
    controller_alive,
    private_folder,
    read_json,
    recorded_extra_vars,
    refuse_hosts_not_in,
    resumed_extra_vars,
    stop_leftover_processes,
)
from clusterforge.validation.results import utc_now
from clusterforge.validation.runner import PlaybookRun, run_playbook

KIND = "bringup"
ADD_NODE_KIND = "add-node"  # the same workflow: new hosts through the node stages, then `members`
KINDS = (KIND, ADD_NODE_KIND)
LEDGER_WRITE_EVERY_S = 10.0  # during a stage; a failure is written at once
MAX_INVENTORY_HASH_BYTES = 256 * 1024 * 1024


@dataclass
class BringupOptions:
    inventory: str
    stages: list[str]
    limit: str | None = None
    check: bool = False
    force: bool = False
    max_fail_percent: float = 20.0
    extra_vars: dict[str, Any] = field(default_factory=dict)
    forks: int | None = None
    allow_scripts: bool = False
    # Shardable stages over more hosts than this run as several concurrent ansible-playbook
    # processes (one tops out near 85 host-tasks/s whatever its forks), at most shard_parallel.
    shard_size: int = 500
    shard_parallel: int = 4


@dataclass
class Outcome:
    run: Run
    record: dict[str, Any]
    stages: list[dict[str, Any]]


# ------------------------------------------------------------------ entry points ----


def start(
    options: BringupOptions,
    ledger: Ledger,
    display: BringupDisplay,
    stdout: Console,
    kind: str = KIND,
    inventory: Any = None,
) -> Outcome:
    """A new run: the inventory check (nothing runs on a bad inventory), then every chosen stage.

    `inventory`: already checked and loaded by the caller (add-node checks its hosts against it).
    """
    inventory = inventory or checked_inventory(options, display)
    hosts = list(inventory.targets)
    if not hosts:
        raise InvalidInput(
            f"--limit {options.limit!r} selects no host of {options.inventory}",
            "check the pattern against `ansible-inventory -i INV --graph`",
        )
    run = ledger.create(kind)
    record = {
        "id": run.id,
        "kind": kind,
        "status": "running",
        "started": utc_now(),
        "ended": None,
        "exit_code": None,
        "inventory": {
            "path": str(options.inventory),
            "sha256": (digest := inventory_sha256(options.inventory)),
        },
        "bom": bom_of(inventory, hosts),
        "hosts": hosts,
        # The hosts a cluster-wide stage (members) runs on: the whole inventory.
        "cluster_hosts": (
            list(inventory.hostvars) if any(stage(n).cluster_wide for n in options.stages) else []
        ),
        "stages": options.stages,
        "options": _recorded_options(options),
        "attempts": [],
    }
    display.note(f"run {run.id}: {len(hosts)} host(s), stages {', '.join(options.stages)}; ledger {run.path}")
    return _execute(run, record, options, display, stdout, racks_of(inventory, hosts), digest)


def resume(
    run_id: str,
    ledger: Ledger,
    display: BringupDisplay,
    stdout: Console,
    *,
    force: bool | None,
    allow_scripts: bool = False,
    extra_vars: dict[str, Any] | None = None,
) -> Outcome:
    """Continue a run in its ledger: done stages skipped, the others only for hosts that did not finish.

    The recorded options are checked as a command line would be (bad input, nothing runs);
    consent (`allow_scripts`) comes from this command line only, never from the ledger; `extra_vars`
    gives again the -e values the run recorded only as a secret's digest (`resumed_extra_vars`).
    """
    run = ledger.open(run_id)
    record = run.read()
    if record.get("kind") not in KINDS:
        raise InvalidInput(
            f"run {run.id} is a {record.get('kind')} run", "resume it with the command that made it"
        )
    refuse_running(run, record, display.note)
    if record.get("status") == "succeeded":
        raise InvalidInput(f"run {run.id} already succeeded: nothing to resume", "start a new run")
    options = recorded_options(run, record)
    options.allow_scripts = allow_scripts
    options.extra_vars = resumed_extra_vars(options.extra_vars, extra_vars or {}, run.id, display.note)
    if options.check:
        raise InvalidInput(
            f"run {run.id} was a --check run", "start a new --check run instead of resuming it"
        )
    if force is not None:
        options.force = force
    inventory = checked_inventory(options, display)
    refuse_hosts_not_in(
        record["hosts"] + record["cluster_hosts"], inventory.hostvars, run.id, options.inventory
    )
    digest = inventory_sha256(options.inventory)
    if digest != record["inventory"]["sha256"]:
        display.note(f"warning: the inventory {options.inventory} changed since run {run.id} began")
    display.note(f"resuming run {run.id} (attempt {len(record['attempts']) + 1}); ledger {run.path}")
    racks = racks_of(inventory, record["hosts"])
    return _execute(run, record, options, display, stdout, racks, digest)


def recorded_options(run: Run, record: dict[str, Any]) -> BringupOptions:
    """The options a run recorded, each checked as the command line checks it (InvalidInput naming
    run.json and every bad key; nothing runs)."""
    check = RecordProblems(run.run_file)
    fields = {f for f in BringupOptions.__dataclass_fields__ if f != "inventory"}
    recorded = check.keys("options", record.get("options"), fields)
    inventory = check.keys("inventory", record.get("inventory"), {"path", "sha256"})
    check.line("inventory.path", inventory.get("path"))
    check.line("inventory.sha256", inventory.get("sha256"))
    check.names("hosts", record.get("hosts"))
    check.names("cluster_hosts", record.setdefault("cluster_hosts", []))
    if not isinstance(record.get("attempts"), list):
        check.add("attempts", "is not a list")
    allowed = STAGE_NAMES if record.get("kind") == KIND else ADD_NODE_STAGE_NAMES
    stages = check.names("options.stages", recorded.get("stages"), allowed)
    if recorded and not stages:
        check.add("options.stages", "names no stage")
    if "limit" in recorded:
        check.line("options.limit", recorded["limit"], optional=True)
    for key in ("check", "force"):
        if key in recorded:
            check.flag(f"options.{key}", recorded[key])
    if "max_fail_percent" in recorded:
        check.number("options.max_fail_percent", recorded["max_fail_percent"], 0, 100)
    if "forks" in recorded:
        check.optional_number("options.forks", recorded["forks"], 1, 5000)
    if "shard_size" in recorded:
        check.number("options.shard_size", recorded["shard_size"], 1, 100000, whole=True)
    if "shard_parallel" in recorded:
        check.number("options.shard_parallel", recorded["shard_parallel"], 1, 64, whole=True)
    check.raise_any(run.id)
    kept = {k: v for k, v in recorded.items() if k != "allow_scripts"}  # consent: the command line's
    return BringupOptions(**{**kept, "inventory": inventory["path"]})


def refuse_running(run: Run, record: dict[str, Any], note: Any = None) -> None:
    """InvalidInput when the run's last controller may still be running it (here, or elsewhere);
    else the ansible-playbook processes a killed controller left behind here are stopped."""
    attempt = (record.get("attempts") or [{}])[-1]
    alive = controller_alive(attempt)
    if record.get("status") == "running" and alive is not False:
        where = f"pid {attempt.get('pid')} on {attempt.get('host')}"
        raise InvalidInput(
            f"run {run.id} is still running ({where})"
            if alive
            else f"run {run.id} was last run from another machine ({where}): it may still be running",
            "wait for it, or stop that process first (and resume from that machine)",
        )
    stopped = stop_leftover_processes(run.path / ARTIFACTS_DIR)
    if stopped and note is not None:
        note(f"stopped {len(stopped)} process(es) the killed controller left running: pids {stopped}")


# ---------------------------------------------------------------------- stages ----


def _execute(
    run: Run,
    record: dict[str, Any],
    options: BringupOptions,
    display: BringupDisplay,
    stdout: Console,
    racks: dict[str, str],
    inventory_digest: str,
) -> Outcome:
    attempt = len(record["attempts"]) + 1
    record["status"], record["ended"], record["exit_code"] = "running", None, None
    record["attempts"].append(
        {"n": attempt, "started": utc_now(), "ended": None, **controller(),
         "inventory_sha256": inventory_digest}
    )  # fmt: skip
    run.write(record)
    hosts: list[str] = record["hosts"]
    in_flow = set(hosts)
    stopped_at: str | None = None
    stage_records: list[dict[str, Any]] = []
    total = len(options.stages)
    try:
        for index, name in enumerate(options.stages, start=1):
            before = run.read_stage(index, name)
            finished = {h for h, r in (before or {}).get("hosts", {}).items() if r.get("result") in FINISHED}
            todo = [h for h in hosts if h in in_flow and h not in finished]
            held = [h for h in hosts if h not in in_flow and h not in finished]
            if stopped_at:
                stage_records.append(_write_untouched(run, index, name, before, hosts, "stopped", attempt))
                continue
            if not todo:
                display.note(f"stage {name} ({index}/{total}): every host finished it before, skipped")
                stage_records.append(
                    before or _write_untouched(run, index, name, None, hosts, "skipped", attempt)
                )
                continue
            if stage(name).cluster_wide:
                # Every host of the inventory but the run's own hosts that dropped out.
                own = set(hosts)
                todo = [h for h in record.get("cluster_hosts", []) if h not in own or h in in_flow]
                finished = set()
            elif not stage(name).shardable:
                # A cluster-wide stage computes from all its hosts at once (slurm.conf from every
                # worker's probe, the scrape targets): it runs again for all of them.
                todo = [h for h in hosts if h in in_flow]
                finished -= set(todo)
            if name == "validate" and options.check:
                display.note(f"stage validate ({index}/{total}): not run with --check (it changes nothing)")
                stage_records.append(_write_untouched(run, index, name, before, hosts, "skipped", attempt))
                continue
            note = f", {len(finished)} finished it before" if finished else ""
            display.stage_started(index, total, name, len(todo), note)
            started_at, clock = utc_now(), time.monotonic()
            shards = shards_of(todo, racks, options.shard_size) if stage(name).shardable else [todo]
            results, status = _run_stage(run, index, name, shards, before, options, attempt, display, stdout)
            stage_record = _stage_record(name, before, results, held, attempt, started_at, status)
            stage_record["duration_s"] = round(time.monotonic() - clock, 1)
            run.write_stage(index, stage_record)
            display.stage_finished(stage_record)
            stage_records.append(stage_record)
            for host in (h for h in todo if h in in_flow):
                result = results[host]["result"]
                if (
                    result == "unreachable"
                    or result == "unfinished"
                    or (result == "failed" and not options.force)
                ):
                    in_flow.discard(host)
            if status == "canceled" or _over_threshold(results, options.max_fail_percent):
                stopped_at = name  # a signal (Ctrl-C, SIGTERM) cancels ansible-runner: stop here too
        record["status"] = "stopped" if stopped_at else _verdict(stage_records)
    finally:
        display.close()
        record["ended"] = record["attempts"][-1]["ended"] = utc_now()
        if record["status"] == "running":  # an exception: the run is not running any more
            record["status"] = "failed"
        record["stopped_at"] = stopped_at
        run.write(record)
    return Outcome(run, record, stage_records)


def _run_stage(
    run: Run,
    index: int,
    name: str,
    shards: list[list[str]],
    before: dict[str, Any] | None,
    options: BringupOptions,
    attempt: int,
    display: BringupDisplay,
    stdout: Console,
) -> tuple[dict[str, dict[str, Any]], str]:
    """Run one stage for its hosts (in shards); host -> result, and ansible-runner's status."""
    private = run.artifacts(name, attempt)
    todo = [host for shard in shards for host in shard]
    if name == "validate":
        return _validate(run, todo, _limit_file(private, todo), options, attempt, stdout), "successful"
    writer = _ThrottledStageWriter(run, index, name, before, todo, attempt)

    def on_update(recorder: StageRecorder) -> None:
        display.update(recorder)
        writer.maybe_write(recorder)

    recorder = StageRecorder(name, todo, on_update=on_update)
    writer.write(recorder)  # the stage is `running` in the ledger before ansible-playbook starts
    playbook = project_root() / "playbooks" / str(stage(name).playbook)

    def run_shard(number: int, hosts: list[str]) -> PlaybookRun:
        folder = private if len(shards) == 1 else private / f"shard-{number}"
        return run_playbook(
            playbook,
            Path(options.inventory),
            folder,
            recorder.shard(hosts),
            operator_vars=options.extra_vars,  # -e: this command line's, or re-checked on --resume
            limit=f"@{_limit_file(folder, hosts).resolve()}",
            forks=options.forks,
            check_mode=options.check,
            diff=options.check,
            mitogen=True,
        )

    if len(shards) == 1:
        outcomes = [run_shard(1, shards[0])]
    else:
        display.note(f"stage {name}: {len(todo)} hosts in {len(shards)} shards (by rack)")
        with ThreadPoolExecutor(max_workers=min(options.shard_parallel, len(shards))) as pool:
            outcomes = list(pool.map(run_shard, range(1, len(shards) + 1), shards))
    results = recorder.results()
    for shard, outcome in zip(shards, outcomes, strict=True):
        for host in shard:
            if results[host]["result"] == "unfinished":
                why = f"ansible-playbook ended (rc {outcome.rc}, {outcome.status}) before its play recap"
                results[host]["message"] = results[host]["message"] or f"{why}; see {outcome.stdout_path}"
    statuses = {outcome.status for outcome in outcomes}  # ansible-runner's, worst of the shards
    worst = next((s for s in ("canceled", "timeout", "failed") if s in statuses), "successful")
    return results, worst


def _limit_file(folder: Path, hosts: list[str]) -> Path:
    """The hosts of an ansible-playbook run as a --limit @file (a 10,000-host list fits no argv)."""
    private_folder(folder)
    path = folder / "limit.txt"
    path.write_text("".join(f"{host}\n" for host in hosts))
    return path


class _ThrottledStageWriter:
    """Writes a running stage to the ledger: at once on a new failure, else every LEDGER_WRITE_EVERY_S."""

    def __init__(self, run: Run, index: int, name: str, before: dict | None, todo: list[str], attempt: int):
        self.run, self.index, self.name, self.before, self.attempt = run, index, name, before, attempt
        self.todo, self.started, self.last, self.failures = todo, utc_now(), 0.0, 0

    def maybe_write(self, recorder: StageRecorder) -> None:
        failures = recorder.counts.failed + recorder.counts.unreachable
        if failures != self.failures or time.monotonic() - self.last >= LEDGER_WRITE_EVERY_S:
            self.failures = failures
            self.write(recorder)

    def write(self, recorder: StageRecorder) -> None:
        self.last = time.monotonic()
        running = {host: {**rec, "result": "running"} for host, rec in recorder.results().items()}
        record = _stage_record(self.name, self.before, running, [], self.attempt, self.started, None)
        record["status"] = "running"
        self.run.write_stage(self.index, record)


def _validate(
    run: Run, todo: list[str], limit_file: Path, options: BringupOptions, attempt: int, stdout: Console
) -> dict[str, dict[str, Any]]:
    """The validate stage: `clusterforge validate`'s workflow, its reports in the run's folder."""
    from clusterforge.validation.workflow import Output, validate_fleet

    out_dir = run.path / f"validation-{attempt}"
    output = Output(out_dir=out_dir, fmt="table", stdout=stdout, stderr=Console(stderr=True, highlight=False))
    try:
        validate_fleet(
            Path(options.inventory), "quick", output, limit=f"@{limit_file.resolve()}",
            forks=options.forks, allow_scripts=options.allow_scripts,
        )  # fmt: skip
    except ChecksFailed:
        pass  # the per-host verdicts are in report.json; the run's verdict comes from them
    except ClusterForgeError as err:  # could not validate at all: no host finished the stage
        return {h: _host(result="unfinished", message=err.message) for h in todo}
    nodes = {n.get("host"): n for n in read_json(out_dir / "report.json").get("nodes", [])}
    results = {}
    for host in todo:
        node = nodes.get(host)
        if node is None:
            results[host] = _host(result="unfinished", message=f"no validation result; see {out_dir}")
        elif node.get("status") in ("fail", "error"):
            bad = [c["id"] for c in node.get("checks", []) if c.get("status") in ("fail", "error")]
            results[host] = _host(
                result="failed", failed_task="validate", message=", ".join(bad) or node["status"]
            )
        else:
            results[host] = _host(result="ok")
    return results


def _host(result: str, failed_task: str | None = None, message: str | None = None) -> dict[str, Any]:
    return {"result": result, "changed_tasks": [], "failed_task": failed_task, "message": message}


def _stage_record(
    name: str,
    before: dict[str, Any] | None,
    results: dict[str, dict[str, Any]],
    held: list[str],
    attempt: int,
    started: str,
    runner_status: str | None,
) -> dict[str, Any]:
    """The stage's record: hosts that finished it before keep theirs; held hosts are marked held."""
    hosts = {h: r for h, r in (before or {}).get("hosts", {}).items() if r.get("result") in FINISHED}
    for host, result in results.items():
        hosts[host] = {**result, "attempt": attempt}
    for host in held:
        hosts.setdefault(host, {**_host(result="held"), "attempt": attempt})
    bad = any(r["result"] in BAD or r["result"] in ("unfinished", "held") for r in hosts.values())
    return {
        "stage": name,
        "status": "failed" if bad else "ok",
        "started": started,
        "ended": utc_now(),
        "attempt": attempt,
        "runner_status": runner_status,
        "hosts": hosts,
    }


def _write_untouched(
    run: Run, index: int, name: str, before: dict | None, hosts: list[str], status: str, attempt: int
) -> dict[str, Any]:
    """A stage that did not run this attempt (stopped before it, or skipped): its record says so."""
    record = _stage_record(name, before, {}, [], attempt, utc_now(), None)
    for host in hosts:
        record["hosts"].setdefault(host, {**_host(result="not run"), "attempt": attempt})
    record["status"] = status if status == "stopped" or before is None else before.get("status", status)
    run.write_stage(index, record)
    return record


def _over_threshold(results: dict[str, dict[str, Any]], max_percent: float) -> bool:
    """Failed or unreachable hosts above max_percent of the hosts the stage applied to."""
    applied = [r for r in results.values() if r["result"] != "none"]
    bad = [r for r in applied if r["result"] in BAD or r["result"] == "unfinished"]
    return bool(applied) and 100.0 * len(bad) / len(applied) > max_percent


def _verdict(stage_records: list[dict[str, Any]]) -> str:
    return "succeeded" if all(s["status"] in ("ok", "skipped") for s in stage_records) else "failed"


# ----------------------------------------------------------------------- inputs ----


def checked_inventory(options: Any, display: Any) -> Any:
    """The inventory check (exit 2 before anything runs), then the targets (`options`: inventory,
    limit, allow_scripts; `display`: console and note)."""
    from clusterforge.bundle.check import bundle_url_of, check_bundle, raise_on_problems
    from clusterforge.validation.inventory import checked_inventory as check_then_load

    inventory = check_then_load(
        options.inventory, options.limit, allow_scripts=options.allow_scripts,
        console=display.console, note=display.note,
    )  # fmt: skip
    # An offline bring-up (cf_bundle_url): nothing may come from elsewhere, and the bundle must hold it all.
    bundle_url = bundle_url_of(inventory)
    if bundle_url is not None:
        raise_on_problems(check_bundle(inventory, note=display.note), bundle_url)
    return inventory


def inventory_sha256(source: str) -> str:
    """sha256 over the inventory's files (relative path and content, sorted); a host list: its text."""
    digest = hashlib.sha256()
    if is_host_list(source):
        digest.update(source.encode())
        return digest.hexdigest()
    root = Path(source)
    files = (
        [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink())
    )
    budget = MAX_INVENTORY_HASH_BYTES
    for path in files:
        rel = path.name if path == root else str(path.relative_to(root))
        if any(part.startswith(".") for part in Path(rel).parts):
            continue  # editor swap files, .git: not the inventory
        try:
            data = read_end(str(path), budget)
        except UnsafeFile:
            continue  # a FIFO or a device: no inventory file (inventory check refuses it)
        budget -= len(data)
        digest.update(f"{rel}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()


def racks_of(inventory: Any, hosts: list[str]) -> dict[str, str]:
    return {host: str(inventory.vars_of(host).get("rack") or "") for host in hosts}


def bom_of(inventory: Any, hosts: list[str]) -> dict[str, Any]:
    """The BOM as the targets see it: a value, or the sorted distinct values where hosts differ."""
    bom: dict[str, Any] = {}
    for name in BOM_VARIABLES:
        values = {str(v) for h in hosts if (v := inventory.vars_of(h).get(name)) is not None}
        if values:
            bom[name] = values.pop() if len(values) == 1 else sorted(values)
    return bom


def _recorded_options(options: BringupOptions) -> dict[str, Any]:
    """The options as run.json holds them: the -e secrets as digests (recorded_extra_vars)."""
    recorded = asdict(options)
    recorded.pop("inventory")
    recorded["extra_vars"] = recorded_extra_vars(options.extra_vars)
    return recorded


def finish(outcome: Outcome, check: bool) -> None:
    """Record the run's exit code in its ledger, then raise it (0 returns)."""
    try:
        exit_verdict(outcome, check)
        outcome.record["exit_code"] = 0
    except ClusterForgeError as err:
        outcome.record["exit_code"] = err.exit_code
        raise
    finally:
        outcome.run.write(outcome.record)


def exit_verdict(outcome: Outcome, check: bool) -> None:
    """Raise the documented exit for the run's outcome (0 returns)."""
    record = outcome.record
    rerun = f"after fixing, continue with `{resume_command(record)}`"
    if record["status"] == "stopped":
        stage_record = next(s for s in outcome.stages if s["stage"] == record["stopped_at"])
        bad = [h for h, r in stage_record["hosts"].items() if r["result"] in BAD | {"unfinished"}]
        raise ChecksFailed(
            f"run {outcome.run.id} stopped after stage {record['stopped_at']}: {len(bad)} host(s) failed, "
            f"more than --max-fail-percent {record['options']['max_fail_percent']:g}% ({', '.join(bad[:5])})",
            f"a systematic problem is likely: read the failures above; {rerun}",
        )
    if check:
        drift = [h for s in outcome.stages for h, r in s["hosts"].items() if r.get("changed_tasks")]
        bad = _bad_hosts(outcome)
        if bad:
            raise ChecksFailed(f"--check could not check {len(bad)} host(s): {', '.join(bad[:10])}", rerun)
        if drift:
            raise ChecksFailed(
                f"drift on {len(set(drift))} host(s): {', '.join(sorted(set(drift))[:10])} (listed above)",
                "run `clusterforge bringup` without --check to apply the inventory, or change the inventory",
            )
        return
    bad = _bad_hosts(outcome)
    if bad:
        raise ChecksFailed(f"{len(bad)} host(s) did not finish every stage: {', '.join(bad[:10])}", rerun)


def resume_command(record: dict[str, Any]) -> str:
    return f"clusterforge {record.get('kind', KIND)} --resume {record.get('id')}"


def _bad_hosts(outcome: Outcome) -> list[str]:
    bad = {
        h for s in outcome.stages for h, r in s["hosts"].items() if r["result"] not in FINISHED | {"not run"}
    }
    return sorted(bad)


def ledger_from(path: str | None) -> Ledger:
    return Ledger(Path(path) if path else None)
