"""ClusterForge's Prometheus rules: promtool loads and tests them, and they agree with the rest of
the project (the fatal Xid set of cfcore/xid.py, the check ids, the validation writer's metric
names, the exporters' metric names, docs/design.md's alert and record names)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from cfcore import checks, validation_metrics, xid
from patience import HANG_S

ROOT = Path(__file__).resolve().parents[3]
RULES = ROOT / "roles/prometheus/files/rules"
TESTS = ROOT / "tests/promtool"
EXPORTER_METRICS = ROOT / "tests/monitoring/exporter_metrics.yml"

ALERTS = {
    "GPUFatalXid",
    "GPUUncorrectableECC",
    "GPURemappedRowsPending",
    "GPURowRemapFailure",
    "GPUNVLinkDown",
    "FabricManagerDown",
    "IBPortDown",
    "IBPortFlapping",
    "NPUHealthNotOK",
    "NPUNICNetHealthFailed",
    "SharedMountMissing",
    "ValidationFailed",
    "ValidationStale",
    "NodeDown",
    "ExporterDown",
}
RECORDS = {
    "rack:clusterforge_gpus_healthy:sum",
    "rack:clusterforge_gpus:sum",
    "node_sku:clusterforge_npus_healthy:sum",
    "node_sku:clusterforge_npus:sum",
    "node_sku:npu_chip_health:ratio",
    "clusterforge:validation_status:count",
}
# Alerts the Molecule scenario expects within seconds: they must not wait.
IMMEDIATE = {"GPUFatalXid", "ValidationFailed"}


def promtool() -> str:
    found = shutil.which("promtool", path=f"{ROOT / '.venv/bin'}{os.pathsep}{os.environ.get('PATH', '')}")
    if not found:
        pytest.skip("promtool is not installed (scripts/setup-tools.sh puts it into .venv/bin)")
    return found


def rules(name: str) -> list[dict]:
    document = yaml.safe_load((RULES / name).read_text())
    return [rule for group in document["groups"] for rule in group["rules"]]


ALERT_RULES = rules("clusterforge-alerts.yml")
RECORD_RULES = rules("clusterforge-records.yml")


def test_promtool_checks_the_rule_files():
    done = subprocess.run(
        [promtool(), "check", "rules", *sorted(str(p) for p in RULES.glob("*.yml"))],
        capture_output=True,
        text=True,
        timeout=HANG_S,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS: 25 rules found" in done.stdout and "SUCCESS: 6 rules found" in done.stdout


def test_promtool_unit_tests_pass():
    files = sorted(p.name for p in TESTS.glob("*.test.yml"))
    assert files == ["alerts.test.yml", "records.test.yml"]
    done = subprocess.run(
        [promtool(), "test", "rules", *files],
        cwd=TESTS,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("SUCCESS") == len(files), done.stdout


def test_the_rules_are_the_contracts():
    assert {r["alert"] for r in ALERT_RULES} == ALERTS
    assert {r["record"] for r in RECORD_RULES} == RECORDS
    assert all("alert" not in r for r in RECORD_RULES) and all("record" not in r for r in ALERT_RULES)


@pytest.mark.parametrize("rule", ALERT_RULES, ids=lambda r: f"{r['alert']}-{r['labels'].get('source')}")
def test_every_alert_has_severity_summary_and_remedy(rule):
    assert rule["labels"]["severity"] in {"critical", "warning"}
    assert rule["labels"]["source"] in {"exporter", "validation"}
    assert set(rule["annotations"]) == {"summary", "remedy"}
    assert "{{ $labels.node }}" in rule["annotations"]["summary"]
    assert len(rule["annotations"]["remedy"]) > 30
    assert "for" in rule
    if rule["labels"]["source"] == "validation" or rule["alert"] in IMMEDIATE:
        assert rule["for"] == "0m", "validation- and Xid-based alerts fire at once"


def test_fatal_xids_are_cfcores():
    (rule,) = [r for r in ALERT_RULES if r["alert"] == "GPUFatalXid" and r["labels"]["source"] == "exporter"]
    in_rule = {int(code) for code in re.findall(r"DCGM_FI_DEV_XID_ERRORS == (\d+)", rule["expr"])}
    assert in_rule == {code for code, entry in xid.XIDS.items() if entry[1] == xid.FAIL}
    # Nothing else compares the Xid (a stray `>=` would widen the set).
    assert len(re.findall(r"DCGM_FI_DEV_XID_ERRORS", rule["expr"])) == len(in_rule)


def test_validation_rules_name_real_check_ids():
    known = {
        c
        for name in dir(checks)
        if name.endswith("_CHECKS")
        for c in getattr(checks, name)
        if isinstance(getattr(checks, name), tuple)
    }
    used = {c for r in ALERT_RULES for c in re.findall(r'check="([^"]+)"', r["expr"])}
    assert used == {
        "gpu.xid",
        "gpu.ecc",
        "gpu.remapped_rows",
        "gpu.nvlink",
        "gpu.fabric_manager",
        "ib.port_state",
        "npu.health",
        "npu.nic_net_health",
        "node.mounts",
    }
    assert used <= known, used - known


PROMQL_WORDS = {
    "by", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool", "offset",
    "sum", "max", "min", "avg", "count", "topk", "bottomk", "count_values", "increase", "rate", "time",
    "absent", "changes", "delta",
}  # fmt: skip


def metric_names(expr: str) -> set[str]:
    """The series names an expression selects (identifiers that are no keyword, function or label)."""
    without_strings = re.sub(r'"[^"]*"', '""', expr)
    without_groupings = re.sub(r"\b(by|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", without_strings)
    without_matchers = re.sub(r"\{[^}]*\}", "", without_groupings)
    without_ranges = re.sub(r"\[[^\]]*\]", "", without_matchers)
    names = set(re.findall(r"[A-Za-z_:][A-Za-z0-9_:]*", without_ranges))
    return {n for n in names if n not in PROMQL_WORDS and not re.fullmatch(r"\d.*", n)}


def test_metric_name_extraction():
    expr = (
        'sum by (rack) (max by (instance, rack) (foo{vendor="x"}) and on (instance) (up == 1)) or 0 * bar[5m]'
    )
    assert metric_names(expr) == {"foo", "up", "bar"}


def test_rules_use_only_metrics_that_exist():
    exporters = yaml.safe_load(EXPORTER_METRICS.read_text())
    known = set(exporters["node_exporter"]) | set(exporters["npu_exporter"]) | set(exporters["prometheus"])
    writer = {
        getattr(validation_metrics, n)
        for n in (
            "CHECK_STATUS",
            "STATUS",
            "LAST_RUN",
            "DURATION",
            "ACCELERATORS",
            "METRIC",
            "EXPECTED_MOUNT",
        )
    }
    for rule in ALERT_RULES + RECORD_RULES:
        names = metric_names(rule["expr"])
        assert names, rule
        # dcgm-exporter's fields are DCGM_FI_* (the counters file of role exporters lists them).
        unknown = {n for n in names if n not in known | writer and not n.startswith("DCGM_FI_DEV_")}
        assert not unknown, f"{rule.get('alert') or rule.get('record')}: {unknown}"


def test_the_needs_hardware_names_are_node_exporter_names():
    exporters = yaml.safe_load(EXPORTER_METRICS.read_text())
    assert set(exporters["node_exporter_needs_hardware"]) <= set(exporters["node_exporter"])
    for key in ("node_exporter", "npu_exporter", "prometheus"):
        assert len(exporters[key]) == len(set(exporters[key])), key


def test_promtool_tests_cover_every_alert_firing_and_silent():
    document = yaml.safe_load((TESTS / "alerts.test.yml").read_text())
    cases = [case for test in document["tests"] for case in test["alert_rule_test"]]
    fired = {c["alertname"] for c in cases if c.get("exp_alerts")}
    silent = {c["alertname"] for c in cases if not c.get("exp_alerts")}
    assert fired == ALERTS
    assert silent == ALERTS
    # Both sides of every two-sided alert fire in some case.
    sides = {(c["alertname"], a["exp_labels"]["source"]) for c in cases for a in c.get("exp_alerts") or []}
    assert sides >= {(r["alert"], r["labels"]["source"]) for r in ALERT_RULES}
    for case in cases:
        for alert in case.get("exp_alerts") or []:
            assert set(alert["exp_annotations"]) == {"summary", "remedy"}, case
    records = yaml.safe_load((TESTS / "records.test.yml").read_text())
    tested = {t["expr"] for test in records["tests"] for t in test["promql_expr_test"]}
    assert tested == RECORDS
