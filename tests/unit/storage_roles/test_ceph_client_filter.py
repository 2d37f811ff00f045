"""plugins/filter/ceph_client.py: the host's keyrings and CephFS mounts checked, unit names as
systemd-escape prints them, keyrings as `ceph auth get` prints them, and no key in any error."""

from __future__ import annotations

import importlib

import pytest
from ansible.errors import AnsibleFilterError
from ansible.plugins.loader import init_plugin_loader
from cfcore.ceph import make_cephx_key, parse_keyring
from clusterforge.ansible_env import ensure_collection_link

init_plugin_loader([str(ensure_collection_link().parents[2])])
F = importlib.import_module("ansible_collections.clusterforge.cluster.plugins.filter.ceph_client")

KEY = make_cephx_key(1700000000, 0, b"0123456789abcdef")
CAPS = {"mon": "allow r fsname=cephfs", "osd": "allow rw  tag cephfs data=cephfs", "mds": "allow rw"}
CLIENTS = [
    {"name": "fsuser", "key": KEY, "caps": CAPS},
    {"name": "ro", "key": KEY, "caps": {"mon": "allow r"}},
]


def plan(keyrings, mounts=None, names=("fsuser", "ro"), default_fs="cephfs"):
    return F.cf_ceph_client_plan(keyrings, client_names=list(names), mounts=mounts, default_fs=default_fs)


@pytest.mark.parametrize(
    ("path", "unit"),
    [
        ("/mnt/cephfs", "mnt-cephfs.mount"),
        ("/mnt/cephfs/", "mnt-cephfs.mount"),
        ("//mnt//a-b", "mnt-a\\x2db.mount"),
        ("/data/.hidden", "data-.hidden.mount"),
        ("/.snap", "\\x2esnap.mount"),
        ("/mnt/ä", "mnt-\\xc3\\xa4.mount"),
        ("/", "-.mount"),
        ("/srv/my data", "srv-my\\x20data.mount"),
    ],
)
def test_unit_names_match_systemd_escape(path, unit):
    assert F.cf_systemd_path_unit(path) == unit


def test_unit_name_suffix_and_relative_path():
    assert F.cf_systemd_path_unit("/mnt/x", "automount") == "mnt-x.automount"
    with pytest.raises(AnsibleFilterError, match="not an absolute path"):
        F.cf_systemd_path_unit("mnt/x")


def test_plan_defaults_fill_a_fuse_mount():
    result = plan(["fsuser"], [{"path": "/mnt/cephfs/", "client": "fsuser"}])
    assert result == {
        "keyrings": ["fsuser"],
        "secrets": [],
        "fuse": True,
        "mounts": [
            {
                "path": "/mnt/cephfs",
                "unit": "mnt-cephfs.mount",
                "client": "fsuser",
                "fs": "cephfs",
                "subpath": "/",
                "type": "fuse",
                "options": [],
            }
        ],
    }


def test_plan_kernel_mount_needs_a_secret_file_and_no_fuse():
    result = plan(
        ["fsuser", "fsuser"],
        [
            {
                "path": "/data",
                "client": "fsuser",
                "type": "kernel",
                "fs": "fs2",
                "subpath": "/ds//a/",
                "options": ["noatime"],
            }
        ],
    )
    assert result["keyrings"] == ["fsuser"]
    assert result["secrets"] == ["fsuser"]
    assert result["fuse"] is False
    assert result["mounts"][0]["subpath"] == "/ds/a"
    assert result["mounts"][0]["fs"] == "fs2"
    assert result["mounts"][0]["options"] == ["noatime"]


def test_keyring_only_host_has_no_mounts():
    assert plan(["ro"]) == {"keyrings": ["ro"], "secrets": [], "fuse": False, "mounts": []}


@pytest.mark.parametrize(
    ("keyrings", "mounts", "message"),
    [
        (
            ["nobody"],
            [],
            r"names client 'nobody', which is not in ceph_clients \(names there: fsuser, ro\)",
        ),
        (["client.fsuser"], [], "names go without 'client.'"),
        ("fsuser", [], "must be a list of client names"),
        (
            ["fsuser"],
            [{"path": "/mnt/a", "client": "ro"}],
            r"mounts as client 'ro', which is not in this host's ceph_client_keyrings \(fsuser\)",
        ),
        (
            ["fsuser"],
            [{"path": "mnt/a", "client": "fsuser"}],
            r"ceph_cephfs_mounts\[0\].path is 'mnt/a': not an absolute path",
        ),
        (["fsuser"], [{"path": "/", "client": "fsuser"}], "cannot be a mount point"),
        (["fsuser"], [{"path": "/mnt/a;rm", "client": "fsuser"}], "cannot be a mount point"),
        (
            ["fsuser"],
            [{"path": "/mnt/a", "client": "fsuser", "type": "nfs"}],
            r"ceph_cephfs_mounts\[0\].type is 'nfs'",
        ),
        (
            ["fsuser"],
            [{"path": "/mnt/a", "client": "fsuser", "subpath": "data"}],
            "not an absolute path inside",
        ),
        (
            ["fsuser"],
            [{"path": "/mnt/a", "client": "fsuser", "options": "noatime"}],
            "must be a list of strings",
        ),
        (
            ["fsuser"],
            [{"path": "/mnt/a", "client": "fsuser", "options": ["a,b"]}],
            "one mount option per item",
        ),
        (["fsuser"], [{"path": "/mnt/a", "client": "fsuser", "opts": []}], r"unknown keys \['opts'\]"),
        (["fsuser"], [{"path": "/mnt/a"}], "has no client"),
        (
            ["fsuser"],
            [{"path": "/mnt/a", "client": "fsuser"}, {"path": "/mnt/a/", "client": "fsuser"}],
            "mounts /mnt/a twice",
        ),
    ],
)
def test_plan_refuses_with_the_variable_and_a_fix(keyrings, mounts, message):
    with pytest.raises(AnsibleFilterError, match=message) as err:
        plan(keyrings, mounts)
    assert "fix:" in str(err.value)


def test_keyring_is_what_ceph_auth_get_prints():
    text = F.cf_ceph_client_keyring(CLIENTS, "fsuser")
    assert text == (
        "[client.fsuser]\n"
        f"\tkey = {KEY}\n"
        '\tcaps mds = "allow rw"\n'
        '\tcaps mon = "allow r fsname=cephfs"\n'
        '\tcaps osd = "allow rw tag cephfs data=cephfs"\n'
    )
    assert parse_keyring(text)["client.fsuser"]["key"] == KEY


def test_keyring_of_an_unknown_client_is_refused():
    with pytest.raises(AnsibleFilterError, match="'nobody' is not in ceph_clients"):
        F.cf_ceph_client_keyring(CLIENTS, "nobody")


def test_problems_are_empty_for_good_clients_and_never_hold_a_key():
    assert F.cf_ceph_client_problems(CLIENTS, ["fsuser", "ro"]) == []
    bad = [
        {"name": "fsuser", "key": KEY[:-4] + "!!!!", "caps": CAPS},
        {"name": "x", "key": "", "caps": {"rgw": "a"}},
    ]
    problems = F.cf_ceph_client_problems(bad, ["fsuser", "x"])
    assert len(problems) == 2
    assert "ceph_clients[0].key (client fsuser) is not base64" in problems[0]
    assert "ceph_clients[1].key (client x)" in problems[1]
    assert all(KEY[:20] not in problem for problem in problems)


def test_problems_check_only_this_hosts_clients_and_the_list_shape():
    bad = [{"name": "fsuser", "key": KEY, "caps": CAPS}, {"name": "other", "key": "nope"}]
    assert F.cf_ceph_client_problems(bad, ["fsuser"]) == []
    assert F.cf_ceph_client_problems(bad, None) != []
    assert (
        "unknown cap type 'rgw'"
        in F.cf_ceph_client_problems([{"name": "a", "key": KEY, "caps": {"rgw": "x"}}])[0]
    )
    assert "twice" in F.cf_ceph_client_problems([{"name": "a", "key": KEY}, {"name": "a", "key": KEY}])[0]
    assert "without 'client.'" in F.cf_ceph_client_problems([{"name": "client.a", "key": KEY}])[0]
    assert "must be a list" in F.cf_ceph_client_problems({"name": "a"})[0]
