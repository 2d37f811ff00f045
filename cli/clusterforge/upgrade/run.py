"""`clusterforge upgrade run`: the plan's batches through playbooks/upgrade.yml, node phases in the ledger.

docs/design.md, "Rolling upgrades", is the contract. One ansible-playbook per
batch (role upgrade_node on every node of the batch); the node's phase comes
from the "Upgrade phase <name>" tasks in the event stream and is written to
`nodes/<host>.json` the moment it changes, so a controller killed at any
instant leaves each node's phase behind. Between batches the run halts when the
canary failed or more nodes failed than --max-failed allows.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from cfcore.inputs import VERSION_FORM, InputError, plain_problem
from cfcore.upgrade_plan import COMPONENTS, Limit, Plan

from clusterforge.bringup.recorder import StageRecorder
from clusterforge.bringup.workflow import inventory_sha256, refuse_running
from clusterforge.errors import ChecksFailed, ClusterForgeError, InvalidInput
from clusterforge.paths import project_root
from clusterforge.runs.ledger import (
    Ledger,
    RecordProblems,
    Run,
    controller,
    is_run_id,
    private_folder,
    read_json,
    recorded_extra_vars,
    refuse_hosts_not_in,
    resumed_extra_vars,
    write_json_atomic,
)
from clusterforge.upgrade.plan import PlanOptions, build_plan
from clusterforge.validation.inventory import checked_inventory
from clusterforge.validation.results import utc_now
from clusterforge.validation.runner import run_playbook

KIND = "upgrade"
PHASES = ("precheck", "drain", "stop", "upgrade", "reboot", "validate", "resume")  # = role upgrade_node's
PHASE_TASK = "Upgrade phase "  # the tasks that open a phase in role upgrade_node
PLAN_FILE = "plan.json"
NODES_DIR = "nodes"
# Node status: pending (not started), running (in `phase`), done, failed (stays drained from drain on).
PENDING, RUNNING, DONE, FAILED = "pending", "running", "done", "failed"
STATUSES = (PENDING, RUNNING, DONE, FAILED)


@dataclass
class Consent:
    """What only the operator's command line may grant (never a run's record): --allow-reboot,
    --allow-scripts; and the -e values given again for a resumed run's recorded secrets."""

    allow_reboot: bool = False
    allow_scripts: bool = False
    extra_vars: dict[str, Any] = field(default_factory=dict)


@dataclass
class RunOptions:
    inventory: str
    plan: PlanOptions
    max_failed: str = "2%"
    allow_reboot: bool = False
    drain_timeout_s: int = 3600
    extra_vars: dict[str, Any] = field(default_factory=dict)
    forks: int | None = None
    limit: str | None = None
    allow_scripts: bool = False


@dataclass
class Outcome:
    run: Run
    record: dict[str, Any]
    nodes: dict[str, dict[str, Any]]


# ------------------------------------------------------------------ entry points ----


def start(options: RunOptions, ledger: Ledger, say: Callable[[str], None],
          installed: dict[str, str | None] | None = None) -> Outcome:  # fmt: skip
    """A new run: inventory check, the nodes' versions, the plan, then every batch."""
    max_failed = _limit(options.max_failed, "--max-failed")
    inventory = checked_inventory(
        options.inventory, options.limit, allow_scripts=options.allow_scripts, note=say
    )
    if installed is None:
        from clusterforge.upgrade.versions import installed_versions

        installed = installed_versions(
            options.inventory, options.plan.component, options.limit, note=lambda text: say(f"note: {text}")
        )
    plan = build_plan(inventory, options.plan, installed)
    if not plan.batches:
        raise InvalidInput(
            f"nothing to upgrade: {len(plan.current)} node(s) already at {plan.target}"
            + (
                f", {len(plan.blocked)} blocked ({', '.join(list(plan.blocked)[:5])})" if plan.blocked else ""
            ),
            "check the target and the limits with `clusterforge upgrade plan`",
        )
    versions = {host: plan.target for host in plan.hosts()}
    return _new_run(ledger, options, plan, versions, installed, None, max_failed, say)


def rollback(
    run_id: str,
    ledger: Ledger,
    say: Callable[[str], None],
    max_failed: str | None,
    consent: Consent | None = None,
) -> Outcome:
    """A new run taking the done nodes of run RUN back to the version each had before it."""
    original = ledger.open(run_id)
    record = original.read()
    if record.get("kind") != KIND:
        raise InvalidInput(f"run {original.id} is a {record.get('kind')} run", "roll back an upgrade run")
    refuse_running(original, record, say)
    options = recorded_options(original, record, consent or Consent(), say)
    nodes = read_nodes(original)
    done = [host for host, node in nodes.items() if node["status"] == DONE]
    unknown = [host for host in done if not nodes[host].get("from")]
    if unknown:
        say(
            f"not rolled back, their version before run {original.id} is unknown: {_some(unknown)} "
            "(roll them back with `clusterforge upgrade run --to VERSION --limit HOSTS`)"
        )
    done = [host for host in done if host not in unknown]
    if not done:
        raise InvalidInput(
            f"run {original.id} has no done node with a known previous version to roll back",
            f"see `clusterforge runs show {original.id}`",
        )
    options.max_failed = max_failed or options.max_failed
    options.limit = ",".join(done)
    inventory = checked_inventory(
        options.inventory, options.limit, allow_scripts=options.allow_scripts, note=say
    )
    missing = [host for host in done if host not in inventory.hostvars]
    if missing:
        raise InvalidInput(
            f"{', '.join(missing[:5])} of run {original.id} are no longer in {options.inventory}",
            "put them back in the inventory, or roll them back by hand",
        )
    _refuse_unplain_versions(original, nodes, done)
    # Every done node goes back (none is "current"), within the run's own limits.
    plan = build_plan(inventory, options.plan, {host: None for host in done})
    versions = {host: str(nodes[host]["from"]) for host in done}
    previous = {host: str(nodes[host]["to"]) for host in done}
    max_failed = _limit(options.max_failed, "--max-failed")
    return _new_run(ledger, options, plan, versions, previous, original.id, max_failed, say)


def resume(
    run_id: str,
    ledger: Ledger,
    say: Callable[[str], None],
    max_failed: str | None,
    consent: Consent | None = None,
) -> Outcome:
    """Continue run RUN: done and failed nodes untouched, a node in the middle from its recorded phase.

    The recorded options are checked as a command line would be, the nodes against the plan and the
    inventory (bad input, nothing runs); consent comes from this command line only (`consent`)."""
    run = ledger.open(run_id)
    record = run.read()
    if record.get("kind") != KIND:
        raise InvalidInput(
            f"run {run.id} is a {record.get('kind')} run", "resume it with the command that made it"
        )
    refuse_running(run, record, say)
    if record.get("status") == "succeeded":
        raise InvalidInput(f"run {run.id} already succeeded: nothing to resume", "start a new run")
    # What the resumed batches hand to the playbook as extra variables (templated there): plain only.
    if not is_run_id(run.id) or record.get("component") not in COMPONENTS:
        raise InvalidInput(
            f"run {run.id!r} (component {record.get('component')!r}) is not an upgrade run this ledger wrote",
            "resume a run that `clusterforge runs list` shows, or start a new one",
        )
    options = recorded_options(run, record, consent or Consent(), say)
    if max_failed is not None:
        record["options"]["max_failed"] = options.max_failed = max_failed
    limit = _limit(options.max_failed, "--max-failed")
    digest = inventory_sha256(options.inventory)
    if digest != record["inventory"]["sha256"]:
        say(f"warning: the inventory {options.inventory} changed since run {run.id} began")
    try:
        plan = Plan.from_dict(read_json(run.path / PLAN_FILE, run.path))
    except InputError as err:
        raise InvalidInput(f"{run.path / PLAN_FILE}: {err.message}", "start a new run") from None
    nodes = read_nodes(run)
    unplanned = sorted(set(plan.hosts()) ^ set(nodes))
    if unplanned or plan.component != record["component"]:
        raise InvalidInput(
            f"run {run.id}: {PLAN_FILE} and {NODES_DIR}/ disagree (component {plan.component!r}, "
            f"hosts in one only: {', '.join(unplanned[:5]) or 'none'})",
            "start a new run (a ledger is the CLI's own record: do not edit it)",
        )
    todo = [h for h, n in nodes.items() if n.get("status") in (PENDING, RUNNING)]
    _refuse_unplain_versions(run, nodes, todo)
    inventory = checked_inventory(options.inventory, None, allow_scripts=options.allow_scripts, note=say)
    refuse_hosts_not_in(todo, inventory.hostvars, run.id, options.inventory)
    say(f"resuming run {run.id} (attempt {len(record['attempts']) + 1}); ledger {run.path}")
    return _execute(run, record, plan, nodes, options, limit, say)


def recorded_options(
    run: Run, record: dict[str, Any], consent: Consent, say: Callable[[str], None]
) -> RunOptions:
    """The options run.json recorded, each checked as `upgrade run`'s command line checks it
    (InvalidInput naming the file and every bad key; nothing runs); consent and the secrets the
    ledger holds as digests from `consent`, i.e. this command line."""
    check = RecordProblems(run.run_file)
    fields = {f for f in RunOptions.__dataclass_fields__}
    recorded = check.keys("options", record.get("options"), fields)
    inventory = check.keys("inventory", record.get("inventory"), {"path", "sha256"})
    check.line("inventory.path", inventory.get("path"))
    check.names("hosts", record.get("hosts"))
    if not isinstance(record.get("attempts"), list):
        check.add("attempts", "is not a list")
    plan = check.keys("options.plan", recorded.get("plan"), set(PlanOptions.__dataclass_fields__))
    if plan.get("component") not in COMPONENTS:
        check.add(
            "options.plan.component", f"{plan.get('component')!r} is not one of {', '.join(COMPONENTS)}"
        )
    check.number("options.plan.canary", plan.get("canary", 1), 0, 10000, whole=True)
    check.line("options.max_failed", recorded.get("max_failed"))
    check.number("options.drain_timeout_s", recorded.get("drain_timeout_s", 3600), 1, 86400, whole=True)
    check.optional_number("options.forks", recorded.get("forks"), 1, 1000)
    check.line("options.limit", recorded.get("limit"), optional=True)
    check.raise_any(run.id)
    try:
        plan_options = PlanOptions(**plan)
        _limit(recorded.get("max_failed"), "options.max_failed")
    except (InputError, TypeError, ValueError, AttributeError) as err:
        raise InvalidInput(
            f"run {run.id}'s record {run.run_file}: {getattr(err, 'message', err)}",
            "start a new run (a ledger is the CLI's own record: do not edit it)",
        ) from None
    kept = {k: v for k, v in recorded.items() if k not in ("allow_reboot", "allow_scripts", "extra_vars")}
    return RunOptions(
        **{**kept, "inventory": inventory["path"], "plan": plan_options},
        allow_reboot=consent.allow_reboot,
        allow_scripts=consent.allow_scripts,
        extra_vars=resumed_extra_vars(recorded.get("extra_vars", {}), consent.extra_vars, run.id, say),
    )


def _unplain(node: dict[str, Any]) -> list[str]:
    """What of a node's record must not reach playbooks/upgrade.yml: its versions ("to", and "from"
    unless unknown) not of the version form, its phase not one of PHASES."""
    found = []
    for key in ("to", "from"):
        value = node.get(key)
        if key == "from" and value is None:
            continue
        problem = plain_problem(value, VERSION_FORM)
        if problem:
            found.append(f"{key} {value!r} {problem}")
    if node.get("phase") is not None and node.get("phase") not in PHASES:
        found.append(f"phase {node.get('phase')!r} is not one of {', '.join(PHASES)}")
    return found


def _refuse_unplain_versions(run: Run, nodes: dict[str, dict[str, Any]], hosts: list[str]) -> None:
    """InvalidInput naming each nodes/<host>.json of `hosts` whose versions or phase are not plain."""
    bad = [
        f"{node_file(run, host)}: {'; '.join(_unplain(nodes[host]))}"
        for host in hosts
        if _unplain(nodes[host])
    ]
    if bad:
        raise InvalidInput(
            f"run {run.id}'s ledger holds node values that must not reach the playbook, so nothing ran:\n"
            + "\n".join(f"  {line}" for line in bad[:20]),
            "a version is letters, digits and . + ~ _ - (e.g. 570.133.20); take these nodes on with a "
            "new run: clusterforge upgrade run -i INV --to VERSION --limit HOSTS",
        )


# ---------------------------------------------------------------------- batches ----


def _new_run(
    ledger: Ledger,
    options: RunOptions,
    plan: Plan,
    versions: dict[str, str],
    previous: dict[str, str | None],
    rollback_of: str | None,
    max_failed: Limit,
    say: Callable[[str], None],
) -> Outcome:
    run = ledger.create(KIND)
    record = {
        "id": run.id,
        "kind": KIND,
        "status": "running",
        "started": utc_now(),
        "ended": None,
        "exit_code": None,
        "inventory": {"path": str(options.inventory), "sha256": inventory_sha256(options.inventory)},
        "component": plan.component,
        "target": plan.target,
        "rollback_of": rollback_of,
        "hosts": plan.hosts(),
        "batches": len(plan.batches),
        "halted": None,
        "options": {
            **asdict(options),
            "inventory": None,
            "plan": options.plan.as_text(),
            "extra_vars": recorded_extra_vars(options.extra_vars),
        },
        "attempts": [],
    }
    write_json_atomic(run.path / PLAN_FILE, plan.to_dict())
    nodes = {}
    for batch in plan.batches:
        for host in batch.hosts:
            nodes[host] = {
                "host": host, "batch": batch.index, "from": previous.get(host), "to": versions[host],
                "status": PENDING, "phase": None, "attempt": None, "started": None, "ended": None,
                "failed_task": None, "message": None, "phases": [],
            }  # fmt: skip
            write_node(run, nodes[host])
    what = f"rollback of {rollback_of}" if rollback_of else f"{plan.component} to {plan.target}"
    say(
        f"run {run.id}: {what}, {len(nodes)} node(s) in {len(plan.batches)} batch(es) "
        f"(lower bound {plan.lower_bound}), {len(plan.current)} already current, "
        f"{len(plan.blocked)} blocked; "
        f"ledger {run.path}"
    )
    return _execute(run, record, plan, nodes, options, max_failed, say)


def _execute(
    run: Run,
    record: dict[str, Any],
    plan: Plan,
    nodes: dict[str, dict[str, Any]],
    options: RunOptions,
    max_failed: Limit,
    say: Callable[[str], None],
) -> Outcome:
    attempt = len(record["attempts"]) + 1
    record["status"], record["ended"], record["exit_code"], record["halted"] = "running", None, None, None
    record["attempts"].append({"n": attempt, "started": utc_now(), "ended": None, **controller()})
    run.write(record)
    allowed = max_failed.of(len(nodes))
    try:
        for batch in plan.batches:
            todo = [h for h in batch.hosts if nodes[h]["status"] in (PENDING, RUNNING)]
            if not todo:
                continue
            label = "canary batch" if batch.canary else "batch"
            say(f"{label} {batch.index}/{len(plan.batches)}: {len(todo)} node(s): {_some(todo)}")
            clock = time.monotonic()
            status = _run_batch(run, record, batch.index, todo, nodes, options, attempt, say)
            failed = [h for h in batch.hosts if nodes[h]["status"] == FAILED]
            done = [h for h in batch.hosts if nodes[h]["status"] == DONE]
            say(
                f"  batch {batch.index}: {len(done)} done, {len(failed)} failed "
                f"in {time.monotonic() - clock:.0f} s"
            )
            if status == "canceled" or any(nodes[h]["status"] == RUNNING for h in todo):
                record["halted"] = {"after_batch": batch.index, "reason": f"ansible-playbook {status}"}
                break
            all_failed = [h for h, n in nodes.items() if n["status"] == FAILED]
            if batch.canary and failed:
                record["halted"] = {
                    "after_batch": batch.index,
                    "reason": f"the canary failed: {_some(failed)}",
                }
                break
            if len(all_failed) > allowed:
                record["halted"] = {
                    "after_batch": batch.index,
                    "reason": f"{len(all_failed)} node(s) failed, more than --max-failed "
                    f"{record['options']['max_failed']} ({allowed})",
                }
                break
        statuses = {n["status"] for n in nodes.values()}
        if record["halted"]:
            record["status"] = "halted"
        else:
            record["status"] = "succeeded" if statuses == {DONE} else "failed"
    finally:
        record["ended"] = record["attempts"][-1]["ended"] = utc_now()
        if record["status"] == "running":  # an exception: the run is not running any more
            record["status"] = "failed"
        run.write(record)
    return Outcome(run, record, nodes)


def _run_batch(
    run: Run,
    record: dict[str, Any],
    index: int,
    todo: list[str],
    nodes: dict[str, dict[str, Any]],
    options: RunOptions,
    attempt: int,
    say: Callable[[str], None],
) -> str:
    """One ansible-playbook for the batch's nodes, their records following its events; runner's status.

    A node whose versions are not plain (an installed version read from the node that is free
    text, a template) fails here, untouched: its values never reach the playbook's extra variables.
    """
    ready = []
    for host in todo:
        why = _unplain(nodes[host])
        if not why:
            ready.append(host)
            continue
        message = f"not upgraded, the node is untouched: {'; '.join(why)}"
        nodes[host].update(status=FAILED, ended=utc_now(), failed_task=None, message=message)
        write_node(run, nodes[host])
        say(f"  {host} failed before the playbook: {message}")
    todo = ready
    if not todo:
        return "successful"
    start_phase = {h: nodes[h]["phase"] for h in todo if nodes[h]["status"] == RUNNING and nodes[h]["phase"]}
    for host in todo:
        nodes[host].update(status=RUNNING, attempt=attempt, started=nodes[host]["started"] or utc_now())
        write_node(run, nodes[host])
    recorder = StageRecorder(f"batch-{index}", todo)
    tracker = _PhaseTracker(run, nodes, attempt, say)

    def on_event(name: str, data: dict[str, Any]) -> None:
        tracker(name, data)
        recorder(name, data)

    private = run.path / "artifacts" / f"batch-{index}-{attempt}"
    private_folder(private)
    (private / "limit.txt").write_text("".join(f"{host}\n" for host in todo))
    extravars = {
        "upgrade_node_component": record["component"],
        "upgrade_node_run_id": run.id,
        "upgrade_node_versions": {h: nodes[h]["to"] for h in todo},
        "upgrade_node_previous": {h: nodes[h]["from"] for h in todo},
        "upgrade_node_start_phase": start_phase,
        "upgrade_node_allow_reboot": options.allow_reboot,
        "upgrade_node_drain_timeout_s": options.drain_timeout_s,
    }
    outcome = run_playbook(
        project_root() / "playbooks" / "upgrade.yml",
        Path(options.inventory),
        private,
        on_event,
        extravars=extravars,
        operator_vars=options.extra_vars,  # -e: this command line's, or re-checked on --resume
        limit=f"@{(private / 'limit.txt').resolve()}",
        forks=options.forks,
        mitogen=True,
    )
    results = recorder.results()
    for host in todo:
        node, result = nodes[host], results[host]
        if result["result"] in ("ok", "changed"):
            node.update(status=DONE, ended=utc_now(), failed_task=None, message=None)
        elif result["result"] in ("failed", "unreachable"):
            node.update(status=FAILED, ended=utc_now(), failed_task=result["failed_task"],
                        message=result["message"] or result["result"])  # fmt: skip
            say(f"  {host} failed in phase {node['phase']}: {node['message']}")
        else:  # no play recap for it: the playbook died; it stays running at its phase, for --resume
            node["message"] = (
                f"ansible-playbook ended (rc {outcome.rc}, {outcome.status}); see {outcome.stdout_path}"
            )
        write_node(run, node)
    return outcome.status


class _PhaseTracker:
    """Writes a node's record the moment its phase changes (the "Upgrade phase <name>" tasks)."""

    def __init__(self, run: Run, nodes: dict[str, dict[str, Any]], attempt: int, say: Callable[[str], None]):
        self.run, self.nodes, self.attempt, self.say = run, nodes, attempt, say

    def __call__(self, name: str, data: dict[str, Any]) -> None:
        task = str(data.get("task") or "")
        if name != "runner_on_ok" or not task.startswith(PHASE_TASK):
            return
        phase, host = task[len(PHASE_TASK) :].strip(), str(data.get("host"))
        node = self.nodes.get(host)
        if node is None or phase not in PHASES:
            return
        node["phase"] = phase
        node["phases"].append({"phase": phase, "attempt": self.attempt, "at": utc_now()})
        write_node(self.run, node)
        self.say(f"  {host}: {phase}")


# ------------------------------------------------------------------------ ledger ----


def node_file(run: Run, host: str) -> Path:
    return run.path / NODES_DIR / f"{host}.json"


def write_node(run: Run, node: dict[str, Any]) -> None:
    write_json_atomic(node_file(run, node["host"]), node)


def read_nodes(run: Run) -> dict[str, dict[str, Any]]:
    """host -> its record, in plan order (batch, then the order of the batch)."""
    folder = run.path / NODES_DIR
    nodes = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        node = read_json(path, run.path)
        if node.get("host") != path.stem:  # write_node writes where the record's host says
            raise InvalidInput(
                f"{path}: host {node.get('host')!r} is not the file's name", "check the run's ledger folder"
            )
        # A status of no node (never exit 0 for a node never upgraded) or a batch that is no number.
        if (
            node.get("status") not in STATUSES
            or isinstance(node.get("batch"), bool)
            or not isinstance(node.get("batch"), int)
        ):
            raise InvalidInput(
                f"{path}: status {node.get('status')!r} (one of {', '.join(STATUSES)}) or batch "
                f"{node.get('batch')!r} (a number) is not what the CLI writes",
                "start a new run for this node (a ledger is the CLI's own record: do not edit it)",
            )
        nodes.append(node)
    order = {h: i for i, h in enumerate(run.read().get("hosts") or [])}
    return {n["host"]: n for n in sorted(nodes, key=lambda n: order.get(n["host"], len(order)))}


# ----------------------------------------------------------------------- verdict ----


def summary(outcome: Outcome, say: Callable[[str], None]) -> None:
    """One line per node that is not done, and the counts."""
    counts: dict[str, int] = {}
    for host, node in outcome.nodes.items():
        counts[node["status"]] = counts.get(node["status"], 0) + 1
        if node["status"] != DONE:
            why = f": {node['message']}" if node.get("message") else ""
            say(f"  {host} (batch {node['batch']}): {node['status']} in phase {node['phase'] or '-'}{why}")
    shown = ", ".join(f"{count} {status}" for status, count in sorted(counts.items()))
    say(
        f"run {outcome.run.id}: {outcome.record['status']} ({shown}); "
        f"`clusterforge runs show {outcome.run.id}`"
    )
    record = outcome.record
    if counts.get(DONE) and not record.get("rollback_of"):
        variable = COMPONENTS[record["component"]].variable
        say(
            f'the inventory\'s BOM still decides later bring-ups: set {variable}: "{record["target"]}" '
            "(group_vars/all/versions.yml, or the upgraded group's) once the rollout is complete"
        )


def finish(outcome: Outcome) -> None:
    """Record the exit code in the ledger, then raise the documented exit (0 returns)."""
    try:
        exit_verdict(outcome)
        outcome.record["exit_code"] = 0
    except ClusterForgeError as err:
        outcome.record["exit_code"] = err.exit_code
        raise
    finally:
        outcome.run.write(outcome.record)


def exit_verdict(outcome: Outcome) -> None:
    record, nodes = outcome.record, outcome.nodes
    failed = [h for h, n in nodes.items() if n["status"] == FAILED]
    left = [h for h, n in nodes.items() if n["status"] in (PENDING, RUNNING)]
    run_id = outcome.run.id
    if record["status"] == "halted":
        raise ChecksFailed(
            f"run {run_id} halted after batch {record['halted']['after_batch']}: "
            f"{record['halted']['reason']}; "
            f"{len(left)} node(s) not upgraded",
            f"read the failures (`clusterforge runs show {run_id}`); then continue with "
            f"`clusterforge upgrade run --resume {run_id}` (--max-failed N to accept more failures), "
            f"or take the done nodes back with `clusterforge upgrade run --rollback {run_id}`",
        )
    if failed:
        raise ChecksFailed(
            f"{len(failed)} node(s) failed and stay drained with the reason: {_some(failed)}",
            f"`clusterforge runs show {run_id}` gives each one's phase and cause",
        )


def _limit(text: str, option: str) -> Limit:
    try:
        return Limit.parse(str(text))
    except InputError as err:
        raise InvalidInput(
            f"{option} {text!r}: {err.message}", f"pass {option} as a count (2) or a percent (5%)"
        ) from None


def _some(hosts: list[str], shown: int = 5) -> str:
    more = f" +{len(hosts) - shown}" if len(hosts) > shown else ""
    return ", ".join(hosts[:shown]) + more
