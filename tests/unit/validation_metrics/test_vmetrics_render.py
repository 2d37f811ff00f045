"""cfcore.validation_metrics: a node result as text exposition lines (docs/design.md, Monitoring)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from cfcore.collect import CaptureSource
from cfcore.validate import validate_node
from cfcore.validation_metrics import (
    METRIC_NAMES,
    escape_label_value,
    format_value,
    incomplete_reason,
    render,
)
from prometheus_client.parser import text_string_to_metric_families

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "checks"))
from chkdata import CAPTURES, h100_expected

# One line of the text exposition format: a sample (name, optional {labels}, value) or HELP/TYPE.
_LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"'
SAMPLE = re.compile(
    rf"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{{(?P<labels>{_LABEL}(?:,{_LABEL})*)?\}})? "
    r"(?P<value>[-+]?(?:[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?|NaN|Inf))$"
)
META = re.compile(r"^# (?P<kind>HELP|TYPE) (?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*) (?P<text>.+)$")

NODE_RESULT = {
    "host": "gpu-r1-n01",
    "node_sku": "hgx-h100-8gpu",
    "level": "quick",
    "status": "fail",
    # Out of order on purpose: the output is sorted by check id.
    "checks": [
        {"id": "node.root_fs", "status": "pass", "message": "120 GiB free"},
        {"id": "gpu.xid", "status": "fail", "message": "fatal Xid 79"},
        {"id": "gpu.mig", "status": "skip", "message": "skipped by skip_checks"},
        {"id": "ib.port_state", "status": "warn", "message": "port 2 polling"},
    ],
    "metrics": {
        "gpu.xid_fatal_count": 1,
        "gpu.temperature_max_c": 41.5,
        "ib.rate_gbps_min": 400,
        "gpu.mig_enabled": True,  # a flag, not a figure: no series
        "node.note": "text",  # not numeric: no series
    },
    "facts": {"vendor": "nvidia", "accelerator_count": 7},
    "source": {"kind": "live", "path": None},
    "collected_at": "2026-11-30T12:00:00Z",
    "duration_s": 1.25,
}

EXPECTED = """\
# HELP clusterforge_validation_check_status 1 for each validation check with its current status (pass, warn, fail, error, skip).
# TYPE clusterforge_validation_check_status gauge
clusterforge_validation_check_status{check="gpu.mig",area="gpu",status="skip",level="quick"} 1
clusterforge_validation_check_status{check="gpu.xid",area="gpu",status="fail",level="quick"} 1
clusterforge_validation_check_status{check="ib.port_state",area="ib",status="warn",level="quick"} 1
clusterforge_validation_check_status{check="node.root_fs",area="node",status="pass",level="quick"} 1
# HELP clusterforge_validation_status 1 for the node's overall validation status (fail > error > warn > pass; skip: nothing judged).
# TYPE clusterforge_validation_status gauge
clusterforge_validation_status{status="fail",level="quick"} 1
# HELP clusterforge_validation_last_run_timestamp_seconds Unix time the node's last complete validation run started.
# TYPE clusterforge_validation_last_run_timestamp_seconds gauge
clusterforge_validation_last_run_timestamp_seconds{level="quick"} 1796040000
# HELP clusterforge_validation_duration_seconds Seconds the node's last complete validation run took.
# TYPE clusterforge_validation_duration_seconds gauge
clusterforge_validation_duration_seconds{level="quick"} 1.25
# HELP clusterforge_validation_accelerators Accelerators the last validation found on the node (vendor from the SKU).
# TYPE clusterforge_validation_accelerators gauge
clusterforge_validation_accelerators{vendor="nvidia",level="quick"} 7
# HELP clusterforge_validation_metric A numeric figure of the node's last validation (metric: its dotted name, e.g. gpu.count).
# TYPE clusterforge_validation_metric gauge
clusterforge_validation_metric{metric="gpu.temperature_max_c",level="quick"} 41.5
clusterforge_validation_metric{metric="gpu.xid_fatal_count",level="quick"} 1
clusterforge_validation_metric{metric="ib.rate_gbps_min",level="quick"} 400
"""  # noqa: E501


def parse(text: str) -> list:
    """(name, {label: value}, value) of each sample; every line must be a sample, HELP or TYPE."""
    samples = []
    for line in text.splitlines():
        meta = META.match(line)
        if meta:
            assert meta.group("name") in METRIC_NAMES, line
            if meta.group("kind") == "TYPE":
                assert meta.group("text") == "gauge", line
            continue
        found = SAMPLE.match(line)
        assert found, f"not an exposition line: {line!r}"
        labels = dict(
            re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', found.group("labels") or "")
        )
        samples.append((found.group("name"), labels, found.group("value")))
    return samples


def test_render_gives_the_exact_lines_in_a_fixed_order():
    assert render(NODE_RESULT) == EXPECTED
    shuffled = {**NODE_RESULT, "checks": list(reversed(NODE_RESULT["checks"]))}
    shuffled["metrics"] = dict(reversed(list(NODE_RESULT["metrics"].items())))
    assert render(shuffled) == EXPECTED


def test_every_written_name_is_in_metric_names_and_every_series_has_level():
    samples = parse(render(NODE_RESULT))
    assert {name for name, _, _ in samples} <= set(METRIC_NAMES)
    assert all(labels["level"] == "quick" for _, labels, _ in samples)
    assert len(samples) == 4 + 1 + 1 + 1 + 1 + 3


def test_a_cpu_node_has_no_accelerator_series_and_empty_families_are_left_out():
    cpu = {**NODE_RESULT, "facts": {"vendor": None, "accelerator_count": 0}, "metrics": {}, "level": "full"}
    text = render(cpu)
    assert "clusterforge_validation_accelerators" not in text
    assert "clusterforge_validation_metric" not in text.replace("clusterforge_validation_metric_", "")
    assert 'clusterforge_validation_status{status="fail",level="full"} 1' in text.splitlines()


def test_a_result_without_collected_at_or_duration_uses_now_and_no_duration():
    bare = {"level": "quick", "status": "error", "checks": [{"id": "healthcheck.timeout", "status": "error"}]}
    lines = render(bare, now=1700000000.5).splitlines()
    assert 'clusterforge_validation_last_run_timestamp_seconds{level="quick"} 1700000000.5' in lines
    assert not any(line.startswith("clusterforge_validation_duration_seconds") for line in lines)
    assert (
        'clusterforge_validation_check_status{check="healthcheck.timeout",area="healthcheck",'
        'status="error",level="quick"} 1'
    ) in lines


def test_label_values_are_escaped():
    assert escape_label_value('a\\b"c\nd') == 'a\\\\b\\"c\\nd'
    odd = {**NODE_RESULT, "metrics": {'we"ird\\name\nx': 2}, "checks": [{"id": 'x."y"', "status": "pass"}]}
    text = render(odd)
    assert (
        'clusterforge_validation_metric{metric="we\\"ird\\\\name\\nx",level="quick"} 2' in text.splitlines()
    )
    samples = parse(text)
    assert ("clusterforge_validation_check_status", "x") in {(n, lab.get("area")) for n, lab, _ in samples}
    # Python's client parses it back to the original strings.
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert families["clusterforge_validation_metric"].samples[0].labels["metric"] == 'we"ird\\name\nx'
    assert families["clusterforge_validation_check_status"].samples[0].labels["check"] == 'x."y"'


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (3, "3"),
        (2.0, "2"),
        (0.1, "0.1"),
        (-1.5e-07, "-1.5e-07"),
        (1e20, "1e+20"),
        (float("nan"), "NaN"),
        (float("inf"), "+Inf"),
        (float("-inf"), "-Inf"),
        (True, "1"),
    ],
)
def test_values_are_written_as_prometheus_reads_them(value, text):
    assert format_value(value) == text


def test_a_real_validation_of_a_capture_renders_to_valid_exposition():
    result = validate_node(CaptureSource(str(CAPTURES / "h100-healthy")), h100_expected(required_mounts=[]))
    text = render(result)
    samples = parse(text)
    checks = {
        labels["check"]: labels["status"] for name, labels, _ in samples if name.endswith("check_status")
    }
    assert checks == {check["id"]: check["status"] for check in result["checks"]}
    assert ("clusterforge_validation_accelerators", "nvidia", "8") in {
        (n, lab.get("vendor"), v) for n, lab, v in samples
    }
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert set(families) <= set(METRIC_NAMES)
    figures = {s.labels["metric"]: s.value for s in families["clusterforge_validation_metric"].samples}
    assert figures["gpu.count"] == 8


def test_only_a_complete_live_run_is_written():
    assert incomplete_reason(NODE_RESULT) is None
    assert incomplete_reason(NODE_RESULT, check_mode=True).startswith("check mode")
    assert "only_checks" in incomplete_reason(NODE_RESULT, only_checks=["ib.*"])
    assert incomplete_reason(NODE_RESULT, only_checks=[]) is None  # none chosen is not a partial run
    capture = {**NODE_RESULT, "source": {"kind": "capture", "path": "/tmp/cap"}}
    assert "capture:/tmp/cap" in incomplete_reason(capture)
    assert "live" in incomplete_reason({**NODE_RESULT, "source": "capture:/tmp/cap"})
    assert incomplete_reason({**NODE_RESULT, "source": "live"}) is None
    assert "not recorded" in incomplete_reason({k: v for k, v in NODE_RESULT.items() if k != "source"})
