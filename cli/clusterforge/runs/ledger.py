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

from cfcore.inputs import plain_problem

from clusterforge.errors import InvalidInput

DEFAULT_LEDGER = Path(".clusterforge") / "runs"
RUN_FILE = "run.json"
STAGES_DIR = "stages"
ARTIFACTS_DIR = "artifacts"
_ID = re.compile(
    r"^\d{8}T\d{6}Z-[a-z]+(?:-[a-z]+)*-[0-9a-f]{4}$"
)  # <UTC>-<kind>-<4 hex>; kinds: bringup, add-node
MAX_LEDGER_FILE_BYTES = 64 * 1024 * 1024  # a stage record of 10,000 hosts with diffs stays far below


def write_json_atomic(path: Path, data: Any) -> None:
    """Replace `path` by `data` as JSON: readers see the old file or the new one, never a part."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with tmp.open("w", encoding="utf-8") as out:
        json.dump(data, out, indent=1, sort_keys=False, default=str)
        out.write("\n")
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)


def read_json(path: Path) -> dict[str, Any]:
    """A ledger file; InvalidInput naming it when it is missing, too large or not a JSON object."""
    try:
        if path.stat().st_size > MAX_LEDGER_FILE_BYTES:
            raise InvalidInput(f"{path} is larger than a ledger file can be", "check the ledger folder")
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InvalidInput(f"{path} does not exist", "list the runs with `clusterforge runs list`") from None
    except (OSError, ValueError) as err:
        raise InvalidInput(
            f"{path} is not a readable ledger file: {err}", "check the ledger folder"
        ) from None
    if not isinstance(data, dict):
        raise InvalidInput(f"{path} is not a ledger file (not a JSON object)", "check the ledger folder")
    return data


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
    if not isinstance(pid, int) or pid <= 0:
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
        return read_json(self.run_file)

    def write(self, record: dict[str, Any]) -> None:
        write_json_atomic(self.run_file, record)

    def stage_file(self, index: int, stage: str) -> Path:
        return self.path / STAGES_DIR / f"{index:02d}-{stage}.json"

    def read_stage(self, index: int, stage: str) -> dict[str, Any] | None:
        path = self.stage_file(index, stage)
        return read_json(path) if path.exists() else None

    def write_stage(self, index: int, record: dict[str, Any]) -> None:
        write_json_atomic(self.stage_file(index, record["stage"]), record)

    def stages(self) -> list[dict[str, Any]]:
        """Every stage record written so far, in stage order."""
        folder = self.path / STAGES_DIR
        return [read_json(p) for p in sorted(folder.glob("[0-9][0-9]-*.json"))] if folder.is_dir() else []

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
            self.root.mkdir(parents=True, exist_ok=True)
            for _ in range(10):
                path = self.root / new_run_id(kind)
                try:
                    path.mkdir()
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
        if (exact / RUN_FILE).is_file():
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
        """Every run, newest first."""
        if not self.root.is_dir():
            return []
        found = [Run(p) for p in self.root.iterdir() if _ID.match(p.name) and (p / RUN_FILE).is_file()]
        return sorted(found, key=lambda run: run.id, reverse=True)
