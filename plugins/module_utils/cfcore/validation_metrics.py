"""Validation results as Prometheus textfile-collector metrics (docs/design.md, Monitoring).

One implementation, used by `node_validate` (parameter `metrics_textfile_dir`),
the health check (`metrics_textfile_dir` of its parameters file) and the
`exporters` role (filter `cf_expected_mounts_metrics`):

    render(node_result) -> str          the text exposition format, HELP/TYPE lines
    write(directory, node_result) -> path | None
                                        <directory>/clusterforge_validation_<level>.prom
    incomplete_reason(node_result, check_mode=False, only_checks=None) -> str | None
    expected_mounts(required_mounts) -> str
                                        clusterforge_expected_mount{mountpoint, fstype} 1

Gauges (every series of a node result has `level`, quick or full, so the
quick and the full file never hold the same series):

    clusterforge_validation_check_status{check, area, status, level} 1   one per check
    clusterforge_validation_status{status, level} 1                      the node's overall status
    clusterforge_validation_last_run_timestamp_seconds{level}            when the run started (collected_at)
    clusterforge_validation_duration_seconds{level}                      duration_s
    clusterforge_validation_accelerators{vendor, level}                  facts.accelerator_count
                                                                          (absent on CPU nodes)
    clusterforge_validation_metric{metric, level}                        each numeric value of
                                                                          node_result.metrics

The node's identity (node, rack, node_sku) is not written here: it comes from
the scrape target's labels (cfcore/monitoring_targets.py).

A run is *complete live* (the only kind whose metrics are written) when it ran
on the node's own tools (`source` live, not a capture: a capture describes
another node at another time), with every check chosen (`only_checks` null: a
fabric-only run would report every other check as `skip` and hide a failing
GPU until the next full run), and not in check mode (Ansible's promise that
nothing on the node changes). `skip_checks` is the host's plan and does not
make a run incomplete. `incomplete_reason` says which of these a run is not.

`write` is atomic: a temporary file in the same directory (a dot name ending in
`.tmp`, which node_exporter's collector ignores: it reads `*.prom` only), fsync,
`os.replace`, mode 0644, so a scrape never sees half a file. The directory is
not created (node_exporter's role makes it): when it is missing `write` returns
None. Stdlib only, Python 3.8-safe: it runs on the nodes.
"""

from __future__ import annotations

import calendar
import math
import os
import re
import time

from .expected import normalize_mounts
from .files import write_atomic

LEVELS = ("quick", "full")
FILE_PATTERN = "clusterforge_validation_{level}.prom"
FILE_MODE = 0o644

CHECK_STATUS = "clusterforge_validation_check_status"
STATUS = "clusterforge_validation_status"
LAST_RUN = "clusterforge_validation_last_run_timestamp_seconds"
DURATION = "clusterforge_validation_duration_seconds"
ACCELERATORS = "clusterforge_validation_accelerators"
METRIC = "clusterforge_validation_metric"
EXPECTED_MOUNT = "clusterforge_expected_mount"

HELP = {
    CHECK_STATUS: "1 for each validation check with its current status (pass, warn, fail, error, skip).",
    STATUS: "1 for the node's overall validation status (fail > error > warn > pass; skip: nothing judged).",
    LAST_RUN: "Unix time the node's last complete validation run started.",
    DURATION: "Seconds the node's last complete validation run took.",
    ACCELERATORS: "Accelerators the last validation found on the node (vendor from the SKU).",
    METRIC: "A numeric figure of the node's last validation (metric: its dotted name, e.g. gpu.count).",
    EXPECTED_MOUNT: "1 for each mount point the node must have (fstype any: presence only).",
}
# Every metric name this module writes; dashboards and alert rules are checked against it.
METRIC_NAMES = (CHECK_STATUS, STATUS, LAST_RUN, DURATION, ACCELERATORS, METRIC, EXPECTED_MOUNT)

_TIMESTAMP_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


# ------------------------------------------------------------------ format ----


def escape_label_value(value) -> str:
    r"""A label value as the text exposition format writes it: `\` -> `\\`, `"` -> `\"`, newline -> `\n`."""
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def format_value(value) -> str:
    """A sample value: ints as such, floats round-tripping, NaN and infinities as Prometheus spells them."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    number = float(value)
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "+Inf" if number > 0 else "-Inf"
    if number.is_integer() and abs(number) < 1e15:
        return str(int(number))
    return repr(number)


def _sample(name: str, labels: list, value) -> str:
    for key, _ in labels:
        if not _LABEL_NAME.match(key):  # a bug of this module, never of the input
            raise ValueError(f"bad label name {key!r}")
    inside = ",".join(f'{key}="{escape_label_value(val)}"' for key, val in labels)
    return f"{name}{{{inside}}} {format_value(value)}" if inside else f"{name} {format_value(value)}"


def _family(name: str, samples: list) -> list:
    """HELP, TYPE and the samples of one gauge; nothing at all for a family without samples."""
    if not samples:
        return []
    return [f"# HELP {name} {HELP[name]}", f"# TYPE {name} gauge", *samples]


def _numeric(value) -> bool:
    """A number worth a series: int or float, not a bool (a flag is no figure)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _epoch(stamp):
    """collected_at ("2026-11-30T12:00:00Z") as Unix seconds, None when absent or not that shape."""
    if not isinstance(stamp, str):
        return None
    try:
        return calendar.timegm(time.strptime(stamp, _TIMESTAMP_FORMAT))
    except ValueError:
        return None


# ------------------------------------------------------------------ render ----


def render(node_result: dict, now: float | None = None) -> str:
    """The node result as text exposition lines, families and series in a fixed order, ending in a newline.

    `now` (Unix seconds, default the clock) stands in for `collected_at` where the result has none.
    """
    if not isinstance(node_result, dict):
        raise ValueError(f"node_result must be a mapping, got {type(node_result).__name__}")
    level = str(node_result.get("level") or "quick")
    lv = ("level", level)
    checks = []
    for check in node_result.get("checks") or []:
        check_id = check.get("id") if isinstance(check, dict) else None
        if not check_id:
            continue
        check_id = str(check_id)
        checks.append(
            (
                check_id,
                _sample(
                    CHECK_STATUS,
                    [
                        ("check", check_id),
                        ("area", check_id.split(".", 1)[0]),
                        ("status", str(check.get("status") or "error")),
                        lv,
                    ],
                    1,
                ),
            )
        )
    lines = _family(CHECK_STATUS, [line for _, line in sorted(checks)])
    lines += _family(
        STATUS, [_sample(STATUS, [("status", str(node_result.get("status") or "error")), lv], 1)]
    )
    started = _epoch(node_result.get("collected_at"))
    if started is None:
        started = time.time() if now is None else now
    lines += _family(LAST_RUN, [_sample(LAST_RUN, [lv], started)])
    duration = node_result.get("duration_s")
    lines += _family(DURATION, [_sample(DURATION, [lv], duration)] if _numeric(duration) else [])
    facts = node_result.get("facts") or {}
    vendor, count = facts.get("vendor"), facts.get("accelerator_count")
    accelerators = (
        [_sample(ACCELERATORS, [("vendor", vendor), lv], count)] if vendor and _numeric(count) else []
    )
    lines += _family(ACCELERATORS, accelerators)
    metrics = node_result.get("metrics") or {}
    figures = [
        _sample(METRIC, [("metric", str(key)), lv], metrics[key])
        for key in sorted(metrics, key=str)
        if _numeric(metrics[key])
    ]
    lines += _family(METRIC, figures)
    return "\n".join(lines) + "\n"


def file_name(level: str) -> str:
    if level not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}, got {level!r}")
    return FILE_PATTERN.format(level=level)


def incomplete_reason(node_result: dict, check_mode: bool = False, only_checks=None):
    """Why this run's metrics must not be written (see the module docstring); None: a complete live run."""
    if check_mode:
        return "check mode: the metrics file is not written"
    if only_checks:
        return "only_checks chose part of the checks: a partial run does not replace the node's metrics"
    source = (node_result or {}).get("source")
    kind = source.get("kind") if isinstance(source, dict) else source
    if kind != "live":
        where = source.get("path") if isinstance(source, dict) else None
        shown = f"capture:{where}" if kind == "capture" and where else kind
        return (
            f"source is {shown or 'not recorded'}, not the node's live tools: metrics describe this node now"
        )
    return None


# ------------------------------------------------------------------- write ----


def write(directory, node_result: dict, now: float | None = None):
    """Write `<directory>/clusterforge_validation_<level>.prom` atomically (0644); the path, or None
    when `directory` is unset or does not exist. Raises OSError when it exists and cannot be written."""
    name = file_name(str((node_result or {}).get("level") or "quick"))
    if not directory or not os.path.isdir(directory):
        return None
    text = render(node_result, now)
    path = os.path.join(directory, name)
    write_atomic(path, text.encode("utf-8"), FILE_MODE)
    return path


# --------------------------------------------------------- expected mounts ----


def expected_mounts(required_mounts) -> str:
    """`clusterforge_expected_mount{mountpoint, fstype} 1` for each required mount, sorted by mount point.

    `required_mounts` is `validate_expected.required_mounts`: paths (fstype `any`, presence only) or
    {path, fstype, writable, unit} mappings, checked by cfcore.expected (InvalidExpectation names the
    variable). The exposition text with HELP/TYPE, or "" when the host must have no mount.
    """
    by_path = {}
    for mount in normalize_mounts(required_mounts if required_mounts is not None else []):
        by_path[mount["path"]] = mount["fstype"] or "any"
    samples = [
        _sample(EXPECTED_MOUNT, [("mountpoint", path), ("fstype", fstype)], 1)
        for path, fstype in sorted(by_path.items())
    ]
    lines = _family(EXPECTED_MOUNT, samples)
    return "\n".join(lines) + "\n" if lines else ""
