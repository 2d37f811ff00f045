"""The storage stack on three real Debian 12 nodes after side_effect.yml wrote data, remounted
JuiceFS, restarted Redis, re-ran the stack and stopped and started a mount: a one-node Ceph
cluster from Debian's packages (monitor, manager, a BlueStore OSD on the empty disk, MDS with
CephFS, RGW), Redis as JuiceFS's metadata engine, and two clients with CephFS (ceph-fuse) and
the JuiceFS volume (data in the RGW bucket). Every check reads real state: the clusters' own
tools, the mounts, the files; none of it would hold on nodes the roles did not touch.
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

import cfmol_testinfra as cfmol
from ansible.parsing.vault import VaultLib, VaultSecret
from cfmol_testinfra import on, root

CEPH_NODE = "cfmol-storage-ceph"
CLIENTS = ("cfmol-storage-c1", "cfmol-storage-c2")
CAP_SYS_RESOURCE = 24
WRITER, READER = CLIENTS


def vault_value(host, name):
    """A secret of the scenario's vault.yml, decrypted with its test vault password (testinfra
    reads the inventory raw: a vaulted value comes as {"__ansible_vault": ciphertext})."""
    value = cfmol.node_vars(host)[name]
    ciphertext = value["__ansible_vault"] if isinstance(value, dict) else value
    password = Path(os.environ["ANSIBLE_VAULT_PASSWORD_FILE"]).read_bytes().strip()
    return VaultLib([("default", VaultSecret(password))]).decrypt(ciphertext).decode()


def has_capability(host, bit):
    """Whether PID 1 (the node's systemd) holds the capability `bit` in its effective set."""
    line = next(x for x in host.file("/proc/1/status").content_string.splitlines() if x.startswith("CapEff:"))
    return bool(int(line.split()[1], 16) >> bit & 1)


def ceph_json(host, *args):
    return json.loads(
        root(host, "ceph --connect-timeout 20 " + " ".join(["%s"] * len(args)) + " --format json", *args)
    )


# --- the Ceph cluster ------------------------------------------------------------------------


def test_ceph_cluster_is_healthy_with_its_daemons(host):
    on(host, CEPH_NODE)
    # After side_effect.yml's restarts the cluster may take a few seconds to report OK again.
    status = cfmol.wait_for(
        lambda: (s := ceph_json(host, "status"))["health"]["status"] == "HEALTH_OK" and s, timeout=90
    ) or ceph_json(host, "status")
    assert status["health"]["status"] == "HEALTH_OK", status["health"]
    assert status["fsid"] == cfmol.node_vars(host)["ceph_fsid"]
    assert status["osdmap"]["num_up_osds"] == 1 and status["osdmap"]["num_in_osds"] == 1
    assert status["mgrmap"]["available"] is True
    assert status["fsmap"]["up"] >= 1


def test_osd_is_bluestore_on_the_empty_disk(host):
    on(host, CEPH_NODE)
    (osd,) = ceph_json(host, "osd", "metadata")
    assert osd["osd_objectstore"] == "bluestore"
    block = root(host, "readlink -f /var/lib/ceph/osd/ceph-%s/block", str(osd["id"])).strip()
    assert block == "/dev/vdb"
    # The drop-in gives the device to ceph before every start (device nodes come back root-owned).
    assert host.file("/dev/vdb").user == "ceph"


def test_cephfs_and_rgw_exist(host):
    on(host, CEPH_NODE)
    assert [fs["name"] for fs in ceph_json(host, "fs", "ls")] == ["cephfs"]
    # RGW answers S3 on 7480 (an anonymous request lists no buckets).
    answer = host.run(
        "python3 -c %s",
        "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:7480/').read().decode())",
    )
    assert answer.rc == 0 and "ListAllMyBucketsResult" in answer.stdout


def test_client_identity_has_least_capabilities(host):
    on(host, CEPH_NODE)
    (entity,) = ceph_json(host, "auth", "get", "client.fsuser")
    assert entity["caps"] == {
        "mon": "allow r",
        "mds": "allow rw fsname=cephfs",
        "osd": "allow rw tag cephfs data=cephfs",
    }


def test_daemon_keyrings_are_private(host):
    on(host, CEPH_NODE)
    keyrings = root(host, "find /etc/ceph /var/lib/ceph -name keyring -o -name '*.keyring'").split()
    assert any(path.endswith("ceph.client.admin.keyring") for path in keyrings), keyrings
    with host.sudo():
        for path in keyrings:
            assert host.file(path).mode == 0o600, f"{path} is {oct(host.file(path).mode)}"


# --- Redis, the JuiceFS metadata engine ------------------------------------------------------


def redis_config(host, key):
    password = vault_value(host, "vault_juicefs_meta_password")
    # The password through the environment, never argv (ps shows argv).
    out = host.run("sudo env REDISCLI_AUTH=%s redis-cli --no-auth-warning CONFIG GET %s", password, key)
    assert out.rc == 0, out.stderr
    return out.stdout.split()[1:]


def test_redis_persists_and_never_evicts(host):
    on(host, CEPH_NODE)
    assert redis_config(host, "appendonly") == ["yes"]
    assert redis_config(host, "appendfsync") == ["everysec"]
    assert redis_config(host, "maxmemory-policy") == ["noeviction"]
    assert redis_config(host, "save") != [""]
    with host.sudo():
        conf = host.file("/etc/redis/clusterforge.conf")
        assert conf.mode == 0o640 and conf.user == "root" and conf.group == "redis"


def test_redis_refuses_clients_without_the_password(host):
    on(host, *CLIENTS)
    address = cfmol.node_address(host, CEPH_NODE)
    out = host.run(
        "python3 -c %s",
        f"import socket; s=socket.create_connection(('{address}', 6379), 5); "
        "s.sendall(b'PING\\r\\n'); print(s.recv(200).decode())",
    )
    assert out.rc == 0 and "NOAUTH" in out.stdout, out.stdout


# --- the clients -----------------------------------------------------------------------------


def mount_type(host, path):
    return root(host, "findmnt -n -o FSTYPE --target %s", path).strip()


def test_mounts_are_systemd_units_of_the_right_type(host):
    on(host, *CLIENTS)
    assert mount_type(host, "/mnt/jfs") == "fuse.juicefs"
    assert mount_type(host, "/mnt/cephfs") == "fuse.ceph-fuse"
    assert host.service("juicefs-jfs").is_running and host.service("juicefs-jfs").is_enabled
    assert host.service("mnt-cephfs.mount").is_running and host.service("mnt-cephfs.mount").is_enabled


def test_juicefs_mount_is_protected_and_restarts(host):
    on(host, *CLIENTS)
    props = dict(
        line.split("=", 1)
        for line in root(
            host, "systemctl show juicefs-jfs.service -p Restart -p OOMScoreAdjust -p MainPID"
        ).split()
    )
    assert props["Restart"] == "on-failure"
    assert int(props["OOMScoreAdjust"]) <= -500
    # The process itself runs with that score where the kernel lets systemd lower it (that
    # needs CAP_SYS_RESOURCE, which a podman node lacks: there it stays at 0).
    score = int(root(host, "cat /proc/%s/oom_score_adj", props["MainPID"]).strip())
    if has_capability(host, CAP_SYS_RESOURCE):
        assert score == int(props["OOMScoreAdjust"])
    else:
        assert score == 0


def test_client_secrets_are_private(host):
    on(host, *CLIENTS)
    with host.sudo():
        for path in ("/etc/ceph/ceph.client.fsuser.keyring", "/etc/juicefs/jfs.env"):
            f = host.file(path)
            assert f.exists and f.mode == 0o600 and f.user == "root", f"{path}: {oct(f.mode)} {f.user}"
        # No admin key on a client: least privilege.
        assert not host.file("/etc/ceph/ceph.client.admin.keyring").exists


def sha256_of(host, path):
    return root(host, "sha256sum %s", path).split()[0]


def test_juicefs_data_written_on_one_client_reads_back_identical_on_the_other(host):
    on(host, READER)
    # side_effect.yml kept the writer's local copy of what it wrote through JuiceFS.
    written = sha256_of(cfmol.other_node(host, WRITER), "/root/cf-data.bin")
    assert sha256_of(host, "/mnt/jfs/cf-data.bin") == written


def test_cephfs_data_written_on_one_client_is_read_on_the_other(host):
    on(host, READER)
    assert root(host, "cat /mnt/cephfs/from-c1.txt").startswith(f"written on {WRITER} at ")


def test_juicefs_status_shows_a_session_of_each_client(host):
    on(host, *CLIENTS)
    meta_url = f"redis://{cfmol.node_address(host, CEPH_NODE)}:6379/1"
    out = root(
        host, "sh -c %s", f"set -a; . /etc/juicefs/jfs.env; exec juicefs status {shlex.quote(meta_url)}"
    )
    start = out.index("{")
    status = json.loads(out[start:])
    sessions = {(s["HostName"], s["MountPoint"]) for s in status["Sessions"]}
    assert {(name, "/mnt/jfs") for name in CLIENTS} <= sessions, sessions
    assert status["Setting"]["Storage"] == "s3" and status["Setting"]["BlockSize"] == 4096
    # Data lives in the RGW bucket, not on the client.
    assert status["Setting"]["Bucket"].endswith(":7480/jfs")


def test_no_unit_failed(host):
    # A failed unit (the nvme-cli unit Ceph's packages pull in, a mount) would leave the node
    # "degraded", which bring-up and monitoring read as unhealthy.
    state = host.run("systemctl is-system-running").stdout.strip()
    assert state == "running", f"{state}: {host.run('systemctl --failed --no-legend').stdout.strip()}"
