"""ClusterForge's quick validation as Slurm's HealthCheckProgram: a node whose checks fail drains itself.

    clusterforge-healthcheck [--params FILE] [--result FILE] [--dry-run]

Installed by role node_healthcheck as /usr/local/sbin/clusterforge-healthcheck,
a launcher that puts /usr/local/lib/clusterforge/cfcore.pyz on sys.path and
calls `main`. slurmd runs it with no arguments, so everything comes from the
parameters file (/etc/clusterforge/healthcheck.json, root 0600):

    {"expected": {<node_validate parameters but level>}, "level": "quick",
     "scheduler": "slurm" | null, "node_name": "gpu-r1-n01",
     "metrics_textfile_dir": "/var/lib/prometheus/node-exporter" | null}

A run: quick `validate_node` on the live tools; the result and the decision
are written atomically to /var/lib/clusterforge/healthcheck/last.json; then,
for scheduler slurm, `decide` on the node's state (`scontrol show node -o`):

- fail or error: drain with reason `clusterforge-health: <ids>` (at most 4
  failing/erroring check ids, comma separated), unless the node is already
  drained with that very reason, or drained/down with a reason of someone else
  (an operator, `clusterforge validate --quarantine`: `clusterforge: ...`),
  which is never overwritten;
- pass or warn: resume only a drain whose reason starts with
  `clusterforge-health:`;
- skip (every check skipped: nothing was judged): nothing.

With `metrics_textfile_dir`, each run (not --dry-run) also writes the result as
`<dir>/clusterforge_validation_quick.prom` (cfcore.validation_metrics.write, the
file node_validate writes), unless the expectation has `only_checks` or the
directory does not exist. A file that cannot be written is reported in
last.json (`metrics`) and on stderr; it never changes the decision or the exit.

A non-zero exit alone does not drain (slurmd only logs it): the program calls
scontrol itself. Exit 0 healthy, 1 unhealthy or the scontrol call failed, 2
when the program cannot run (parameters unreadable or malformed, its own bug).
Exit 2 never drains: a broken parameters file is the same on every node, and
draining on it would take the whole fleet out; it is loud in slurmd's log
instead (`health_check failed: rc:2 output:...`). The run is bounded: the
validation gets VALIDATE_BUDGET_S, each scontrol call SCONTROL_TIMEOUT_S, in
all under slurmd's 60 s health-check timeout; a validation that overruns is
`error` with id `healthcheck.timeout` (a tool hung past its own timeout: the
node is not well). Stdlib only, Python 3.8-safe, runs from a zip.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from typing import NamedTuple

from . import scheduler_drain
from .quarantine_rules import SLURM_REASON_MAX, name_problem

PARAMS_PATH = "/etc/clusterforge/healthcheck.json"
RESULT_PATH = "/var/lib/clusterforge/healthcheck/last.json"
REASON_PREFIX = "clusterforge-health:"
MAX_REASON_IDS = 4
TOTAL_BUDGET_S = 55
SCONTROL_TIMEOUT_S = 5
VALIDATE_BUDGET_S = TOTAL_BUDGET_S - 3 * SCONTROL_TIMEOUT_S
TIMEOUT_ID = "healthcheck.timeout"
HEALTHY = ("pass", "warn")
UNHEALTHY = ("fail", "error")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.:-]+")


class Action(NamedTuple):
    action: str  # drain | resume | none
    reason: str  # the drain reason (drain), else why nothing or what is resumed


class ParamsError(Exception):
    """The parameters file cannot be used; the message names the file and the fix."""


def health_reason(failing_ids: list) -> str:
    """`clusterforge-health: a,b,c,d` (+N when more), one printable line within Slurm's reason limit."""
    ids = [token for token in (_UNSAFE.sub("-", str(i)).strip("-") for i in failing_ids) if token]
    shown = ",".join(ids[:MAX_REASON_IDS]) or "validation"
    if len(ids) > MAX_REASON_IDS:
        shown += f" +{len(ids) - MAX_REASON_IDS}"
    return f"{REASON_PREFIX} {shown}"[:SLURM_REASON_MAX]


def decide(status: str, failing_ids: list, node_state: dict | None) -> Action:
    """What the node does in Slurm, from its validation status and its `parse_slurm_node` state.

    node_state None: the state could not be read (scontrol failed); an unhealthy node
    drains anyway (taking a node out is the safe side), a healthy one is left as it is.
    """
    ours = bool(node_state and (node_state.get("reason") or "").startswith(REASON_PREFIX))
    out_of_service = bool(node_state and (node_state.get("drain") or node_state.get("down")))
    if status in UNHEALTHY:
        reason = health_reason(failing_ids)
        if node_state is None:
            return Action("drain", reason)
        if out_of_service and node_state.get("reason") and not ours:
            return Action("none", f"left alone: taken out by someone else: {node_state['reason']}")
        if node_state.get("drain") and node_state.get("reason") == reason:
            return Action("none", f"already drained: {reason}")
        return Action("drain", reason)
    if status in HEALTHY:
        if node_state and node_state.get("drain") and ours:
            return Action("resume", f"healthy again, was: {node_state['reason']}")
        if node_state and out_of_service and node_state.get("reason") and not ours:
            return Action("none", f"healthy; left alone: taken out by someone else: {node_state['reason']}")
        return Action("none", "healthy")
    return Action("none", f"status {status}: nothing judged, node left as it is")


# -------------------------------------------------------------- the program ----


def load_params(path: str) -> dict:
    fix = "rerun role node_healthcheck (clusterforge.cluster.node_healthcheck), which writes it"
    try:
        with open(path, encoding="utf-8") as handle:
            params = json.load(handle)
    except FileNotFoundError:
        raise ParamsError(f"{path} does not exist; {fix}") from None
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise ParamsError(f"{path} cannot be read as JSON: {err}; {fix}") from None
    if not isinstance(params, dict):
        raise ParamsError(f"{path} must hold a JSON object, got {type(params).__name__}; {fix}")
    unknown = sorted(set(params) - {"expected", "level", "scheduler", "node_name", "metrics_textfile_dir"})
    if unknown:
        raise ParamsError(f"{path}: unknown keys {', '.join(unknown)}; {fix}")
    if not isinstance(params.get("expected"), dict):
        raise ParamsError(f"{path}: 'expected' must be the node_validate parameters (an object); {fix}")
    level = params.get("level", "quick")
    if level != "quick":
        raise ParamsError(
            f"{path}: level must be quick (the health check runs under slurmd's timeout), got {level!r}"
        )
    scheduler = params.get("scheduler")
    if scheduler not in ("slurm", None):
        raise ParamsError(f'{path}: scheduler must be "slurm" or null, got {scheduler!r}; {fix}')
    node_name = params.get("node_name")
    if scheduler == "slurm":
        problem = name_problem(node_name, "slurm")
        if problem:
            raise ParamsError(f"{path}: node_name {problem}; set slurm_node_name for the host and {fix}")
    metrics_dir = params.get("metrics_textfile_dir")
    if metrics_dir is not None and (not isinstance(metrics_dir, str) or not metrics_dir.startswith("/")):
        raise ParamsError(
            f"{path}: metrics_textfile_dir must be an absolute path or null, got {metrics_dir!r}; "
            f"set monitoring_textfile_dir for the host and {fix}"
        )
    return {
        "expected": params["expected"],
        "level": level,
        "scheduler": scheduler,
        "node_name": node_name,
        "metrics_textfile_dir": metrics_dir or None,
    }


def _validate(expected: dict, level: str, budget_s: float) -> dict:
    """validate_node on the live tools in a daemon thread, so a hang past the budget cannot hold the run."""
    from .collect import LiveSource
    from .validate import validate_node

    box: dict = {}
    collected_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())

    def work() -> None:
        try:
            box["result"] = validate_node(LiveSource(), expected, level)
        except BaseException as err:
            box["error"] = err

    worker = threading.Thread(target=work, name="validate", daemon=True)
    worker.start()
    worker.join(budget_s)
    if worker.is_alive():
        return {
            "node_sku": expected.get("node_sku"),
            "level": level,
            "status": "error",
            "checks": [
                {
                    "id": TIMEOUT_ID,
                    "status": "error",
                    "message": f"validation did not finish within {budget_s:.0f} s",
                    "evidence": {},
                    "remedy": "a tool hung past its own timeout: look at the node (nvidia-smi, dmesg)",
                }
            ],
            "source": {"kind": "live", "path": None},
            "collected_at": collected_at,
            "duration_s": round(float(budget_s), 3),
        }
    if "error" in box:
        raise box["error"]
    return box["result"]


def bad_ids(result: dict) -> list:
    return [c.get("id") for c in result.get("checks") or [] if c.get("status") in UNHEALTHY]


def _scontrol(argv: list) -> subprocess.CompletedProcess:
    return subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=SCONTROL_TIMEOUT_S,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def read_node_state(node: str) -> tuple:
    """(parse_slurm_node state or None, why None)."""
    try:
        done = _scontrol(scheduler_drain.slurm_show(node))
    except (OSError, subprocess.TimeoutExpired) as err:
        return None, f"scontrol show node: {err}"
    if done.returncode != 0:
        return (
            None,
            f"scontrol show node {node}: rc {done.returncode}: {(done.stderr or done.stdout).strip()[:300]}",
        )
    try:
        return scheduler_drain.parse_slurm_node(done.stdout), ""
    except ValueError as err:
        return None, str(err)


def write_metrics(params: dict, result: dict) -> dict:
    """The run's metrics file (cfcore.validation_metrics): {"file": path or None, "note": why not or None}."""
    from .validation_metrics import incomplete_reason
    from .validation_metrics import write as write_textfile

    directory = params.get("metrics_textfile_dir")
    if not directory:
        return {"file": None, "note": "metrics_textfile_dir is not set"}
    reason = incomplete_reason(result, only_checks=(params.get("expected") or {}).get("only_checks"))
    if reason:
        return {"file": None, "note": reason}
    try:
        path = write_textfile(directory, result)
    except Exception as err:  # OSError mostly; whatever it is, the drain decision stands
        note = f"cannot write the metrics file in {directory}: {type(err).__name__}: {err}"
        return {"file": None, "note": note, "failed": True}
    if path is None:
        return {"file": None, "note": f"{directory} does not exist (role exporters creates it)"}
    return {"file": path, "note": None}


def write_atomically(path: str, data: dict) -> None:
    folder = os.path.dirname(path) or "."
    os.makedirs(folder, mode=0o700, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=".last-", dir=folder)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=1, sort_keys=True, default=str)
            out.write("\n")
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, 0o600)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def main(argv: list | None = None) -> int:
    parser = argparse.ArgumentParser(prog="clusterforge-healthcheck", description=__doc__.split("\n")[0])
    parser.add_argument("--params", default=PARAMS_PATH, help=f"parameters file (default {PARAMS_PATH})")
    parser.add_argument(
        "--result", default=RESULT_PATH, help=f"where the result goes (default {RESULT_PATH})"
    )
    parser.add_argument("--dry-run", action="store_true", help="print the decision; run no scontrol update")
    args = parser.parse_args(argv)
    started = time.monotonic()
    try:
        params = load_params(args.params)
        result = _validate(params["expected"], params["level"], VALIDATE_BUDGET_S)
    except ParamsError as err:
        print(f"clusterforge-healthcheck: {err}", file=sys.stderr)
        return 2
    except Exception as err:
        print(
            f"clusterforge-healthcheck: cannot validate ({type(err).__name__}: {err}); nothing drained. "
            f"Check {args.params} (rerun role node_healthcheck)",
            file=sys.stderr,
        )
        return 2
    status, ids = result.get("status"), bad_ids(result)
    node_state, state_problem, ran = None, "", None
    if params["scheduler"] == "slurm":
        node_state, state_problem = read_node_state(params["node_name"])
        decision = decide(status, ids, node_state)
    else:
        decision = Action("none", "no scheduler configured")
    if decision.action != "none" and not args.dry_run:
        ran = _act(decision, params["node_name"])
    record = {
        "result": result,
        "decision": {
            "action": decision.action,
            "reason": decision.reason,
            "scheduler": params["scheduler"],
            "node_name": params["node_name"],
            "node_state": {k: v for k, v in (node_state or {}).items() if k != "fields"} or None,
            "node_state_problem": state_problem or None,
            "dry_run": args.dry_run,
            "command": ran,
        },
        "metrics": {"file": None, "note": "dry run"} if args.dry_run else write_metrics(params, result),
        "duration_s": round(time.monotonic() - started, 3),
    }
    if record["metrics"].pop("failed", False):
        print(f"clusterforge-healthcheck: {record['metrics']['note']}", file=sys.stderr)
    summary = (
        f"clusterforge-healthcheck: {status} {','.join(ids) or '-'}; {decision.action}: {decision.reason}"
    )
    if state_problem:
        summary += f" (node state unknown: {state_problem})"
    if args.dry_run:
        print(json.dumps(record["decision"], indent=1, sort_keys=True))
    else:
        try:
            write_atomically(args.result, record)
        except OSError as err:
            print(f"clusterforge-healthcheck: cannot write {args.result}: {err}", file=sys.stderr)
    print(summary)
    if ran and ran["rc"] != 0:
        print(
            f"clusterforge-healthcheck: {' '.join(ran['argv'])}: rc {ran['rc']}: {ran['output']}",
            file=sys.stderr,
        )
        return 1
    return 0 if status in HEALTHY else 1


def _act(decision: Action, node: str) -> dict:
    command = (
        scheduler_drain.slurm_drain(node, decision.reason)
        if decision.action == "drain"
        else scheduler_drain.slurm_resume(node)
    )
    try:
        done = _scontrol(command)
        rc, output = done.returncode, (done.stderr or done.stdout).strip()[:500]
    except (OSError, subprocess.TimeoutExpired) as err:
        rc, output = 127 if isinstance(err, OSError) else 124, str(err)
    return {"argv": command, "rc": rc, "output": output}


def run() -> None:  # the launcher's entry (role node_healthcheck)
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # A validation thread stuck past its budget must not keep the process alive.
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    run()
