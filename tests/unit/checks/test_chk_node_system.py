"""node.time_sync, node.root_fs and node.os_release: every node's own checks, accelerators or not."""

from __future__ import annotations

import shutil

import pytest
from cfcore.checks import node
from cfcore.collect import CaptureSource, Collector
from cfcore.outputs import Output
from cfcore.validate import validate_node
from chkdata import CAPTURES, CPU_SKU, h100_expected

TRACKING_SYNCED = """Reference ID    : C0A80001 (192.168.0.1)
Stratum         : 3
Ref time (UTC)  : Mon Dec 01 10:00:00 2025
System time     : 0.000031000 seconds fast of NTP time
Last offset     : +0.000002000 seconds
Leap status     : Normal
"""
TRACKING_UNSYNCED = """Reference ID    : 00000000 ()
Stratum         : 0
Ref time (UTC)  : Thu Jan 01 00:00:00 1970
System time     : 0.000000000 seconds slow of NTP time
Leap status     : Not synchronised
"""
TRACKING_OFF = TRACKING_SYNCED.replace("0.000031000 seconds fast", "0.250000000 seconds slow")


def out(command: str, text: str = "", state: str = "ok", error: str = "") -> Output:
    rc = {"ok": 0, "not_found": 127, "failed": 1}.get(state, 1)
    return Output(command, state, text=text, rc=rc, error=error)


CHRONYC = "chronyc -n tracking"
TIMEDATECTL = "timedatectl show -p NTP -p NTPSynchronized"
NOT_FOUND = out(CHRONYC, state="not_found", error="chronyc not found on PATH")


def test_synchronised_chrony_passes_with_its_reference_and_offset():
    result = node.node_time_sync(out(CHRONYC, TRACKING_SYNCED))
    assert result["status"] == "pass"
    assert result["message"] == "synchronised by chronyd to C0A80001 (192.168.0.1), offset +0.000031 s"
    assert "Leap status     : Normal" in result["evidence"]["lines"]


def test_chrony_running_but_not_synchronised_warns_with_the_remedy():
    result = node.node_time_sync(out(CHRONYC, TRACKING_UNSYNCED))
    assert result["status"] == "warn"
    assert "runs but is not synchronised yet" in result["message"]
    assert "base_chrony_servers" in result["remedy"]


def test_offset_over_a_tenth_of_a_second_warns():
    result = node.node_time_sync(out(CHRONYC, TRACKING_OFF))
    assert result["status"] == "warn" and "0.250 s off NTP time" in result["message"]


def test_chronyc_without_a_daemon_fails_no_time_service():
    chrony = out(CHRONYC, state="failed", error="chronyc -n tracking exited 1: 506 Cannot talk to daemon")
    timedatectl = out(TIMEDATECTL, state="failed", error="System has not been booted with systemd")
    result = node.node_time_sync(chrony, timedatectl)
    assert result["status"] == "fail" and "no time service is running" in result["message"]
    assert "chrony" in result["remedy"]


def test_timedatectl_stands_in_when_chronyc_is_absent():
    def sync(text):
        return node.node_time_sync(NOT_FOUND, out(TIMEDATECTL, text))

    assert sync("NTP=yes\nNTPSynchronized=yes\n")["status"] == "pass"
    waiting = sync("NTP=yes\nNTPSynchronized=no\n")
    assert waiting["status"] == "warn" and "not synchronised yet" in waiting["message"]
    off = sync("NTP=no\nNTPSynchronized=no\n")
    assert off["status"] == "fail" and "NTP is off" in off["message"]
    assert sync("Failed to query server\n")["status"] == "error"


def test_neither_tool_is_error():
    result = node.node_time_sync(NOT_FOUND, out(TIMEDATECTL, state="not_found", error="not found"))
    assert result["status"] == "error" and "neither chronyc nor timedatectl" in result["message"]


def test_chronyc_printing_garbage_is_error():
    assert node.node_time_sync(out(CHRONYC, "<html>proxy</html>\n"))["status"] == "error"


def space(free_gib: float, total_gib: float = 100.0) -> Output:
    data = {"mount": "/", "total_kib": int(total_gib * 1024 * 1024), "avail_kib": int(free_gib * 1024 * 1024)}
    return Output("statvfs /", "ok", data=data)


@pytest.mark.parametrize("free,status", [(5.0, "fail"), (15.0, "warn"), (20.0, "pass"), (80.0, "pass")])
def test_root_fs_against_the_minimum(free, status):
    result, metrics = node.node_root_fs(space(free), 10.0)
    assert result["status"] == status
    assert metrics == {"node.root_free_gib": free}
    assert f"{free:.1f} GiB free of 100.0 GiB on /" in result["message"]


def test_root_fs_from_a_df_capture(tmp_path):
    shutil.copy(CAPTURES / "h100-healthy" / "meta.json", tmp_path / "meta.json")
    (tmp_path / "df-P-k-root.txt").write_text(
        "Filesystem     1024-blocks     Used Available Capacity Mounted on\n"
        "/dev/vda         264212084 258000000   6212084      98% /\n"
    )
    space = Collector(CaptureSource(str(tmp_path))).root_fs()
    assert space.data == {"mount": "/", "total_kib": 264212084, "avail_kib": 6212084}
    result, _metrics = node.node_root_fs(space, 10.0)
    assert result["status"] == "fail" and result["evidence"]["file"] == "df-P-k-root.txt"
    assert result["evidence"]["lines"][1].startswith("/dev/vda")


def test_root_fs_df_garbage_or_missing_is_error(tmp_path):
    (tmp_path / "df-P-k-root.txt").write_text("df: /: No such file or directory\n")
    garbage = Collector(CaptureSource(str(tmp_path))).root_fs()
    assert node.node_root_fs(garbage, 10.0)[0]["status"] == "error"
    (tmp_path / "df-P-k-root.txt").unlink()
    missing = Collector(CaptureSource(str(tmp_path))).root_fs()
    result = node.node_root_fs(missing, 10.0)[0]
    assert result["status"] == "error" and "df-P-k-root.txt is not in the capture" in result["message"]


DEBIAN = 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nNAME="Debian GNU/Linux"\nVERSION_ID="12"\nID=debian\n'
PLAN = {"id": "debian", "version_id": "12", "text": "debian 12"}


def test_os_release_as_planned_passes_and_a_point_release_counts():
    assert node.node_os_release(out("/etc/os-release", DEBIAN), PLAN)["status"] == "pass"
    ubuntu = 'ID=ubuntu\nVERSION_ID="22.04"\n'
    plan = {"id": "ubuntu", "version_id": "22", "text": "ubuntu 22"}
    assert node.node_os_release(out("/etc/os-release", ubuntu), plan)["status"] == "pass"
    rhel = 'ID="rhel"\nVERSION_ID="9.4"\n'
    assert (
        node.node_os_release(out("/etc/os-release", rhel), {"id": "rhel", "version_id": "9"})["status"]
        == "pass"
    )


def test_os_release_other_than_planned_fails():
    result = node.node_os_release(out("/etc/os-release", DEBIAN.replace('"12"', '"11"')), PLAN)
    assert result["status"] == "fail"
    assert result["message"] == "the node runs debian 11, the plan says debian 12"
    wrong_id = node.node_os_release(out("/etc/os-release", "ID=ubuntu\nVERSION_ID=12\n"), PLAN)
    assert wrong_id["status"] == "fail"
    # 120 is not a point release of 12.
    assert (
        node.node_os_release(out("/etc/os-release", "ID=debian\nVERSION_ID=120\n"), PLAN)["status"] == "fail"
    )


def test_os_release_without_a_plan_skips_and_unreadable_is_error():
    skipped = node.node_os_release(None, None)
    assert skipped["status"] == "skip"
    assert skipped["message"] == 'no os_release planned (set os_release, e.g. "debian 12")'
    assert node.node_os_release(out("/etc/os-release", "garbage\n"), PLAN)["status"] == "error"
    missing = out("/etc/os-release", state="not_found", error="/etc/os-release does not exist")
    assert node.node_os_release(missing, PLAN)["status"] == "error"


def test_a_node_without_accelerators_gets_a_real_verdict_from_its_node_checks(tmp_path):
    capture = tmp_path / "ctl"
    shutil.copytree(CAPTURES / "h100-healthy", capture)
    expected = h100_expected(
        node_sku="cpu-generic", sku=CPU_SKU, required_mounts=[], os_release="ubuntu 22.04"
    )
    checks = {c["id"]: c for c in validate_node(CaptureSource(str(capture)), expected)["checks"]}
    assert [checks[c]["status"] for c in ("node.time_sync", "node.root_fs", "node.os_release")] == [
        "pass"
    ] * 3
    (capture / "chronyc-tracking.txt").write_text(TRACKING_UNSYNCED)
    result = validate_node(CaptureSource(str(capture)), expected)
    assert result["status"] == "warn"


def test_time_sync_falls_back_to_the_timedatectl_capture(tmp_path):
    capture = tmp_path / "node"
    shutil.copytree(CAPTURES / "h100-healthy", capture)
    (capture / "chronyc-tracking.txt").unlink()
    (capture / "chronyc-tracking.txt.err").write_text("rc: 127\nchronyc not found on PATH\n")
    (capture / "timedatectl-ntp.txt").write_text("NTP=no\nNTPSynchronized=no\n")
    checks = {c["id"]: c for c in validate_node(CaptureSource(str(capture)), h100_expected())["checks"]}
    assert checks["node.time_sync"]["status"] == "fail"
    assert checks["node.time_sync"]["evidence"]["file"] == "timedatectl-ntp.txt"
