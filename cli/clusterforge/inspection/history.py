"""The inspection history: one folder per run, `<UTC stamp>-<level>/`, written whole or not at all.

A run is built in `.tmp-<id>/` and renamed into place once complete, so a
reader never sees half a run. Only folders named like a run are read or pruned.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from cfcore.files import UnsafeFile, read_json

from clusterforge.errors import InvalidInput

RUN_NAME = re.compile(r"^(?P<stamp>\d{8}T\d{6}Z)-(?P<level>quick|full)$")
STAMP_FORMAT = "%Y%m%dT%H%M%SZ"
TMP_PREFIX = ".tmp-"
STALE_TMP_S = 24 * 3600
MAX_REPORT_BYTES = 512 * 1024 * 1024  # a 10,000-node report.json is tens of MB
REPORT = "report.json"
RUN_RECORD = "inspect.json"


def new_run_id(level: str, now: datetime | None = None) -> str:
    return f"{(now or datetime.now(UTC)).strftime(STAMP_FORMAT)}-{level}"


def run_time(name: str) -> datetime:
    return datetime.strptime(RUN_NAME.match(name)["stamp"], STAMP_FORMAT).replace(tzinfo=UTC)


def run_dirs(history: Path) -> list[Path]:
    """The complete runs of `history`, oldest first (by name: the UTC stamp)."""
    if not history.is_dir():
        return []
    return sorted(p for p in history.iterdir() if p.is_dir() and RUN_NAME.match(p.name))


def staging_dir(history: Path, run_id: str) -> Path:
    """A fresh `.tmp-<id>/` in `history` (created with its parents), after removing stale ones."""
    history.mkdir(parents=True, exist_ok=True)
    for old in history.glob(TMP_PREFIX + "*"):
        if old.is_dir() and time.time() - old.stat().st_mtime > STALE_TMP_S:
            shutil.rmtree(old, ignore_errors=True)
    staging = history / (TMP_PREFIX + run_id)
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    return staging


def publish(staging: Path, history: Path, run_id: str) -> Path:
    """Rename the complete run into place (atomic on one filesystem)."""
    final = history / run_id
    staging.rename(final)
    return final


def write_record(folder: Path, record: dict[str, Any]) -> None:
    from cfcore.files import write_atomic

    write_atomic(str(folder / RUN_RECORD), (json.dumps(record, indent=2) + "\n").encode())


def read_report(folder: Path) -> dict[str, Any]:
    """The run's report.json with `run.id` set to the folder's name; InvalidInput naming the file."""
    path = folder / REPORT
    fix = f"remove the broken run folder {folder} (or restore its {REPORT}); the other runs stay usable"
    try:
        data = read_json(str(path), MAX_REPORT_BYTES)
    except (UnsafeFile, OSError, ValueError) as err:  # ValueError: not UTF-8 JSON, or nested too deep
        raise InvalidInput(f"cannot read {path}: {err}", fix) from None
    if not isinstance(data, dict) or not isinstance(data.get("nodes"), list):
        raise InvalidInput(f"{path} is not a validation report (no 'nodes' list)", fix)
    if not isinstance(data.get("run") or {}, dict):
        raise InvalidInput(f"{path}: 'run' is a {type(data['run']).__name__}, not a mapping", fix)
    for index, node in enumerate(data["nodes"]):
        problem = _node_problem(node) if isinstance(node, dict) else None
        if problem:
            host = node.get("host")
            raise InvalidInput(f"{path}: node {host if isinstance(host, str) else index}: {problem}", fix)
    data["run"] = {**(data.get("run") or {}), "id": folder.name}
    return data


def _node_problem(node: dict[str, Any]) -> str | None:
    """What makes one node result unreadable for the trend (docs/design.md, the node result), or None:
    `metrics` a mapping of figures (a number a float cannot hold is no figure), `checks` a list
    whose entries' id, status and message are text."""
    metrics, checks = node.get("metrics"), node.get("checks")
    if metrics is not None and not isinstance(metrics, dict):
        return f"'metrics' is a {type(metrics).__name__}, not a mapping of figures"
    if checks is not None and not isinstance(checks, list):
        return f"'checks' is a {type(checks).__name__}, not a list"
    for check in checks or []:
        for key in ("id", "status", "message"):
            value = check.get(key) if isinstance(check, dict) else None
            if value is not None and not isinstance(value, str):
                return f"a check's {key!r} is a {type(value).__name__}, not text"
    for name, value in (metrics or {}).items():
        if isinstance(value, int) and not isinstance(value, bool):
            try:
                float(value)
            except OverflowError:
                return f"metric {name} is out of range ({len(str(value))} digits)"
    return None


def load_reports(history: Path, last: int) -> list[dict[str, Any]]:
    """The reports of the last `last` runs, oldest first; InvalidInput for a missing or empty history."""
    if not history.is_dir():
        raise InvalidInput(
            f"--history {history} is not a folder",
            "pass the history folder `clusterforge inspect run --history` writes "
            "(inspect_history_dir, default /var/lib/clusterforge/inspect)",
        )
    folders = run_dirs(history)[-last:]
    if not folders:
        raise InvalidInput(
            f"--history {history} holds no run (no folder named <YYYYmmddTHHMMSSZ>-<quick|full>)",
            "run `clusterforge inspect run -i INV --history DIR` first, or pass the right folder",
        )
    return [read_report(folder) for folder in folders]


def readable_reports(history: Path, last: int, warn) -> list[dict[str, Any]]:
    """The reports of the last `last` runs that can be read, oldest first; `warn(message)` for each
    that cannot (a scheduled run must not lose its own result over an older broken one)."""
    found = []
    for folder in run_dirs(history)[-last:] if last > 0 else []:
        try:
            found.append(read_report(folder))
        except InvalidInput as err:
            warn(f"{err.message} (left out of the comparison)")
    return found


def prune(history: Path, keep_runs: int, keep_days: int, now: datetime | None = None) -> list[Path]:
    """Remove runs beyond the newest `keep_runs` or older than `keep_days` (0: no such limit);
    the newest run always stays. Returns the removed folders."""
    folders = run_dirs(history)
    if not folders:
        return []
    now = now or datetime.now(UTC)
    doomed = set(folders[:-keep_runs]) if keep_runs > 0 else set()
    if keep_days > 0:
        cutoff = now - timedelta(days=keep_days)
        doomed |= {f for f in folders if run_time(f.name) < cutoff}
    doomed.discard(folders[-1])
    for folder in sorted(doomed):
        shutil.rmtree(folder)
    return sorted(doomed)
