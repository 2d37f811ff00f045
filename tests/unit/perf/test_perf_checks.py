"""perf.* checks (cfcore/checks/perf.py): parsed benchmark facts against the expected figures.

Facts come from the parsers run on tests/fixtures/perf (numbers made up in the tools' formats) or
are written inline for the edge cases; expectations from the built-in data."""

from __future__ import annotations

import ast
import copy
import json
from pathlib import Path

import pytest
from cfcore.checks import perf
from cfcore.checks.perf import ToolError
from cfcore.parsers import parse
from cfcore.perf_expectations import expectations_for
from cfcore.results import STATUSES

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "perf"
H100 = expectations_for("hgx-h100-8gpu")
LOSS = expectations_for("atlas-800t-a2")["hccn_ping_loss_pct_max"]
SITE_HCCL = {"typical": 170, "warn": 150, "floor": 120, "source": "measured on npu-r1-n01..n04, 2026-05"}
SITE_WRITE = {"typical": 1100, "warn": 900, "floor": 600, "source": "measured, 2026-05"}
SITE_READ = {"typical": 1500, "warn": 1200, "floor": 800, "source": "measured, 2026-05"}


def facts(kind: str, name: str, **extra) -> dict:
    with open(FIXTURES / name, encoding="utf-8", newline="") as handle:
        found = parse(kind, handle.read())
    found.update(extra)
    return found


def assert_shape(check: dict, check_id: str, status: str) -> None:
    """The node-result shape of docs/design.md; a non-pass names what to do and what decided it."""
    assert set(check) == {"id", "status", "message", "evidence", "remedy"}
    assert (check["id"], check["status"]) == (check_id, status), check["message"]
    assert check["message"] and check["evidence"]["command"] and check["evidence"]["lines"]
    if status == "pass":
        assert check["remedy"] is None
    else:
        assert check["remedy"], f"{check_id} {status}: no remedy"


def nccl(busbw_oop: float, busbw_ip: float | None = None, size: int = 8 << 30, **extra) -> dict:
    """nccl-tests facts with one row at `size`."""
    side = {"time_us": 1.0, "algbw_gbps": 1.0, "busbw_gbps": busbw_oop, "errors": 0}
    in_place = None if busbw_ip is None else {**side, "busbw_gbps": busbw_ip}
    row = {"size_bytes": size, "count": size // 4, "type": "float", "redop": "sum", "root": -1,
           "out_of_place": side, "in_place": in_place}  # fmt: skip
    found = {"rows": [row], "n_ranks": 8, "errors": 0, "wrong_results": False, "completed": True,
             "failures": [], "warnings": []}  # fmt: skip
    found.update(extra)
    return found


def perftest(gbps, device="mlx5_0", **extra) -> dict:
    rows = [] if gbps is None else [{"size_bytes": 65536, "bw_avg_gbps": gbps}]
    found = {"kind": "bw", "device": device, "bw_avg_gbps": gbps, "rows": rows, "errors": [],
             "gpudirect": False}  # fmt: skip
    found.update(extra)
    return found


def test_the_module_runs_on_python_3_8_nodes():
    ast.parse(Path(perf.__file__).read_text(), feature_version=(3, 8))


# -- the error value ----------------------------------------------------------------------------


def test_tool_error_round_trips_through_json():
    error = ToolError("all_reduce_perf -b 8", "timed out", ["# Rank 0 ...", "last line"])
    assert ToolError.from_dict(json.loads(json.dumps(error.as_dict()))) == error
    assert error.as_dict() == {
        "error": "timed out",
        "command": "all_reduce_perf -b 8",
        "output_tail": ["# Rank 0 ...", "last line"],
    }
    error.output_tail = [*error.output_tail, "server:"]  # the runner appends the server's side
    assert error.output_tail[-1] == "server:"


@pytest.mark.parametrize(
    ("message", "remedy"),
    [
        ("all_reduce_perf not found (nccl-tests or PATH)", "nccl_tests_build: true"),
        ("not installed: ", "role nccl"),
        ("timed out", "perf_test_timeout_s"),
        ("exit 1: not nccl-tests output", "run `all_reduce_perf -b 8 -e 8G -f 2 -g 8` on the node"),
    ],
)
def test_could_not_run_is_error_with_the_command_and_a_remedy(message, remedy):
    check, metrics = perf.nccl_local(
        ToolError("all_reduce_perf -b 8 -e 8G -f 2 -g 8", message, ["tail 1"]), H100["nccl_local_busbw_gbps"]
    )
    assert_shape(check, "perf.nccl_local", "error")
    assert check["message"] == f"could not run: {message.strip()}" and metrics == {}
    assert check["evidence"]["lines"] == [f"error: {message.strip()}", "tail 1"]
    assert remedy in check["remedy"]


def test_nothing_collected_is_an_error_never_a_crash():
    check, metrics = perf.hccl_local(None, None)
    assert_shape(check, "perf.hccl_local", "error")
    assert "no output was collected" in check["message"] and metrics == {}


@pytest.mark.parametrize(
    "judge",
    [
        lambda e: perf.nccl_local(e, None),
        lambda e: perf.nvbandwidth(e, None, None),
        lambda e: perf.ib_loopback({"mlx5_0": e}, None),
        lambda e: perf.hccl_local(e, None),
        lambda e: perf.storage(e, None, None),
    ],
)
def test_every_single_node_check_turns_a_tool_error_into_error(judge):
    check, metrics = judge(ToolError("tool --flag", "tool not found (PATH)", []))
    assert check["status"] == "error" and metrics == {}
    assert "not found" in check["message"] and check["remedy"].startswith(("build", "install"))


# -- perf.nccl_local -----------------------------------------------------------------------------


def test_nccl_local_healthy_8xh100_passes_with_its_metric_and_evidence():
    check, metrics = perf.nccl_local(
        facts("nccl-tests", "nccl_all_reduce_8xh100_healthy.txt", command="all_reduce_perf -g 8"),
        H100["nccl_local_busbw_gbps"],
    )
    assert_shape(check, "perf.nccl_local", "pass")
    assert metrics == {"perf.nccl_local_busbw_gbps": 481.66}  # out-of-place, the larger side at 8 GiB
    assert check["message"] == "all_reduce bus bandwidth 481.66 GB/s at 8 GiB: typical 480 GB/s"
    found = check["evidence"]
    assert found["command"] == "all_reduce_perf -g 8"
    assert found["lines"][:2] == [
        "measured: busbw 481.66 GB/s at 8 GiB (out-of-place 481.66, in-place 479.25; 8 ranks)",
        "expected: typical 480 GB/s, warn below 400, fail below 300",
    ]
    assert found["measured"] == metrics and found["expected"] == {"typical": 480, "warn": 400, "floor": 300}
    assert "nccl-tests issue #212" in found["source"]


def test_nccl_local_takes_the_larger_side_at_the_largest_size():
    small = nccl(999.0, size=1 << 20)["rows"][0]
    found = nccl(410.0, 430.5)
    found["rows"].insert(0, small)
    _check, metrics = perf.nccl_local(found, H100["nccl_local_busbw_gbps"])
    assert metrics == {"perf.nccl_local_busbw_gbps": 430.5}


def test_nccl_local_without_nvls_warns_below_the_warning_level():
    check, metrics = perf.nccl_local(nccl(368.2, 366.9), H100["nccl_local_busbw_gbps"])
    assert_shape(check, "perf.nccl_local", "warn")
    assert "below the warning level 400 GB/s (typical 480 GB/s)" in check["message"]
    assert "NVLS" in check["remedy"] and metrics == {"perf.nccl_local_busbw_gbps": 368.2}


def test_nccl_local_below_the_floor_fails_pointing_at_nvlink():
    check, _metrics = perf.nccl_local(nccl(180.4, 181.0), H100["nccl_local_busbw_gbps"])
    assert_shape(check, "perf.nccl_local", "fail")
    assert "181 GB/s at 8 GiB: below the floor 300 GB/s" in check["message"]
    assert "nvidia-smi nvlink -s" in check["remedy"] and "nvidia-fabricmanager" in check["remedy"]


def test_nccl_local_exactly_at_the_floor_or_warning_level_is_not_below_it():
    spec = H100["nccl_local_busbw_gbps"]
    assert perf.nccl_local(nccl(300.0), spec)[0]["status"] == "warn"
    assert perf.nccl_local(nccl(400.0), spec)[0]["status"] == "pass"


def test_nccl_local_wrong_results_fail_whatever_the_bandwidth():
    check, _metrics = perf.nccl_local(
        facts("nccl-tests", "nccl_all_gather_wrong_results.txt"), H100["nccl_local_busbw_gbps"]
    )
    assert_shape(check, "perf.nccl_local", "fail")
    assert check["message"] == "all_reduce: wrong results (147456 values out of bounds)"
    assert "dcgmi diag" in check["remedy"]


def test_nccl_local_failure_in_the_output_fails_without_a_metric():
    check, metrics = perf.nccl_local(
        facts("nccl-tests", "nccl_all_reduce_failed_network_error.txt"), H100["nccl_local_busbw_gbps"]
    )
    assert_shape(check, "perf.nccl_local", "fail")
    assert check["message"].startswith("all_reduce failed: gpu-r2-n04: Test NCCL failure")
    assert metrics == {}  # 1 KiB before it died: nothing for the fleet to compare
    assert any(line.startswith("failure: ") for line in check["evidence"]["lines"])


def test_nccl_local_without_an_expected_figure_warns_with_the_value():
    check, metrics = perf.nccl_local(facts("nccl-tests", "nccl_all_reduce_8xh100_healthy.txt"), None)
    assert_shape(check, "perf.nccl_local", "warn")
    assert check["message"] == (
        "all_reduce bus bandwidth 481.66 GB/s at 8 GiB: no expected figure for this SKU to compare with"
    )
    assert metrics == {"perf.nccl_local_busbw_gbps": 481.66}
    assert "perf_expectations" in check["remedy"] and check["evidence"]["expected"] is None


def test_nccl_local_without_rows_or_summary_could_not_run():
    check, metrics = perf.nccl_local(nccl(450.0, completed=False), H100["nccl_local_busbw_gbps"])
    assert_shape(check, "perf.nccl_local", "error")
    assert "stopped before its summary" in check["message"] and metrics == {}
    check, metrics = perf.nccl_local({**nccl(1.0), "rows": []}, H100["nccl_local_busbw_gbps"])
    assert_shape(check, "perf.nccl_local", "error")
    assert check["message"] == "could not run: all_reduce printed no bandwidth"


def test_a_non_zero_exit_behind_a_clean_output_warns():
    check, _metrics = perf.nccl_local(nccl(478.0, rc=1), H100["nccl_local_busbw_gbps"])
    assert (
        check["status"] == "warn" and "exit status 1 although the output shows no error" in check["message"]
    )


# -- perf.nvbandwidth ----------------------------------------------------------------------------


def nvb(name: str, **extra) -> dict:
    return facts("nvbandwidth", name, **extra)


def test_nvbandwidth_healthy_passes_with_the_slowest_gpu_per_direction():
    check, metrics = perf.nvbandwidth(
        nvb("nvbandwidth_h2d_d2h_8xh100_healthy.txt"), H100["h2d_gbps"], H100["d2h_gbps"]
    )
    assert_shape(check, "perf.nvbandwidth", "pass")
    assert metrics == {"perf.h2d_min_gbps": 55.57, "perf.d2h_min_gbps": 55.27}
    assert check["message"] == "host to device 55.57 GB/s, device to host 55.27 GB/s at the slowest GPU"
    assert check["evidence"]["lines"][0].startswith("host_to_device_memcpy_ce: GPU 0 55.61, GPU 1 55.58")
    assert check["evidence"]["expected"]["h2d"] == {"typical": 55, "warn": 48, "floor": 40}
    assert "PCI-SIG" in check["evidence"]["source"]


def test_nvbandwidth_gpu_at_gen4_fails_naming_it_and_the_pcie_link():
    check, metrics = perf.nvbandwidth(
        nvb("nvbandwidth_h2d_d2h_gpu5_gen4_degraded.txt"), H100["h2d_gbps"], H100["d2h_gbps"]
    )
    assert_shape(check, "perf.nvbandwidth", "fail")
    assert check["message"] == (
        "host to device: GPU 5 at 26.12 GB/s is below the floor 40 GB/s (typical 55 GB/s); "
        "device to host: GPU 5 at 26.41 GB/s is below the floor 40 GB/s (typical 55 GB/s)"
    )
    assert metrics == {"perf.h2d_min_gbps": 26.12, "perf.d2h_min_gbps": 26.41}
    assert "32GT/s x16" in check["remedy"] and "reseat" in check["remedy"]


def test_nvbandwidth_slightly_slow_gpu_warns():
    found = nvb("nvbandwidth_h2d_d2h_8xh100_healthy.txt")
    found["testcases"]["device_to_host_memcpy_ce"]["per_gpu_gbps"]["3"] = 44.9
    check, metrics = perf.nvbandwidth(found, H100["h2d_gbps"], H100["d2h_gbps"])
    assert_shape(check, "perf.nvbandwidth", "warn")
    assert (
        check["message"]
        == "device to host: GPU 3 at 44.9 GB/s is below the warning level 48 GB/s (typical 55 GB/s)"
    )
    assert metrics["perf.d2h_min_gbps"] == 44.9


def test_nvbandwidth_missing_direction_could_not_run():
    check, metrics = perf.nvbandwidth(
        nvb("nvbandwidth_h2d_4gpu_tabs_crlf.txt"), H100["h2d_gbps"], H100["d2h_gbps"]
    )
    assert_shape(check, "perf.nvbandwidth", "error")
    assert check["message"] == (
        "could not run: device to host: device_to_host_memcpy_ce gave no result (waived or not run)"
    )
    assert metrics == {"perf.h2d_min_gbps": 54.85}


def test_nvbandwidth_na_gpu_and_tool_errors_fail():
    found = nvb("nvbandwidth_h2d_d2h_8xh100_healthy.txt")
    found["testcases"][perf.H2D_TESTCASE]["per_gpu_gbps"]["7"] = None
    check, _metrics = perf.nvbandwidth(found, H100["h2d_gbps"], H100["d2h_gbps"])
    assert_shape(check, "perf.nvbandwidth", "fail")
    assert "host to device: no copy to GPU 7 (N/A)" in check["message"]
    found = nvb("nvbandwidth_h2d_d2h_8xh100_healthy.txt", errors=["Error: cuMemcpyAsync failed"])
    check, _metrics = perf.nvbandwidth(found, H100["h2d_gbps"], H100["d2h_gbps"])
    assert_shape(check, "perf.nvbandwidth", "fail")
    assert "nvbandwidth reported errors: Error: cuMemcpyAsync failed" in check["message"]


def test_nvbandwidth_without_expected_figures_warns_with_the_values():
    check, metrics = perf.nvbandwidth(nvb("nvbandwidth_h2d_d2h_8xh100_healthy.txt"), None, None)
    assert_shape(check, "perf.nvbandwidth", "warn")
    assert "host to device: slowest GPU 55.57 GB/s, no expected figure" in check["message"]
    assert "perf_expectations" in check["remedy"] and len(metrics) == 2


# -- perf.ib_loopback and pair rails ------------------------------------------------------------


def test_ib_loopback_healthy_rails_pass_with_the_slowest_as_metric():
    ndr = facts("ib-perftest", "ib_write_bw_ndr_client_report_gbits.txt", command="ib_write_bw -d mlx5_0")
    rails = {f"mlx5_{n}": {**ndr, "bw_avg_gbps": 391.81 - n / 10} for n in range(8)}
    check, metrics = perf.ib_loopback(rails, H100["ib_write_bw_gbps"])
    assert_shape(check, "perf.ib_loopback", "pass")
    assert check["message"] == "8 rails, slowest mlx5_7 at 391.11 Gb/s"
    assert metrics == {"perf.ib_loopback_min_gbps": 391.11}
    assert check["evidence"]["measured"]["mlx5_0"] == 391.81
    assert check["evidence"]["source"].startswith("derived from the catalog's hca.rate_gbps")


def test_ib_loopback_slow_failing_and_unrunnable_rails_are_each_named():
    rails = {
        "mlx5_0": perftest(391.2),
        "mlx5_10": perftest(372.0, device="mlx5_10"),
        "mlx5_3": facts("ib-perftest", "ib_write_bw_gpudirect_degraded.txt"),
        "mlx5_6": facts("ib-perftest", "ib_write_bw_completion_error.txt"),
        "mlx5_7": ToolError("ib_write_bw -d mlx5_7", "timed out", ["---"]),
    }
    check, metrics = perf.ib_loopback(rails, H100["ib_write_bw_gbps"])
    assert_shape(check, "perf.ib_loopback", "fail")
    assert check["message"] == (
        "mlx5_3: 188.85 Gb/s: below the floor 360 Gb/s (typical 390 Gb/s); "
        "mlx5_6: errors: Completion with error at client; "
        "mlx5_7: could not run: timed out; "
        "mlx5_10: 372 Gb/s: below the warning level 380 Gb/s (typical 390 Gb/s)"
    )
    assert metrics == {"perf.ib_loopback_min_gbps": 188.85}
    assert "GPU memory (GPUDirect)" in " ".join(check["evidence"]["lines"])
    assert "LnkSta" in check["remedy"] and "perf_test_timeout_s" in check["remedy"]


def test_ib_loopback_only_warnings_warn():
    check, _metrics = perf.ib_loopback(
        {"mlx5_0": perftest(391.0), "mlx5_1": perftest(375.5)}, H100["ib_write_bw_gbps"]
    )
    assert_shape(check, "perf.ib_loopback", "warn")
    assert check["message"] == "mlx5_1: 375.5 Gb/s: below the warning level 380 Gb/s (typical 390 Gb/s)"


def test_ib_loopback_without_an_expected_figure_warns_once_for_all_rails():
    check, metrics = perf.ib_loopback({"mlx5_0": perftest(391.0), "mlx5_1": perftest(390.5)}, None)
    assert_shape(check, "perf.ib_loopback", "warn")
    assert (
        check["message"]
        == "2 rails, slowest mlx5_1 at 390.5 Gb/s: no expected figure for this SKU to compare with"
    )
    assert metrics == {"perf.ib_loopback_min_gbps": 390.5}


def test_ib_loopback_with_no_rail_found_could_not_run():
    check, metrics = perf.ib_loopback({}, H100["ib_write_bw_gbps"])
    assert_shape(check, "perf.ib_loopback", "error")
    assert "no compute-fabric rail" in check["message"] and metrics == {}


def test_ib_loopback_latency_output_is_not_a_bandwidth():
    check, _metrics = perf.ib_loopback(
        {"mlx5_0": facts("ib-perftest", "ib_read_lat_percentiles.txt")}, H100["ib_write_bw_gbps"]
    )
    assert check["status"] == "error" and "is not a bandwidth test" in check["message"]


@pytest.mark.parametrize(
    ("rail", "status", "gbps"),
    [
        (perftest(391.8), "pass", 391.8),
        (perftest(378.0), "warn", 378.0),
        (perftest(120.4), "fail", 120.4),
        (perftest(390.0, errors=["Completion with error at client"]), "fail", 390.0),
        (perftest(None), "error", None),
        (
            ToolError("ib_write_bw -d mlx5_3 10.0.0.2", "exit 1: perftest failed: Couldn't connect", []),
            "error",
            None,
        ),
    ],
)
def test_pair_rail_is_a_status_and_the_bandwidth(rail, status, gbps):
    outcome = perf.pair_rail(rail, H100["ib_write_bw_gbps"])
    got_status, got_gbps = outcome  # a (status, gbps) pair first of all
    assert (got_status, got_gbps) == (status, gbps) and got_status in STATUSES
    as_dict = json.loads(json.dumps(outcome.as_dict()))
    assert set(as_dict) == {"status", "gbps", "message", "evidence", "remedy"}
    assert (as_dict["status"], as_dict["gbps"]) == (status, gbps)
    assert outcome.message and outcome.evidence["command"]
    assert (outcome.remedy is None) == (status == "pass")


def test_pair_rail_slow_points_at_cables_and_switch_ports():
    outcome = perf.pair_rail(
        perftest(120.4, command="ib_write_bw -d mlx5_3 10.0.0.2"), H100["ib_write_bw_gbps"]
    )
    assert outcome.message == "120.4 Gb/s: below the floor 360 Gb/s (typical 390 Gb/s)"
    assert "transceiver" in outcome.remedy and "switch ports' counters" in outcome.remedy
    assert outcome.evidence["command"] == "ib_write_bw -d mlx5_3 10.0.0.2"
    assert perf.pair_rail(perftest(391.0), None)[0] == "warn"  # no expected figure


# -- pair nccl -----------------------------------------------------------------------------------


def test_pair_nccl_is_a_status_and_the_bus_bandwidth():
    spec = H100["nccl_pair_busbw_gbps"]
    assert tuple(perf.pair_nccl(nccl(372.4, 371.0), spec)) == ("pass", 372.4)
    assert tuple(perf.pair_nccl(nccl(310.0), spec)) == ("warn", 310.0)
    degraded = perf.pair_nccl(facts("nccl-tests", "nccl_all_reduce_2node_16xh100_degraded_mpirun.txt"), spec)
    assert tuple(degraded) == ("fail", 95.98)
    assert "below the floor 280 GB/s" in degraded.message and "rail results first" in degraded.remedy
    failed = perf.pair_nccl(facts("nccl-tests", "nccl_all_reduce_failed_network_error.txt"), spec)
    assert failed[0] == "fail" and "NCCL_DEBUG=INFO" in failed.remedy
    assert tuple(perf.pair_nccl(ToolError("mpirun", "mpirun not found", []), spec)) == ("error", None)
    assert perf.pair_nccl(nccl(372.4), None)[0] == "warn"


# -- perf.hccl_local -----------------------------------------------------------------------------


def test_hccl_local_pass_warn_fail_against_a_site_figure():
    healthy = facts("hccl-test", "hccl_all_reduce_8p_healthy.txt")
    check, metrics = perf.hccl_local(healthy, SITE_HCCL)
    assert_shape(check, "perf.hccl_local", "pass")
    assert metrics == {"perf.hccl_local_algbw_gbps": 170.95935}
    assert check["message"] == "all_reduce algbw 170.96 GB/s at 1 GiB: typical 170 GB/s"
    assert check["evidence"]["source"] == SITE_HCCL["source"]
    slow = copy.deepcopy(healthy)
    slow["rows"][-1]["algbw_gbps"] = 140.0
    assert perf.hccl_local(slow, SITE_HCCL)[0]["status"] == "warn"
    slow["rows"][-1]["algbw_gbps"] = 60.0
    check, _metrics = perf.hccl_local(slow, SITE_HCCL)
    assert_shape(check, "perf.hccl_local", "fail")
    assert "npu-smi info -t health" in check["remedy"]


def test_hccl_local_failed_result_checks_fail():
    check, _metrics = perf.hccl_local(facts("hccl-test", "hccl_all_reduce_16p_check_failed.txt"), SITE_HCCL)
    assert_shape(check, "perf.hccl_local", "fail")
    assert check["message"] == "all_reduce result check failed at 2 sizes"
    assert any("retry count exceeded" in line for line in check["evidence"]["lines"])


def test_hccl_local_on_the_builtin_ascend_sku_warns_no_expected_figure():
    check, metrics = perf.hccl_local(
        facts("hccl-test", "hccl_all_reduce_8p_healthy.txt"),
        expectations_for("atlas-800t-a2").get("hccl_local_algbw_gbps"),
    )
    assert_shape(check, "perf.hccl_local", "warn")
    assert "no expected figure" in check["message"] and "170.96 GB/s" in check["message"]
    assert metrics == {"perf.hccl_local_algbw_gbps": 170.95935}


def test_hccl_local_without_a_table_could_not_run():
    check, _metrics = perf.hccl_local({"rows": [], "errors": 0, "failures": []}, SITE_HCCL)
    assert_shape(check, "perf.hccl_local", "error")
    assert check["message"] == "could not run: hccl_test printed no bandwidth"


# -- perf.storage --------------------------------------------------------------------------------


def test_storage_pass_warn_fail_per_direction():
    healthy = facts("juicefs-bench", "juicefs_bench_1.1_p4_healthy.txt")
    check, metrics = perf.storage(healthy, SITE_WRITE, SITE_READ)
    assert_shape(check, "perf.storage", "pass")
    assert metrics == {"perf.storage_write_mibps": 1184.37, "perf.storage_read_mibps": 1532.9}
    check, _metrics = perf.storage({**healthy, "read_big_mibps": 1000.0}, SITE_WRITE, SITE_READ)
    assert_shape(check, "perf.storage", "warn")
    assert "read 1000 MiB/s: below the warning level 1200 MiB/s" in check["message"]
    check, _metrics = perf.storage(
        facts("juicefs-bench", "juicefs_bench_degraded_colour.txt"), SITE_WRITE, SITE_READ
    )
    assert_shape(check, "perf.storage", "fail")
    assert "write 38.61 MiB/s: below the floor 600 MiB/s" in check["message"]
    assert "juicefs objbench" in check["remedy"]


def test_storage_errors_in_the_output_fail_and_missing_results_could_not_run():
    healthy = facts("juicefs-bench", "juicefs_bench_1.1_p4_healthy.txt")
    check, _metrics = perf.storage(
        {**healthy, "errors": ["2026/05/01 10:00:00.1 juicefs[1] <ERROR>: write: input/output error"]},
        SITE_WRITE,
        SITE_READ,
    )
    assert_shape(check, "perf.storage", "fail")
    assert check["message"].startswith("juicefs reported errors: ")
    check, metrics = perf.storage(
        {**healthy, "write_big_mibps": None, "read_big_mibps": None}, SITE_WRITE, SITE_READ
    )
    assert_shape(check, "perf.storage", "error")
    assert check["message"] == "could not run: no big-file write result; no big-file read result"
    assert metrics == {}


def test_storage_without_expected_figures_warns_with_the_values():
    check, metrics = perf.storage(facts("juicefs-bench", "juicefs_bench_1.1_p4_healthy.txt"), None, None)
    assert_shape(check, "perf.storage", "warn")
    assert "write 1184.37 MiB/s: no expected figure" in check["message"]
    assert "perf_expectations" in check["remedy"] and len(metrics) == 2


# -- pair hccn_tool ping -------------------------------------------------------------------------


def test_pair_hccn_ping_no_loss_passes_any_loss_fails():
    healthy = perf.pair_hccn_ping(facts("hccn-ping", "hccn_ping_healthy.txt"), LOSS)
    assert tuple(healthy) == ("pass", 0.0)
    assert healthy.message == "NPU NIC 0 to 10.20.1.11: 0 % lost" and healthy.remedy is None
    assert (
        healthy.evidence["lines"][0]
        == "NPU NIC 0 to 10.20.1.11: 3 sent, 3 received, 0 % lost, round trip 0.04-0.96 ms"
    )
    lossy = perf.pair_hccn_ping(facts("hccn-ping", "hccn_ping_loss.txt"), LOSS)
    assert tuple(lossy) == ("fail", 66.67)
    assert lossy.message == "NPU NIC 6 to 10.20.1.17: 66.67 % lost, more than 0 %"
    assert "optical module" in lossy.remedy and "ClusterForge policy" in lossy.evidence["source"]
    as_dict = json.loads(json.dumps(lossy.as_dict()))
    assert (as_dict["status"], as_dict["gbps"], as_dict["loss_pct"]) == ("fail", None, 66.67)


def test_pair_hccn_ping_without_reply_or_summary_or_run():
    unreachable = {"device": 2, "address": "10.20.1.13", "transmitted": 3, "received": 0, "loss_pct": 100.0,
                   "times_ms": [], "errors": []}  # fmt: skip
    outcome = perf.pair_hccn_ping(unreachable, None)
    assert tuple(outcome) == ("fail", 100.0) and "no reply to 3 pings" in outcome.message
    cut = {**unreachable, "transmitted": None, "received": None, "loss_pct": None}
    assert tuple(perf.pair_hccn_ping(cut, LOSS)) == ("error", None)
    failed = perf.pair_hccn_ping(
        ToolError("hccn_tool -i 7 -ping -g address 10.20.1.18", "exit 1: ...", []), LOSS
    )
    assert tuple(failed) == ("error", None) and failed.as_dict()["loss_pct"] is None


def test_pair_hccn_ping_without_an_expected_figure():
    assert perf.pair_hccn_ping(facts("hccn-ping", "hccn_ping_healthy.txt"), None)[0] == "pass"
    lossy = perf.pair_hccn_ping(facts("hccn-ping", "hccn_ping_loss.txt"), None)
    assert lossy[0] == "warn" and "no expected figure" in lossy.message


def test_pair_hccn_ping_of_a_multi_run_capture_takes_the_worst():
    with (
        open(FIXTURES / "hccn_ping_healthy.txt", encoding="utf-8") as one,
        open(FIXTURES / "hccn_ping_loss.txt", encoding="utf-8") as two,
    ):
        capture = parse("hccn-ping", one.read() + two.read())
    outcome = perf.pair_hccn_ping(capture, LOSS)
    assert tuple(outcome) == ("fail", 66.67)
    assert outcome.message == "NPU NIC 6 to 10.20.1.17: 66.67 % lost, more than 0 %"
