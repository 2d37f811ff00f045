"""Shared storage on the shared lab (conftest.py): what site.yml's storage part left on the nodes.

The storage node runs a one-node Ceph cluster (monitor, manager, OSD on its
loop-device data disk, MDS, RGW); the control node runs Redis for JuiceFS;
every GPU and NPU node mounts CephFS (ceph-fuse, the least-privilege client
fsuser) at /mnt/cephfs and the JuiceFS volume (data in an RGW bucket) at
/mnt/jfs. Judged on the real state: Ceph's own health, bytes written on one
client read back on another, the keyrings on the clients, and the storage
checks of `clusterforge validate`.
"""

from __future__ import annotations

import json
import secrets
import time

import pytest
from labkit import BIN, CLIENTS, LAB, STORAGE, explain, node, run, sh

pytestmark = pytest.mark.lab
LAB_ORDER = 20  # reads the nodes only
GPU_1, GPU_2 = f"{LAB}-gpu-01", f"{LAB}-gpu-02"
NPU_1 = f"{LAB}-npu-01"


def test_the_ceph_cluster_is_healthy(lab):
    deadline, health = time.monotonic() + 120, {}
    while time.monotonic() < deadline:  # a PG or two may still be peering right after bring-up
        proc = node(STORAGE, "ceph", "health", "--format", "json", timeout=60)
        assert proc.returncode == 0, explain(proc)
        health = json.loads(proc.stdout)
        if health["status"] == "HEALTH_OK":
            break
        time.sleep(5)
    assert health["status"] == "HEALTH_OK", health
    status = json.loads(sh(STORAGE, "ceph status --format json"))
    assert status["osdmap"]["num_up_osds"] == status["osdmap"]["num_osds"] == 1, status["osdmap"]
    assert status["fsmap"]["up"] == 1, status["fsmap"]
    rgw = "import urllib.request as u; print(u.urlopen('http://127.0.0.1:7480/').status)"
    assert sh(STORAGE, f'python3 -c "{rgw}"').strip() == "200"  # RGW answers S3


@pytest.mark.parametrize(
    ("path", "fstype"),
    [("/mnt/jfs", "fuse.juicefs"), ("/mnt/cephfs", "fuse.ceph-fuse")],
    ids=["juicefs", "cephfs"],
)
def test_a_file_written_on_one_client_reads_back_identical_on_the_others(lab, path, fstype):
    for host in CLIENTS:
        assert sh(host, f"findmnt -n -o FSTYPE {path}").strip() == fstype, host
    name = f"{path}/cftest-{secrets.token_hex(4)}.bin"
    clock = time.monotonic()
    written = sh(GPU_1, f"head -c 8388608 /dev/urandom > {name}; sync {name}; sha256sum {name}").split()[0]
    try:
        for host in (GPU_2, NPU_1):
            assert sh(host, f"sha256sum {name}").split()[0] == written, host
        print(
            f"\n{path}: 8 MiB written on {GPU_1}, read on {GPU_2}, {NPU_1}: {time.monotonic() - clock:.1f}s"
        )
    finally:
        sh(GPU_1, f"rm -f {name}")


def test_clients_hold_only_their_least_privilege_keyring(lab):
    for host in CLIENTS:
        listing = sh(host, "stat -c '%a %U %n' /etc/ceph/*.keyring")
        assert listing.split("\n")[0].startswith("600 root /etc/ceph/ceph.client.fsuser.keyring"), listing
        assert "admin" not in listing, f"{host} holds the admin keyring: {listing}"
    # The client can read the monitors (its health check) but not change the cluster.
    proc = node(GPU_1, "ceph", "--id", "fsuser", "osd", "pool", "create", "cftest-denied", timeout=60)
    assert proc.returncode != 0 and "access denied" in (proc.stdout + proc.stderr).lower(), explain(proc)


def test_validation_passes_the_storage_checks_of_every_client(lab, tmp_path):
    out = tmp_path / "report"
    proc = run(
        BIN / "clusterforge", "validate", "-i", lab.inventory, "--out", out, "--format", "json", timeout=600
    )
    assert (out / "report.json").is_file(), explain(proc)
    nodes = {n["host"]: n for n in json.loads((out / "report.json").read_text())["nodes"]}
    for host in CLIENTS:
        checks = {c["id"]: c for c in nodes[host]["checks"]}
        for check_id in ("node.mounts", "storage.juicefs_session", "storage.ceph_health"):
            assert check_id in checks, f"{host}: no {check_id} in {sorted(checks)}"
            assert checks[check_id]["status"] == "pass", f"{host}: {checks[check_id]}"
    sto = {c["id"]: c for c in nodes[STORAGE]["checks"]}
    assert sto["storage.ceph_health"]["status"] == "pass", sto["storage.ceph_health"]
