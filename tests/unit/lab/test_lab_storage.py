"""The lab's shared storage: who runs which part, the site variables, the secrets and their Vault file."""

from __future__ import annotations

import base64
import json
import struct
import uuid
from pathlib import Path

import pytest
import yaml
from clusterforge.errors import EnvironmentNotReady
from clusterforge.lab import vault
from clusterforge.lab.access import LabAccess
from clusterforge.lab.inventory import render, write_inventory
from clusterforge.lab.model import LabSpec, plan_nodes
from clusterforge.lab.sitevars import (
    backup_vars,
    storage_client_groups,
    storage_client_vars,
    storage_plan,
    storage_vars,
)
from clusterforge.lab.status import refresh_inventory
from clusterforge.lab.test_repo import STANDINS
from clusterforge.lab.up import UpRequest, lab_up
from yamllint import linter
from yamllint.config import YamlLintConfig

REPO = Path(__file__).resolve().parents[3]
SUBNET = "10.89.100.0/24"
MIX = {"control": 1, "gpu": 2, "npu": 1, "storage": 1}
FSID = "0b7e64f2-3f59-4bd6-9b8e-0c0c3a8f0a11"


def nodes_of(**counts):
    return plan_nodes(LabSpec("lab", {**MIX, **counts}, SUBNET, "img"))


# -- secrets --------------------------------------------------------------------------------


def test_cephx_keys_have_ceph_authtools_encoding():
    key = base64.b64decode(vault.cephx_key(now=1_700_000_000))
    assert len(key) == 12 + 16
    assert struct.unpack("<hiih", key[:12]) == (1, 1_700_000_000, 0, 16)
    assert vault.cephx_key() != vault.cephx_key()  # 16 random bytes each


def test_storage_state_is_generated_once_private_and_kept(tmp_path):
    state = tmp_path / "state"
    first = vault.ensure_storage(state)
    assert str(uuid.UUID(first.fsid)) == first.fsid
    for name in ("vault-password", "vault.yml", "storage.json"):
        assert (state / name).stat().st_mode & 0o777 == 0o600, name
    password = (state / "vault-password").read_bytes().strip()
    values = vault.read_vault(state / "vault.yml", password)
    assert set(values) == set(vault.SECRETS)
    assert all(value not in first.vault_text for value in values.values())  # encrypted, every one
    again = vault.ensure_storage(state)
    assert (again.fsid, again.vault_text, again.password_file) == (
        first.fsid,
        first.vault_text,
        first.password_file,
    )
    assert vault.read_vault(state / "vault.yml", password) == values


def test_vault_file_decrypts_with_the_password_file_through_ansible(tmp_path):
    from ansible.errors import AnsibleError
    from ansible.parsing.vault import VaultLib, VaultSecret

    storage = vault.ensure_storage(tmp_path / "state")
    secret = VaultSecret(storage.password_file.read_bytes().strip())
    data = yaml.load(storage.vault_text, Loader=vault._VaultLoader)
    plain = {name: VaultLib([("default", secret)]).decrypt(text).decode() for name, text in data.items()}
    assert len(base64.b64decode(plain["vault_ceph_mon_secret"])) == 28
    assert (
        len(plain["vault_rgw_juicefs_access_key"]) == 20 and plain["vault_rgw_juicefs_access_key"].isalnum()
    )
    assert len(plain["vault_juicefs_meta_password"]) == 32
    with pytest.raises(AnsibleError, match=r"[Dd]ecrypt"):
        VaultLib([("default", VaultSecret(b"wrong"))]).decrypt(data["vault_ceph_mon_secret"])


def test_a_secret_planned_later_is_added_without_touching_the_others(tmp_path):
    state = tmp_path / "state"
    vault.ensure_storage(state)
    password = (state / "vault-password").read_bytes().strip()
    before = vault.read_vault(state / "vault.yml", password)
    del before["vault_ceph_fsuser_key"]
    (state / "vault.yml").write_text(vault.render_vault(before, password, state / "vault-password"))
    after = vault.read_vault(state / "vault.yml", password)
    assert "vault_ceph_fsuser_key" not in after
    vault.ensure_storage(state)
    after = vault.read_vault(state / "vault.yml", password)
    assert {k: v for k, v in after.items() if k != "vault_ceph_fsuser_key"} == before
    assert len(base64.b64decode(after["vault_ceph_fsuser_key"])) == 28


def test_secrets_without_their_password_file_are_refused(tmp_path):
    state = tmp_path / "state"
    vault.ensure_storage(state)
    (state / "vault-password").unlink()
    with pytest.raises(EnvironmentNotReady, match=r"password file .* is gone") as err:
        vault.ensure_storage(state)
    assert "lab down" in err.value.fix


def test_a_wrong_password_file_names_both_files(tmp_path):
    state = tmp_path / "state"
    vault.ensure_storage(state)
    (state / "vault-password").write_text("another\n")
    with pytest.raises(EnvironmentNotReady, match="does not decrypt with the lab's password file"):
        vault.ensure_storage(state)


def test_vault_env_names_the_password_file_only_when_there_is_one(tmp_path):
    state = tmp_path / "state"
    assert "ANSIBLE_VAULT_PASSWORD_FILE" not in vault.vault_env({"A": "1"}, state)
    vault.ensure_storage(state)
    assert vault.vault_env({"A": "1"}, state) == {
        "A": "1",
        "ANSIBLE_VAULT_PASSWORD_FILE": str(state / "vault-password"),
    }


# -- the plan ----------------------------------------------------------------------------


def test_plan_storage_node_is_the_cluster_control_the_metadata_job_nodes_the_clients():
    plan = storage_plan(nodes_of())
    assert [n.host for n in plan.ceph] == ["lab-sto-01"]
    assert [n.host for n in plan.meta] == ["lab-ctl-01"]
    assert [n.host for n in plan.clients] == ["lab-gpu-01", "lab-gpu-02", "lab-npu-01"]
    assert plan.cephfs and plan.juicefs and plan.mounts_anything
    assert storage_client_groups(nodes_of()) == ["gpu_nvidia", "npu_ascend"]


def test_one_storage_node_makes_the_one_replica_cluster_of_the_molecule_scenario():
    values = storage_vars(nodes_of(), SUBNET, FSID)
    assert {k: values[k] for k in values if not k.startswith(("ceph_clients", "ceph_rgw", "juicefs_v"))} == {
        "juicefs_meta_password": "{{ vault_juicefs_meta_password }}",
        "ceph_fsid": FSID,
        "ceph_mon_secret": "{{ vault_ceph_mon_secret }}",
        "ceph_admin_secret": "{{ vault_ceph_admin_secret }}",
        "ceph_public_network": SUBNET,
        "ceph_pool_default_size": 1,
        "ceph_pool_default_min_size": 1,
        "ceph_pool_default_pg_num": 8,
        "ceph_cephfs_pg_num": 8,
        "ceph_crush_chooseleaf_type": 0,
        "ceph_mon_data_avail_warn": 5,
        "ceph_osd_memory_target": 1024**3,
        "validate_required_mounts": ["/mnt/jfs"],
    }
    assert values["ceph_clients"] == [
        {
            "name": "fsuser",
            "key": "{{ vault_ceph_fsuser_key }}",
            "caps": {
                "mon": "allow r",
                "mds": "allow rw fsname=cephfs",
                "osd": "allow rw tag cephfs data=cephfs",
            },
        }
    ]
    user, backup_user = values["ceph_rgw_users"]
    assert (user["access_key"], user["secret_key"]) == (
        "{{ vault_rgw_juicefs_access_key }}",
        "{{ vault_rgw_juicefs_secret_key }}",
    )
    # Backup sets go to the lab's RGW under a user of their own (group_vars/all/backup.yml).
    assert (backup_user["uid"], backup_user["access_key"]) == ("backup", "{{ vault_rgw_backup_access_key }}")
    (volume,) = values["juicefs_volumes"]
    assert volume["bucket"] == "http://10.89.100.15:7480/jfs"  # the storage node's gateway
    assert (volume["name"], volume["storage"], volume["region"]) == ("jfs", "s3", "default")
    assert volume["access_key"] == user["access_key"] and volume["secret_key"] == user["secret_key"]


def test_three_storage_nodes_replicate_across_hosts():
    values = storage_vars(nodes_of(storage=3), SUBNET, FSID)
    assert (values["ceph_pool_default_size"], values["ceph_pool_default_min_size"]) == (3, 2)
    assert values["ceph_crush_chooseleaf_type"] == 1
    assert values["juicefs_volumes"][0]["bucket"] == "http://10.89.100.15:7480/jfs"  # the first one


def test_backups_go_to_the_lab_s_rgw_with_their_own_keys():
    values = backup_vars(nodes_of(storage=1))
    assert values == {
        "backup_encryption_key": "{{ vault_backup_encryption_key }}",
        "backup_s3_bucket": "clusterforge-backup",
        "backup_s3_endpoint": "http://10.89.100.15:7480",
        "backup_s3_access_key": "{{ vault_rgw_backup_access_key }}",
        "backup_s3_secret_key": "{{ vault_rgw_backup_secret_key }}",
        "backup_s3_region": "default",
    }
    # Without a storage node the sets stay on the controller (backup_target or --target).
    assert backup_vars(nodes_of(storage=0)) == {"backup_encryption_key": "{{ vault_backup_encryption_key }}"}


def test_without_a_storage_node_nothing_is_mounted():
    nodes = nodes_of(storage=0)
    assert storage_vars(nodes, SUBNET, FSID) == {"juicefs_meta_password": "{{ vault_juicefs_meta_password }}"}
    assert storage_client_vars(nodes) == {}
    assert not storage_plan(nodes).mounts_anything


def test_without_a_metadata_node_only_cephfs_is_mounted():
    nodes = nodes_of(control=0)
    assert "juicefs_volumes" not in storage_vars(nodes, SUBNET, FSID)
    assert storage_client_vars(nodes) == {
        "ceph_client_keyrings": ["fsuser"],
        "ceph_cephfs_mounts": [{"path": "/mnt/cephfs", "client": "fsuser"}],
    }


def test_juicefs_release_stand_in_is_served_only_where_a_node_mounts_the_volume():
    (standin,) = [s for s in STANDINS if s.name == "juicefs_dist"]
    assert standin.needed_by(nodes_of())
    assert not standin.needed_by(nodes_of(storage=0))
    assert not standin.needed_by(nodes_of(gpu=0, npu=0))
    assert (REPO / standin.playbook).is_file()


# -- the inventory -----------------------------------------------------------------------


@pytest.fixture
def storage(tmp_path):
    return vault.ensure_storage(tmp_path / "state" / "lab")


@pytest.fixture
def access(tmp_path) -> LabAccess:
    return LabAccess(tmp_path / "state" / "lab", runner=None)


def test_inventory_carries_the_plan_the_clients_mounts_and_the_vault(tmp_path, access, storage):
    nodes = nodes_of()
    files = render("lab", nodes, access, SUBNET, None, storage)
    assert yaml.safe_load(files["group_vars/all/storage.yml"])["ceph_fsid"] == storage.fsid
    assert files["group_vars/all/vault.yml"] == storage.vault_text
    gpu = yaml.safe_load(files["group_vars/gpu_nvidia.yml"])
    npu = yaml.safe_load(files["group_vars/npu_ascend.yml"])
    assert gpu["juicefs_mounts"] == [
        {"volume": "jfs", "path": "/mnt/jfs", "cache_size_mib": 2048, "buffer_size_mib": 256}
    ]
    assert gpu["ceph_cephfs_mounts"] == [{"path": "/mnt/cephfs", "client": "fsuser"}]
    assert npu["ceph_client_keyrings"] == ["fsuser"] and npu["ascend_docker_runtime_enabled"] is False
    config = YamlLintConfig(file=str(REPO / ".yamllint.yml"))
    for name, text in files.items():
        assert list(linter.run(text, config)) == [], name

    target = write_inventory(tmp_path / "inv", "lab", nodes, access, SUBNET, None, storage)
    assert (target / "group_vars" / "all" / "vault.yml").stat().st_mode & 0o777 == 0o600
    assert (target / "group_vars" / "all" / "storage.yml").stat().st_mode & 0o777 == 0o644
    values = vault.read_vault(
        target / "group_vars" / "all" / "vault.yml", storage.password_file.read_bytes().strip()
    )
    assert set(values) == set(vault.SECRETS)


# -- lab up --------------------------------------------------------------------------------


def test_fuse_clients_get_dev_fuse_and_sys_admin_and_nobody_else_does(ctx, host):
    lab_up(ctx, UpRequest(name="lab", counts=dict(MIX)))
    for name in ("cflab-lab-gpu-01", "cflab-lab-gpu-02", "cflab-lab-npu-01"):
        assert (
            "SYS_ADMIN" in host.containers[name].caps
            and "/dev/fuse:/dev/fuse:rwm" in host.containers[name].devices
        )
    # Redis on the control node fails 217/USER under CAP_SYS_ADMIN; the Ceph node needs none.
    for name in ("cflab-lab-ctl-01", "cflab-lab-sto-01"):
        assert "SYS_ADMIN" not in host.containers[name].caps
        assert "/dev/fuse:/dev/fuse:rwm" not in host.containers[name].devices


def test_a_host_without_dev_fuse_is_refused_before_anything_starts(ctx, host):
    ctx.fuse_device.unlink()
    with pytest.raises(EnvironmentNotReady, match="mount through FUSE") as err:
        lab_up(ctx, UpRequest(name="lab", counts=dict(MIX)))
    assert "modprobe fuse" in err.value.fix
    assert not host.podman_calls("run")


def test_up_again_and_inventory_keep_the_fsid_and_secrets(ctx, host, checkout, progress):
    lab_up(ctx, UpRequest(name="lab", counts=dict(MIX)))
    state = checkout / ".cache" / "lab" / "lab"
    inventory = checkout / "inventories" / "lab"
    fsid = json.loads((state / "storage.json").read_text())["ceph_fsid"]
    vault_text = (inventory / "group_vars" / "all" / "vault.yml").read_text()
    lab_up(ctx, UpRequest(name="lab", counts=dict.fromkeys(MIX)))
    refresh_inventory(ctx, "lab")
    assert yaml.safe_load((inventory / "group_vars" / "all" / "storage.yml").read_text())["ceph_fsid"] == fsid
    assert (inventory / "group_vars" / "all" / "vault.yml").read_text() == vault_text
    assert f"ANSIBLE_VAULT_PASSWORD_FILE={state / 'vault-password'}" in progress.getvalue()
    password = (state / "vault-password").read_bytes().strip()
    for secret in vault.read_vault(state / "vault.yml", password).values():
        assert secret not in progress.getvalue()


def test_playbook_runs_of_the_lab_get_its_vault_password_file(ctx, host, checkout):
    playbook = checkout / "tests" / "hwreplay" / "install.yml"
    playbook.parent.mkdir(parents=True)
    playbook.write_text("- hosts: all\n")
    lab_up(ctx, UpRequest(name="lab", counts=dict(MIX)))
    envs = [
        env for call, env in zip(host.calls, host.envs, strict=True) if call[0].endswith("ansible-playbook")
    ]
    assert envs and all(
        env["ANSIBLE_VAULT_PASSWORD_FILE"] == str(checkout / ".cache" / "lab" / "lab" / "vault-password")
        for env in envs
    )
