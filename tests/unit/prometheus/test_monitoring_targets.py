"""Scrape targets from the inventory: cfcore/monitoring_targets.py and the filter cf_prometheus_targets."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleFilterError
from ansible.plugins.loader import filter_loader, init_plugin_loader
from cfcore import monitoring_targets as mt
from cfcore.inputs import InputError
from clusterforge.ansible_env import ensure_collection_link

init_plugin_loader([str(ensure_collection_link().parents[2])])
ROOT = Path(__file__).resolve().parents[3]


def host(ip, rack="r1", sku="hgx-h100-8gpu", **extra):
    return {"ansible_host": ip, "rack": rack, "node_sku": sku, **extra}


def inventory():
    hostvars = {
        "gpu-1": host("10.0.0.1"),
        "gpu-2": host("10.0.0.2", exporters_node_exporter_port=9111, exporters_dcgm_exporter_port="9411"),
        "npu-1": host("10.0.1.1", rack="r2", sku="atlas-800t-a2", npu_exporter_port=8090),
        "mon-1": host("10.0.3.1", rack="r3", sku="cpu-generic"),
        "localhost": {"ansible_connection": "local"},
    }
    groups = {
        "all": ["npu-1", "gpu-2", "gpu-1", "mon-1", "localhost"],
        "ungrouped": ["localhost"],
        "gpu_nvidia": ["gpu-1", "gpu-2"],
        "slurm_workers": ["gpu-2"],
        "k8s_workers": ["gpu-1", "npu-1"],
        "npu_ascend": ["npu-1"],
        "monitoring": ["mon-1"],
        "rack_r1": ["gpu-1", "gpu-2"],  # a site group outside the inventory model
    }
    return hostvars, groups


def test_targets_of_a_good_inventory():
    got = mt.targets(*inventory())
    assert set(got) == {"node", "dcgm", "npu"}
    assert got["node"] == [
        {
            "targets": ["10.0.0.1:9100"],
            "labels": {
                "node": "gpu-1",
                "rack": "r1",
                "node_sku": "hgx-h100-8gpu",
                "cluster_groups": ",gpu_nvidia,k8s_workers,",
            },
        },
        {
            "targets": ["10.0.0.2:9111"],
            "labels": {
                "node": "gpu-2",
                "rack": "r1",
                "node_sku": "hgx-h100-8gpu",
                "cluster_groups": ",gpu_nvidia,slurm_workers,",
            },
        },
        {
            "targets": ["10.0.3.1:9100"],
            "labels": {
                "node": "mon-1",
                "rack": "r3",
                "node_sku": "cpu-generic",
                "cluster_groups": ",monitoring,",
            },
        },
        {
            "targets": ["10.0.1.1:9100"],
            "labels": {
                "node": "npu-1",
                "rack": "r2",
                "node_sku": "atlas-800t-a2",
                "cluster_groups": ",k8s_workers,npu_ascend,",
            },
        },
    ]
    assert [e["targets"] for e in got["dcgm"]] == [["10.0.0.1:9400"], ["10.0.0.2:9411"]]
    assert [e["labels"]["node"] for e in got["dcgm"]] == ["gpu-1", "gpu-2"]
    assert got["npu"] == [{"targets": ["10.0.1.1:8090"], "labels": got["node"][3]["labels"]}]
    # Each entry owns its labels (the JSON files are written independently).
    assert got["npu"][0]["labels"] is not got["node"][3]["labels"]


@pytest.mark.parametrize("off", [False, "false", "no"])
def test_a_host_that_runs_no_exporter_of_a_job_is_no_target_of_it(off):
    hostvars, groups = inventory()
    hostvars["gpu-2"]["exporters_dcgm_exporter_enabled"] = off
    hostvars["npu-1"]["npu_exporter_enabled"] = off
    got = mt.targets(hostvars, groups)
    assert [g["labels"]["node"] for g in got["dcgm"]] == ["gpu-1"]
    assert got["npu"] == []
    assert "gpu-2" in [g["labels"]["node"] for g in got["node"]]  # node_exporter still runs there


def test_default_ports_are_the_exporter_roles_defaults():
    assert (mt.NODE_EXPORTER_PORT, mt.DCGM_EXPORTER_PORT, mt.NPU_EXPORTER_PORT) == (9100, 9400, 8082)
    ascend = yaml.safe_load((ROOT / "roles/ascend_runtime/defaults/main.yml").read_text())
    assert ascend["npu_exporter_port"] == mt.NPU_EXPORTER_PORT
    defaults = yaml.safe_load((ROOT / "roles/exporters/defaults/main.yml").read_text())
    assert defaults["exporters_node_exporter_port"] == mt.NODE_EXPORTER_PORT
    assert defaults["exporters_dcgm_exporter_port"] == mt.DCGM_EXPORTER_PORT


def test_cluster_groups_matches_one_group_with_a_regex():
    assert (
        mt.cluster_groups(["slurm_workers", "gpu_nvidia", "rack_r1", "all"]) == ",gpu_nvidia,slurm_workers,"
    )
    assert mt.cluster_groups([]) == ","


def test_the_groups_are_the_inventory_models_one_list():
    from cfcore import groups

    assert mt.INVENTORY_GROUPS is groups.INVENTORY_GROUPS
    assert set(groups.EXPECTED_GROUPS) | set(groups.CEPH_GROUPS) == set(groups.INVENTORY_GROUPS)
    assert len(set(groups.INVENTORY_GROUPS)) == len(groups.INVENTORY_GROUPS)


def test_ipv6_addresses_get_brackets():
    got = mt.targets({"a": host("fd00::1")}, {"all": ["a"]})
    assert got["node"][0]["targets"] == ["[fd00::1]:9100"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"rack": None}, "host gpu-1: rack is unset"),
        ({"ansible_host": ""}, "host gpu-1: ansible_host is ''"),
        ({"node_sku": 3}, "host gpu-1: node_sku is 3"),
        (
            {"exporters_node_exporter_port": 70000},
            "host gpu-1: exporters_node_exporter_port is 70000, not a TCP port",
        ),
        (
            {"exporters_dcgm_exporter_port": True},
            "host gpu-1: exporters_dcgm_exporter_port is True, not a TCP port",
        ),
    ],
)
def test_errors_name_the_host_and_the_variable(change, message):
    hostvars, groups = inventory()
    hostvars["gpu-1"] = {k: v for k, v in {**hostvars["gpu-1"], **change}.items() if v is not None}
    with pytest.raises(InputError) as err:
        mt.targets(hostvars, groups)
    assert message in str(err.value)
    assert "fix: set" in str(err.value)


def test_every_bad_host_is_named_at_once():
    hostvars, groups = inventory()
    del hostvars["gpu-1"]["rack"]
    del hostvars["npu-1"]["ansible_host"]
    with pytest.raises(InputError) as err:
        mt.targets(hostvars, groups)
    assert "host gpu-1: rack is unset" in str(err.value)
    assert "host npu-1: ansible_host is unset" in str(err.value)


def test_groups_must_have_all():
    with pytest.raises(InputError, match="groups has no list 'all'"):
        mt.targets({}, {})


class CountingHostvars(dict):
    reads = 0

    def __getitem__(self, key):
        CountingHostvars.reads += 1
        return super().__getitem__(key)


def test_each_host_is_read_once_in_a_large_inventory():
    n = 5000
    hostvars = CountingHostvars(
        {f"n{i:05d}": host(f"10.{i // 65536}.{i // 256 % 256}.{i % 256}") for i in range(n)}
    )
    names = sorted(hostvars)
    groups = {
        "all": names,
        "gpu_nvidia": names[: n // 2],
        "npu_ascend": names[n // 2 :],
        "slurm_workers": names,
    }
    CountingHostvars.reads = 0
    got = mt.targets(hostvars, groups)
    assert CountingHostvars.reads == n
    assert (len(got["node"]), len(got["dcgm"]), len(got["npu"])) == (n, n // 2, n - n // 2)
    assert got["npu"][0]["labels"]["cluster_groups"] == ",npu_ascend,slurm_workers,"


def flt(name):
    return filter_loader.get(f"clusterforge.cluster.{name}").j2_function


def test_filter_returns_the_targets_and_raises_filter_errors():
    hostvars, groups = inventory()
    assert flt("cf_prometheus_targets")(hostvars, groups) == mt.targets(hostvars, groups)
    del hostvars["mon-1"]["node_sku"]
    with pytest.raises(AnsibleFilterError, match=r"host mon-1: node_sku is unset.*fix: set node_sku"):
        flt("cf_prometheus_targets")(hostvars, groups)
