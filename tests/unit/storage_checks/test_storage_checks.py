"""storage.juicefs_session, storage.ceph_health, node.mounts with types and the writability probe."""

from __future__ import annotations

import datetime
import os
import stat
import sys

import pytest
from cfcore.checks import node, storage
from cfcore.outputs import Output
from cfcore.parsers.storage import parse_ceph_health, parse_juicefs_status

NOW = datetime.datetime(2026, 12, 1, 16, 0, 0, tzinfo=datetime.UTC)
MOUNT = {
    "path": "/mnt/jfs",
    "meta_url": "redis://10.0.3.10:6379/1",
    "env_file": "/etc/juicefs/jfs.env",
    "volume": "jfs",
}


def status(sessions) -> Output:
    text = f'{{"Setting": {{"Name": "jfs"}}, "Sessions": {sessions}}}'
    return Output("juicefs status redis://10.0.3.10:6379/1", "ok", text=text, data=parse_juicefs_status(text))


def session(host="c1", path="/mnt/jfs", expire="2026-12-01T16:01:00Z"):
    fields = f'"Sid": 7, "Expire": "{expire}", "HostName": "{host}", "MountPoint": "{path}", "ProcessID": 9'
    return "[{" + fields + "}]"


def test_juicefs_session_pass_fail_error_skip():
    ok = storage.storage_juicefs_session([MOUNT], {"/mnt/jfs": [status(session())]}, ["c1.lab", "c1"], NOW)
    assert ok["status"] == "pass" and "Sid 7" in ok["evidence"]["lines"][0]
    fqdn = storage.storage_juicefs_session([MOUNT], {"/mnt/jfs": [status(session("c1.lab"))]}, ["c1"], NOW)
    assert fqdn["status"] == "pass"
    none = storage.storage_juicefs_session([MOUNT], {"/mnt/jfs": [status(session("c2"))]}, ["c1"], NOW)
    assert none["status"] == "fail"
    assert "mount not registered: restart juicefs-jfs.service" in none["message"]
    expired = session(expire="2026-12-01T15:00:00Z")
    old = storage.storage_juicefs_session([MOUNT], {"/mnt/jfs": [status(expired)]}, ["c1"], NOW)
    assert old["status"] == "fail" and "expired" in old["message"]
    missing = Output(
        "juicefs status redis://10.0.3.10:6379/1", "not_found", error="juicefs not found on PATH"
    )
    err = storage.storage_juicefs_session([MOUNT], {"/mnt/jfs": [missing]}, ["c1"], NOW)
    assert err["status"] == "error" and "juicefs not found" in err["message"]
    assert storage.storage_juicefs_session([], {}, ["c1"], NOW)["status"] == "skip"


def test_ceph_health_statuses():
    plan = {
        "cluster": "ceph",
        "client": "fsuser",
        "conf": "/etc/ceph/ceph.conf",
        "keyring": "/etc/ceph/ceph.client.fsuser.keyring",
    }

    def out(text):
        return Output("ceph health", "ok", text=text, data=parse_ceph_health(text))

    assert storage.storage_ceph_health(out('{"status": "HEALTH_OK", "checks": {}}'), plan)["status"] == "pass"
    warn = storage.storage_ceph_health(
        out(
            '{"status": "HEALTH_WARN", "checks": {"OSD_DOWN": {"severity": "HEALTH_WARN", '
            '"summary": {"message": "1 osds down"}}}}'
        ),
        plan,
    )
    assert warn["status"] == "warn" and "OSD_DOWN: HEALTH_WARN 1 osds down" in warn["evidence"]["lines"]
    assert storage.storage_ceph_health(out("HEALTH_ERR 1 full osd(s)"), plan)["status"] == "fail"
    gone = storage.storage_ceph_health(
        None, plan, "the keyring /etc/ceph/ceph.client.fsuser.keyring does not exist"
    )
    assert gone["status"] == "error" and "/etc/ceph/ceph.client.fsuser.keyring" in gone["message"]
    hung = Output("ceph health", "timeout", rc=124, error="ceph timed out after 20 s")
    assert storage.storage_ceph_health(hung, plan)["status"] == "error"
    assert storage.storage_ceph_health(None, None)["status"] == "skip"
    argv = storage.ceph_health_argv(plan)
    assert (
        argv[:3] == ("ceph", "--cluster", "ceph")
        and "--connect-timeout" in argv
        and argv[-3:] == ("health", "--format", "json")
    )


def test_scrub_and_env_file(tmp_path):
    env = tmp_path / "jfs.env"
    env.write_text('# juicefs\nMETA_PASSWORD="s3cr3t pw"\nexport ACCESS_KEY=ak\n')
    os.chmod(env, 0o600)
    assert storage.read_env_file(str(env)) == {"META_PASSWORD": "s3cr3t pw", "ACCESS_KEY": "ak"}
    assert storage.scrub("auth failed for s3cr3t pw", ["s3cr3t pw"]) == "auth failed for ****"
    assert storage.scrub("redis://user:pw@10.0.0.1:6379/1") == "redis://user:****@10.0.0.1:6379/1"


MOUNTS = """/dev/md0 / ext4 rw 0 0
JuiceFS:jfs /mnt/jfs fuse.juicefs rw 0 0
ceph-fuse /mnt/cephfs fuse.ceph-fuse rw 0 0
"""


def table():
    return Output("/proc/self/mounts", "ok", text=MOUNTS)


def test_mounts_types_and_probes():
    jfs = {"path": "/mnt/jfs", "fstype": "fuse.juicefs", "writable": True, "unit": "juicefs-jfs.service"}
    ceph = {"path": "/mnt/cephfs", "fstype": "ceph", "writable": False}
    probe_ok = {"result": "ok", "file": "/mnt/jfs/.clusterforge-probe-c1-1", "step": "done", "error": ""}
    assert node.node_mounts(table(), [jfs], {"/mnt/jfs": probe_ok})["status"] == "pass"
    wrong = node.node_mounts(table(), [ceph])
    assert (
        wrong["status"] == "fail" and "not ceph" in wrong["message"] and "mnt-cephfs.mount" in wrong["remedy"]
    )
    ro = {"result": "failed", "file": "x", "step": "create", "error": "OSError: Read-only file system"}
    denied = node.node_mounts(table(), [jfs], {"/mnt/jfs": ro})
    assert denied["status"] == "fail" and "juicefs-jfs.service" in denied["remedy"]
    hung = {
        "result": "timeout",
        "file": "x",
        "step": "probe",
        "error": "mount not responding: no answer in 10 s",
    }
    stuck = node.node_mounts(table(), [jfs], {"/mnt/jfs": hung})
    assert stuck["status"] == "error" and "mount not responding" in stuck["message"]
    captured = node.node_mounts(table(), [jfs], capture=True)
    assert captured["status"] == "pass" and "not probed" in captured["message"]
    assert node.mount_unit("/mnt/my data") == "mnt-my\\x20data.mount"


def test_probe_writes_reads_and_leaves_nothing(tmp_path):
    result = storage.probe_writable(str(tmp_path), "c1")
    assert result["result"] == "ok", result
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only directory")
def test_probe_read_only_dir(tmp_path):
    tmp_path.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        result = storage.probe_writable(str(tmp_path), "c1")
    finally:
        tmp_path.chmod(0o700)
    assert result["result"] == "failed" and result["step"] == "create"


def test_probe_read_only_bind_mount_as_root(tmp_path):
    # As root a mode bit stops nothing; a missing directory stands in for an unwritable mount.
    result = storage.probe_writable(str(tmp_path / "absent"), "c1")
    assert result["result"] == "failed" and "FileNotFoundError" in result["error"]


def test_probe_timeout(tmp_path):
    slow = tmp_path / "slow.py"
    slow.write_text("import time\ntime.sleep(30)\n")
    wrapper = tmp_path / "python"
    wrapper.write_text(f"#!/bin/sh\nexec {sys.executable} {slow}\n")
    wrapper.chmod(0o755)
    result = storage.probe_writable(str(tmp_path), "c1", timeout=0.5, python=str(wrapper))
    assert result["result"] == "timeout" and "mount not responding" in result["error"]


def test_probe_in_a_read_only_file_system_as_root():
    # /proc takes no new files, for root neither: the probe fails at create and leaves nothing.
    result = storage.probe_writable("/proc", "c1")
    assert result["result"] == "failed" and result["step"] == "create"
