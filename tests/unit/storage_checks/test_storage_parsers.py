"""cfcore.parsers.storage: juicefs status (0.16 to 1.x) and ceph health/status (JSON and text)."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
from cfcore.parsers import KINDS, ParseError, parse
from cfcore.parsers.storage import parse_ceph_health, parse_juicefs_status, parse_time, session_expiry

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "storage"


def text(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_juicefs_1x_sessions_after_log_lines():
    status = parse_juicefs_status(text("juicefs-status-1.1.json"))
    assert status["setting"]["Name"] == "jfs" and status["setting"]["BlockSize"] == 4096
    first, second = status["sessions"]
    assert first == {
        "sid": 3,
        "hostname": "cfmol-storage-c1",
        "mountpoint": "/mnt/jfs",
        "version": "1.1.5+2024-10-11.8a2a8f3",
        "expire": "2026-12-01T16:01:02Z",
        "heartbeat": None,
        "process_id": 812,
    }
    assert session_expiry(second) == datetime.datetime(2026, 12, 1, 8, 0, 58, tzinfo=datetime.UTC)


def test_juicefs_016_hostname_and_heartbeat():
    status = parse_juicefs_status(text("juicefs-status-0.16.txt"))
    (session,) = status["sessions"]
    assert session["hostname"] == "gpu-r1-n01" and session["expire"] is None
    # 0.16 cleans a session 5 minutes after its last heartbeat.
    assert session_expiry(session) == datetime.datetime(2026, 12, 1, 16, 4, 30, tzinfo=datetime.UTC)


def test_juicefs_no_sessions_and_trailing_log():
    out = '{"Setting": {"Name": "v"}}\n2026/12/01 16:00:00.1 juicefs[1] <INFO>: done\n'
    assert parse_juicefs_status(out) == {"setting": {"Name": "v"}, "sessions": []}


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ("", "empty input"),
        ("<html><body>502</body></html>", "HTML"),
        ("juicefs: command not found\n", "no JSON object"),
        ('{"Name": "x"}', "Setting"),
        ('{\n  "Setting": {"Name": "x"},\n  ...\n}', "broken JSON"),
    ],
)
def test_juicefs_garbage(body, why):
    with pytest.raises(ParseError) as err:
        parse_juicefs_status(body)
    assert why in str(err.value)


def test_juicefs_fatal_line_says_why():
    with pytest.raises(ParseError) as err:
        parse_juicefs_status(text("juicefs-status-fatal.txt"))
    assert "database is not formatted" in str(err.value) and err.value.line == 2


def test_parse_time_forms():
    utc = datetime.UTC
    assert parse_time("2026-12-01T16:05:47Z") == datetime.datetime(2026, 12, 1, 16, 5, 47, tzinfo=utc)
    nano = parse_time("2026-12-01T16:05:47.123456789+08:00")
    assert nano == datetime.datetime(2026, 12, 1, 8, 5, 47, 123456, tzinfo=utc)
    assert parse_time("2026-12-01 16:05:47 +0800 CST") == datetime.datetime(2026, 12, 1, 8, 5, 47, tzinfo=utc)
    assert parse_time("2026-12-01T16:05:47", local_tz=utc).tzinfo is utc
    assert parse_time("yesterday") is None and parse_time(None) is None


def test_ceph_health_json_forms():
    warn = parse_ceph_health(text("ceph-health-warn.json"))
    assert warn["status"] == "HEALTH_WARN"
    assert warn["checks"]["OSD_NEARFULL"] == {"severity": "HEALTH_WARN", "summary": "1 nearfull osd(s)"}
    err = parse_ceph_health(text("ceph-health-err.json"))
    assert err["status"] == "HEALTH_ERR" and err["checks"]["PG_DAMAGED"]["severity"] == "HEALTH_ERR"
    assert parse_ceph_health(text("ceph-health-ok.json")) == {
        "status": "HEALTH_OK",
        "checks": {},
        "source": "json",
    }
    assert parse_ceph_health(text("ceph-status-pacific.json"))["status"] == "HEALTH_OK"
    jewel = parse_ceph_health(text("ceph-health-jewel.json"))
    assert jewel["status"] == "HEALTH_WARN"
    assert jewel["checks"]["summary_1"]["summary"] == "too many PGs per OSD (352 > max 300)"


def test_ceph_health_text_forms():
    plain = parse_ceph_health(text("ceph-health.txt"))
    assert plain["status"] == "HEALTH_WARN" and plain["source"] == "health"
    assert next(c["summary"] for c in plain["checks"].values()) == "1 osds down"
    assert len(plain["checks"]) == 2
    detail = parse_ceph_health(text("ceph-health-detail.txt"))
    assert detail["status"] == "HEALTH_ERR" and detail["source"] == "health-detail"
    assert detail["checks"]["OSD_FULL"] == {
        "severity": "HEALTH_ERR",
        "summary": "1 full osd(s)",
        "detail": ["osd.0 is full"],
    }
    assert len(detail["checks"]["POOL_FULL"]["detail"]) == 2
    status = parse_ceph_health("Inferring fsid 5a9b\n" + text("ceph-s.txt"))
    assert status["status"] == "HEALTH_WARN" and status["source"] == "status"
    assert [c["summary"] for c in status["checks"].values()] == [
        "mon cfmol-storage-ceph is low on available space",
        "1 pool(s) have no replicas configured",
    ]
    assert parse_ceph_health("HEALTH_OK\n") == {"status": "HEALTH_OK", "checks": {}, "source": "health"}


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ("", "empty input"),
        ("hello world\n", "no HEALTH_OK"),
        ('{"fsid": "x"}', "without a health status"),
        ('{"status": "HEALTH_MAYBE"}', "HEALTH_MAYBE"),
    ],
)
def test_ceph_garbage(body, why):
    with pytest.raises(ParseError) as err:
        parse_ceph_health(body)
    assert why in str(err.value)


def test_ceph_own_error_says_so():
    with pytest.raises(ParseError) as err:
        parse_ceph_health(text("ceph-error.txt"))
    assert "ceph failed" in str(err.value) and "keyring" in str(err.value)


def test_kinds_registered_for_facts_parse():
    assert {"juicefs-status", "ceph-health"} <= set(KINDS)
    assert parse("ceph-health", "HEALTH_OK")["status"] == "HEALTH_OK"
    with pytest.raises(ParseError) as err:
        parse("juicefs-status", "nope")
    assert err.value.fix
