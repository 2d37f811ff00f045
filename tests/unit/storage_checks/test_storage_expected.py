"""cf_validation_expected's storage inputs: the host's mounts, JuiceFS sessions, Ceph health client."""

from __future__ import annotations

import pytest
from cfcore.expected import InvalidExpectation, build_expected, inputs_of, normalize

BASE = {"node_sku": "cpu-generic", "group_names": ["storage_clients"]}
VOLUMES = [{"name": "jfs", "access_key": "AK", "secret_key": "SK"}]


def build(**extra):
    return build_expected("c1", {**BASE, **extra})


def test_juicefs_and_cephfs_mounts_apply_to_the_host_itself():
    expected = build(
        juicefs_mounts=[{"volume": "jfs", "path": "/mnt/jfs"}],
        juicefs_volumes=VOLUMES,
        juicefs_default_meta_url="redis://10.0.3.10:6379/1",
        ceph_cephfs_mounts=[
            {"path": "/mnt/cephfs", "client": "fsuser"},
            {"path": "/mnt/k", "type": "kernel"},
        ],
        validate_required_mounts=["/mnt/ignored-outside-job-groups"],
    )
    assert expected["required_mounts"] == [
        {"path": "/mnt/jfs", "fstype": "fuse.juicefs", "writable": True, "unit": "juicefs-jfs.service"},
        {"path": "/mnt/cephfs", "fstype": "fuse.ceph-fuse", "writable": True},
        {"path": "/mnt/k", "fstype": "ceph", "writable": True},
    ]
    assert expected["juicefs_mounts"] == [
        {
            "path": "/mnt/jfs",
            "meta_url": "redis://10.0.3.10:6379/1",
            "env_file": "/etc/juicefs/jfs.env",
            "volume": "jfs",
        }
    ]
    assert normalize(expected)["required_mounts"][0]["writable"] is True


def test_meta_url_precedence():
    mounts = [{"volume": "jfs", "path": "/mnt/jfs"}]
    own = build(juicefs_mounts=mounts, juicefs_volumes=[{"name": "jfs", "meta_url": "tikv://pd:2379/jfs"}])
    assert own["juicefs_mounts"][0]["meta_url"] == "tikv://pd:2379/jfs"
    site = build(
        juicefs_mounts=mounts, juicefs_volumes=VOLUMES, juicefs_default_meta_url="redis://meta:6380/2"
    )
    assert site["juicefs_mounts"][0]["meta_url"] == "redis://meta:6380/2"


@pytest.mark.parametrize(
    ("extra", "names"),
    [
        (
            {"juicefs_mounts": [{"volume": "jfs", "path": "/mnt/jfs"}], "juicefs_volumes": VOLUMES},
            "juicefs_meta",
        ),
        (
            {"juicefs_mounts": [{"volume": "nope", "path": "/mnt/jfs"}], "juicefs_volumes": VOLUMES},
            "juicefs_volumes",
        ),
        ({"juicefs_mounts": [{"volume": "jfs", "path": "rel"}]}, "juicefs_mounts[0]"),
        ({"ceph_cephfs_mounts": [{"path": "/mnt/c", "type": "nfs"}]}, "ceph_cephfs_mounts[0].type"),
        ({"validate_ceph_health_client": "client.admin"}, "validate_ceph_health_client"),
        ({"validate_required_mounts": [{"path": "/x", "fstype": 3}]}, "validate_required_mounts"),
    ],
)
def test_errors_name_the_variable(extra, names):
    with pytest.raises(InvalidExpectation) as err:
        build(group_names=["gpu_nvidia"], **extra)
    assert names in err.value.message and "c1" in err.value.message and err.value.fix


def test_ceph_health_client_defaults():
    mon = build(group_names=["ceph_mon"], ceph_client_keyrings=["fsuser"])
    assert mon["ceph_health"] == {
        "cluster": "ceph",
        "client": "admin",
        "conf": "/etc/ceph/ceph.conf",
        "keyring": "/etc/ceph/ceph.client.admin.keyring",
    }
    client = build(ceph_client_keyrings=["fsuser", "other"], ceph_cluster_name="lab")
    assert client["ceph_health"]["keyring"] == "/etc/ceph/lab.client.fsuser.keyring"
    assert client["ceph_health"]["conf"] == "/etc/ceph/lab.conf"
    assert build()["ceph_health"] is None
    assert build(group_names=["ceph_mon"], validate_ceph_health_client=False)["ceph_health"] is None
    assert build(validate_ceph_health_client="ops")["ceph_health"]["client"] == "ops"


def test_inputs_leave_out_secrets_and_unused_site_variables():
    hostvars = {**BASE, "juicefs_volumes": VOLUMES, "juicefs_default_meta_url": "tikv://{{ x }}/v"}
    assert "juicefs_volumes" not in inputs_of(hostvars) and "juicefs_default_meta_url" not in inputs_of(
        hostvars
    )
    mounting = inputs_of({**hostvars, "juicefs_mounts": [{"volume": "jfs", "path": "/mnt/jfs"}]})
    assert mounting["juicefs_volumes"] == [{"name": "jfs"}]
    # A host without JuiceFS mounts is not held up by a templated site meta URL.
    assert build(juicefs_default_meta_url="tikv://{{ x }}/v")["juicefs_mounts"] == []
