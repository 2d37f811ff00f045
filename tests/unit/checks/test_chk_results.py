"""The result model: statuses, overall status, merged per-device findings, the Xid table."""

from __future__ import annotations

import pytest
from cfcore import xid
from cfcore.results import evidence, failed, merge, passed, result, warned, worst


def test_overall_status_never_counts_error_as_pass():
    assert worst(["pass", "error", "skip"]) == "error"
    assert worst(["pass", "error", "fail"]) == "fail"
    assert worst(["pass", "warn"]) == "warn"
    assert worst(["skip", "pass"]) == "pass"
    assert worst(["skip", "skip"]) == "skip"
    assert worst([]) == "error"  # nothing checked is never a silent skip


def test_unknown_status_is_refused():
    with pytest.raises(ValueError, match="unknown check status"):
        result("gpu.count", "ok", "x")


def test_merge_keeps_the_worst_findings_and_their_evidence():
    findings = [
        warned("gpu.xid", "Xid 13 on GPU 0", evidence("dmesg", ["line 13"]), "look at the job"),
        failed("gpu.xid", "Xid 79 on GPU 3", evidence("dmesg", ["line 79"]), "reseat"),
        failed("gpu.xid", "Xid 48 on GPU 5", evidence("dmesg", ["line 48"]), "reset"),
    ]
    merged = merge("gpu.xid", findings, "no Xids")
    assert merged["status"] == "fail"
    assert merged["message"] == "Xid 79 on GPU 3; Xid 48 on GPU 5"
    assert merged["evidence"] == {"command": "dmesg", "lines": ["line 79", "line 48"]}
    assert merged["remedy"] == "reseat; reset"
    assert merge("gpu.xid", [], "no Xids") == passed("gpu.xid", "no Xids")


def test_evidence_is_kept_short():
    found = evidence("dmesg", [f"line {n}" for n in range(100)])
    assert len(found["lines"]) == 41 and found["lines"][-1] == "... (60 more lines)"


def test_xid_table_is_documented_and_consistent():
    assert "docs.nvidia.com/deploy/xid-errors" in xid.SOURCE
    for code in (48, 63, 64, 74, 79, 92, 94, 95, 119, 120, 140):
        name, severity, why, remedy = xid.classify(code)
        assert severity == "fail" and name and why and remedy
    for code in (13, 31, 43, 45):
        assert xid.classify(code)[1] == "warn"
    assert xid.classify(12345)[1] == "warn"


def test_merge_of_thousands_of_findings_names_a_few_and_counts_the_rest():
    from cfcore.results import failed, merge

    findings = [
        failed("gpu.xid", f"Xid 79 on 0000:{n:04x}:00.0", {"command": "dmesg", "lines": ["x"]})
        for n in range(5000)
    ]
    merged = merge("gpu.xid", findings, "no Xid")
    assert merged["status"] == "fail"
    assert merged["message"].count("Xid 79") == 10 and merged["message"].endswith("; ... and 4990 more")
    assert len(merged["evidence"]["lines"]) == 41  # 40 lines and the count of the others
