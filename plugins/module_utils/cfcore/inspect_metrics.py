"""The controller's textfile of scheduled inspection (docs/design.md, "Controller metrics").

    render(report, trend, record) -> str     the text exposition of one run
    write(directory, report, trend, record) -> path | None
                                             <directory>/clusterforge_inspect_<level>.prom

The families, label escaping and value formats are those of
cfcore/validation_metrics.py; the file is written atomically (write_atomic).
"""

from __future__ import annotations

import os

from .files import write_atomic
from .validation_metrics import _epoch, _sample  # one exposition format for every textfile

FILE_PATTERN = "clusterforge_inspect_{level}.prom"
FILE_MODE = 0o644

LAST_RUN = "clusterforge_inspect_last_run_timestamp_seconds"
DURATION = "clusterforge_inspect_last_run_duration_seconds"
EXIT_CODE = "clusterforge_inspect_last_run_exit_code"
NODE_STATUS = "clusterforge_inspect_node_status"
CHECK_STATUS = "clusterforge_inspect_check_status"
NEW_FAILURES = "clusterforge_inspect_new_failures"
DRIFTS = "clusterforge_inspect_drifts"

HELP = {
    LAST_RUN: "Unix time the last scheduled inspection run of this level started.",
    DURATION: "Seconds the last scheduled inspection run of this level took.",
    EXIT_CODE: "Exit code of the last inspection run (0 healthy, 3 unhealthy nodes).",
    NODE_STATUS: "1 for each node's status in the last inspection run.",
    CHECK_STATUS: "1 for each check of a node that is neither pass nor skip in the last run.",
    NEW_FAILURES: "Checks of the node that newly fail or error in the last run.",
    DRIFTS: "Figures of the node drifting over the recent runs (clusterforge inspect trend).",
}
METRIC_NAMES = tuple(HELP)


def _family(name: str, samples: list) -> list:
    if not samples:
        return []
    return [f"# HELP {name} {HELP[name]}", f"# TYPE {name} gauge", *samples]


def render(report: dict, trend: dict, record: dict) -> str:
    """One run as exposition lines: `report` its report.json, `trend` the trend ending with it,
    `record` its inspect.json (level, started, duration_s, exit_code, new_failures)."""
    lv = ("level", str(record["level"]))
    nodes = [n for n in report.get("nodes") or [] if isinstance(n, dict) and n.get("host")]
    nodes.sort(key=lambda n: str(n["host"]))
    lines = _family(LAST_RUN, [_sample(LAST_RUN, [lv], _epoch(record.get("started")) or 0)])
    lines += _family(DURATION, [_sample(DURATION, [lv], record.get("duration_s") or 0)])
    lines += _family(EXIT_CODE, [_sample(EXIT_CODE, [lv], record.get("exit_code") or 0)])
    lines += _family(
        NODE_STATUS,
        [
            _sample(NODE_STATUS, [("node", n["host"]), ("status", n.get("status") or "error"), lv], 1)
            for n in nodes
        ],
    )
    checks = [
        _sample(CHECK_STATUS, [("node", n["host"]), ("check", c["id"]), ("status", c["status"]), lv], 1)
        for n in nodes
        for c in n.get("checks") or []
        if isinstance(c, dict) and c.get("id") and c.get("status") not in ("pass", "skip")
    ]
    lines += _family(CHECK_STATUS, checks)
    new = record.get("new_failures") or {}
    lines += _family(
        NEW_FAILURES,
        [_sample(NEW_FAILURES, [("node", n["host"]), lv], len(new.get(n["host"], []))) for n in nodes],
    )
    drifts = (trend or {}).get("nodes") or {}
    counts = [
        _sample(DRIFTS, [("node", n["host"]), lv], len((drifts.get(n["host"]) or {}).get("drifts") or []))
        for n in nodes
    ]
    lines += _family(DRIFTS, counts)
    return "\n".join(lines) + "\n"


def write(directory, report: dict, trend: dict, record: dict):
    """Write the file atomically (0644); its path, or None when `directory` is unset. Raises OSError
    when the directory is missing or not writable (the caller names the variable)."""
    if not directory:
        return None
    path = os.path.join(directory, FILE_PATTERN.format(level=record["level"]))
    write_atomic(path, render(report, trend, record).encode("utf-8"), FILE_MODE)
    return path
