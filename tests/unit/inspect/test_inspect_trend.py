"""cfcore/trend.py: transitions per node and check, drift against the node's history and its fleet."""

from __future__ import annotations

import pytest
from cfcore.robust import deviation
from cfcore.trend import METRICS, needs_attention, new_failures, transition_kind, trend


def check(check_id: str, status: str = "pass") -> dict:
    return {
        "id": check_id,
        "status": status,
        "message": f"{check_id} {status}",
        "evidence": None,
        "remedy": None,
    }


def node(host: str, checks=None, metrics=None, sku: str = "hgx-h100-8gpu") -> dict:
    checks = checks if checks is not None else [check("gpu.count")]
    bad = [c["status"] for c in checks if c["status"] in ("fail", "error")]
    return {
        "host": host,
        "node_sku": sku,
        "status": bad[0] if bad else "pass",
        "checks": checks,
        "metrics": metrics or {},
    }


def report(run: str, *nodes: dict, level: str = "quick") -> dict:
    return {"run": {"id": run, "level": level, "started": "2026-12-01T03:15:00Z"}, "nodes": list(nodes)}


def series(host: str, metric: str, values: list, **others) -> list[dict]:
    """One report per value of `metric` on `host` (others: constant figures of the same node)."""
    return [report(f"r{i}", node(host, metrics={metric: v, **others})) for i, v in enumerate(values)]


@pytest.mark.parametrize(
    ("previous", "latest", "kind"),
    [
        (None, "fail", "new_failure"),
        ("pass", "fail", "new_failure"),
        ("warn", "error", "new_error"),
        ("fail", "fail", "still_failing"),
        ("error", "fail", "still_failing"),
        ("fail", "pass", "recovered"),
        ("error", "skip", "recovered"),
        ("pass", "warn", None),
        (None, "pass", None),
    ],
)
def test_transition_kinds(previous, latest, kind):
    assert transition_kind(previous, latest) == kind


def test_transitions_name_the_check_and_the_run_compared():
    runs = [
        report("r0", node("a", [check("gpu.xid"), check("node.mounts", "fail")])),
        report(
            "r1", node("a", [check("gpu.xid", "fail"), check("node.mounts")]), node("b", [check("gpu.xid")])
        ),
    ]
    result = trend(runs)
    changes = {t["check"]: t for t in result["nodes"]["a"]["transitions"]}
    assert changes["gpu.xid"]["kind"] == "new_failure" and changes["gpu.xid"]["previous_run"] == "r0"
    assert changes["node.mounts"]["kind"] == "recovered"
    assert result["nodes"]["b"]["transitions"] == []
    assert result["summary"]["new_failures"] == 1 and result["summary"]["recoveries"] == 1
    assert needs_attention(result)


def test_a_check_only_full_runs_have_is_compared_with_the_last_full_run():
    runs = [
        report("r0", node("a", [check("gpu.dcgm_diag", "fail")]), level="full"),
        report("r1", node("a", [check("gpu.count")])),
        report("r2", node("a", [check("gpu.dcgm_diag", "fail")]), level="full"),
    ]
    (change,) = trend(runs)["nodes"]["a"]["transitions"]
    assert change["kind"] == "still_failing" and change["previous_run"] == "r0"
    assert new_failures(runs) == {}


def test_new_failures_lists_only_what_is_new():
    runs = [
        report("r0", node("a", [check("gpu.xid", "fail")]), node("b", [check("gpu.xid")])),
        report("r1", node("a", [check("gpu.xid", "fail")]), node("b", [check("gpu.xid", "fail")]), node("c")),
    ]
    assert new_failures(runs) == {"b": ["gpu.xid"]}


def test_a_counter_rising_against_its_own_flat_history_drifts():
    drifts = trend(series("a", "gpu.pcie_replay_total", [0, 0, 0, 180]))["nodes"]["a"]["drifts"]
    (drift,) = drifts
    assert drift["rule"] == "own_baseline" and drift["worse"] == "higher" and drift["unit"] == "replays"
    assert drift["baseline"] == {"median": 0, "mad": 0, "n": 3, "robust_z": None}
    assert [p["value"] for p in drift["series"]] == [0, 0, 0, 180]
    assert drift["latest"] == 180 and "own median 0" in drift["message"]


def test_a_counter_rising_in_each_run_drifts_before_the_history_is_long():
    result = trend(series("a", "gpu.ecc_corrected_volatile_total", [0, 3, 12]))
    (drift,) = result["nodes"]["a"]["drifts"]
    assert drift["rule"] == "monotonic_rise" and drift["baseline"] == {"rises": 2, "from": 0, "to": 12}
    assert any("history too short" in note and note.startswith("a:") for note in result["notes"])


def test_too_short_a_history_says_so_instead_of_flagging():
    result = trend(series("a", "gpu.temperature_max_c", [40, 80]))
    assert result["nodes"]["a"]["drifts"] == []
    assert "a: history too short for own-baseline drift (1 earlier run(s)" in result["notes"][-1]
    assert not needs_attention(result)


@pytest.mark.parametrize(
    ("metric", "values", "drifts"),
    [
        ("gpu.pcie_width_min", [16, 16, 16, 8], True),  # lower is worse
        ("gpu.pcie_width_min", [8, 8, 8, 16], False),  # a wider link is no problem
        ("gpu.temperature_max_c", [40, 41, 40, 39], False),  # cooler is no problem
        ("gpu.temperature_max_c", [40, 41, 40, 60], True),
        ("gpu.temperature_max_c", [40, 40, 40, 43], False),  # under the 5 °C noise floor
        ("node.mount_probe_ms", [1.0, 1.2, 0.9, 9.0], False),  # 8 ms more: noise on a healthy mount
        ("node.mount_probe_ms", [1.0, 1.2, 0.9, 400.0], True),
        ("ib.rate_gbps_min", [400, 400, 400, 200], True),
        ("gpu.power_draw_max_w", [100, 100, 100, 700], False),  # not a trended figure
    ],
)
def test_direction_and_noise_floor(metric, values, drifts):
    found = trend(series("a", metric, values))["nodes"]["a"]["drifts"]
    assert bool(found) is drifts, found


def test_the_fleet_rule_compares_the_latest_run_of_the_same_sku():
    healthy = [node(f"n{i}", metrics={"gpu.temperature_max_c": 40 + i % 2}) for i in range(6)]
    hot = node("hot", metrics={"gpu.temperature_max_c": 70})
    other_sku = node("cpu", metrics={"gpu.temperature_max_c": 90}, sku="cpu-generic")
    result = trend([report("r0", *healthy, hot, other_sku)])
    (drift,) = result["nodes"]["hot"]["drifts"]
    assert drift["rule"] == "fleet" and drift["baseline"]["n"] == 7 and drift["baseline"]["median"] == 41
    assert all(not result["nodes"][n["host"]]["drifts"] for n in healthy)
    assert result["nodes"]["cpu"]["drifts"] == []
    assert any(note.startswith("cpu-generic: fewer than 5 nodes") for note in result["notes"])


def test_every_trended_metric_says_which_side_is_worse():
    for figure in METRICS.values():
        assert figure.worse in ("higher", "lower") and figure.min_delta > 0
        assert figure.kind in ("counter", "gauge")
        assert figure.kind == "gauge" or figure.worse == "higher"


def test_robust_deviation_only_flags_the_bad_side():
    assert deviation(10, [1, 1, 1], "high").deviates
    assert not deviation(0, [1, 1, 1], "high").deviates
    assert deviation(0, [1, 1, 1], "both").deviates


def test_no_report_is_a_bug_not_a_trend():
    with pytest.raises(ValueError, match="at least one report"):
        trend([])


def test_a_number_no_float_holds_is_no_figure():
    from cfcore.robust import numeric

    assert numeric(10**400) is None and numeric(-(10**400)) is None  # was OverflowError
    assert numeric(7) == 7.0 and numeric(True) is None and numeric(float("nan")) is None
