"""`clusterforge inventory check` on the fabric topology (cli/clusterforge/inventory_check/topology.py
adapting cfcore/topology.py): the example passes, each broken copy names the host, the place and the
fix; and the generated golden topology.conf of the example and of the lab inventory."""

from __future__ import annotations

from pathlib import Path

import pytest
import role_specs
from ansible.plugins.loader import filter_loader, init_plugin_loader
from clusterforge.ansible_env import ensure_collection_link
from clusterforge.inventory_check import check_inventory
from clusterforge.inventory_check.ansible_load import load_inventory
from invcase import EXAMPLE, Inventory, run_check

init_plugin_loader([str(ensure_collection_link().parents[2])])
GOLDEN = Path(__file__).resolve().parent / "golden"


def flt(name):
    return filter_loader.get(f"clusterforge.cluster.{name}").j2_function


def test_the_example_inventory_passes_with_its_topology():
    report = check_inventory([str(EXAMPLE)])
    assert report.valid, [p.as_dict() for p in report.problems]
    assert not [p for p in report.problems if p.rule.startswith("topology.")]


def test_an_unplaced_gpu_host_is_located_at_its_entry(tmp_path, capsys):
    inv = Inventory(tmp_path / "inv")
    inv.del_host_var("gpu-r1-n03", "leaf")
    inv.del_host_var("gpu-r1-n03", "spine")
    outcome = run_check(capsys, inv.root)
    assert outcome.code == 2
    [problem] = outcome.errors("topology.unplaced")
    assert problem["host"] == "gpu-r1-n03" and problem["variable"] == "leaf"
    assert (
        problem["location"].startswith(str(Path("inv") / "hosts.yml")) or "hosts.yml" in problem["location"]
    )
    assert "set leaf of gpu-r1-n03" in problem["fix"]


def test_a_bad_leaf_name_is_located_at_its_line(tmp_path, capsys):
    inv = Inventory(tmp_path / "inv")
    inv.set_host_var("npu-r2-n01", "leaf", "leaf r2,b")
    outcome = run_check(capsys, inv.root)
    names = outcome.errors("topology.name")
    assert [p["host"] for p in names] == ["npu-r2-n01"]
    assert "hosts.yml:" in names[0]["location"] and "'leaf-r2-b'" in names[0]["fix"]
    # the same host is now alone on its (invalid) leaf under spine-1: nothing else is reported
    assert {p["rule"] for p in outcome.errors()} == {"topology.name"}


def test_a_leaf_under_two_spines_names_every_host_of_the_leaf(tmp_path, capsys):
    inv = Inventory(tmp_path / "inv")
    inv.set_host_var("gpu-r1-n04", "spine", "spine-2")
    outcome = run_check(capsys, inv.root)
    [problem] = outcome.errors("topology.leaf_two_spines")
    assert problem["hosts"] == ["gpu-r1-n01", "gpu-r1-n02", "gpu-r1-n03", "gpu-r1-n04"]
    assert "spine-2: gpu-r1-n04" in problem["message"]


def test_a_full_leaf_and_the_port_settings(tmp_path, capsys):
    inv = Inventory(tmp_path / "inv")
    inv.set_var("group_vars/all/fabric.yml", "topology_leaf_ports", {"leaf-r1": 3})
    outcome = run_check(capsys, inv.root)
    [problem] = outcome.errors("topology.leaf_ports")
    assert "leaf leaf-r1 has 4 host ports" in problem["message"] and "3 host-facing" in problem["message"]
    assert len(problem["hosts"]) == 4
    inv.set_var("group_vars/all/fabric.yml", "topology_leaf_ports", {"leaf-r9": 3})
    inv.set_var("group_vars/all/fabric.yml", "topology_leaf_downlinks", "32 ports")
    outcome = run_check(capsys, inv.root)
    [settings] = outcome.errors("topology.settings")
    assert "fabric.yml" in settings["location"] and settings["host"] is None
    assert [p["rule"] for p in outcome.problems if p["severity"] == "warning"] == ["topology.unknown_leaf"]


def test_an_nvlink_domain_across_racks(tmp_path, capsys):
    inv = Inventory(tmp_path / "inv")
    inv.set_host_var("gpu-r1-n01", "nvlink_domain", "nvl-1")
    inv.set_host_var("npu-r2-n01", "nvlink_domain", "nvl-1")
    outcome = run_check(capsys, inv.root)
    [problem] = outcome.errors("topology.domain_racks")
    assert problem["hosts"] == ["gpu-r1-n01", "npu-r2-n01"]
    inv.set_var("group_vars/all/fabric.yml", "topology_spanning_domains", ["nvl-1"])
    assert run_check(capsys, inv.root).code == 0


def test_a_site_without_any_topology_is_not_reported(tmp_path, capsys):
    inv = Inventory(tmp_path / "inv")
    for host in ("gpu-r1-n01", "gpu-r1-n02", "gpu-r1-n03", "gpu-r1-n04", "npu-r2-n01", "npu-r2-n02"):
        inv.del_host_var(host, "leaf")
        inv.del_host_var(host, "spine")
    outcome = run_check(capsys, inv.root)
    assert outcome.code == 0 and outcome.problems == []


# -- topology.conf through the role's filter, from the inventories ------------------------------


def _slurm_topology(inventory: Path, cluster: str, slurm_version: str) -> dict:
    loaded = load_inventory([str(inventory)])
    hostvars = {name: entry.vars for name, entry in loaded.hosts.items()}
    groups = {name: sorted(hosts) for name, hosts in loaded.groups.items()}
    groups["all"] = sorted(loaded.hosts)
    return flt("cf_slurm_topology")(
        hostvars,
        groups.get("slurm_workers", []),
        groups,
        {},
        cluster_name=cluster,
        slurm_version=slurm_version,
        leaf_downlinks=hostvars[groups["all"][0]].get("topology_leaf_downlinks"),
    )


def test_golden_topology_conf_of_the_example():
    conf = _slurm_topology(EXAMPLE, "cf-example", "24.05.4")
    assert conf["slurm_plugin"] == "topology/tree"
    assert conf["text"] == (GOLDEN / "example-topology.conf").read_text()


def test_golden_topology_conf_of_the_lab(tmp_path):
    from clusterforge.lab.access import LabAccess
    from clusterforge.lab.inventory import write_inventory
    from clusterforge.lab.model import LabSpec, plan_nodes

    spec = LabSpec("cftest", {"control": 1, "gpu": 3, "npu": 2, "storage": 1}, "10.89.100.0/24", "img")
    access = LabAccess(tmp_path / "state", runner=None)
    inventory = write_inventory(tmp_path / "inv", "cftest", plan_nodes(spec), access, spec.subnet)
    assert check_inventory([str(inventory)]).valid
    conf = _slurm_topology(inventory, "cf-cftest", "22.05.8")
    # gpu-01 and gpu-03 share a leaf: the only pair a 2-node --switches=1 job can get
    assert conf["text"] == (GOLDEN / "lab-topology.conf").read_text()


def test_the_filter_fails_with_the_rules_words():
    hostvars = {"gpu-1": {"leaf": "leaf-1", "rack": "r1"}, "gpu-2": {"rack": "r1"}}
    groups = {
        "all": ["gpu-1", "gpu-2"],
        "gpu_nvidia": ["gpu-1", "gpu-2"],
        "slurm_workers": ["gpu-1", "gpu-2"],
    }
    from ansible.errors import AnsibleFilterError

    with pytest.raises(AnsibleFilterError, match="set leaf of gpu-2"):
        flt("cf_slurm_topology")(hostvars, groups["slurm_workers"], groups)
    findings = flt("cf_topology_findings")(hostvars, groups)
    assert [(f["rule"], f["host"]) for f in findings] == [("topology.unplaced", "gpu-2")]


# -- argument specs -----------------------------------------------------------------------------

REQUIRED = {"slurm_cluster_name": "c", "slurm_version": "22.05.8", "slurm_munge_key": "x" * 44}


def test_slurm_topology_options_are_specified():
    assert role_specs.validate("slurm", REQUIRED) == []
    assert (
        role_specs.validate("slurm", REQUIRED, slurm_topology_plugin="block", slurm_topology_block_sizes=[18])
        == []
    )
    assert role_specs.validate("slurm", REQUIRED, slurm_topology_plugin="fat-tree")
    assert role_specs.validate("slurm", REQUIRED, topology_leaf_downlinks="many")
    assert (
        role_specs.validate(
            "volcano", {"volcano_manifest_sha256": "0" * 64}, topology_root_name="fabric-root"
        )
        == []
    )
