"""Trends over validation reports: what changed per node and check, which figures drift.

Input: validation reports (report.json dicts, docs/design.md) oldest first, each
with `run.id` (the history folder's name; `run.started` when absent). Output:
the trend dict of docs/design.md, "Scheduled inspection and trends":

    trend(reports) -> {"schema", "runs", "summary", "nodes": {host: {...}}, "notes"}

Transitions compare each check of the latest run with the same check in the
latest earlier run that has it. Drift judges the figures listed in METRICS,
each with the side that is worse, its unit, a noise floor (`min_delta`) and its
kind, by three rules: the node's own history (`own_baseline`), a counter
rising run after run (`monotonic_rise`) and the same-SKU fleet of the latest
run (`fleet`); the statistics are cfcore/robust.py's. Stdlib only.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from .robust import deviation, numeric

SCHEMA = "clusterforge.inspect.trend/1"
MIN_BASELINE = 3  # earlier runs with the figure before own-history drift is judged
MONOTONIC_RUNS = 3  # a counter higher in each of this many runs than in the one before
MIN_FLEET = 5  # same-SKU nodes with the figure before the fleet is compared
BAD = ("fail", "error")

NEW_FAILURE = "new_failure"
NEW_ERROR = "new_error"
RECOVERED = "recovered"
STILL_FAILING = "still_failing"


@dataclass(frozen=True)
class Figure:
    worse: str  # "higher" or "lower"
    unit: str
    min_delta: float  # a change smaller than this (in `unit`) is noise, never drift
    kind: str = "gauge"  # "counter": a count that only rises until a reset (monotonic rule applies)


def _counter(unit: str = "count") -> Figure:
    return Figure("higher", unit, 1, "counter")


METRICS: dict[str, Figure] = {
    "gpu.ecc_corrected_volatile_total": _counter("errors"),
    "gpu.ecc_uncorrected_volatile_total": _counter("errors"),
    "ppu.ecc_uncorrectable_volatile_total": _counter("errors"),
    "gpu.pcie_replay_total": _counter("replays"),
    "gpu.xid_count": _counter(),
    "gpu.xid_fatal_count": _counter(),
    "gpu.remapped_rows_pending_count": _counter(),
    "npu.health_not_ok_count": _counter(),
    "gpu.temperature_max_c": Figure("higher", "°C", 5),
    "npu.temperature_max_c": Figure("higher", "°C", 5),
    "ppu.temperature_max_c": Figure("higher", "°C", 5),
    "node.mount_probe_ms": Figure("higher", "ms", 50),
    "gpu.pcie_width_min": Figure("lower", "lanes", 1),
    "gpu.pcie_gen_max_min": Figure("lower", "PCIe gen", 1),
    "ib.rate_gbps_min": Figure("lower", "Gb/s", 1),
    "ib.ports_active": Figure("lower", "count", 1),
    "gpu.nvlink_active_links_min": Figure("lower", "count", 1),
    "npu.nic_links_up": Figure("lower", "count", 1),
}


# ----------------------------------------------------------------- reading ----


def run_id(report: dict) -> str:
    run = report.get("run") or {}
    return str(run.get("id") or run.get("started") or "?")


def nodes_of(report: dict) -> dict:
    """host -> node result of one report (entries without a host are ignored)."""
    return {
        str(node["host"]): node
        for node in report.get("nodes") or []
        if isinstance(node, dict) and node.get("host")
    }


def _check_status(node: dict | None, check_id: str) -> str | None:
    for check in (node or {}).get("checks") or []:
        if isinstance(check, dict) and check.get("id") == check_id:
            return check.get("status")
    return None


# ------------------------------------------------------------- transitions ----


def transition_kind(previous: str | None, latest: str) -> str | None:
    """The change from `previous` (None: no earlier run had the check) to `latest`; None: no change."""
    if latest in BAD:
        if previous in BAD:
            return STILL_FAILING
        return NEW_FAILURE if latest == "fail" else NEW_ERROR
    return RECOVERED if previous in BAD else None


def node_transitions(host: str, latest: dict, earlier: list[tuple[str, dict]]) -> list[dict]:
    """The latest checks of `host` that changed or stay bad; `earlier`: (run id, nodes), oldest first."""
    found = []
    for check in latest.get("checks") or []:
        if not isinstance(check, dict) or not check.get("id"):
            continue
        previous, previous_run = None, None
        for run, nodes in reversed(earlier):
            previous = _check_status(nodes.get(host), check["id"])
            if previous is not None:
                previous_run = run
                break
        kind = transition_kind(previous, str(check.get("status")))
        if kind:
            found.append(
                {
                    "check": check["id"],
                    "kind": kind,
                    "previous": previous,
                    "latest": check.get("status"),
                    "previous_run": previous_run,
                    "message": check.get("message") or "",
                }
            )
    return found


def new_failures(reports: list[dict]) -> dict[str, list[str]]:
    """host -> check ids that are new failures or new errors in the latest report."""
    runs = indexed(reports)
    out = {}
    for host, node in runs[-1][1].items():
        changes = node_transitions(host, node, runs[:-1])
        ids = [t["check"] for t in changes if t["kind"] in (NEW_FAILURE, NEW_ERROR)]
        if ids:
            out[host] = ids
    return out


def indexed(reports: list[dict]) -> list[tuple[str, dict]]:
    """(run id, host -> node result) of each report, read once."""
    return [(run_id(report), nodes_of(report)) for report in reports]


# ------------------------------------------------------------------- drift ----


def series_of(host: str, metric: str, runs: list[tuple[str, dict]]) -> list[tuple[str, float]]:
    """(run id, value) of `metric` on `host` in each run that has it, oldest first."""
    series = []
    for run, nodes in runs:
        value = numeric(((nodes.get(host) or {}).get("metrics") or {}).get(metric))
        if value is not None:
            series.append((run, value))
    return series


def _drift(metric: str, figure: Figure, rule: str, series, baseline: dict, message: str) -> dict:
    return {
        "metric": metric,
        "rule": rule,
        "worse": figure.worse,
        "unit": figure.unit,
        "latest": series[-1][1],
        "series": [{"run": run, "value": value} for run, value in series],
        "baseline": baseline,
        "message": message,
    }


def own_baseline(metric: str, figure: Figure, series: list[tuple[str, float]]) -> dict | None:
    """The latest value against the node's earlier ones (needs MIN_BASELINE of them)."""
    earlier, latest = [v for _, v in series[:-1]], series[-1][1]
    found = deviation(latest, earlier, "high" if figure.worse == "higher" else "low")
    if not found.deviates or abs(latest - found.median) < figure.min_delta:
        return None
    score = f"robust z {found.robust_z:+.1f}" if found.robust_z is not None else "earlier runs all equal"
    message = (
        f"{metric} {latest:g} {figure.unit}, {found.side} its own median {found.median:g} "
        f"of {len(earlier)} earlier run(s) ({score})"
    )
    baseline = {"median": found.median, "mad": found.mad, "n": len(earlier), "robust_z": found.robust_z}
    return _drift(metric, figure, "own_baseline", series, baseline, message)


def monotonic_rise(metric: str, figure: Figure, series: list[tuple[str, float]]) -> dict | None:
    """A counter higher in each of the last MONOTONIC_RUNS runs, by min_delta in all."""
    if figure.kind != "counter" or len(series) < MONOTONIC_RUNS:
        return None
    last = [v for _, v in series[-MONOTONIC_RUNS:]]
    rising = all(b > a for a, b in zip(last, last[1:]))
    if not rising or last[-1] - last[0] < figure.min_delta:
        return None
    message = f"{metric} rose in each of the last {MONOTONIC_RUNS} runs: " + " -> ".join(
        f"{v:g}" for v in last
    )
    baseline = {"rises": MONOTONIC_RUNS - 1, "from": last[0], "to": last[-1]}
    return _drift(metric, figure, "monotonic_rise", series, baseline, message)


def fleet_drift(metric: str, figure: Figure, series, peers: list[float], sku: str) -> dict | None:
    """The latest value against the same-SKU nodes of the latest run (peers include the node)."""
    latest = series[-1][1]
    found = deviation(latest, peers, "high" if figure.worse == "higher" else "low")
    if not found.deviates or abs(latest - found.median) < figure.min_delta:
        return None
    score = f"robust z {found.robust_z:+.1f}" if found.robust_z is not None else "fleet MAD 0"
    message = (
        f"{metric} {latest:g} {figure.unit}, {found.side} the {sku} fleet median {found.median:g} "
        f"({score}, {len(peers)} nodes)"
    )
    baseline = {"median": found.median, "mad": found.mad, "n": len(peers), "robust_z": found.robust_z}
    return _drift(metric, figure, "fleet", series, baseline, message)


def _fleet_values(latest: dict) -> dict[tuple[str, str], list[float]]:
    """(node_sku, metric) -> the values of the latest run's nodes."""
    values: dict[tuple[str, str], list[float]] = defaultdict(list)
    for node in latest.values():
        for metric, raw in (node.get("metrics") or {}).items():
            value = numeric(raw)
            if metric in METRICS and value is not None:
                values[(str(node.get("node_sku")), metric)].append(value)
    return values


def node_drifts(host: str, runs: list[tuple[str, dict]], fleet: dict, notes: list[str]) -> list[dict]:
    """Every drift of `host`'s figures; a note when its history is too short for own-baseline drift."""
    node = runs[-1][1][host]
    sku = str(node.get("node_sku"))
    found, shortest = [], None
    for metric in sorted(node.get("metrics") or {}):
        figure = METRICS.get(metric)
        if figure is None or numeric(node["metrics"][metric]) is None:
            continue
        series = series_of(host, metric, runs)
        if len(series) - 1 >= MIN_BASELINE:
            found.append(own_baseline(metric, figure, series))
        else:
            shortest = min(len(series) - 1, shortest if shortest is not None else len(series))
        found.append(monotonic_rise(metric, figure, series))
        peers = fleet.get((sku, metric), [])
        if len(peers) >= MIN_FLEET:
            found.append(fleet_drift(metric, figure, series, peers, sku))
    if shortest is not None:
        notes.append(
            f"{host}: history too short for own-baseline drift ({shortest} earlier run(s) "
            f"with its figures, {MIN_BASELINE} needed)"
        )
    return [d for d in found if d]


def _fleet_notes(fleet: dict) -> list[str]:
    small = sorted({sku for (sku, _), values in fleet.items() if len(values) < MIN_FLEET})
    return [
        f"{sku}: fewer than {MIN_FLEET} nodes with figures in the latest run: no fleet drift" for sku in small
    ]


# ------------------------------------------------------------------- trend ----


def trend(reports: list[dict]) -> dict:
    """The trend of `reports` (oldest first, at least one); see the module docstring."""
    if not reports:
        raise ValueError("trend needs at least one report")
    runs = indexed(reports)
    latest, earlier = runs[-1][1], runs[:-1]
    fleet = _fleet_values(latest)
    notes = _fleet_notes(fleet)
    if len(reports) == 1:
        notes.append("one run only: no transition or own-history drift to report yet")
    nodes = {}
    for host in sorted(latest):
        node = latest[host]
        nodes[host] = {
            "node_sku": node.get("node_sku"),
            "status": node.get("status"),
            "transitions": node_transitions(host, node, earlier),
            "drifts": node_drifts(host, runs, fleet, notes),
        }
    return {
        "schema": SCHEMA,
        "runs": [_run_entry(report) for report in reports],
        "summary": summarise(nodes, len(reports)),
        "nodes": nodes,
        "notes": notes,
    }


def _run_entry(report: dict) -> dict:
    run = report.get("run") or {}
    return {"id": run_id(report), "level": run.get("level"), "started": run.get("started")}


def summarise(nodes: dict, runs: int) -> dict:
    kinds: dict[str, int] = defaultdict(int)
    for node in nodes.values():
        for transition in node["transitions"]:
            kinds[transition["kind"]] += 1
    return {
        "runs": runs,
        "nodes": len(nodes),
        "new_failures": kinds[NEW_FAILURE],
        "new_errors": kinds[NEW_ERROR],
        "recoveries": kinds[RECOVERED],
        "still_failing": kinds[STILL_FAILING],
        "drifts": sum(len(n["drifts"]) for n in nodes.values()),
        "drifting_nodes": sum(1 for n in nodes.values() if n["drifts"]),
    }


def needs_attention(result: dict) -> bool:
    """A new failure, a new error or a drift: `inspect trend` exits 3."""
    summary = result["summary"]
    return bool(summary["new_failures"] or summary["new_errors"] or summary["drifts"])
