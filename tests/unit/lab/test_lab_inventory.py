"""The generated inventory: the design.md model, valid for Ansible and yamllint."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from cfcore.groups import INVENTORY_GROUPS
from clusterforge.lab.access import LabAccess
from clusterforge.lab.inventory import is_generated_for, remove_inventory, render, write_inventory
from clusterforge.lab.model import LabSpec, plan_nodes
from yamllint import linter
from yamllint.config import YamlLintConfig

REPO = Path(__file__).resolve().parents[3]
MIX = {"control": 1, "gpu": 2, "npu": 2, "storage": 1}
SUBNET = "10.89.100.0/24"


@pytest.fixture
def access(tmp_path) -> LabAccess:
    return LabAccess(tmp_path / "state" / "lab", runner=None)


@pytest.fixture
def nodes():
    return plan_nodes(LabSpec("lab", dict(MIX), SUBNET, "img", {"lab-gpu-02": "h100-xid79"}))


def test_hosts_follow_the_inventory_model(nodes, access):
    files = render("lab", nodes, access, SUBNET)
    assert files["hosts.yml"].startswith("# clusterforge-lab: lab\n")
    doc = yaml.safe_load(files["hosts.yml"])
    hosts = doc["all"]["hosts"]
    children = doc["all"]["children"]
    assert list(children) == list(INVENTORY_GROUPS)
    members = {group: sorted((body or {}).get("hosts") or {}) for group, body in children.items()}
    assert members == {
        "gpu_nvidia": ["lab-gpu-01", "lab-gpu-02"],
        "npu_ascend": ["lab-npu-01", "lab-npu-02"],
        "npu_ppu": [],
        "storage": ["lab-sto-01"],
        "juicefs_meta": ["lab-ctl-01"],
        "ceph_mon": ["lab-sto-01"],
        "ceph_osd": ["lab-sto-01"],
        "k8s_control_plane": ["lab-ctl-01"],
        "k8s_workers": ["lab-npu-01", "lab-npu-02"],
        "slurm_controller": ["lab-ctl-01"],
        "slurm_workers": ["lab-gpu-01", "lab-gpu-02"],
        "monitoring": ["lab-ctl-01"],
        "ceph_mgr": [],
        "ceph_mds": ["lab-sto-01"],
        "ceph_rgw": ["lab-sto-01"],
    }
    assert hosts["lab-ctl-01"] == {
        "ansible_host": "10.89.100.11",
        "node_sku": "cpu-generic",
        "rack": "lab-r1",
        # The lab's time server: no NTP pool is reachable, so it serves its own clock.
        "base_chrony_servers": [],
        "base_chrony_local_stratum": 10,
        "base_chrony_allow": ["all"],
    }
    assert hosts["lab-gpu-02"] == {
        "ansible_host": "10.89.100.13",
        "node_sku": "hgx-h100-8gpu",
        "rack": "lab-r1",
        # gpu-01 and gpu-03 share leaf 1 (lab/model.py fabric_of): name order is not topology order
        "leaf": "lab-leaf-2",
        "spine": "lab-spine-1",
        "hwreplay_profile": "h100-xid79",
        "sysfs_root": "/opt/hwreplay/sysroot",
    }
    npu2 = hosts["lab-npu-02"]
    assert (npu2["node_sku"], npu2["hwreplay_profile"], npu2["sysfs_root"]) == (
        "atlas-800t-a2",
        "910b-healthy",
        "/opt/hwreplay/sysroot",
    )
    assert [d["address"] for d in npu2["hccn_devices"]] == [f"192.168.100.{i}" for i in range(18, 26)]
    assert "hccn_devices" not in hosts["lab-gpu-01"]
    assert {host: (v.get("leaf"), v.get("spine")) for host, v in hosts.items()} == {
        "lab-ctl-01": (None, None),  # front-end network only
        "lab-gpu-01": ("lab-leaf-1", "lab-spine-1"),
        "lab-gpu-02": ("lab-leaf-2", "lab-spine-1"),
        "lab-npu-01": ("lab-leaf-3", "lab-spine-1"),
        "lab-npu-02": ("lab-leaf-3", "lab-spine-1"),
        "lab-sto-01": (None, None),
    }


def test_every_other_node_takes_its_time_from_the_control_node(nodes, access):
    files = render("lab", nodes, access, SUBNET)
    assert yaml.safe_load(files["group_vars/all/time.yml"]) == {
        "base_chrony_pools": [],
        "base_chrony_servers": ["lab-ctl-01"],
    }


def test_bom_and_connection_vars(nodes, access):
    files = render("lab", nodes, access, SUBNET)
    assert yaml.safe_load(files["group_vars/all/versions.yml"]) == {
        "nvidia_driver_version": "570.133.20",
        "cuda_version": "12.8",
        "nccl_version": "2.26.2",
        "dcgm_version": "4.2.3",
        "dcgm_exporter_version": "4.1.1",
        "ascend_driver_version": "25.5.0",
        "ascend_firmware_version": "7.8.0.5.216",
        "cann_version": "8.5.0",
        "ascend_docker_runtime_version": "7.0.0",
        "npu_exporter_version": "6.0.0",
        "os_release": "debian 12",
        "pytorch_version": "2.13.0",
        "pytorch_cuda_version": "12.6",
    }
    # No container engine on lab nodes yet: Ascend Docker Runtime waits for one.
    # Containers on the host's kernel: no kernel headers (nor in the lab's offline bundle).
    assert yaml.safe_load(files["group_vars/npu_ascend.yml"]) == {
        "ascend_docker_runtime_enabled": False,
        "ascend_driver_kernel_headers": False,
        "npu_exporter_listen_address": "{{ ansible_host }}",
    }
    assert yaml.safe_load(files["group_vars/gpu_nvidia.yml"]) == {"nvidia_driver_kernel_headers": False}
    assert 'cuda_version: "12.8"' in files["group_vars/all/versions.yml"]  # a string, not the float 12.2
    connection = yaml.safe_load(files["group_vars/all/connection.yml"])
    assert connection["ansible_user"] == "ansible"
    assert connection["ansible_ssh_private_key_file"] == str(access.key)
    assert connection["ansible_become"] is True and connection["ansible_become_method"] == "sudo"
    assert shlex.split(connection["ansible_ssh_common_args"]) == [
        "-o", f"UserKnownHostsFile={access.known_hosts}", "-o", "StrictHostKeyChecking=yes",
        "-o", "IdentitiesOnly=yes",
    ]  # fmt: skip


def test_site_vars_give_each_group_what_its_roles_need(nodes, access):
    files = render("lab", nodes, access, SUBNET)
    scheduler = yaml.safe_load(files["group_vars/all/scheduler.yml"])
    assert scheduler["slurm_cluster_name"] == "cf-lab"
    assert scheduler["slurm_partitions"] == [
        {"name": "gpu", "nodes_group": "gpu_nvidia", "default": True, "max_time": "1-00:00:00"}
    ]
    assert 'slurm_version: "22.05.8"' in files["group_vars/all/scheduler.yml"]
    assert "group_vars/all/storage.yml" not in files  # no storage state given: no storage plan
    assert yaml.safe_load(files["group_vars/ceph_osd.yml"]) == {
        "ceph_osd_devices": ["/dev/vdb"],
        "ceph_osd_method": "raw",
    }
    assert yaml.safe_load(files["group_vars/all/monitoring.yml"]) == {
        "monitoring_prometheus_version": "2.42.0",
        "prometheus_scrape_interval": "15s",
        "prometheus_evaluation_interval": "15s",
        "node_healthcheck_interval_s": 120,
        "grafana_deploy": False,
    }


def test_no_gpu_nodes_no_slurm_partition(access):
    cpu_only = plan_nodes(LabSpec("lab", {"control": 1, "gpu": 0, "npu": 1, "storage": 0}, SUBNET, "img"))
    scheduler = yaml.safe_load(render("lab", cpu_only, access, SUBNET)["group_vars/all/scheduler.yml"])
    assert scheduler["slurm_partitions"] == []


def test_paths_with_spaces_survive_ansibles_argument_splitting(tmp_path, nodes):
    access = LabAccess(tmp_path / "my labs" / "lab", runner=None)
    connection = yaml.safe_load(render("lab", nodes, access, SUBNET)["group_vars/all/connection.yml"])
    assert f"UserKnownHostsFile={access.known_hosts}" in shlex.split(connection["ansible_ssh_common_args"])


def test_files_pass_the_projects_yamllint_config(nodes, access):
    config = YamlLintConfig(file=str(REPO / ".yamllint.yml"))
    for name, text in render("lab", nodes, access, SUBNET).items():
        problems = list(linter.run(text, config))
        assert problems == [], f"{name}: {problems}"


def test_ansible_reads_the_inventory_as_intended(tmp_path, nodes, access):
    target = write_inventory(tmp_path / "inventories" / "lab", "lab", nodes, access, SUBNET)
    ansible_inventory = Path(sys.executable).parent / "ansible-inventory"
    proc = subprocess.run(
        [str(ansible_inventory), "-i", str(target), "--list"],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert sorted(data["gpu_nvidia"]["hosts"]) == ["lab-gpu-01", "lab-gpu-02"]
    assert sorted(data["k8s_workers"]["hosts"]) == ["lab-npu-01", "lab-npu-02"]
    hostvars = data["_meta"]["hostvars"]["lab-npu-01"]
    assert hostvars["ansible_host"] == "10.89.100.14"
    assert hostvars["cann_version"] == "8.5.0"  # group_vars/all reached the host
    assert hostvars["ansible_user"] == "ansible"
    assert len(hostvars["hccn_devices"]) == 8


def test_rewrite_replaces_the_whole_folder(tmp_path, nodes, access):
    target = tmp_path / "inventories" / "lab"
    write_inventory(target, "lab", nodes, access, SUBNET)
    (target / "host_vars").mkdir()
    (target / "host_vars" / "stale.yml").write_text("x: 1\n")
    write_inventory(target, "lab", nodes[:1], access, SUBNET)
    assert not (target / "host_vars").exists()
    assert list(yaml.safe_load((target / "hosts.yml").read_text())["all"]["hosts"]) == ["lab-ctl-01"]
    assert sorted(p.name for p in target.parent.iterdir()) == ["lab"]  # no staging leftovers
    assert (target / "hosts.yml").stat().st_mode & 0o777 == 0o644


def test_only_a_folder_with_the_labs_mark_is_removed(tmp_path, nodes, access):
    target = tmp_path / "inventories" / "lab"
    write_inventory(target, "lab", nodes, access, SUBNET)
    assert is_generated_for(target, "lab") and not is_generated_for(target, "other")
    assert not remove_inventory(target, "other") and target.exists()
    assert remove_inventory(target, "lab") and not target.exists()
    assert not remove_inventory(target, "lab")


def test_stand_in_variables_become_group_vars(nodes, access):
    repo = {"nvidia_cuda_repo_base_url": "http://10.89.100.250:8080/compute/cuda/repos"}
    packages = {"ascend_package_url": "http://10.89.100.249:8080", "ascend_packages": {"a.run": "0" * 64}}
    files = render("lab", nodes, access, SUBNET, {"nvidia_repo": repo, "ascend_pkgs": packages})
    assert yaml.safe_load(files["group_vars/all/nvidia_repo.yml"]) == repo
    assert yaml.safe_load(files["group_vars/all/ascend_pkgs.yml"]) == packages
    plain = render("lab", nodes, access, SUBNET)
    assert "group_vars/all/nvidia_repo.yml" not in plain and "group_vars/all/ascend_pkgs.yml" not in plain
