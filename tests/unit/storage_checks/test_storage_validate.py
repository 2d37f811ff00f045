"""validate_node end to end from a capture: node.mounts and storage.* with only_checks."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from cfcore.collect import CaptureSource
from cfcore.expected import build_expected
from cfcore.validate import validate_node

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "storage"


def test_capture_storage_checks(tmp_path):
    (tmp_path / "meta.json").write_text(json.dumps({"hostname": "cfmol-storage-c1"}))
    (tmp_path / "proc-mounts.txt").write_text(
        "JuiceFS:jfs /mnt/jfs fuse.juicefs rw 0 0\nceph-fuse /mnt/cephfs fuse.ceph-fuse rw 0 0\n"
    )
    shutil.copy(FIXTURES / "juicefs-status-1.1.json", tmp_path / "juicefs-status-0.json")
    shutil.copy(FIXTURES / "ceph-health-warn.json", tmp_path / "ceph-health.json")
    expected = build_expected(
        "cfmol-storage-c1",
        {
            "node_sku": "cpu-generic",
            "group_names": ["storage"],
            "juicefs_mounts": [{"volume": "jfs", "path": "/mnt/jfs"}],
            "juicefs_volumes": [{"name": "jfs", "meta_url": "redis://10.0.3.10:6379/1"}],
            "ceph_cephfs_mounts": [{"path": "/mnt/cephfs", "client": "fsuser"}],
            "ceph_client_keyrings": ["fsuser"],
            "validate_only_checks": ["node.mounts", "storage.*"],
        },
    )
    result = validate_node(CaptureSource(str(tmp_path)), expected)
    by_id = {check["id"]: check for check in result["checks"]}
    assert by_id["node.mounts"]["status"] == "pass" and "not probed" in by_id["node.mounts"]["message"]
    # The capture's session expired long before the test runs: a real verdict, not a pass.
    assert by_id["storage.juicefs_session"]["status"] == "fail"
    assert by_id["storage.juicefs_session"]["evidence"]["file"] == "juicefs-status-0.json"
    assert by_id["storage.ceph_health"]["status"] == "warn"
    assert by_id["node.time_sync"]["status"] == "skip"


def test_capture_without_storage_files_is_error(tmp_path):
    (tmp_path / "meta.json").write_text(json.dumps({"hostname": "c1"}))
    (tmp_path / "proc-mounts.txt").write_text("JuiceFS:jfs /mnt/jfs fuse.juicefs rw 0 0\n")
    expected = {
        "node_sku": "cpu-generic",
        "sku": build_expected("c1", {"node_sku": "cpu-generic"})["sku"],
        "juicefs_mounts": [
            {"path": "/mnt/jfs", "meta_url": "redis://m:6379/1", "env_file": "/etc/juicefs/jfs.env"}
        ],
        "ceph_health": {"client": "admin"},
        "only_checks": ["storage.*"],
    }
    by_id = {c["id"]: c for c in validate_node(CaptureSource(str(tmp_path)), expected)["checks"]}
    assert by_id["storage.juicefs_session"]["status"] == "error"
    assert by_id["storage.ceph_health"]["status"] == "error"
