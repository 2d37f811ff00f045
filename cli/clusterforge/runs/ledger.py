"""The run ledger: every bring-up (and upgrade) run on disk, readable at any moment.

Layout and fields: docs/design.md, "Bring-up runs and the run ledger". Each file
is written atomically (temporary file in the same directory, fsync, rename), so
a controller killed at any instant leaves the previous complete version behind.
A run whose status is still `running` but whose controller process is gone is
reported as `interrupted`; that status is derived when reading, never written.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import signal
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cfcore.files import UnsafeFile
from cfcore.files import read_json as read_bounded_json
from cfcore.inputs import is_template, plain_problem
from cfcore.redact import is_redacted, redact_vars, redacted

from clusterforge.errors import InvalidInput

DEFAULT_LEDGER = Path(".clusterforge") / "runs"
RUN_FILE = "run.json"
STAGES_DIR = "stages"
ARTIFACTS_DIR = "artifacts"
_ID = re.compile(
    r"^\d{8}T\d{6}Z-[a-z]+(?:-[a-z]+)*-[0-9a-f]{4}$"
)  # <UTC>-<kind>-<4 hex>; kinds: bringup, add-node
MAX_LEDGER_FILE_BYTES = 64 * 1024 * 1024  # a stage record of 10,000 hosts with diffs stays far below
FILE_MODE, FOLDER_MODE = 0o600, 0o700  # a run records the operator's hosts, options and failures


def private_folder(path: Path) -> Path:
    """`path` made (each missing folder on the way 0700, as mkdir(parents=True) does not); `path`."""
    missing, folder = [], path
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    for each in reversed(missing):
        each.mkdir(mode=FOLDER_MODE, exist_ok=True)
    return path


def write_json_atomic(path: Path, data: Any) -> None:
    """Replace `path` by `data` as JSON (mode 0600): readers see the old file or the new one, never a part."""
    private_folder(path.parent)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), FILE_MODE)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        os.fchmod(out.fileno(), FILE_MODE)
        json.dump(data, out, indent=1, sort_keys=False, default=str)
        out.write("\n")
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)


def read_json(path: Path, root: Path | None = None) -> dict[str, Any]:
    """A ledger file (or a report the CLI wrote) through the one bounded reader (cfcore/files.py
    `read_json`: a regular file, never opened when it is not one, so a FIFO cannot hang it; at most
    MAX_LEDGER_FILE_BYTES; nested a bounded depth; inside `root` when given); InvalidInput naming
    it when it is missing, not such a file or not a JSON object."""
    if not os.path.lexists(path):
        raise InvalidInput(f"{path} does not exist", "list the runs with `clusterforge runs list`")
    try:
        data = read_bounded_json(str(path), MAX_LEDGER_FILE_BYTES, str(root) if root is not None else None)
    except UnsafeFile as err:
        raise InvalidInput(
            f"{path} is not a readable ledger file: {err}", "check the ledger folder"
        ) from None
    except (OSError, ValueError) as err:
        raise InvalidInput(
            f"{path} is not a readable ledger file: {err}", "check the ledger folder"
        ) from None
    if not isinstance(data, dict):
        raise InvalidInput(f"{path} is not a ledger file (not a JSON object)", "check the ledger folder")
    return data


# ------------------------------------------------------------- record shapes ----

# The types of the values a run's files hold (docs/design.md, "Bring-up runs and the run ledger";
# a key is checked when present). A ledger is data: a file with a value of another type is refused
# where it is read (exit 2, naming the file and the key), so no command walks into a string where
# it expects a mapping. What the values mean is checked again where a command acts on them
# (RecordProblems, on --resume and --rollback).
_NONE = type(None)
_TEXT, _TEXT_OR_NONE, _WHOLE, _WHOLE_OR_NONE = (str,), (str, _NONE), (int,), (int, _NONE)
_NAMES = "a list of names"
PID_MAX = 1 << 22  # Linux's highest pid_max: a larger pid is no process of this machine
_ATTEMPT = {
    "n": _WHOLE, "started": _TEXT_OR_NONE, "ended": _TEXT_OR_NONE, "pid": _WHOLE, "host": _TEXT,
    "started_ticks": _WHOLE_OR_NONE, "inventory_sha256": _TEXT,
}  # fmt: skip
_RUN = {
    "id": _TEXT, "kind": _TEXT, "status": _TEXT, "started": _TEXT_OR_NONE, "ended": _TEXT_OR_NONE,
    "exit_code": _WHOLE_OR_NONE, "inventory": (dict,), "bom": (dict,), "hosts": _NAMES,
    "cluster_hosts": _NAMES, "stages": _NAMES, "options": (dict,), "attempts": [_ATTEMPT],
    "stopped_at": _TEXT_OR_NONE, "component": _TEXT, "target": _TEXT, "rollback_of": _TEXT_OR_NONE,
    "batches": _WHOLE, "halted": (dict, _NONE),
}  # fmt: skip
_HOST = {
    "result": _TEXT, "changed_tasks": (list,), "failed_task": _TEXT_OR_NONE, "message": _TEXT_OR_NONE,
    "attempt": _WHOLE,
}  # fmt: skip
_STAGE = {
    "stage": _TEXT, "status": _TEXT, "started": _TEXT_OR_NONE, "ended": _TEXT_OR_NONE, "attempt": _WHOLE,
    "runner_status": _TEXT_OR_NONE, "hosts": {"*": _HOST}, "duration_s": (int, float, _NONE),
}  # fmt: skip


def shape_problems(data: dict[str, Any], shape: dict[str, Any], where: str = "") -> list[str]:
    """Where `data`'s values have other types than `shape` gives (`key: a str, not ...`)."""
    found = []
    for key, kind in shape.items():
        if key not in data:
            continue
        value, at = data[key], f"{where}{key}"
        if kind == _NAMES:
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                found.append(f"{at} is not a list of names")
        elif isinstance(kind, list):  # a list of records
            if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
                found.append(f"{at} is not a list of mappings")
            else:
                for n, item in enumerate(value):
                    found += shape_problems(item, kind[0], f"{at}[{n}].")
        elif isinstance(kind, dict):  # a mapping of names to records
            if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
                found.append(f"{at} is not a mapping of names to mappings")
            else:
                for name, item in value.items():
                    found += shape_problems(item, kind["*"], f"{at}.{name}.")
        elif isinstance(value, bool) or not isinstance(value, kind):  # true is no number here
            names = " or ".join("null" if k is _NONE else k.__name__ for k in kind)
            found.append(f"{at} is {type(value).__name__} {_short(value)}, not {names}")
    pid = data.get("pid") if shape is _ATTEMPT else None
    if isinstance(pid, int) and not isinstance(pid, bool) and not 0 < pid <= PID_MAX:
        found.append(f"{where}pid {_short(pid)} is no process id")
    return found


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:37]}..."


def checked_shape(path: Path, data: dict[str, Any], shape: dict[str, Any]) -> dict[str, Any]:
    problems = shape_problems(data, shape)
    if problems:
        raise InvalidInput(
            f"{path} is not a ledger file this ClusterForge wrote: " + "; ".join(problems[:5]),
            "check the ledger folder (a ledger is the CLI's own record: do not edit it)",
        )
    return data


# ------------------------------------------------------------------ secrets ----


def recorded_extra_vars(values: dict[str, Any]) -> dict[str, Any]:
    """The -e values as a run records them: a secret (named like one, or a role's no_log option)
    only as `<redacted sha256:...>` (docs/design.md, "Secrets in records and output")."""
    from clusterforge.inventory_check.requirements import no_log_options
    from clusterforge.paths import project_root

    return redact_vars(values, no_log_options(project_root()))


def resumed_extra_vars(recorded: Any, given: dict[str, Any], run_id: str, note: Any = None) -> dict[str, Any]:
    """The -e values a resumed run passes: the recorded ones, where each that the ledger holds only
    as a digest (a secret) or that holds template syntax (a ledger is data) is given again on the
    command line (`given`); a given variable the run did not record as such is bad input."""
    if not isinstance(recorded, dict) or not all(isinstance(k, str) for k in recorded):
        raise InvalidInput(
            f"run {run_id}: options.extra_vars is not a mapping of variables", "start a new run"
        )
    needed = sorted(k for k, v in recorded.items() if _unusable(v))
    extra = sorted(k for k in given if k not in needed)
    if extra:
        raise InvalidInput(
            f"--resume keeps the run's own -e values: {', '.join(extra)} "
            f"{'was' if len(extra) == 1 else 'were'} recorded in full",
            "drop these -e; give again only the variables the run recorded as a secret's digest",
        )
    missing = [k for k in needed if k not in given]
    if missing:
        raise InvalidInput(
            f"run {run_id} recorded -e {', '.join(missing)} only as a digest (a secret, never written "
            "to the ledger) or as a template (not taken from a ledger)",
            f"give {'it' if len(missing) == 1 else 'them'} again: --resume {run_id} "
            + " ".join(f"-e {k}=..." for k in missing),
        )
    for key in needed:
        value = recorded[key]
        if is_redacted(value) and redacted(given[key]) != value and note is not None:
            note(f"warning: -e {key} differs from the value run {run_id} was started with")
    return {**recorded, **{k: given[k] for k in needed}}


def _unusable(value: Any) -> bool:
    if isinstance(value, dict):
        return any(_unusable(v) for v in value.values())
    if isinstance(value, list):
        return any(_unusable(v) for v in value)
    return is_redacted(value) or is_template(value)


def is_run_id(name: Any) -> bool:
    """A run id of new_run_id's form (what reaches a playbook as upgrade_node_run_id)."""
    return plain_problem(name, _ID) is None


def new_run_id(kind: str) -> str:
    return f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{kind}-{secrets.token_hex(2)}"


def controller() -> dict[str, Any]:
    """Who runs an attempt: this process and machine (for the liveness test of `interrupted`)."""
    pid = os.getpid()
    return {"pid": pid, "host": socket.gethostname(), "started_ticks": process_start_ticks(pid)}


def controller_alive(attempt: dict[str, Any]) -> bool | None:
    """True/False for an attempt of this machine; None when it ran elsewhere (cannot tell)."""
    if attempt.get("host") != socket.gethostname():
        return None
    pid = attempt.get("pid")
    if not isinstance(pid, int) or not 0 < pid <= PID_MAX:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return _same_process(pid, attempt.get("started_ticks"))


def process_start_ticks(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (/proc), to tell a reused pid apart."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[19])
    except (OSError, IndexError, ValueError):
        return None


def _same_process(pid: int, started_ticks: Any) -> bool:
    if not isinstance(started_ticks, int):
        return True
    now = process_start_ticks(pid)
    return now is None or now == started_ticks


def leftover_processes(folder: Path) -> list[int]:
    """Pids on this machine whose command line names `folder` (a killed controller's ansible-playbook).

    ansible-runner's child ignores SIGHUP, so it outlives a controller killed with SIGKILL until its
    current task ends: a long one (a drain waiting for jobs) would race the resumed run.
    """
    needle = str(folder.resolve()).encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue  # gone meanwhile, or not ours to read
    return sorted(found)


def stop_leftover_processes(folder: Path, grace_s: float = 20.0) -> list[int]:
    """SIGTERM, then after `grace_s` SIGKILL, every leftover process of `folder`; the pids found."""
    pids = leftover_processes(folder)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and leftover_processes(folder):
            time.sleep(0.5)
        if not leftover_processes(folder):
            break
    return pids


@dataclass
class Run:
    """One run's folder: run.json, stages/NN-<stage>.json, artifacts/, validation/."""

    path: Path

    @property
    def id(self) -> str:
        return self.path.name

    @property
    def run_file(self) -> Path:
        return self.path / RUN_FILE

    def read(self) -> dict[str, Any]:
        return checked_shape(self.run_file, read_json(self.run_file, self.path), _RUN)

    def write(self, record: dict[str, Any]) -> None:
        write_json_atomic(self.run_file, record)

    def stage_file(self, index: int, stage: str) -> Path:
        return self.path / STAGES_DIR / f"{index:02d}-{stage}.json"

    def read_stage(self, index: int, stage: str) -> dict[str, Any] | None:
        path = self.stage_file(index, stage)
        return self._stage(path) if os.path.lexists(path) else None

    def _stage(self, path: Path) -> dict[str, Any]:
        return checked_shape(path, read_json(path, self.path), _STAGE)

    def write_stage(self, index: int, record: dict[str, Any]) -> None:
        write_json_atomic(self.stage_file(index, record["stage"]), record)

    def stages(self) -> list[dict[str, Any]]:
        """Every stage record written so far, in stage order."""
        folder = self.path / STAGES_DIR
        return [self._stage(p) for p in sorted(folder.glob("[0-9][0-9]-*.json"))] if folder.is_dir() else []

    def artifacts(self, stage: str, attempt: int) -> Path:
        return self.path / ARTIFACTS_DIR / f"{stage}-{attempt}"

    def status(self, record: dict[str, Any] | None = None) -> str:
        """The run's status as written, or `interrupted` when a running run's controller is gone."""
        record = record if record is not None else self.read()
        status = str(record.get("status", "unknown"))
        attempts = record.get("attempts") or [{}]
        if status == "running" and controller_alive(attempts[-1]) is False:
            return "interrupted"
        return status


class Ledger:
    """The folder of runs (`.clusterforge/runs` by default)."""

    def __init__(self, root: Path | None = None):
        self.root = Path(root) if root else DEFAULT_LEDGER

    def create(self, kind: str) -> Run:
        try:
            self.root.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
            for _ in range(10):
                path = self.root / new_run_id(kind)
                try:
                    path.mkdir(mode=FOLDER_MODE)
                    return Run(path)
                except FileExistsError:
                    continue
        except OSError as err:
            raise InvalidInput(
                f"cannot create a run in the ledger {self.root}: {err.strerror or err}",
                "pass --ledger with a folder you can write to",
            ) from None
        raise InvalidInput(f"no free run id in {self.root}", "retry in a second")  # pragma: no cover

    def open(self, run_id: str) -> Run:
        """An existing run by id (or a unique prefix of one)."""
        if not run_id or "/" in run_id or run_id in (".", ".."):
            raise InvalidInput(f"{run_id!r} is not a run id", "pass an id from `clusterforge runs list`")
        exact = self.root / run_id
        if os.path.lexists(exact / RUN_FILE):
            return Run(exact)
        matches = [run for run in self.runs() if run.id.startswith(run_id)]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise InvalidInput(
                f"no run {run_id} in the ledger {self.root}",
                "list the runs with `clusterforge runs list` (and pass --ledger if the runs are elsewhere)",
            )
        raise InvalidInput(
            f"{run_id} matches {len(matches)} runs: {', '.join(r.id for r in matches[:5])}",
            "pass more of the id",
        )

    def runs(self) -> list[Run]:
        """Every run, newest first (a run whose run.json is not a regular file too: reading it says why)."""
        if not self.root.is_dir():
            return []
        found = [Run(p) for p in self.root.iterdir() if _ID.match(p.name) and os.path.lexists(p / RUN_FILE)]
        return sorted(found, key=lambda run: run.id, reverse=True)


# ------------------------------------------------------- a resumed run's options ----

# A --limit pattern or an inventory path as a ledger records them: one line, no template.
_LINE = re.compile(r"[^\s].{0,4095}", re.DOTALL)


class RecordProblems:
    """What is wrong with a run's record before it is acted on (--resume, --rollback): each value
    re-checked as the command line checks it; `raise_any` refuses them all at once (exit 2)."""

    def __init__(self, where: Path | str):
        self.where, self.found = where, []

    def add(self, key: str, what: str) -> None:
        self.found.append(f"{key} {what}")

    def number(self, key: str, value: Any, low: float, high: float, whole: bool = False) -> Any:
        kinds = (int,) if whole else (int, float)
        if isinstance(value, bool) or not isinstance(value, kinds) or not low <= value <= high:
            self.add(key, f"is {value!r}, not a {'whole ' if whole else ''}number from {low:g} to {high:g}")
        return value

    def optional_number(self, key: str, value: Any, low: float, high: float) -> Any:
        return None if value is None else self.number(key, value, low, high, whole=True)

    def flag(self, key: str, value: Any) -> Any:
        if not isinstance(value, bool):
            self.add(key, f"is {value!r}, not true or false")
        return value

    def line(self, key: str, value: Any, optional: bool = False) -> Any:
        if optional and value is None:
            return value
        problem = plain_problem(value, _LINE)
        if problem:
            self.add(key, f"{value!r} {problem}")
        return value

    def names(self, key: str, value: Any, allowed: tuple[str, ...] | None = None) -> list[str]:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.add(key, "is not a list of names")
            return []
        if allowed is not None:
            unknown = [v for v in value if v not in allowed]
            if unknown:
                self.add(key, f"names {', '.join(map(repr, unknown[:5]))}: not one of {', '.join(allowed)}")
        if len(set(value)) != len(value):
            self.add(key, "names one more than once")
        return value

    def keys(self, key: str, value: Any, known: set[str]) -> dict[str, Any]:
        if not isinstance(value, dict):
            self.add(key, "is not a mapping")
            return {}
        unknown = sorted(str(k) for k in value if k not in known)
        if unknown:
            self.add(key, f"has the unknown key(s) {', '.join(unknown)}")
        return value

    def raise_any(self, run_id: str) -> None:
        if self.found:
            raise InvalidInput(
                f"run {run_id}'s record {self.where} holds values no command line could give, so nothing "
                "ran:\n" + "\n".join(f"  {line}" for line in self.found[:20]),
                "start a new run (a ledger is the CLI's own record: do not edit it)",
            )


def refuse_hosts_not_in(hosts: list[str], inventory_hosts: Any, run_id: str, inventory: str) -> None:
    """InvalidInput when a host a run recorded is not in the inventory: it would reach a --limit file
    (a pattern of any host) without the inventory ever having named it."""
    missing = [host for host in hosts if host not in inventory_hosts]
    if missing:
        raise InvalidInput(
            f"run {run_id} names {len(missing)} host(s) that are not in the inventory {inventory}: "
            f"{', '.join(missing[:5])}",
            "put them back in the inventory, or start a new run for the hosts it has",
        )
