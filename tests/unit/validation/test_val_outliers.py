import pytest
from clusterforge.validation.outliers import (
    MIN_FLEET,
    apply_outliers,
    bad_direction,
    find_outliers,
    outlier_check,
)
from valfactory import node


def fleet(values, metric="gpu.temperature_max_c", sku="hgx-h100-8gpu"):
    return [node(f"n{i:02d}", sku=sku, metrics={metric: v}) for i, v in enumerate(values)]


def test_hot_node_is_flagged_with_robust_z():
    results = fleet([40, 41, 42, 41, 40, 43, 39, 41, 78])
    report = find_outliers(results)
    assert [(e["host"], e["metric"], e["side"]) for e in report.flagged] == [
        ("n08", "gpu.temperature_max_c", "above")
    ]
    entry = report.flagged[0]
    assert entry["median"] == 41
    assert entry["mad"] == 1
    assert entry["robust_z"] == pytest.approx(0.6745 * 37 / 1, abs=0.01)
    assert entry["fleet_size"] == 9


def test_cool_node_is_not_flagged_because_only_hot_hurts():
    assert find_outliers(fleet([40, 41, 42, 41, 40, 43, 39, 41, 5])).flagged == []


def test_slow_link_is_flagged_below_when_everyone_else_is_equal():
    # MAD is 0: the relative band decides.
    results = fleet([400, 400, 400, 400, 400, 200], metric="ib.rate_gbps_min")
    report = find_outliers(results)
    assert [(e["host"], e["side"], e["robust_z"]) for e in report.flagged] == [("n05", "below", None)]


def test_values_within_tolerance_of_an_equal_fleet_are_not_flagged():
    assert find_outliers(fleet([400, 400, 400, 400, 400, 395], metric="nvlink.bw_gbps")).flagged == []


def test_an_error_counter_that_leaves_zero_is_flagged():
    report = find_outliers(fleet([0, 0, 0, 0, 0, 0, 3], metric="ib.symbol_errors"))
    assert [e["host"] for e in report.flagged] == ["n06"]


def test_small_sku_groups_are_not_analysed_and_say_so():
    report = find_outliers(fleet([40, 41, 99], sku="atlas-800t-a2"))
    assert report.flagged == []
    assert report.notes == [
        f"atlas-800t-a2: 3 node(s) with figures, fewer than {MIN_FLEET}: no fleet outlier analysis"
    ]


def test_skus_are_compared_separately():
    results = fleet([40] * 6, sku="hgx-h100-8gpu") + fleet([70] * 6, sku="hgx-h200-8gpu")
    for index, result in enumerate(results):
        result["host"] = f"h{index}"
    assert find_outliers(results).flagged == []


def test_non_numeric_and_boolean_metrics_are_ignored():
    results = fleet(["hot", True, None, float("nan"), 41, 40])
    report = find_outliers(results)
    assert report.flagged == []
    assert any("reported by 2 node(s)" in note for note in report.notes)


def test_direction_from_metric_names():
    assert bad_direction("gpu.temperature_max_c") == "high"
    assert bad_direction("ib.symbol_error_rate") == "high"
    assert bad_direction("gpu.pcie_width_min") == "low"
    assert bad_direction("nccl.busbw_gbps") == "low"
    assert bad_direction("npu.aicore_usage_pct") == "both"
    # The figures node_validate reports today.
    for metric in ("gpu.ecc_uncorrected_volatile_total", "gpu.xid_fatal_count", "npu.health_not_ok_count"):
        assert bad_direction(metric) == "high", metric
    for metric in ("gpu.count", "ib.ports_active", "npu.nic_links_up", "gpu.nvlink_active_links_min"):
        assert bad_direction(metric) == "low", metric
    assert bad_direction("gpu.power_draw_max_w") == "high"


def test_apply_adds_warn_checks_and_never_improves_a_status():
    results = fleet([40, 41, 42, 41, 40, 43, 39, 41, 78])
    results[8]["checks"][0]["status"] = "fail"
    results[8]["status"] = "fail"
    results.append(node("n99", metrics={"gpu.temperature_max_c": 90}))
    report = find_outliers(results)
    apply_outliers(results, report)
    flagged_hosts = {e["host"] for e in report.flagged}
    assert flagged_hosts == {"n08", "n99"}
    assert results[8]["status"] == "fail"
    assert results[9]["status"] == "warn"
    added = results[9]["checks"][-1]
    assert added["id"] == "fleet.outlier.gpu.temperature_max_c"
    assert added["status"] == "warn"
    assert "far above the hgx-h100-8gpu fleet median 41" in added["message"]
    assert "airflow" in added["remedy"]
    assert all(r["status"] == "pass" for r in results[:8])


def test_outlier_check_message_for_equal_fleet():
    entry = {
        "host": "n5",
        "node_sku": "hgx-h100-8gpu",
        "metric": "gpu.pcie_width_min",
        "value": 8.0,
        "median": 16.0,
        "mad": 0.0,
        "robust_z": None,
        "side": "below",
        "fleet_size": 12,
    }
    made = outlier_check(entry)
    assert made["message"] == (
        "gpu.pcie_width_min = 8 is far below the hgx-h100-8gpu fleet median 16 (fleet MAD 0, 12 nodes)"
    )
    assert "reseat" in made["remedy"]
