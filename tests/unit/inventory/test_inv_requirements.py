"""Required variables come from where they are used: roles' argument_specs, per play of site.yml."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from clusterforge.inventory_check import hosts as host_checks
from clusterforge.inventory_check.requirements import RoleRequirement, role_requirements
from clusterforge.paths import project_root
from invcase import Inventory, run_check


def _checkout(root: Path, plays: list, roles: dict[str, dict]) -> Path:
    (root / "playbooks").mkdir(parents=True)
    (root / "playbooks" / "site.yml").write_text(yaml.safe_dump(plays))
    for role, options in roles.items():
        meta = root / "roles" / role / "meta"
        meta.mkdir(parents=True)
        specs = {"argument_specs": {"main": {"short_description": role, "options": options}}}
        (meta / "argument_specs.yml").write_text(yaml.safe_dump(specs))
    return root


def test_the_real_site_playbook_requires_what_its_roles_mark_required():
    # base (hosts: all) marks no option required; each accelerator stack needs its BOM,
    # the Ascend NIC plan and the SKU its roles read.
    found = {(r.role, r.hosts, r.variable) for r in role_requirements(project_root())}
    assert found == {
        ("nvidia_driver", "gpu_nvidia", "nvidia_driver_version"),
        ("nvidia_fabricmanager", "gpu_nvidia", "nvidia_driver_version"),
        ("cuda_toolkit", "gpu_nvidia", "cuda_version"),
        ("nccl", "gpu_nvidia", "nccl_version"),
        ("nccl", "gpu_nvidia", "cuda_version"),
        ("dcgm", "gpu_nvidia", "dcgm_version"),
        ("ascend_driver", "npu_ascend", "ascend_driver_version"),
        ("cann", "npu_ascend", "cann_version"),
        ("hccn", "npu_ascend", "hccn_devices"),
        ("hccn", "npu_ascend", "node_sku"),
        ("ascend_runtime", "npu_ascend", "ascend_docker_runtime_version"),
        ("ascend_runtime", "npu_ascend", "node_sku"),
        ("ppu", "npu_ppu", "node_sku"),
        ("ppu", "npu_ppu", "ppu_packages"),
        ("ppu", "npu_ppu", "ppu_sdk_version"),
        ("slurm", "slurm_controller:slurm_workers", "slurm_cluster_name"),
        ("slurm", "slurm_controller:slurm_workers", "slurm_version"),
        ("slurm", "slurm_controller:slurm_workers", "slurm_munge_key"),
        # cf_k8s_deploy is a group schedulers.yml makes at run time (k8s_deploy): the role's
        # own assert names the missing checksum there.
        ("volcano", "k8s_control_plane[0]:&cf_k8s_deploy", "volcano_manifest_sha256"),
        # cf_grafana_deploy: monitoring.yml's run-time group of the hosts with grafana_deploy.
        ("grafana", "cf_grafana_deploy", "grafana_admin_password"),
    }


def test_requirements_follow_plays_roles_and_imports(tmp_path):
    root = _checkout(
        tmp_path / "cf",
        [
            {"name": "OS", "hosts": "all", "roles": ["base"]},
            {"import_playbook": "fabric.yml"},
            {"name": "templated", "hosts": "{{ target }}", "roles": ["base"]},
        ],
        {
            "base": {"base_x": {"type": "str", "required": False}},
            "fabric": {"fabric_ib_subnet": {"type": "str", "required": True}, "fabric_mtu": {"type": "int"}},
        },
    )
    (root / "playbooks" / "fabric.yml").write_text(
        yaml.safe_dump(
            [
                {
                    "name": "Fabric",
                    "hosts": "gpu_nvidia:npu_ascend",
                    "roles": [{"role": "clusterforge.cluster.fabric"}],
                }
            ]
        )
    )
    assert role_requirements(root) == (
        RoleRequirement("fabric", "Fabric", "gpu_nvidia:npu_ascend", "fabric_ib_subnet"),
    )


def test_a_required_role_option_is_checked_on_the_hosts_of_its_play(tmp_path, capsys, monkeypatch):
    root = _checkout(
        tmp_path / "cf",
        [{"name": "Fabric", "hosts": "gpu_nvidia", "roles": ["fabric"]}],
        {"fabric": {"fabric_ib_subnet": {"type": "str", "required": True}}},
    )
    monkeypatch.setattr(host_checks, "checkout", lambda: root)
    inv = Inventory(tmp_path / "inv")
    outcome = run_check(capsys, inv.root)
    assert outcome.code == 2
    [problem] = outcome.errors("vars.required")
    assert problem["variable"] == "fabric_ib_subnet"
    assert sorted(problem["hosts"]) == ["gpu-r1-n01", "gpu-r1-n02", "gpu-r1-n03", "gpu-r1-n04"]
    assert "required by role fabric" in problem["message"] and "hosts: gpu_nvidia" in problem["message"]

    inv.set_var("group_vars/gpu_nvidia.yml", "fabric_ib_subnet", "10.40.0.0/16")
    assert run_check(capsys, inv.root).code == 0


@pytest.mark.parametrize(
    ("rel", "variable"),
    [
        ("group_vars/all/scheduler.yml", "k8s_version"),
        ("group_vars/all/scheduler.yml", "k8s_container_runtime"),
        ("group_vars/all/storage.yml", "ceph_rgw_vip"),
        ("group_vars/all/monitoring.yml", "monitoring_prometheus_version"),
    ],
)
def test_variables_no_role_reads_are_not_required(tmp_path, capsys, rel, variable):
    inv = Inventory(tmp_path / "inv")
    inv.del_var(rel, variable)
    outcome = run_check(capsys, inv.root)
    assert outcome.code == 0, outcome.out


def test_what_the_validate_playbook_reads_stays_required(tmp_path, capsys):
    inv = Inventory(tmp_path / "inv")
    inv.del_var("group_vars/all/versions.yml", "cann_version")
    inv.path("host_vars/npu-r2-n01.yml").unlink()
    outcome = run_check(capsys, inv.root)
    assert outcome.code == 2
    missing = {(p["variable"], p["host"] or ",".join(p["hosts"])) for p in outcome.errors("vars.required")}
    assert ("hccn_devices", "npu-r2-n01") in missing
    assert ("cann_version", "npu-r2-n01,npu-r2-n02") in missing
