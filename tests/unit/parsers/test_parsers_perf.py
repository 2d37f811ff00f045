"""Benchmark output parsers: nccl-tests, hccl_test, perftest, `juicefs bench` and nvbandwidth
(cfcore/parsers/perf.py), and `hccn_tool -ping` (cfcore/parsers/hccn.py).

The fixtures under tests/fixtures/perf are written for ClusterForge in the tools' formats
(their numbers are made up); the real captures are checked by tests/conformance.
"""

# Inline outputs reproduce the tools' lines, wider than the project's 110 columns.
# ruff: noqa: E501

from __future__ import annotations

import contextlib
import json
import re
from pathlib import Path

import pytest
from cfcore.parsers import KINDS, ParseError, parse
from cfcore.parsers.perf import MB_PER_SEC_TO_GBPS
from test_parsers_facts_cli import run

PERF = Path(__file__).resolve().parents[2] / "fixtures" / "perf"
PARSER_FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "parsers"
PERF_KINDS = ("nccl-tests", "hccl-test", "ib-perftest", "juicefs-bench", "nvbandwidth", "hccn-ping")
TOOL_KINDS = {
    "nccl": "nccl-tests",
    "hccl": "hccl-test",
    "ib": "ib-perftest",
    "juicefs": "juicefs-bench",
    "nvbandwidth": "nvbandwidth",
    "hccn": "hccn-ping",
}

# Every fixture and the KIND it is the output of (None: the tool's failure message, refused).
FIXTURES = {
    "nccl_all_reduce_8xh100_healthy.txt": "nccl-tests",
    "nccl_all_reduce_2node_16xh100_degraded_mpirun.txt": "nccl-tests",
    "nccl_all_gather_wrong_results.txt": "nccl-tests",
    "nccl_all_reduce_old_v100_error_column.txt": "nccl-tests",
    "nccl_all_reduce_failed_network_error.txt": "nccl-tests",
    "nccl_broadcast_tag_output_tabs_crlf.txt": "nccl-tests",
    "hccl_all_reduce_8p_healthy.txt": "hccl-test",
    "hccl_all_reduce_16p_check_failed.txt": "hccl-test",
    "hccl_all_gather_check_disabled_crlf.txt": "hccl-test",
    "hccl_init_failed.txt": None,
    "ib_write_bw_ndr_client_report_gbits.txt": "ib-perftest",
    "ib_write_bw_roce_server_mbsec.txt": "ib-perftest",
    "ib_write_bw_gpudirect_degraded.txt": "ib-perftest",
    "ib_read_lat_percentiles.txt": "ib-perftest",
    "ib_send_lat_old_perftest.txt": "ib-perftest",
    "ib_write_bw_completion_error.txt": "ib-perftest",
    "ib_write_bw_connect_failed.txt": None,
    "juicefs_bench_1.1_p4_healthy.txt": "juicefs-bench",
    "juicefs_bench_degraded_colour.txt": "juicefs-bench",
    "juicefs_bench_old_no_cost.txt": "juicefs-bench",
    "juicefs_bench_fatal_read_only.txt": None,
    "nvbandwidth_h2d_d2h_8xh100_healthy.txt": "nvbandwidth",
    "nvbandwidth_h2d_d2h_gpu5_gen4_degraded.txt": "nvbandwidth",
    "nvbandwidth_h2d_4gpu_tabs_crlf.txt": "nvbandwidth",
    "nvbandwidth_cuda_no_device.txt": None,
    "hccn_ping_healthy.txt": "hccn-ping",
    "hccn_ping_loss.txt": "hccn-ping",
    "hccn_ping_failed.txt": None,
}


def text(name: str) -> str:
    # newline="" keeps the CRLF of the fixtures that have it
    with open(PERF / name, encoding="utf-8", newline="") as handle:
        return handle.read()


def crlf(value: str) -> str:
    return value.replace("\r\n", "\n").replace("\n", "\r\n")


def tabbed(value: str) -> str:
    """Runs of spaces between columns as tabs (a log that kept the tool's tabs)."""
    return re.sub(r"(?<=\S) {2,}(?=\S)", "\t", value)


def indented(value: str) -> str:
    return "".join("  " + line if line.strip() else line for line in value.splitlines(True))


# -- the fixture set as a whole -----------------------------------------------------------------


def test_every_fixture_is_listed():
    assert sorted(path.name for path in PERF.iterdir()) == sorted(FIXTURES)


def test_the_kinds_are_registered_with_capture_commands():
    assert KINDS["nccl-tests"].capture.startswith("all_reduce_perf -b 8 -e 8G -f 2 -g 8")
    assert "all_reduce_test" in KINDS["hccl-test"].capture
    assert KINDS["ib-perftest"].capture.startswith("ib_write_bw")
    assert KINDS["juicefs-bench"].capture == "juicefs bench MOUNTPOINT -p 4"


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_each_fixture_parses_as_its_own_kind_only(name):
    own = FIXTURES[name]
    for kind in KINDS:
        if kind == own:
            assert parse(kind, text(name))
            continue
        with pytest.raises(ParseError) as caught:
            parse(kind, text(name))
        assert caught.value.kind in (kind, "sysfs-infiniband")
        assert caught.value.fix, f"{name} as {kind}: no fix"


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_cut_anywhere_gives_a_result_or_a_parse_error(name):
    kind = FIXTURES[name] or TOOL_KINDS[name.split("_")[0]]
    whole = text(name)
    for fraction in (0.05, 0.2, 0.35, 0.5, 0.65, 0.8, 0.95):
        with contextlib.suppress(ParseError):
            parse(kind, whole[: int(len(whole) * fraction)])


@pytest.mark.parametrize("kind", PERF_KINDS)
@pytest.mark.parametrize(
    "other",
    [
        "nvidia/q_h100x8_535.txt",
        "nvidia/topo_h100x8.txt",
        "ascend/npu_smi_info_910b_x8.txt",
        "ib/ibstat_h100_all_active.txt",
        "kernel/dmesg_xid_new_form.txt",
        "garbage/error_page.html",
        "garbage/shell_error.txt",
    ],
)
def test_other_tools_outputs_are_refused_naming_the_kind_and_a_fix(kind, other):
    with pytest.raises(ParseError) as caught:
        parse(kind, (PARSER_FIXTURES / other).read_text(encoding="utf-8"))
    assert caught.value.kind == kind
    assert caught.value.fix and "capture" in caught.value.fix


@pytest.mark.parametrize("kind", PERF_KINDS)
@pytest.mark.parametrize("blank", ["", "   \n\n", "# source: nothing captured\n"])
def test_empty_input_is_refused(kind, blank):
    with pytest.raises(ParseError, match="empty input") as caught:
        parse(kind, blank)
    assert caught.value.kind == kind and caught.value.fix


def test_the_juicefs_status_json_is_not_juicefs_bench_output():
    status = (PERF.parent / "storage" / "juicefs-status-1.1.json").read_text(encoding="utf-8")
    with pytest.raises(ParseError, match="not juicefs bench output"):
        parse("juicefs-bench", status)


# -- nccl-tests ---------------------------------------------------------------------------------


def test_nccl_single_node_healthy():
    facts = parse("nccl-tests", text("nccl_all_reduce_8xh100_healthy.txt"))
    assert (facts["test"], facts["n_ranks"], len(facts["rows"])) == ("all_reduce_perf", 8, 31)
    assert facts["devices"][3] == {
        "rank": 3,
        "name": "NVIDIA H100 80GB HBM3",
        "bus_id": None,  # '[0x5d]' is the bus number alone
        "pci_bus": 0x5D,
        "host": "gpu-r1-n01",
        "pid": 41736,
        "device": 3,
    }
    assert facts["rows"][-1] == {
        "size_bytes": 8589934592,
        "count": 2147483648,
        "type": "float",
        "redop": "sum",
        "root": -1,
        "out_of_place": {"time_us": 31210.0, "algbw_gbps": 275.23, "busbw_gbps": 481.66, "errors": 0},
        "in_place": {"time_us": 31366.0, "algbw_gbps": 273.86, "busbw_gbps": 479.25, "errors": 0},
    }
    assert facts["rows"][0]["out_of_place"]["time_us"] == 22.0
    assert (facts["avg_busbw_gbps"], facts["max_busbw_gbps"]) == (231.882, 481.66)
    assert (facts["errors"], facts["wrong_results"], facts["completed"]) == (0, False, True)
    # "nccl-library=21903" of the nccl-tests header
    assert (facts["nccl_version"], facts["nccl_tests_version"]) == ("2.19.3", "2.13.9")
    assert facts["failures"] == [] and facts["warnings"] == []


def test_nccl_two_nodes_degraded_with_nccl_info_lines_between_the_rows():
    facts = parse("nccl-tests", text("nccl_all_reduce_2node_16xh100_degraded_mpirun.txt"))
    assert (facts["test"], facts["n_ranks"], len(facts["rows"])) == ("all_reduce_perf", 16, 31)
    assert {device["host"] for device in facts["devices"]} == {"gpu-r1-n01", "gpu-r1-n02"}
    assert facts["devices"][9]["bus_id"] == "0000:2a:00.0" and facts["devices"][9]["device"] == 1
    assert [row["size_bytes"] for row in facts["rows"]] == [8 * 2**n for n in range(31)]
    assert (facts["avg_busbw_gbps"], facts["max_busbw_gbps"]) == (41.5077, 95.98)
    assert facts["nccl_version"] == "2.21.5+cuda12.4"
    assert facts["warnings"] == [
        "gpu-r1-n02:52111:52170 [3] NCCL WARN NET/IB : mlx5_5:1 Got async event : port error"
    ]
    assert facts["errors"] == 0 and facts["failures"] == []


def test_nccl_wrong_results_are_counted_and_flagged():
    facts = parse("nccl-tests", text("nccl_all_gather_wrong_results.txt"))
    assert (facts["errors"], facts["wrong_results"]) == (147456, True)
    wrong = [row["size_bytes"] for row in facts["rows"] if row["out_of_place"]["errors"]]
    assert wrong == [16777216, 33554432, 67108864, 134217728, 268435456]
    assert facts["rows"][5]["in_place"]["errors"] == 8192
    assert facts["test"] is None  # not printed: no command line, no "Collective test" line


def test_nccl_wrong_counts_without_the_summary_line_still_flag_wrong_results():
    lines = [
        line for line in text("nccl_all_gather_wrong_results.txt").splitlines() if "Out of bounds" not in line
    ]
    facts = parse("nccl-tests", "\n".join(lines))
    assert facts["errors"] == 4096 + 4 * (131072 + 8192)
    assert facts["wrong_results"] is True


def test_nccl_old_format_without_root_and_with_the_error_column():
    facts = parse("nccl-tests", text("nccl_all_reduce_old_v100_error_column.txt"))
    assert (facts["n_ranks"], len(facts["rows"])) == (8, 25)
    assert {row["root"] for row in facts["rows"]} == {None}
    assert facts["rows"][0]["out_of_place"]["errors"] == 0.0  # '0e+00': a maximum error, not a count
    assert [device["pci_bus"] for device in facts["devices"]] == [
        0x06,
        0x07,
        0x0A,
        0x0B,
        0x85,
        0x86,
        0x89,
        0x8A,
    ]
    assert facts["devices"][0]["name"] == "Tesla V100-SXM2-32GB" and facts["devices"][0]["host"] == "dgx1-07"
    assert (facts["avg_busbw_gbps"], facts["wrong_results"]) == (44.7169, False)


def test_nccl_run_that_failed_after_its_header_parses_with_its_failures():
    facts = parse("nccl-tests", text("nccl_all_reduce_failed_network_error.txt"))
    assert (facts["n_ranks"], len(facts["rows"]), facts["completed"]) == (16, 8, False)
    assert facts["avg_busbw_gbps"] is None
    assert facts["failures"][0].startswith("gpu-r2-n04: Test NCCL failure common.cu:1005")
    assert any("Primary job" in line for line in facts["failures"])
    assert any("status=12" in line for line in facts["warnings"])


def test_nccl_tag_output_prefixes_tabs_and_crlf():
    facts = parse("nccl-tests", text("nccl_broadcast_tag_output_tabs_crlf.txt"))
    assert (facts["n_ranks"], len(facts["rows"])) == (4, 4)
    assert {(row["type"], row["redop"], row["root"]) for row in facts["rows"]} == {("half", "none", 0)}
    assert facts["avg_busbw_gbps"] == 152.85 and facts["devices"][0]["name"] == "NVIDIA H200"
    plain = re.sub(r"(?m)^\[\d+,\d+\]<std(?:out|err)>:", "", text("nccl_broadcast_tag_output_tabs_crlf.txt"))
    assert parse("nccl-tests", plain.replace("\r\n", "\n")) == facts


@pytest.mark.parametrize("variant", [crlf, tabbed, indented, lambda value: crlf(tabbed(value))])
def test_nccl_pasted_variants_parse_like_the_original(variant):
    original = text("nccl_all_reduce_2node_16xh100_degraded_mpirun.txt")
    assert parse("nccl-tests", variant(original)) == parse("nccl-tests", original)


def test_nccl_srun_labels_and_a_source_header_are_tolerated():
    original = text("nccl_all_reduce_8xh100_healthy.txt")
    labelled = "# source: gpu-r1-n01\n" + "".join("0: " + line for line in original.splitlines(True))
    assert parse("nccl-tests", labelled) == parse("nccl-tests", original)


def test_nccl_ranks_from_the_nthread_line_when_no_rank_lines_are_printed():
    lines = [line for line in text("nccl_all_reduce_8xh100_healthy.txt").splitlines() if "Rank" not in line]
    facts = parse("nccl-tests", "\n".join(lines))
    assert (facts["n_ranks"], facts["devices"]) == (8, [])


def test_nccl_in_place_na_and_a_missing_in_place_side():
    header = "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong"
    rows = [
        "     1048576        262144     float     sum      -1    25.80   40.63   71.10      0      N/A     N/A     N/A    N/A",
        "     2097152        524288     float     sum      -1    29.60   70.82  123.93    N/A",
    ]
    facts = parse("nccl-tests", "\n".join([header, *rows]))
    assert facts["rows"][0]["in_place"] == {
        "time_us": None,
        "algbw_gbps": None,
        "busbw_gbps": None,
        "errors": None,
    }
    assert facts["rows"][1]["in_place"] is None and facts["rows"][1]["out_of_place"]["errors"] is None
    assert (facts["n_ranks"], facts["completed"], facts["errors"]) == (None, False, 0)


def test_nccl_failure_before_anything_else_is_a_parse_error_saying_so():
    failure = "gpu-r1-n01: Test NCCL failure common.cu:958 'unhandled system error (run with NCCL_DEBUG=INFO for details) / '\n"
    with pytest.raises(
        ParseError, match="nccl-tests failed before its header: gpu-r1-n01: Test NCCL failure"
    ) as caught:
        parse("nccl-tests", failure)
    assert caught.value.kind == "nccl-tests" and "all_reduce_perf" in caught.value.fix


def test_nccl_debug_log_of_another_program_is_not_nccl_tests_output():
    log = "\n".join(
        [
            "trainer-0:311:311 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.5<0>",
            "trainer-0:311:311 [0] NCCL INFO NCCL version 2.21.5+cuda12.4",
            "trainer-0:311:402 [0] NCCL INFO comm 0x55d4 rank 0 nranks 8 cudaDev 0 busId 18000 - Init COMPLETE",
        ]
    )
    with pytest.raises(ParseError, match="not nccl-tests output") as caught:
        parse("nccl-tests", log)
    assert caught.value.line == 1


# -- hccl_test ----------------------------------------------------------------------------------


def test_hccl_healthy_table_with_bars():
    facts = parse("hccl-test", text("hccl_all_reduce_8p_healthy.txt"))
    assert (facts["test"], facts["n_ranks"], len(facts["rows"])) == ("all_reduce_test", 8, 18)
    assert facts["rows"][0] == {
        "size_bytes": 8192,
        "time_us": 38.05,
        "algbw_gbps": 0.21531,
        "check": "success",
    }
    assert facts["rows"][-1]["size_bytes"] == 1073741824
    assert (facts["max_algbw_gbps"], facts["errors"], facts["failures"]) == (170.95935, 0, [])
    assert (facts["min_bytes"], facts["max_bytes"], facts["iters"]) == (8192, 1073741824, 20)


def test_hccl_failed_checks_with_the_aveage_spelling_and_space_columns():
    facts = parse("hccl-test", text("hccl_all_reduce_16p_check_failed.txt"))
    assert (facts["n_ranks"], len(facts["rows"]), facts["errors"]) == (16, 9, 2)
    assert [row["size_bytes"] for row in facts["rows"] if row["check"] == "failed"] == [67108864, 134217728]
    assert facts["rows"][0] == {
        "size_bytes": 1048576,
        "time_us": 144.93,
        "algbw_gbps": 7.23,
        "check": "success",
    }
    assert facts["failures"][0].startswith("[ERROR] HCCL(61473,all_reduce_test)")
    assert "rank 11: check_buf_result_float total err is 2097152" in facts["failures"]


def test_hccl_null_check_is_not_an_error():
    facts = parse("hccl-test", text("hccl_all_gather_check_disabled_crlf.txt"))
    assert (facts["test"], facts["rows"][0]["check"], facts["errors"]) == ("all_gather_test", None, 0)
    assert facts["rows"][0]["size_bytes"] == 67108864


@pytest.mark.parametrize("variant", [crlf, tabbed, indented])
def test_hccl_pasted_variants_parse_like_the_original(variant):
    for name in ("hccl_all_reduce_8p_healthy.txt", "hccl_all_reduce_16p_check_failed.txt"):
        assert parse("hccl-test", variant(text(name))) == parse("hccl-test", text(name))


def test_hccl_failure_without_a_table_is_a_parse_error_saying_so():
    with pytest.raises(ParseError, match="hccl_test failed: hccl interface return err") as caught:
        parse("hccl-test", text("hccl_init_failed.txt"))
    assert "all_reduce_test" in caught.value.fix


def test_hccl_refuses_nccl_tests_output():
    with pytest.raises(ParseError, match=r"not hccl_test output: no data_size\(Bytes\) table"):
        parse("hccl-test", text("nccl_all_reduce_8xh100_healthy.txt"))


# -- perftest -----------------------------------------------------------------------------------


def test_perftest_ndr_client_with_report_gbits():
    facts = parse("ib-perftest", text("ib_write_bw_ndr_client_report_gbits.txt"))
    assert (facts["test"], facts["kind"], facts["device"], facts["link_type"]) == (
        "RDMA_Write BW",
        "bw",
        "mlx5_0",
        "IB",
    )
    assert (facts["transport"], facts["connection"], facts["qps"], facts["mtu_bytes"]) == (
        "IB",
        "RC",
        1,
        4096,
    )
    assert (facts["bw_unit"], facts["gpudirect"], facts["runs"]) == ("Gb/sec", False, 1)
    assert [row["size_bytes"] for row in facts["rows"]] == [2**n for n in range(1, 24)]
    assert facts["rows"][-1] == {
        "size_bytes": 8388608,
        "iterations": 5000,
        "bw_peak_gbps": 393.38,
        "bw_avg_gbps": 391.81,
        "msg_rate_mpps": 0.005838,
    }
    assert facts["bw_avg_gbps"] == 391.81 and facts["errors"] == [] and facts["t_typical_us"] is None


def test_perftest_roce_server_mb_per_sec_is_converted_with_perftest_s_2_to_the_20():
    facts = parse("ib-perftest", text("ib_write_bw_roce_server_mbsec.txt"))
    assert (facts["device"], facts["link_type"], facts["bw_unit"]) == ("mlx5_bond_0", "Ethernet", "MB/sec")
    assert facts["rows"][0]["bw_avg_gbps"] == round(23160.91 * 1048576 * 8 / 1e9, 6) == 194.287795
    assert MB_PER_SEC_TO_GBPS == 0.008388608
    assert facts["warnings"] and facts["warnings"][0].startswith("Conflicting CPU frequency")
    assert facts["errors"] == []


def test_perftest_gpudirect_run():
    facts = parse("ib-perftest", text("ib_write_bw_gpudirect_degraded.txt"))
    assert (facts["gpudirect"], facts["qps"], facts["device"]) == (True, 4, "mlx5_3")
    assert facts["bw_avg_gbps"] == 188.85 and len(facts["rows"]) == 3


def test_perftest_latency_with_percentiles():
    facts = parse("ib-perftest", text("ib_read_lat_percentiles.txt"))
    assert (facts["test"], facts["kind"], facts["bw_unit"], facts["bw_avg_gbps"]) == (
        "RDMA_Read Latency",
        "lat",
        None,
        None,
    )
    assert facts["rows"][0] == {
        "size_bytes": 2,
        "iterations": 1000,
        "t_min_us": 1.86,
        "t_max_us": 6.12,
        "t_typical_us": 1.92,
        "t_avg_us": 1.94,
        "t_stdev_us": 0.05,
        "p99_us": 2.03,
        "p999_us": 6.12,
    }
    assert facts["t_typical_us"] == 1.92 and len(facts["rows"]) == 4


def test_perftest_old_latency_table_has_the_documented_nulls():
    facts = parse("ib-perftest", text("ib_send_lat_old_perftest.txt"))
    assert (facts["test"], facts["device"], facts["mtu_bytes"]) == ("Send Latency", None, 2048)
    row = facts["rows"][0]
    assert (row["t_typical_us"], row["t_avg_us"], row["p99_us"]) == (1.23, None, None)


def test_perftest_completion_error_after_the_header_keeps_the_errors():
    facts = parse("ib-perftest", text("ib_write_bw_completion_error.txt"))
    assert (facts["device"], facts["rows"], facts["bw_avg_gbps"]) == ("mlx5_6", [], None)
    assert facts["errors"] == [
        "Completion with error at client",
        "Failed status 12: wr_id 0 syndrom 0x81",
        "Failed to complete run_iter_bw function successfully",
    ]


def test_perftest_client_that_could_not_connect_is_a_parse_error_saying_so():
    with pytest.raises(
        ParseError, match=r"perftest failed: Couldn't connect to 10\.20\.1\.12:18515"
    ) as caught:
        parse("ib-perftest", text("ib_write_bw_connect_failed.txt"))
    assert caught.value.kind == "ib-perftest" and "ib_write_bw" in caught.value.fix


def test_perftest_server_no_client_connected_to_is_refused():
    banner = "\n************************************\n* Waiting for client to connect... *\n************************************\n"
    with pytest.raises(ParseError, match="a server that no client connected to"):
        parse("ib-perftest", banner)


def test_perftest_server_and_client_in_one_capture_keep_each_size_once():
    server = text("ib_write_bw_roce_server_mbsec.txt")
    facts = parse("ib-perftest", server + server)
    assert (facts["runs"], len(facts["rows"])) == (2, 1)


@pytest.mark.parametrize("variant", [crlf, indented, lambda value: value.expandtabs(8)])
def test_perftest_pasted_variants_parse_like_the_original(variant):
    for name in ("ib_write_bw_ndr_client_report_gbits.txt", "ib_read_lat_percentiles.txt"):
        assert parse("ib-perftest", variant(text(name))) == parse("ib-perftest", text(name))


# -- juicefs bench ------------------------------------------------------------------------------


def test_juicefs_bench_healthy():
    facts = parse("juicefs-bench", text("juicefs_bench_1.1_p4_healthy.txt"))
    assert facts["settings"] == {
        "block_size_mib": 1,
        "big_file_size_mib": 1024,
        "small_file_size_kib": 128,
        "small_file_count": 100,
        "threads": 4,
    }
    assert len(facts["items"]) == 12
    assert facts["items"][0] == {
        "item": "Write big file",
        "value": 1184.37,
        "unit": "MiB/s",
        "cost": 3.46,
        "cost_unit": "s/file",
    }
    assert facts["items"][5] == {
        "item": "FUSE operation",
        "value": 71822.0,
        "unit": "operations",
        "cost": 1.71,
        "cost_unit": "ms/op",
    }
    summary = {key: facts[key] for key in facts if key.endswith(("_mibps", "_per_s"))}
    assert summary == {
        "write_big_mibps": 1184.37,
        "read_big_mibps": 1532.9,
        "write_small_files_per_s": 412.8,
        "read_small_files_per_s": 2675.1,
        "stat_files_per_s": 10872.4,
    }
    assert (facts["time_used_s"], facts["completed"], facts["errors"]) == (12.4, True, [])


def test_juicefs_bench_colours_and_redrawn_progress_and_gib_sizes():
    facts = parse("juicefs-bench", text("juicefs_bench_degraded_colour.txt"))
    assert "\x1b" in text("juicefs_bench_degraded_colour.txt")
    assert facts["settings"]["big_file_size_mib"] == 1024  # "BigFileSize: 1 GiB"
    assert (facts["write_big_mibps"], facts["write_small_files_per_s"]) == (38.61, 6.9)
    assert facts["items"][7] == {
        "item": "Put object",
        "value": 1424.0,
        "unit": "operations",
        "cost": 2312.65,
        "cost_unit": "ms/op",
    }


def test_juicefs_bench_old_table_without_cost():
    facts = parse("juicefs-bench", text("juicefs_bench_old_no_cost.txt"))
    assert {(item["cost"], item["cost_unit"]) for item in facts["items"]} == {(None, None)}
    assert (facts["read_big_mibps"], facts["settings"]["threads"], facts["time_used_s"]) == (145.77, 1, None)


@pytest.mark.parametrize("variant", [crlf, indented])
def test_juicefs_bench_pasted_variants_parse_like_the_original(variant):
    original = text("juicefs_bench_1.1_p4_healthy.txt")
    assert parse("juicefs-bench", variant(original)) == parse("juicefs-bench", original)


def test_juicefs_bench_fatal_is_a_parse_error_saying_so():
    with pytest.raises(ParseError, match=r"juicefs bench failed: .*read-only file system") as caught:
        parse("juicefs-bench", text("juicefs_bench_fatal_read_only.txt"))
    assert "juicefs bench" in caught.value.fix


def test_juicefs_bench_interrupted_before_the_table():
    lines = text("juicefs_bench_1.1_p4_healthy.txt").splitlines()
    facts = parse("juicefs-bench", "\n".join(lines[:4]))
    assert (facts["items"], facts["completed"], facts["write_big_mibps"]) == ([], False, None)


def test_juicefs_bench_refuses_a_markdown_table_of_something_else():
    table = "| Name | Size |\n|------|------|\n| a.bin | 12 MiB |\n"
    with pytest.raises(ParseError, match="not juicefs bench output"):
        parse("juicefs-bench", table)


def test_juicefs_bench_value_that_is_no_number_is_null():
    healthy = text("juicefs_bench_1.1_p4_healthy.txt")
    row = next(line for line in healthy.splitlines() if "Read small file" in line)
    facts = parse(
        "juicefs-bench", healthy.replace(row, "|  Read small file |              N/A |            N/A |")
    )
    assert facts["items"][3] == {
        "item": "Read small file",
        "value": None,
        "unit": None,
        "cost": None,
        "cost_unit": None,
    }
    assert facts["read_small_files_per_s"] is None and len(facts["items"]) == 12


# -- clusterforge facts -------------------------------------------------------------------------
# `run` is test_parsers_facts_cli's: (exit code, stdout, stderr) of `clusterforge ARGV`.


def test_facts_kinds_lists_the_benchmark_kinds(capsys):
    code, out, _err = run(capsys, "facts", "kinds")
    assert code == 0
    for kind, command in (("nccl-tests", "all_reduce_perf"), ("hccl-test", "all_reduce_test"),
                          ("ib-perftest", "ib_write_bw"), ("juicefs-bench", "juicefs bench")):  # fmt: skip
        line = next(line for line in out.splitlines() if f" {kind} " in line)
        assert command in line


@pytest.mark.parametrize("name", [name for name, kind in FIXTURES.items() if kind])
def test_facts_parse_json_and_summary(capsys, name):
    kind = FIXTURES[name]
    code, out, err = run(capsys, "facts", "parse", kind, str(PERF / name), "--json")
    assert (code, err) == (0, "")
    assert json.loads(out) == parse(kind, text(name))
    code, out, err = run(capsys, "facts", "parse", kind, str(PERF / name))
    assert (code, err) == (0, "") and out.strip()


def test_facts_parse_of_a_failed_client_exits_2_with_the_fix(capsys):
    code, out, err = run(
        capsys, "facts", "parse", "ib-perftest", str(PERF / "ib_write_bw_connect_failed.txt")
    )
    assert (code, out) == (2, "")
    assert "perftest failed: Couldn't connect" in err and "fix:" in err


# -- nvbandwidth --------------------------------------------------------------------------------

H100_BUSES = ["18", "2a", "3a", "5d", "9a", "ab", "ba", "db"]


def test_nvbandwidth_is_registered_with_its_capture_command():
    assert KINDS["nvbandwidth"].capture.startswith("nvbandwidth -t host_to_device_memcpy_ce")
    assert KINDS["hccn-ping"].capture == "hccn_tool -i DEVICE_ID -ping -g address PEER_ADDRESS"


def test_nvbandwidth_healthy_8_gpus():
    facts = parse("nvbandwidth", text("nvbandwidth_h2d_d2h_8xh100_healthy.txt"))
    assert (facts["version"], facts["driver_version"], facts["cuda_version"]) == ("v0.7", "550.90.07", "12.4")
    assert facts["devices"] == [
        {"index": n, "name": "NVIDIA H100 80GB HBM3", "bus_id": f"0000:{bus}:00.0"}
        for n, bus in enumerate(H100_BUSES)
    ]
    assert list(facts["testcases"]) == ["host_to_device_memcpy_ce", "device_to_host_memcpy_ce"]
    h2d = facts["testcases"]["host_to_device_memcpy_ce"]
    assert (h2d["status"], h2d["unit"], h2d["row_side"], h2d["column_side"]) == ("ran", "GB/s", "CPU", "GPU")
    assert h2d["title"] == "memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)"
    assert h2d["columns"] == list(range(8)) and len(h2d["matrix"]) == 1
    assert h2d["matrix"][0][:3] == [55.61, 55.58, 55.64]
    assert h2d["sum_gbps"] == 444.84
    assert h2d["per_gpu_gbps"] == dict(zip(map(str, range(8)), h2d["matrix"][0], strict=True))
    d2h = facts["testcases"]["device_to_host_memcpy_ce"]
    assert d2h["per_gpu_gbps"]["4"] == 55.27 and d2h["sum_gbps"] == 442.45
    assert (facts["waived"], facts["errors"]) == (0, [])


def test_nvbandwidth_one_degraded_gpu_and_a_gpu_matrix_with_na_diagonal():
    facts = parse("nvbandwidth", text("nvbandwidth_h2d_d2h_gpu5_gen4_degraded.txt"))
    h2d = facts["testcases"]["host_to_device_memcpy_ce"]["per_gpu_gbps"]
    d2h = facts["testcases"]["device_to_host_memcpy_ce"]["per_gpu_gbps"]
    assert (h2d["5"], d2h["5"]) == (26.12, 26.41)
    assert min(h2d, key=h2d.get) == "5" and sorted(h2d.values())[1] == 55.57
    d2d = facts["testcases"]["device_to_device_memcpy_read_ce"]
    assert (d2d["row_side"], d2d["column_side"]) == ("GPU", "GPU")
    assert [d2d["matrix"][n][n] for n in range(8)] == [None] * 8  # N/A: no copy to itself
    # the slowest copy of each GPU, as source or destination, off the diagonal
    for gpu in range(8):
        row_and_column = [v for v in d2d["matrix"][gpu] + [r[gpu] for r in d2d["matrix"]] if v is not None]
        assert d2d["per_gpu_gbps"][str(gpu)] == min(row_and_column)
    assert facts["waived"] == 1


def test_nvbandwidth_tabs_and_crlf_parse_like_spaces():
    tabbed_crlf = text("nvbandwidth_h2d_4gpu_tabs_crlf.txt")
    assert "\r\n" in tabbed_crlf and "\t" in tabbed_crlf
    facts = parse("nvbandwidth", tabbed_crlf)
    assert facts == parse("nvbandwidth", tabbed_crlf.replace("\r\n", "\n").replace("\t", "    "))
    assert facts["testcases"]["host_to_device_memcpy_ce"]["per_gpu_gbps"] == {
        "0": 54.87,
        "1": 54.91,
        "2": 54.85,
        "3": 54.9,
    }
    assert len(facts["devices"]) == 4 and "device_to_host_memcpy_ce" not in facts["testcases"]


@pytest.mark.parametrize(
    "variant",
    [
        crlf,
        tabbed,
        indented,
        lambda value: "# source: gpu-r1-n01, nvbandwidth v0.7\n" + value,
        lambda value: value.replace("Running ", "\x1b[1mRunning ").replace("(GB/s)\n", "(GB/s)\x1b[0m\n"),
        lambda value: "".join(f"[1,0]<stdout>:{line}" for line in value.splitlines(True)),
    ],
)
def test_nvbandwidth_pasted_variants_parse_like_the_original(variant):
    original = text("nvbandwidth_h2d_d2h_gpu5_gen4_degraded.txt")
    assert parse("nvbandwidth", variant(original)) == parse("nvbandwidth", original)


def test_nvbandwidth_na_cell_of_a_host_copy_is_a_gpu_without_figure():
    output = """Running host_to_device_memcpy_ce.
memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)
           0         1
 0     55.61       N/A

SUM host_to_device_memcpy_ce 55.61
"""
    case = parse("nvbandwidth", output)["testcases"]["host_to_device_memcpy_ce"]
    assert case["matrix"] == [[55.61, None]]
    assert case["per_gpu_gbps"] == {"0": 55.61, "1": None}


def test_nvbandwidth_old_zero_diagonal_is_not_a_slow_copy():
    # Before N/A cells (README of 2022), the diagonal of a GPU to GPU matrix printed 0.00.
    output = """Running device_to_device_memcpy_write_ce.
memcpy CE GPU(row) <- GPU(column) bandwidth (GB/s)
          0         1         2
0      0.00    276.07    276.36
1    276.19      0.00    275.91
2    276.33    276.29      0.00
"""
    case = parse("nvbandwidth", output)["testcases"]["device_to_device_memcpy_write_ce"]
    assert case["per_gpu_gbps"] == {"0": 276.07, "1": 275.91, "2": 275.91}
    assert case["sum_gbps"] is None  # no SUM line


def test_nvbandwidth_perf_formatter_sum_latency_testcase_and_verbose_lines():
    output = """nvbandwidth Version: v0.8
Running host_to_device_memcpy_ce.
memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)
           0
 0     55.02

&&&& PERF host_to_device_memcpy_ce 55.02 GB/s
MIN host_to_device_memcpy_ce 55.02
Running host_device_latency_sm.
memory latency SM CPU(row) <-> GPU(column) (ns)
           0
 0    772.58

SUM host_device_latency_sm 772.58
"""
    facts = parse("nvbandwidth", output)
    assert facts["testcases"]["host_to_device_memcpy_ce"]["sum_gbps"] == 55.02
    latency = facts["testcases"]["host_device_latency_sm"]
    assert (latency["unit"], latency["sum_gbps"], latency["per_gpu_gbps"]) == ("ns", None, {})
    assert latency["matrix"] == [[772.58]] and facts["errors"] == []


def test_nvbandwidth_testcase_error_is_kept_with_the_testcase():
    output = """nvbandwidth Version: v0.7
CUDA Runtime Version: 12040
Device 0: NVIDIA H100 80GB HBM3 (00000000:18:00)

Running host_to_device_memcpy_ce.
memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)
           0
 0     55.02

SUM host_to_device_memcpy_ce 55.02

Running device_to_host_memcpy_ce.
Error: cuMemcpyAsync failed: an illegal memory access was encountered
"""
    facts = parse("nvbandwidth", output)
    failed = facts["testcases"]["device_to_host_memcpy_ce"]
    assert (failed["status"], failed["matrix"], failed["per_gpu_gbps"]) == ("error", [], {})
    assert failed["message"].startswith("Error: cuMemcpyAsync failed")
    assert facts["errors"] == [failed["message"]]
    assert facts["testcases"]["host_to_device_memcpy_ce"]["status"] == "ran"


def test_nvbandwidth_that_failed_before_any_testcase_is_a_parse_error_saying_so():
    with pytest.raises(ParseError, match=r"nvbandwidth failed: \[CUDA_ERROR_NO_DEVICE\]") as caught:
        parse("nvbandwidth", text("nvbandwidth_cuda_no_device.txt"))
    assert "nvbandwidth -t host_to_device_memcpy_ce" in caught.value.fix


@pytest.mark.parametrize(
    "other",
    [
        "nvbandwidth CLI:\n  -h [ --help ]  Produce help message\n  -t [ --testcase ] arg  Testcase(s)\n",
        "Running checks.\nAll good.\n",
        "[CUDA Bandwidth Test] - Starting...\nDevice 0: Tesla T4\nHost to Device Bandwidth, 1 Device(s)\n",
        "Error: something else entirely\n",
    ],
)
def test_nvbandwidth_refuses_what_is_not_its_output(other):
    with pytest.raises(ParseError, match="not nvbandwidth output") as caught:
        parse("nvbandwidth", other)
    assert caught.value.kind == "nvbandwidth"


# -- hccn_tool -ping ------------------------------------------------------------------------------


def test_hccn_ping_healthy():
    facts = parse("hccn-ping", text("hccn_ping_healthy.txt"))
    run = {
        "device": 0,
        "address": "10.20.1.11",
        "transmitted": 3,
        "received": 3,
        "loss_pct": 0.0,
        "times_ms": [0.962, 0.047, 0.045],
        "errors": [],
    }
    assert facts == {**run, "devices": [run]}


def test_hccn_ping_with_loss_and_without_an_echoed_command():
    facts = parse("hccn-ping", text("hccn_ping_loss.txt"))
    assert (facts["device"], facts["address"]) == (6, "10.20.1.17")
    assert (facts["transmitted"], facts["received"], facts["loss_pct"]) == (3, 1, 66.67)
    assert facts["times_ms"] == [0.052]


def test_hccn_ping_no_reply_at_all():
    facts = parse(
        "hccn-ping", "device 2 PING 10.20.1.13\n3 packets transmitted, 0 received, 100.00% packet loss\n"
    )
    assert (facts["received"], facts["loss_pct"], facts["times_ms"]) == (0, 100.0, [])


def test_hccn_ping_loss_computed_when_the_summary_has_no_percentage():
    facts = parse(
        "hccn-ping", "device 1 PING 10.20.1.12\nrecv seq=0,time=0.5ms\n4 packets transmitted, 3 received\n"
    )
    assert facts["loss_pct"] == 25.0


def test_hccn_ping_cut_before_its_summary_has_no_counts():
    facts = parse("hccn-ping", "device 4 PING 10.20.1.15\nrecv seq=0,time=1.2ms\n")
    assert (facts["transmitted"], facts["received"], facts["loss_pct"]) == (None, None, None)
    assert facts["times_ms"] == [1.2]


def test_hccn_ping_several_runs_in_one_capture():
    capture = text("hccn_ping_healthy.txt") + text("hccn_ping_failed.txt") + text("hccn_ping_loss.txt")
    facts = parse("hccn-ping", capture)
    assert [run["device"] for run in facts["devices"]] == [0, 7, 6]
    failed = facts["devices"][1]
    assert (failed["address"], failed["transmitted"]) == ("10.20.1.18", None)
    assert failed["errors"] == ["hccn_tool: ping failed, ret = -2"]
    assert facts["device"] is None and facts["loss_pct"] is None  # several runs: see devices


def test_hccn_ping_tool_failure_alone_is_a_parse_error_saying_so():
    with pytest.raises(ParseError, match="hccn_tool reported an error instead of its -ping output") as caught:
        parse("hccn-ping", text("hccn_ping_failed.txt"))
    assert caught.value.kind == "hccn-ping" and "-ping -g address" in caught.value.fix


@pytest.mark.parametrize(
    ("other", "words"),
    [
        ("hccn_tool -i 0 -ip -g\nipaddr:10.20.0.11\nnetmask:255.255.255.0\n", "holds `hccn_tool -ip`"),
        (
            "PING 10.0.0.2 (10.0.0.2) 56(84) bytes of data.\n64 bytes from 10.0.0.2: icmp_seq=1 ttl=64 time=0.1 ms\n"
            "\n--- 10.0.0.2 ping statistics ---\n1 packets transmitted, 1 received, 0% packet loss, time 0ms\n",
            "not hccn_tool -ping output",
        ),
        ("link status: UP\n", "not hccn_tool -ping output"),
    ],
)
def test_hccn_ping_refuses_other_outputs(other, words):
    with pytest.raises(ParseError, match=re.escape(words)):
        parse("hccn-ping", other)


@pytest.mark.parametrize(
    "variant",
    [
        crlf,
        indented,
        lambda value: "# source: npu-r1-n01\n" + value,
        lambda value: "$ " + value,
        lambda value: "".join(f"[devid 0] {line}" for line in value.splitlines(True)),
        lambda value: value.replace("device 0 PING", "\x1b[32mdevice 0 PING").replace(
            "loss\n", "loss\x1b[0m\n"
        ),
    ],
)
def test_hccn_ping_pasted_variants_parse_like_the_original(variant):
    original = text("hccn_ping_healthy.txt")
    assert parse("hccn-ping", variant(original)) == parse("hccn-ping", original)


def test_hccn_ping_accepts_the_device_argument_of_the_hccn_kinds():
    assert parse("hccn-ping", text("hccn_ping_loss.txt"), device=6)["device"] == 6
