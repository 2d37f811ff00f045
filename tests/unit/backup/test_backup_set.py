"""Backup sets (cfcore/backup_set.py): which components apply where, the manifest, verification,
retention, and what a restore places (docs/design.md, "Backup and restore of cluster state")."""

from __future__ import annotations

import json
import os
import time

import pytest
from cfcore import backup_set
from cfcore.inputs import InputError

GROUPS = {
    "all": ["ctl-01", "gpu-01", "gpu-02", "sto-01"],
    "slurm_controller": ["ctl-01"],
    "slurm_workers": ["gpu-01", "gpu-02"],
    "k8s_control_plane": ["ctl-01"],
    "juicefs_meta": ["ctl-01"],
    "ceph_mon": ["sto-01"],
    "monitoring": ["ctl-01"],
}
MOUNT = [{"volume": "jfs", "path": "/mnt/jfs"}]
HOSTVARS = {
    "ctl-01": {"k8s_deploy": False},
    "gpu-01": {"juicefs_mounts": MOUNT},
    "gpu-02": {"juicefs_mounts": [*MOUNT, {"volume": "scratch", "path": "/mnt/scratch"}]},
    "sto-01": {},
}


def test_the_plan_names_each_component_s_hosts_and_why_one_does_not_apply():
    plans = backup_set.plan(GROUPS, HOSTVARS)
    assert list(plans) == list(backup_set.COMPONENTS)
    assert plans["slurm"].hosts == ["ctl-01"] and plans["slurm"].applies
    assert plans["ceph"].hosts == ["sto-01"]
    assert plans["monitoring"].hosts == ["ctl-01"]
    assert plans["ledger"].hosts == [backup_set.CONTROLLER]
    assert not plans["etcd"].applies and "k8s_deploy is false" in plans["etcd"].reason
    assert not plans["slurmdbd"].applies and "slurm_accounting" in plans["slurmdbd"].reason
    # Each volume is dumped by the first host (inventory order) that mounts it.
    assert plans["juicefs"].volumes == {"jfs": "gpu-01", "scratch": "gpu-02"}
    assert plans["juicefs"].hosts == ["gpu-01", "gpu-02"]


def test_accounting_and_kubernetes_apply_when_the_inventory_turns_them_on():
    hostvars = {**HOSTVARS, "ctl-01": {"slurm_accounting": True}}  # k8s_deploy defaults to true
    plans = backup_set.plan(GROUPS, hostvars)
    assert plans["slurmdbd"].applies and plans["slurmdbd"].hosts == ["ctl-01"]
    assert plans["etcd"].applies and plans["etcd"].hosts == ["ctl-01"]


def test_a_component_without_hosts_says_which_group_is_empty():
    plans = backup_set.plan({"all": ["n1"]}, {"n1": {}})
    assert plans["slurm"].reason == "no host in slurm_controller"
    assert plans["ceph"].reason == "no host in ceph_mon"
    assert "juicefs_mounts" in plans["juicefs"].reason


def test_an_unknown_component_is_bad_input_naming_the_choices():
    with pytest.raises(InputError, match=r"unknown backup component.*nosuch") as err:
        backup_set.plan(GROUPS, HOSTVARS, ["slurm", "nosuch"])
    assert "ledger" in err.value.fix


@pytest.mark.parametrize(
    ("key", "problem"),
    [("", "is not set"), (None, "is not set"), ("short", "at least 32"), ("x" * 40 + "\ny", "one line")],
)
def test_the_encryption_key_must_be_long_enough(key, problem):
    assert problem in backup_set.check_encryption_key(key)


def test_a_good_encryption_key_has_no_problem():
    assert backup_set.check_encryption_key("k" * 48) == ""


def _stage(target, set_id, files: dict[str, bytes]):
    staging = target / backup_set.partial_name(set_id)
    for relpath, data in files.items():
        path = staging / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return staging


FILES = {
    "slurm/ctl-01/slurm-state.tar.gz": b"state" * 100,
    "slurm/ctl-01/slurm-queue.txt": b"12|PENDING|held|gpu\n",
    "juicefs/gpu-01/juicefs-jfs.json.gz.enc": b"secret" * 50,
    "ledger/controller/ledger.tar.gz": b"ledger",
}
PLAN = {
    "ledger": {"hosts": ["controller"], "applies": True, "reason": ""},
    "slurm": {"hosts": ["ctl-01"], "applies": True, "reason": ""},
    "juicefs": {"hosts": ["gpu-01"], "applies": True, "reason": ""},
    "etcd": {"hosts": [], "applies": False, "reason": "k8s_deploy is false"},
}
TAKEN = {"controller": ["ledger"], "ctl-01": ["slurm"], "gpu-01": ["juicefs"]}


def _finish(target, set_id, taken=TAKEN, keep=14, failures=None):
    return backup_set.finish(
        str(target),
        set_id,
        created="2026-12-03T01:30:00Z",
        finished="2026-12-03T01:31:00Z",
        version="0.1.0",
        inventory={"path": "inv", "sha256": "0" * 64},
        components=backup_set.component_statuses(PLAN, taken, failures),
        keep=keep,
    )


def test_a_finished_set_lists_every_item_with_its_checksum_and_is_renamed(tmp_path):
    _stage(tmp_path, "20261203T013000Z", FILES)
    done = _finish(tmp_path, "20261203T013000Z")
    folder = tmp_path / "20261203T013000Z"
    assert not (tmp_path / ".20261203T013000Z.partial").exists()
    data = backup_set.load_manifest(str(folder))
    assert data == done["manifest"]
    assert {item["path"] for item in data["items"]} == set(FILES)
    juicefs = next(item for item in data["items"] if item["component"] == "juicefs")
    assert juicefs["encrypted"] and juicefs["host"] == "gpu-01" and juicefs["size"] == 300
    assert backup_set.complete(data)
    assert data["components"]["etcd"] == {"status": "not applicable", "reason": "k8s_deploy is false"}
    assert oct(os.stat(folder / "manifest.json").st_mode & 0o777) == "0o600"
    assert backup_set.verify(str(folder), data) == []


def test_a_component_whose_host_failed_is_failed_in_the_set_with_the_task_and_message(tmp_path):
    files = {k: v for k, v in FILES.items() if not k.startswith("juicefs/")}
    _stage(tmp_path, "20261203T013000Z", files)
    failures = {
        "gpu-01": [{"component": "juicefs", "task": "Dump each volume", "msg": "redis: connection refused"}]
    }
    data = _finish(tmp_path, "20261203T013000Z", {**TAKEN, "gpu-01": []}, failures=failures)["manifest"]
    assert not backup_set.complete(data)
    entry = data["components"]["juicefs"]
    assert entry["status"] == "failed"
    assert "gpu-01: task 'Dump each volume' failed: redis: connection refused" in entry["reason"]
    assert data["components"]["slurm"]["status"] == "ok"


def test_a_corrupted_item_is_found_by_its_checksum_and_named(tmp_path):
    _stage(tmp_path, "20261203T013000Z", FILES)
    data = _finish(tmp_path, "20261203T013000Z")["manifest"]
    folder = tmp_path / "20261203T013000Z"
    state = folder / "slurm/ctl-01/slurm-state.tar.gz"
    raw = bytearray(state.read_bytes())
    raw[10] ^= 0xFF  # one byte flipped: same size, another sha256
    state.write_bytes(bytes(raw))
    (folder / "ledger/controller/ledger.tar.gz").unlink()
    problems = backup_set.verify(str(folder), data)
    assert [(p.path, p.kind) for p in problems] == [
        ("ledger/controller/ledger.tar.gz", "missing"),
        ("slurm/ctl-01/slurm-state.tar.gz", "corrupt"),
    ]
    # Verifying only other components does not read them.
    assert backup_set.verify(str(folder), data, ["juicefs"]) == []


def test_retention_keeps_the_newest_sets_and_never_the_one_just_made(tmp_path):
    ids = [f"2026120{d}T013000Z" for d in range(1, 6)]
    for set_id in ids:
        _stage(tmp_path, set_id, FILES)
        removed = _finish(tmp_path, set_id, keep=3)["removed"]
    assert removed == [ids[1]]
    assert backup_set.complete_sets(str(tmp_path)) == ids[2:]
    assert backup_set.beyond_retention(ids, 1, protect=ids[0]) == ids[1:4]
    with pytest.raises(InputError, match="backup_keep"):
        backup_set.beyond_retention(ids, 0)


def test_an_interrupted_backup_s_folder_goes_after_a_day(tmp_path):
    old = _stage(tmp_path, "20261201T013000Z", FILES)
    _stage(tmp_path, "20261203T000000Z", FILES)
    two_days_ago = time.time() - 2 * 86400
    os.utime(old, (two_days_ago, two_days_ago))
    assert backup_set.stale_partials(str(tmp_path)) == [".20261201T013000Z.partial"]
    # A set folder without a manifest is not a complete set.
    (tmp_path / "20261202T000000Z").mkdir()
    assert backup_set.complete_sets(str(tmp_path)) == []


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "not a readable manifest"),
        (json.dumps({"schema": 9}), "schema is 9"),
        (json.dumps({"schema": 1, "id": "x", "components": {}}), "items is missing"),
        (
            json.dumps(
                {
                    "schema": 1,
                    "id": "x",
                    "components": {},
                    "items": [
                        {
                            "component": "slurm",
                            "host": "h",
                            "name": "n",
                            "path": "../../etc/passwd",
                            "size": 1,
                            "sha256": "0" * 64,
                        }
                    ],
                }
            ),
            "not a path inside the set",
        ),
        (
            json.dumps(
                {
                    "schema": 1,
                    "id": "x",
                    "components": {},
                    "items": [
                        {
                            "component": "slurm",
                            "host": "h",
                            "name": "n",
                            "path": "slurm/h/n",
                            "size": -1,
                            "sha256": "z",
                        }
                    ],
                }
            ),
            "sha256 is not 64 hex digits",
        ),
    ],
)
def test_a_bad_manifest_is_refused_naming_the_file_and_the_key(tmp_path, content, message):
    (tmp_path / "manifest.json").write_text(content)
    with pytest.raises(backup_set.BackupSetError, match=message) as err:
        backup_set.load_manifest(str(tmp_path))
    assert str(tmp_path / "manifest.json") in err.value.message


def test_a_folder_without_a_manifest_is_not_a_set(tmp_path):
    with pytest.raises(backup_set.BackupSetError, match=r"no manifest\.json"):
        backup_set.load_manifest(str(tmp_path))


def test_a_restore_places_what_the_set_holds_and_the_inventory_plans():
    plans = backup_set.plan(GROUPS, HOSTVARS)
    data = {"items": [{"component": c, "name": n} for c, n in (
        ("ledger", "ledger.tar.gz"), ("slurm", "slurm-state.tar.gz"), ("juicefs", "juicefs-jfs.json.gz.enc"),
        ("juicefs", "juicefs-jfs-canary.json"), ("etcd", "etcd-snapshot.db.enc"))]}  # fmt: skip
    chosen = backup_set.restorable(plans, data)
    # etcd is in the set but Kubernetes is off in the inventory; the ledger is the CLI's.
    assert chosen == ["slurm", "juicefs"]
    groups = backup_set.restore_groups(plans, chosen, GROUPS, HOSTVARS)
    assert groups == {
        "cf_restore_slurm": ["ctl-01"],
        "cf_restore_juicefs": ["gpu-01", "gpu-02"],
        "cf_restore_juicefs_meta": ["ctl-01"],
        "cf_restore_juicefs_clients": ["gpu-01", "gpu-02"],
    }
    # Only volumes with a dump in the set are loaded (scratch has none here).
    assert backup_set.restored_volumes(plans, chosen, data) == ["jfs"]


def test_an_etcd_restore_runs_on_every_control_plane_member():
    groups = {**GROUPS, "k8s_control_plane": ["cp-1", "cp-2", "cp-3"]}
    hostvars = {**HOSTVARS, "cp-1": {}, "cp-2": {}, "cp-3": {}}
    plans = backup_set.plan(groups, hostvars)
    assert plans["etcd"].hosts == ["cp-1"]  # the snapshot is taken once
    data = {"items": [{"component": "etcd", "name": "etcd-snapshot.db.enc"}]}
    chosen = backup_set.restorable(plans, data)
    assert backup_set.restore_groups(plans, chosen, groups, hostvars) == {
        "cf_restore_etcd": ["cp-1", "cp-2", "cp-3"]
    }
