"""plugins/filter/juicefs.py, loaded as Ansible loads it: plans without secrets, play volumes, env file."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from ansible.plugins.loader import filter_loader, init_plugin_loader
from clusterforge.ansible_env import ensure_collection_link

init_plugin_loader([str(ensure_collection_link().parents[2])])


def flt(name):
    return filter_loader.get(f"clusterforge.cluster.{name}").j2_function


volume_plan = flt("cf_juicefs_volume_plan")
volume_secrets = flt("cf_juicefs_volume_secrets")
mount_plan = flt("cf_juicefs_mount_plan")
play_volumes = flt("cf_juicefs_play_volumes")
env_file = flt("cf_juicefs_env_file")
VOLUMES = [
    {
        "name": "jfs",
        "storage": "s3",
        "bucket": "http://rgw1:7480/jfs",
        "access_key": "AKIAEXAMPLE",
        "secret_key": "SECRETKEY",
        "region": "default",
    }
]


def test_volume_plan_holds_no_secret_and_takes_the_defaults():
    (plan,) = volume_plan(VOLUMES, "redis://10.0.0.5:6379/1", "METAPW")
    assert plan["meta_url"] == "redis://10.0.0.5:6379/1"
    assert plan["has_meta_password"] and plan["has_keys"]
    assert "METAPW" not in repr(plan) and "SECRETKEY" not in repr(plan) and "AKIAEXAMPLE" not in repr(plan)


def test_volume_plan_error_is_a_filter_error_with_the_fix():
    with pytest.raises(
        AnsibleFilterError, match=r"juicefs_volumes\[0\]\.storage is not set \(fix: set storage"
    ):
        volume_plan([{"name": "jfs", "bucket": "b"}], "redis://m/1")


def test_volume_secrets_of_one_volume():
    assert volume_secrets(VOLUMES, "jfs", "METAPW") == {
        "meta_password": "METAPW",
        "access_key": "AKIAEXAMPLE",
        "secret_key": "SECRETKEY",
    }
    with pytest.raises(AnsibleFilterError, match="no volume 'other'"):
        volume_secrets(VOLUMES, "other")


def test_mount_plan_has_unit_env_file_and_exec_lines():
    volumes = volume_plan(VOLUMES, "redis://10.0.0.5:6379/1")
    (mount,) = mount_plan(
        [{"volume": "jfs", "path": "/mnt/jfs"}], volumes, "/usr/local/bin/juicefs", ["--no-usage-report"]
    )
    assert mount["unit"] == "juicefs-jfs.service" and mount["env_file"] == "/etc/juicefs/jfs.env"
    assert mount["exec_start"].startswith("/usr/local/bin/juicefs mount --cache-dir /var/cache/juicefs ")
    assert mount["exec_start"].endswith(" --no-usage-report redis://10.0.0.5:6379/1 /mnt/jfs")
    assert mount["exec_stop"] == "/usr/local/bin/juicefs umount /mnt/jfs"
    assert mount["exec_start_pre"] == "/bin/umount -l /mnt/jfs"
    assert mount["region"] == "default"


def test_mount_plan_unknown_volume():
    with pytest.raises(
        AnsibleFilterError, match=r"juicefs_mounts\[0\]\.volume 'x' is not in juicefs_volumes"
    ):
        mount_plan([{"volume": "x", "path": "/mnt/x"}], volume_plan(VOLUMES, "redis://m/1"))


def test_play_volumes_in_play_order():
    hostvars = {
        "meta": {},
        "c2": {"juicefs_mounts": [{"volume": "jfs", "path": "/a"}, {"volume": "data", "path": "/b"}]},
        "c1": {"juicefs_mounts": [{"volume": "jfs", "path": "/a"}]},
        "none": {"juicefs_mounts": []},
    }
    assert play_volumes(hostvars, ["meta", "c2", "c1", "none"]) == {
        "hosts": ["c2", "c1"],
        "volumes": ["data", "jfs"],
    }
    assert play_volumes(hostvars, ["meta"]) == {"hosts": [], "volumes": []}


def test_env_file_escapes_for_systemd():
    body = env_file({"META_PASSWORD": 'p"a$s\\w', "AWS_REGION": "", "X": None})
    assert body.splitlines()[1:] == ['META_PASSWORD="p\\"a\\$s\\\\w"']
    with pytest.raises(AnsibleFilterError, match="newline"):
        env_file({"META_PASSWORD": "a\nb"})
