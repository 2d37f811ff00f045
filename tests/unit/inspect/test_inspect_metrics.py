"""The figures the trend needs (mount probe latency, PCIe replays from each nvidia-smi form) and the
controller's textfile (cfcore/inspect_metrics.py)."""

from __future__ import annotations

from pathlib import Path

from cfcore import inspect_metrics
from cfcore.checks import node as node_checks
from cfcore.checks.storage import probe_writable
from cfcore.parsers import parse

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "parsers" / "nvidia"


def test_the_probe_times_its_round_trip(tmp_path):
    probe = probe_writable(str(tmp_path), "gpu-01")
    assert probe["result"] == "ok" and 0 < probe["ms"] < 10_000
    assert list(tmp_path.iterdir()) == []  # the probe file is removed


def test_mount_metrics_take_the_slowest_successful_probe():
    probes = {
        "/mnt/a": {"result": "ok", "ms": 2.5},
        "/mnt/b": {"result": "ok", "ms": 40.0},
        "/mnt/c": {"result": "timeout", "ms": None},
    }
    assert node_checks.mount_metrics(probes) == {"node.mount_probe_ms": 40.0}
    assert node_checks.mount_metrics({"/mnt/c": probes["/mnt/c"]}) == {}


def test_pcie_replays_parse_from_xml_and_text():
    xml = parse("nvidia-smi-q-xml", (FIXTURES / "q_h100x8_535.xml").read_text())["gpus"]
    text = parse("nvidia-smi-q", (FIXTURES / "q_faulty_535.txt").read_text())["gpus"]
    assert {gpu["pcie_replays"] for gpu in xml} == {0}
    assert {gpu["pcie_replays"] for gpu in text} == {0, 1187}  # the faulty capture has a replaying link


def test_the_textfile_holds_the_run_and_only_the_bad_checks(tmp_path):
    report = {
        "nodes": [
            {"host": "b", "status": "pass", "checks": [{"id": "gpu.count", "status": "pass"}]},
            {"host": "a", "status": "fail", "checks": [{"id": "gpu.xid", "status": "fail"}]},
        ]
    }
    trend = {"nodes": {"b": {"drifts": [{"metric": "gpu.pcie_replay_total"}]}, "a": {"drifts": []}}}
    record = {
        "level": "full",
        "started": "2026-12-01T04:30:00Z",
        "duration_s": 12.5,
        "exit_code": 3,
        "new_failures": {"a": ["gpu.xid"]},
    }
    path = inspect_metrics.write(str(tmp_path), report, trend, record)
    text = Path(path).read_text()
    assert Path(path).name == "clusterforge_inspect_full.prom"
    assert 'clusterforge_inspect_last_run_timestamp_seconds{level="full"} 1796099400' in text
    assert 'clusterforge_inspect_check_status{node="a",check="gpu.xid",status="fail",level="full"} 1' in text
    assert "gpu.count" not in text
    assert 'clusterforge_inspect_drifts{node="b",level="full"} 1' in text
    assert 'clusterforge_inspect_new_failures{node="a",level="full"} 1' in text
    assert text.index('node="a"') < text.index('node="b"')  # sorted: a stable file
    assert inspect_metrics.write(None, report, trend, record) is None
