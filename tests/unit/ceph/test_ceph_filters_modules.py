"""plugins/filter/ceph.py as Ansible loads it; modules ceph_key / ceph_osd_device run as Ansible runs them
(ceph_key against a stand-in `ceph` CLI that keeps the imported keyring in a folder)."""

from __future__ import annotations

import json
import os
import re
import stat
import sys
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError
from ansible.plugins.loader import filter_loader, init_plugin_loader
from cfcore import ceph
from clusterforge.ansible_env import ensure_collection_link
from module_runner import run_module

init_plugin_loader([str(ensure_collection_link().parents[2])])

KEY = ceph.make_cephx_key(1764600000, 5, bytes(range(16)))
KEY2 = ceph.make_cephx_key(1764600001, 6, bytes(range(1, 17)))
CAPS = {"mon": "allow r", "mds": "allow rw fsname=cephfs", "osd": "allow rw tag cephfs data=cephfs"}


def flt(name):
    return filter_loader.get(f"clusterforge.cluster.{name}").j2_function


def test_mon_filters():
    mons = [
        {"inventory_hostname": "m1", "ceph_mon_address": "10.0.0.1", "ansible_host": "192.0.2.1"},
        {"inventory_hostname": "m2", "ansible_host": "192.0.2.2"},
    ]
    assert (
        flt("cf_ceph_mon_host")(mons)
        == "[v2:10.0.0.1:3300,v1:10.0.0.1:6789],[v2:192.0.2.2:3300,v1:192.0.2.2:6789]"
    )
    assert flt("cf_ceph_mon_addresses")(mons) == [
        {"name": "m1", "address": "10.0.0.1"},
        {"name": "m2", "address": "192.0.2.2"},
    ]
    assert flt("cf_ceph_monmaptool_args")(mons[:1]) == ["--addv", "m1", "[v2:10.0.0.1:3300,v1:10.0.0.1:6789]"]


def test_mon_filter_errors_name_the_fix():
    with pytest.raises(AnsibleFilterError, match=r"monitor m3 has no address.*\(fix: set ceph_mon_address"):
        flt("cf_ceph_mon_host")([{"inventory_hostname": "m3"}])
    with pytest.raises(AnsibleFilterError, match="group ceph_mon is empty"):
        flt("cf_ceph_mon_addresses")(None)


def test_key_and_keyring_filters():
    assert flt("cf_ceph_key_problems")(KEY, "ceph_mon_secret") == []
    (problem,) = flt("cf_ceph_key_problems")("bad", "ceph_mon_secret")
    assert problem.startswith("ceph_mon_secret is not valid base64") and "ceph-authtool" in problem
    assert (
        flt("cf_ceph_keyring")(KEY, "mon.", {"mon": "allow  *"})
        == f'[mon.]\n\tkey = {KEY}\n\tcaps mon = "allow *"\n'
    )
    with pytest.raises(AnsibleFilterError, match=re.escape("the key of client.admin")):
        flt("cf_ceph_keyring")("", "client.admin")
    assert flt("cf_ceph_clients_problems")([{"name": "a", "key": KEY}]) == []


def test_conf_sections_filter():
    got = flt("cf_ceph_conf_sections")(
        {"global": {"fsid": "x", "public_network": None}}, {"global": {"a b": 1}}
    )
    assert got == [["global", [["fsid", "x"], ["a_b", "1"]]]]
    with pytest.raises(AnsibleFilterError, match="ceph_conf_overrides must be a mapping"):
        flt("cf_ceph_conf_sections")({}, ["x"])


# ------------------------------------------------------------------ ceph_key with a stand-in CLI

FAKE_CEPH = r"""#!{python}
import json, os, sys
state = os.environ["FAKE_CEPH_STATE"]
args = sys.argv[1:]
with open(os.path.join(state, "calls"), "a") as log:
    log.write(" ".join(args) + "\n")
if os.path.exists(os.path.join(state, "down")):
    sys.stderr.write("[errno 110] RADOS timed out (error connecting to the cluster)\n")
    sys.exit(1)
sub = args[args.index("auth") + 1]
db = os.path.join(state, "auth.json")
entities = json.load(open(db)) if os.path.exists(db) else {{}}
if sub == "get":
    name = args[args.index("get") + 1]
    if name not in entities:
        sys.stderr.write("Error ENOENT: failed to find %s in keyring\n" % name)
        sys.exit(2)
    print(json.dumps([dict(entity=name, **entities[name])]))
elif sub == "import":
    entity = None
    for line in sys.stdin.read().splitlines():
        line = line.strip()
        if line.startswith("["):
            entity = line[1:-1]
            entities[entity] = {{"key": None, "caps": {{}}}}
        elif line.startswith("key = "):
            entities[entity]["key"] = line[6:]
        elif line.startswith("caps "):
            kind, _, value = line[5:].partition(" = ")
            entities[entity]["caps"][kind] = value.strip('"')
    json.dump(entities, open(db, "w"))
    sys.stderr.write("imported keyring\n")
"""


@pytest.fixture
def fake_ceph(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    script = bindir / "ceph"
    script.write_text(FAKE_CEPH.format(python=sys.executable))
    script.chmod(0o755)
    etc = tmp_path / "etc"
    etc.mkdir()
    (etc / "ceph.conf").write_text("[global]\nfsid = x\n")
    (etc / "ceph.client.admin.keyring").write_text(f"[client.admin]\n\tkey = {KEY}\n")
    state = tmp_path / "state"
    state.mkdir()
    env = dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}", FAKE_CEPH_STATE=str(state))
    base = {"conf": str(etc / "ceph.conf"), "admin_keyring": str(etc / "ceph.client.admin.keyring")}

    def run(check=False, **args):
        merged = {**base, **args}
        if check:
            merged["_ansible_check_mode"] = True
        return run_module("ceph_key", merged, env=env)

    run.state = state
    run.tmp = tmp_path
    return run


def test_ceph_key_creates_then_is_idempotent(fake_ceph):
    args = {"name": "client.fsuser", "key": KEY, "caps": CAPS}
    checked = fake_ceph(check=True, **args)
    assert checked["changed"] and checked["created"] and not (fake_ceph.state / "auth.json").exists()
    first = fake_ceph(**args)
    assert first["changed"] and first["differences"] == ["entity missing"]
    stored = json.loads((fake_ceph.state / "auth.json").read_text())["client.fsuser"]
    assert stored == {"key": KEY, "caps": CAPS}
    second = fake_ceph(**{**args, "caps": {**CAPS, "mon": "allow  r"}})
    assert not second["changed"] and second["differences"] == []
    assert KEY not in json.dumps(second)
    calls = (fake_ceph.state / "calls").read_text().splitlines()
    assert sum("auth import" in c for c in calls) == 1


def test_ceph_key_updates_caps_and_key_only_on_difference(fake_ceph):
    fake_ceph(name="client.fsuser", key=KEY, caps=CAPS)
    got = fake_ceph(name="client.fsuser", key=KEY2, caps={"mon": "allow rw"})
    assert got["changed"]
    assert "key differs" in got["differences"] and "caps mon: 'allow r' -> 'allow rw'" in got["differences"]
    assert KEY2 not in json.dumps(got)
    stored = json.loads((fake_ceph.state / "auth.json").read_text())["client.fsuser"]
    assert stored == {"key": KEY2, "caps": {"mon": "allow rw"}}


def test_ceph_key_without_key_generates_once_and_writes_dest(fake_ceph):
    dest = fake_ceph.tmp / "mgr.keyring"
    first = fake_ceph(name="mgr.a", caps={"mon": "allow profile mgr"}, dest=str(dest), return_key=True)
    assert first["changed"] and first["file_changed"]
    ceph.check_cephx_key(first["key"], "returned key")
    assert stat.S_IMODE(dest.stat().st_mode) == 0o600
    assert dest.read_text() == ceph.render_keyring("mgr.a", first["key"], {"mon": "allow profile mgr"})
    second = fake_ceph(name="mgr.a", caps={"mon": "allow profile mgr"}, dest=str(dest), return_key=True)
    assert not second["changed"] and second["key"] == first["key"]
    dest.chmod(0o644)
    third = fake_ceph(name="mgr.a", caps={"mon": "allow profile mgr"}, dest=str(dest))
    assert third["changed"] and stat.S_IMODE(dest.stat().st_mode) == 0o600 and "key" not in third


def test_ceph_key_errors(fake_ceph):
    bad = fake_ceph(name="fsuser", key=KEY)
    assert bad["failed"] and "not a Ceph entity name" in bad["msg"]
    bad = fake_ceph(name="client.x", key="short")
    assert bad["failed"] and "key is not" in bad["msg"] and "short" not in bad["msg"]
    (fake_ceph.state / "down").write_text("")
    down = fake_ceph(name="client.x", key=KEY)
    assert down["failed"] and "monitors are in quorum" in down["msg"]
    missing = fake_ceph(name="client.x", key=KEY, admin_keyring=str(fake_ceph.tmp / "none"))
    assert missing["failed"] and "admin_keyring" in missing["msg"] and "monitor host" in missing["msg"]


# ------------------------------------------------------------------ ceph_osd_device


def test_osd_device_refuses_what_is_not_a_block_device(tmp_path):
    plain = tmp_path / "disk.img"
    plain.write_bytes(b"\0" * 16)
    got = run_module("ceph_osd_device", {"device": str(plain), "fsid": "x"})
    assert got["failed"] and "is not a block device" in got["msg"] and "ceph_osd_devices" in got["msg"]
    got = run_module("ceph_osd_device", {"device": str(tmp_path / "nope"), "fsid": "x"})
    assert got["failed"] and "ceph_osd_devices" in got["msg"]


def test_module_documentation_parses():
    import yaml

    root = Path(__file__).resolve().parents[3] / "plugins" / "modules"
    for name in ("ceph_key", "ceph_osd_device"):
        text = (root / f"{name}.py").read_text()
        scope: dict = {}
        exec(compile(text.split("\nimport ", 1)[0], name, "exec"), scope)  # the doc strings only
        doc = yaml.safe_load(scope["DOCUMENTATION"])
        assert doc["module"] == name and doc["options"]
        assert yaml.safe_load(scope["RETURN"]) and yaml.safe_load(scope["EXAMPLES"])
