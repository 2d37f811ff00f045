import json
import xml.etree.ElementTree as ET

from clusterforge.validation import reports
from clusterforge.validation.outliers import apply_outliers, find_outliers
from clusterforge.validation.results import summarise, unreachable_result
from prometheus_client.parser import text_string_to_metric_families
from valfactory import check, node, xid79_node

RUN = {
    "source": "ansible",
    "inventory": "inventories/lab",
    "limit": None,
    "level": "quick",
    "started": "2026-11-30T12:00:00Z",
    "finished": "2026-11-30T12:00:09Z",
    "duration_s": 9.2,
    "clusterforge_version": "0.1.0",
}


def sample_report(extra=()):
    results = [node(f"gpu-{i:02d}", metrics={"gpu.temperature_max_c": 40 + i % 3}) for i in range(6)] + [
        xid79_node("gpu-bad"),
        node(
            "gpu-warn",
            checks=[
                check("gpu.ecc", "warn", "3 corrected volatile errors"),
                check("gpu.mig", "skip", "no MIG"),
            ],
        ),
        unreachable_result(
            "gpu-gone", "hgx-h100-8gpu", "quick", "ssh: connect to host 10.0.0.9 port 22: timed out"
        ),
        *extra,
    ]
    results[0]["metrics"]["gpu.temperature_max_c"] = 85
    outliers = find_outliers(results)
    apply_outliers(results, outliers)
    return reports.assemble(results, summarise(results), outliers.as_dict(), RUN)


def test_every_file_is_written_and_json_round_trips(tmp_path):
    report = sample_report()
    written = reports.write_all(report, tmp_path / "out")
    assert {p.name for p in written.values()} == {
        "report.json",
        "junit.xml",
        "report.html",
        "clusterforge.prom",
    }
    loaded = json.loads(written["json"].read_text())
    assert loaded == json.loads(json.dumps(report))
    assert loaded["schema"] == reports.SCHEMA
    assert loaded["summary"]["status_counts"]["fail"] == 1
    assert [e["host"] for e in loaded["outliers"]["flagged"]] == ["gpu-00"]
    # One node per line: grep-able by host.
    lines = written["json"].read_text().splitlines()
    assert sum('"host":"gpu-bad"' in line for line in lines) == 1
    assert not list((tmp_path / "out").glob("*.tmp"))


def test_junit_has_a_suite_per_node_and_maps_statuses(tmp_path):
    written = reports.write_all(sample_report(), tmp_path)
    root = ET.parse(written["junit"]).getroot()
    assert root.tag == "testsuites"
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert len(suites) == 9
    assert root.get("failures") == "1"
    assert root.get("errors") == "1"
    assert root.get("skipped") == "1"
    bad = suites["gpu-bad"]
    assert bad.get("failures") == "1"
    failure = bad.find("testcase[@name='gpu.xid']/failure")
    assert failure.get("message").startswith("fatal Xid 79")
    assert "GPU has fallen off the bus" in failure.text
    assert "remedy: drain the node" in failure.text
    gone = suites["gpu-gone"].find("testcase[@name='node.reachable']/error")
    assert "timed out" in gone.get("message")
    assert suites["gpu-warn"].find("testcase[@name='gpu.mig']/skipped") is not None
    assert "warning: 3 corrected" in suites["gpu-warn"].find("testcase[@name='gpu.ecc']/system-out").text
    outlier = suites["gpu-00"].find("testcase[@name='fleet.outlier.gpu.temperature_max_c']/system-out")
    assert "far above" in outlier.text


def test_junit_survives_control_characters_and_markup_in_tool_output(tmp_path):
    nasty = node(
        "gpu-nasty",
        checks=[
            check(
                "gpu.tool",
                "error",
                'nvidia-smi printed "\x1b[31m<b>&junk</b>\x00"',
                evidence={"command": "nvidia-smi", "lines": ["\x07bell ]]> <!-- x -->"]},
            )
        ],
    )
    written = reports.write_all(sample_report([nasty]), tmp_path)
    root = ET.parse(written["junit"]).getroot()
    error = root.find("testsuite[@name='gpu-nasty']/testcase/error")
    assert error.get("message") == 'nvidia-smi printed "[31m<b>&junk</b>"'
    assert "bell ]]> <!-- x -->" in error.text


def test_html_is_self_contained_escapes_evidence_and_lists_nodes(tmp_path):
    evil = node(
        "gpu-evil",
        checks=[check("gpu.tool", "error", "<script>alert(1)</script>", evidence={"lines": ["<img src=x>"]})],
    )
    written = reports.write_all(sample_report([evil]), tmp_path)
    html = written["html"].read_text()
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;img src=x&gt;" in html
    for needle in ("gpu-bad", "fatal Xid 79", "drain the node, reseat/replace the GPU", "gpu-gone", "gpu-05"):
        assert needle in html
    # Summary before failing nodes, failing nodes before passing ones.
    assert html.index("Checks failing across the fleet") < html.index("gpu-bad") < html.index("Passing nodes")
    assert "http://" not in html and "https://" not in html and "<link" not in html
    assert html.count("<script>") == 1  # only the inline filter


def test_prometheus_textfile_metrics(tmp_path):
    written = reports.write_all(sample_report(), tmp_path)
    families = {f.name: f for f in text_string_to_metric_families(written["prom"].read_text())}
    status = {
        (s.labels["node"], s.labels["status"]): s.value
        for s in families["clusterforge_node_validation_status"].samples
    }
    assert status[("gpu-bad", "fail")] == 1
    assert status[("gpu-gone", "error")] == 1
    assert len(status) == 9  # one series per node, never one per status
    failed = {(s.labels["node"], s.labels["check"]) for s in families["clusterforge_check_failed"].samples}
    assert failed == {("gpu-bad", "gpu.xid")}
    errored = {(s.labels["node"], s.labels["check"]) for s in families["clusterforge_check_errored"].samples}
    assert errored == {("gpu-gone", "node.reachable")}
    last = families["clusterforge_fleet_validation_last_run_timestamp_seconds"].samples[0].value
    assert last == 1796040009.0  # 2026-11-30T12:00:09Z
    nodes = {s.labels["status"]: s.value for s in families["clusterforge_validation_nodes"].samples}
    assert nodes == {"pass": 5.0, "warn": 2.0, "fail": 1.0, "error": 1.0, "skip": 0.0}
    outlier = families["clusterforge_fleet_outlier_robust_z"].samples
    assert [(s.labels["node"], s.labels["metric"]) for s in outlier] == [("gpu-00", "gpu.temperature_max_c")]


def test_table_lists_unhealthy_first(tmp_path):
    from clusterforge.validation.reports.table import render_table
    from rich.console import Console

    console = Console(record=True, width=200)
    render_table(sample_report(), console)
    text = console.export_text()
    assert text.index("gpu-bad") < text.index("gpu-gone") < text.index("gpu-warn") < text.index("gpu-01")
    assert "gpu.xid" in text and "fatal Xid 79" in text
    assert "summary: 5 pass, 2 warn, 1 fail, 1 error" in text
