"""The etcd snapshot and restore commands (cfcore/etcd_backup.py), tested on paper: no Kubernetes
server runs here, so what role backup and role restore run is checked as rendered. The flags are
etcd 3.5's (`etcdctl snapshot save`, `etcdutl snapshot restore`), and kubeadm's layout."""

from __future__ import annotations

import pytest
from cfcore import etcd_backup
from cfcore.inputs import InputError

MEMBERS = etcd_backup.members(
    ["cp-1.example", "cp-2", "cp-3"], {"cp-1.example": "10.0.0.1", "cp-2": "10.0.0.2", "cp-3": "fd00::3"}
)


def test_the_snapshot_is_taken_from_the_local_member_with_kubeadm_s_client_certificate():
    argv = etcd_backup.snapshot_save_argv("/var/lib/clusterforge/backup/X/etcd/etcd-snapshot.db")
    assert argv == [
        "/usr/local/bin/etcdctl",
        "--endpoints=https://127.0.0.1:2379",
        "--cacert=/etc/kubernetes/pki/etcd/ca.crt",
        "--cert=/etc/kubernetes/pki/etcd/healthcheck-client.crt",
        "--key=/etc/kubernetes/pki/etcd/healthcheck-client.key",
        "snapshot",
        "save",
        "/var/lib/clusterforge/backup/X/etcd/etcd-snapshot.db",
    ]
    status = etcd_backup.snapshot_status_argv("/s.db", {"bin_dir": "/opt/etcd"})
    assert status == ["/opt/etcd/etcdutl", "snapshot", "status", "/s.db", "--write-out=json"]


def test_site_settings_override_the_kubeadm_defaults_and_paths_must_be_absolute():
    argv = etcd_backup.snapshot_save_argv(
        "/s.db", {"pki_dir": "/srv/pki", "endpoint": "https://10.0.0.1:2379"}
    )
    assert "--cacert=/srv/pki/ca.crt" in argv and "--endpoints=https://10.0.0.1:2379" in argv
    with pytest.raises(InputError, match=r"backup_etcd\.data_dir"):
        etcd_backup.snapshot_save_argv("/s.db", {"data_dir": "var/lib/etcd"})


def test_members_are_named_by_host_with_their_peer_url():
    assert MEMBERS == [
        {"host": "cp-1.example", "name": "cp-1", "peer_url": "https://10.0.0.1:2380"},
        {"host": "cp-2", "name": "cp-2", "peer_url": "https://10.0.0.2:2380"},
        {"host": "cp-3", "name": "cp-3", "peer_url": "https://[fd00::3]:2380"},
    ]
    with pytest.raises(InputError, match="cp-9: no address"):
        etcd_backup.members(["cp-9"], {})
    with pytest.raises(InputError, match="k8s_control_plane has no host"):
        etcd_backup.members([], {})


def test_each_member_restores_the_same_snapshot_into_one_new_cluster():
    steps = {m["host"]: etcd_backup.restore_steps("/r/s.db", m, MEMBERS, "20261203T013000Z") for m in MEMBERS}
    restores = {
        host: next(s["argv"] for s in plan if s["argv"][1:3] == ["snapshot", "restore"])
        for host, plan in steps.items()
    }
    cluster = (
        "--initial-cluster=cp-1=https://10.0.0.1:2380,cp-2=https://10.0.0.2:2380,cp-3=https://[fd00::3]:2380"
    )
    for member in MEMBERS:
        argv = restores[member["host"]]
        assert argv[0] == "/usr/local/bin/etcdutl" and argv[3] == "/r/s.db"
        assert f"--name={member['name']}" in argv
        assert f"--initial-advertise-peer-urls={member['peer_url']}" in argv
        assert cluster in argv  # the same on every member
        assert "--initial-cluster-token=clusterforge-restore-20261203T013000Z" in argv
        assert "--data-dir=/var/lib/etcd.restore-20261203T013000Z" in argv


def test_the_static_pods_stop_before_the_data_is_swapped_and_start_after():
    steps = [s["argv"] for s in etcd_backup.restore_steps("/r/s.db", MEMBERS[0], MEMBERS, "ID")]
    held = "/etc/kubernetes/manifests.held-by-restore-ID"
    assert steps[0] == ["mkdir", "-p", held]
    # The API server goes first (it stops writing), etcd after; they come back in reverse order.
    assert steps[1] == ["mv", "/etc/kubernetes/manifests/kube-apiserver.yaml", f"{held}/kube-apiserver.yaml"]
    assert steps[2] == ["mv", "/etc/kubernetes/manifests/etcd.yaml", f"{held}/etcd.yaml"]
    assert steps[3][1:3] == ["snapshot", "restore"]
    # The old data is kept for a way back, then the restored data takes its place.
    assert steps[4] == ["mv", "/var/lib/etcd", "/var/lib/etcd.before-ID"]
    assert steps[5] == ["mv", "/var/lib/etcd.restore-ID", "/var/lib/etcd"]
    assert steps[6] == ["mv", f"{held}/etcd.yaml", "/etc/kubernetes/manifests/etcd.yaml"]
    assert steps[7] == ["mv", f"{held}/kube-apiserver.yaml", "/etc/kubernetes/manifests/kube-apiserver.yaml"]
    assert steps[8] == ["rmdir", held]
    assert len(steps) == 9
    assert all(
        arg.startswith("/") for argv in steps for arg in argv[1:] if "/" in arg and not arg.startswith("--")
    )
