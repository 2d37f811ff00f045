"""cfcore/ceph.py: monitor addresses, cephx keys, caps, keyrings, ceph.conf merge, device inspection."""

from __future__ import annotations

import base64
import json
import re
import struct

import pytest
from cfcore import ceph
from cfcore.inputs import InputError

FSID = "07cf6d08-d85e-4fa4-8c13-20d185b17342"
OTHER = "11111111-2222-3333-4444-555555555555"
KEY = ceph.make_cephx_key(1764600000, 123, bytes(range(16)))


# ---------------------------------------------------------------- monitors


def test_mon_address_fallback_chain():
    assert (
        ceph.mon_address(
            {
                "inventory_hostname": "m",
                "ceph_mon_address": "10.0.0.1",
                "fabric_storage_address": "10.1.0.1",
                "ansible_host": "10.2.0.1",
            }
        )
        == "10.0.0.1"
    )
    assert (
        ceph.mon_address(
            {
                "inventory_hostname": "m",
                "ceph_mon_address": "",
                "fabric_storage_address": "10.1.0.1",
                "ansible_host": "10.2.0.1",
            }
        )
        == "10.1.0.1"
    )
    assert (
        ceph.mon_address({"inventory_hostname": "m", "ceph_mon_address": None, "ansible_host": "10.2.0.1"})
        == "10.2.0.1"
    )


def test_mon_address_missing_names_the_variables_and_host():
    with pytest.raises(InputError) as err:
        ceph.mon_address({"inventory_hostname": "mon1"})
    assert "mon1" in str(err.value) and "ceph_mon_address" in str(err.value)


def test_mon_address_refuses_a_network():
    with pytest.raises(InputError, match=re.escape("ceph_mon_address of monitor m1 is '10.0.0.1/24'")):
        ceph.mon_address({"inventory_hostname": "m1", "ceph_mon_address": "10.0.0.1/24"})


def test_mon_host_v2_v1_and_ipv6_brackets():
    mons = [
        {"inventory_hostname": "a", "ansible_host": "10.0.0.1"},
        {"inventory_hostname": "b", "fabric_storage_address": "fd00::2"},
        {"inventory_hostname": "c", "ceph_mon_address": "[fd00::3]"},
    ]
    assert ceph.mon_host(mons) == (
        "[v2:10.0.0.1:3300,v1:10.0.0.1:6789],[v2:[fd00::2]:3300,v1:[fd00::2]:6789],"
        "[v2:[fd00::3]:3300,v1:[fd00::3]:6789]"
    )
    assert ceph.mon_addresses(mons)[2] == {"name": "c", "address": "fd00::3"}


def test_mon_addresses_errors():
    with pytest.raises(InputError, match="group ceph_mon is empty"):
        ceph.mon_addresses([])
    with pytest.raises(InputError, match=re.escape("same address 10.0.0.1")):
        ceph.mon_addresses(
            [
                {"inventory_hostname": "a", "ansible_host": "10.0.0.1"},
                {"inventory_hostname": "b", "ansible_host": "10.0.0.1"},
            ]
        )
    with pytest.raises(InputError, match="list of host variable"):
        ceph.mon_addresses({"inventory_hostname": "a"})
    with pytest.raises(InputError, match="inventory_hostname"):
        ceph.mon_addresses([{"ansible_host": "10.0.0.1"}])


def test_monmaptool_args():
    assert ceph.monmaptool_add_args([{"inventory_hostname": "a", "ansible_host": "10.0.0.1"}]) == [
        "--addv",
        "a",
        "[v2:10.0.0.1:3300,v1:10.0.0.1:6789]",
    ]


# ---------------------------------------------------------------- keys


def test_generated_key_is_authtool_format():
    raw = base64.b64decode(KEY)
    assert len(raw) == 28 and len(KEY) == 40
    assert struct.unpack("<hiih", raw[:12]) == (1, 1764600000, 123, 16)
    assert ceph.check_cephx_key(" " + KEY + "\n", "ceph_mon_secret") == KEY


def test_real_authtool_key_is_accepted():
    # printed by ceph-authtool --gen-print-key (Ceph 16.2.15)
    assert ceph.check_cephx_key("AQBfhS1pAAAAABAAfB0JtzYSJg0SHfqOS2D5bQ==", "v")


@pytest.mark.parametrize(
    "value, why",
    [
        ("", "empty"),
        (None, "empty"),
        ("not base64!", "not base64"),
        ("QUJD", "decodes to 3 bytes"),
        ("AQBfhS1pAAAAABAAfB0JtzYSJg0SHfqOS2D5b", "not valid base64"),
        (base64.b64encode(struct.pack("<hiih", 2, 0, 0, 16) + bytes(16)).decode(), "not a cephx AES key"),
        (base64.b64encode(struct.pack("<hiih", 1, 0, 0, 15) + bytes(16)).decode(), "secret length 15"),
    ],
)
def test_bad_keys_name_the_variable_and_the_fix(value, why):
    with pytest.raises(InputError) as err:
        ceph.check_cephx_key(value, "ceph_admin_secret")
    assert why in str(err.value)
    assert "ceph_admin_secret" in str(err.value) and "ceph-authtool --gen-print-key" in str(err.value)


def test_make_key_refuses_short_secret():
    with pytest.raises(ValueError):
        ceph.make_cephx_key(0, 0, b"short")


# ---------------------------------------------------------------- entities, caps, keyrings


@pytest.mark.parametrize("name", ["client.fsuser", "mon.", "mgr.node-1", "client.rgw.node1", "osd.3"])
def test_entity_names(name):
    assert ceph.check_entity(name) == name


@pytest.mark.parametrize("name", ["fsuser", "client.", "user.x", "client.a b", 3])
def test_bad_entity_names(name):
    with pytest.raises(InputError, match="name"):
        ceph.check_entity(name, "name")


def test_caps_normalised_and_empty_dropped():
    caps = ceph.normalise_caps({"mon": "  allow   r ", "osd": "allow rw pool=a ,  allow r pool=b", "mds": ""})
    assert caps == {"mon": "allow r", "osd": "allow rw pool=a,allow r pool=b"}
    assert ceph.normalise_caps(None) == {}


def test_caps_unknown_type_or_not_mapping():
    with pytest.raises(InputError, match="unknown cap type 'rgw'"):
        ceph.normalise_caps({"rgw": "allow"}, "ceph_clients[0].caps")
    with pytest.raises(InputError, match="must be a mapping"):
        ceph.normalise_caps(["allow r"])


AUTH_TEXT = f"""[client.fsuser]
\tkey = {KEY}
\tcaps mds = "allow rw fsname=cephfs"
\tcaps mon = "allow r"
\tcaps osd = "allow rw tag cephfs data=cephfs"
"""


def test_parse_auth_get_keyring_text():
    got = ceph.parse_auth_get("exported keyring for client.fsuser\n" + AUTH_TEXT, "client.fsuser")
    assert got == {
        "key": KEY,
        "caps": {"mds": "allow rw fsname=cephfs", "mon": "allow r", "osd": "allow rw tag cephfs data=cephfs"},
    }


def test_parse_auth_get_json():
    text = json.dumps([{"entity": "client.fsuser", "key": KEY, "caps": {"mon": "allow r", "osd": ""}}])
    assert ceph.parse_auth_get(text, "client.fsuser") == {"key": KEY, "caps": {"mon": "allow r"}}
    assert ceph.parse_auth_get(text, "client.other") is None
    assert ceph.parse_auth_get("", "client.fsuser") is None


def test_render_keyring_round_trips():
    caps = {"osd": "allow rw tag cephfs data=cephfs", "mon": "allow r", "mds": "allow rw fsname=cephfs"}
    text = ceph.render_keyring("client.fsuser", KEY, caps)
    assert text == AUTH_TEXT
    assert ceph.parse_keyring(text)["client.fsuser"] == {"key": KEY, "caps": ceph.normalise_caps(caps)}
    assert ceph.render_keyring("mgr.a", KEY) == f"[mgr.a]\n\tkey = {KEY}\n"


def test_compare_auth():
    current = {"key": KEY, "caps": {"mon": "allow r"}}
    assert ceph.compare_auth(current, KEY, {"mon": "allow r"}) == []
    assert ceph.compare_auth(None, KEY, {}) == ["entity missing"]
    other = ceph.make_cephx_key(0, 0, bytes(16))
    diff = ceph.compare_auth(current, other, {"mon": "allow rw", "osd": "allow *"})
    assert diff == ["key differs", "caps mon: 'allow r' -> 'allow rw'", "caps osd: None -> 'allow *'"]
    assert KEY not in " ".join(diff) and other not in " ".join(diff)


def test_clients_problems():
    good = [{"name": "fsuser", "key": KEY, "caps": {"mon": "allow r"}}]
    assert ceph.clients_problems(good) == []
    assert ceph.clients_problems(None) == []
    bad = [
        {"name": "client.x", "key": KEY},
        {"name": "y", "key": "nope"},
        {"name": "z", "key": KEY, "caps": {"bad": "x"}},
        {"name": "fsuser", "key": KEY},
        {"name": "fsuser", "key": KEY},
        "text",
    ]
    problems = ceph.clients_problems(bad)
    assert len(problems) == 5
    assert "without 'client.'" in problems[0]
    assert "ceph_clients[1].key (client y)" in problems[1]
    assert "unknown cap type" in problems[2]
    assert "listed twice" in problems[3]
    assert "ceph_clients[5]" in problems[4]
    assert all("nope" not in p for p in problems)
    assert ceph.clients_problems({"name": "x"}) == [
        "ceph_clients must be a list of {name, key, caps} (fix: write it as a YAML list)"
    ]


# ---------------------------------------------------------------- ceph.conf


def test_merge_conf_overrides_have_the_last_word():
    base = {
        "global": {"fsid": FSID, "osd_pool_default_size": 3, "cluster_network": None},
        "client.rgw.a": {"rgw_frontends": "beast port=7480"},
    }
    overrides = {
        "global": {"osd pool default size": 2, "mon-allow-pool-delete": True},
        "osd": {"osd_max_backfills": 1},
        "client.rgw.a": {"rgw_frontends": None},
    }
    assert ceph.merge_conf(base, overrides) == [
        ("global", [("fsid", FSID), ("osd_pool_default_size", "2"), ("mon_allow_pool_delete", "true")]),
        ("osd", [("osd_max_backfills", "1")]),
    ]


def test_merge_conf_refuses_bad_overrides():
    with pytest.raises(InputError, match="ceph_conf_overrides must be a mapping of section"):
        ceph.merge_conf({}, {"global": "x"})
    assert ceph.merge_conf({"global": {"a": False}}, None) == [("global", [("a", "false")])]


# ---------------------------------------------------------------- devices

LABEL = {
    "/dev/vdb": {
        "osd_uuid": "8d4c2c8e-2a0c-4f0e-9a3a-000000000001",
        "size": 21474836480,
        "btime": "2026-12-01T16:00:00.000000+0000",
        "description": "main",
        "bfm_blocks": "5242880",
        "ceph_fsid": FSID,
        "kv_backend": "rocksdb",
        "magic": "ceph osd volume v026",
        "mkfs_done": "yes",
        "osd_key": "AQBsecretsecretsecretsecretsecretsecret==",
        "ready": "ready",
        "require_osd_release": "16",
        "whoami": "0",
    }
}


def label(**changes):
    data = json.loads(json.dumps(LABEL))
    data["/dev/vdb"].update(changes)
    return json.dumps(data, indent=4)


def test_label_parse_drops_the_osd_key():
    parsed = ceph.parse_bluestore_label("some log line\n" + label())
    assert "osd_key" not in parsed and parsed["whoami"] == "0"
    assert ceph.parse_bluestore_label("") is None
    assert ceph.parse_bluestore_label("unable to read label for /dev/vdb: (2) No such file") is None


def test_empty_device():
    got = ceph.inspect_device("/dev/vdb", FSID, blkid_text="", mounts_text="/dev/vda1 / ext4 rw 0 0\n")
    assert got == {"state": "empty", "osd_id": None, "osd_uuid": None, "ceph_fsid": None, "evidence": []}


def test_osd_of_this_cluster_never_returns_the_key():
    got = ceph.inspect_device("/dev/vdb", FSID, blkid_text="TYPE=ceph_bluestore\n", label_text=label())
    assert got["state"] == "osd" and got["osd_id"] == 0
    assert got["osd_uuid"] == "8d4c2c8e-2a0c-4f0e-9a3a-000000000001"
    assert "secret" not in json.dumps(got)


def test_osd_of_another_cluster():
    got = ceph.inspect_device("/dev/vdb", FSID, label_text=label(ceph_fsid=OTHER, whoami="7"))
    assert got["state"] == "foreign_osd" and got["osd_id"] == 7 and got["ceph_fsid"] == OTHER
    assert OTHER in got["evidence"][0]


def test_unfinished_mkfs_is_in_use():
    got = ceph.inspect_device("/dev/vdb", FSID, label_text=label(mkfs_done="no"))
    assert got["state"] == "in_use" and "did not finish" in got["evidence"][-1]


@pytest.mark.parametrize(
    "kwargs, evidence",
    [
        ({"blkid_text": "DEVNAME=/dev/vdb\nPTUUID=ab\nPTTYPE=gpt\n"}, "blkid: partition table gpt"),
        (
            {"blkid_text": "DEVNAME=/dev/vdb\nUUID=x\nTYPE=ext4\nLABEL=data\n"},
            "blkid: signature ext4 label data",
        ),
        ({"partitions": ["sdb1"]}, "partition sdb1"),
        ({"holders": ["dm-0"]}, "held by dm-0 (device mapper: LVM, crypt or multipath)"),
        ({"mounts_text": "/dev/vdb /mnt/old\\040disk xfs rw 0 0\n"}, "/dev/vdb mounted on /mnt/old disk"),
        (
            {"mounts_text": "/dev/sdb1 /data xfs rw 0 0\n", "partitions": ["sdb1"]},
            "/dev/sdb1 mounted on /data",
        ),
        ({"pvs_text": "  /dev/vdb   vg0\n  /dev/vda2\n"}, "LVM physical volume /dev/vdb of volume group vg0"),
    ],
)
def test_in_use_evidence(kwargs, evidence):
    got = ceph.inspect_device("/dev/vdb", FSID, **kwargs)
    assert got["state"] == "in_use"
    assert evidence in got["evidence"]


def test_mounts_and_pvs_match_any_name_of_the_device():
    got = ceph.inspect_device(
        "/dev/disk/by-id/virtio-x",
        FSID,
        paths=["/dev/vdb", "/dev/loop0"],
        mounts_text="/dev/loop0 /srv ext4 rw 0 0\n",
        pvs_text="/dev/vdb\n",
    )
    assert got["evidence"] == ["/dev/loop0 mounted on /srv", "LVM physical volume /dev/vdb"]


LVM_LIST = json.dumps(
    {
        "3": [
            {
                "devices": ["/dev/sdc"],
                "type": "block",
                "tags": {"ceph.osd_id": "3", "ceph.osd_fsid": "u-3", "ceph.cluster_fsid": FSID},
            },
            {"devices": ["/dev/nvme0n1"], "type": "db", "tags": {"ceph.cluster_fsid": FSID}},
        ]
    }
)


def test_lvm_osd_of_this_cluster_and_of_another():
    got = ceph.inspect_device("/dev/sdc", FSID, pvs_text="/dev/sdc ceph-abc\n", lvm_list_json=LVM_LIST)
    assert (got["state"], got["osd_id"], got["osd_uuid"]) == ("osd", 3, "u-3")
    got = ceph.inspect_device("/dev/sdc", OTHER, pvs_text="/dev/sdc ceph-abc\n", lvm_list_json=LVM_LIST)
    assert got["state"] == "foreign_osd"
    # a DB device of an OSD is not that OSD's block device: it is just in use
    got = ceph.inspect_device("/dev/nvme0n1", FSID, pvs_text="/dev/nvme0n1 ceph-db\n", lvm_list_json=LVM_LIST)
    assert got["state"] == "in_use"
    assert ceph.inspect_device("/dev/sdc", FSID, lvm_list_json="not json")["state"] == "empty"


def test_blkid_export_and_mount_parsing():
    assert ceph.parse_blkid_export("DEVNAME=/dev/vdb\nTYPE=xfs\n") == {"DEVNAME": "/dev/vdb", "TYPE": "xfs"}
    assert ceph.mounts_of("/dev/vdb / ext4 rw 0 0\nshort\n", ["/dev/vdc"]) == []
    assert ceph.pvs_of("", ["/dev/vdb"]) == []


def test_sysfs_scan(tmp_path):
    disk = tmp_path / "sdb"
    (disk / "holders").mkdir(parents=True)
    (disk / "dev").write_text("8:16\n")
    (disk / "sdb1" / "holders").mkdir(parents=True)
    (disk / "sdb1" / "partition").write_text("1\n")
    (disk / "sdb1" / "holders" / "dm-1").write_text("")
    (disk / "queue").mkdir()
    (tmp_path / "loop0").mkdir()
    (tmp_path / "loop0" / "dev").write_text("7:0\n")
    assert ceph.sysfs_block_name(7, 0, str(tmp_path)) == "loop0"
    assert ceph.sysfs_block_name(8, 16, str(tmp_path)) == "sdb"
    assert ceph.sysfs_block_name(9, 9, str(tmp_path)) is None
    assert ceph.sysfs_block_name(7, 0, str(tmp_path / "missing")) is None
    assert ceph.sysfs_partitions_and_holders("sdb", str(tmp_path)) == (["sdb1"], ["dm-1"])
    assert ceph.sysfs_partitions_and_holders("nope", str(tmp_path)) == ([], [])
