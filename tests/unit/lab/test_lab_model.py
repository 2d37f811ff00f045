"""The lab plan: names, addresses, roles, NPU NIC plan and input validation."""

from __future__ import annotations

import pytest
from clusterforge.errors import InvalidInput
from clusterforge.lab.model import (
    ROLES,
    LabSpec,
    check_counts,
    check_name,
    check_subnet,
    hccn_devices,
    parse_profiles,
    plan_nodes,
)

DEFAULT_MIX = {"control": 1, "gpu": 2, "npu": 1, "storage": 1}


def spec(counts=None, profiles=None, subnet="10.89.100.0/24") -> LabSpec:
    return LabSpec("lab", dict(counts or DEFAULT_MIX), subnet, "img", dict(profiles or {}))


def test_default_mix_plan_has_fixed_names_addresses_and_profiles():
    nodes = plan_nodes(spec())
    assert [(n.host, n.container, n.ip, n.role.name, n.hwreplay_profile) for n in nodes] == [
        ("lab-ctl-01", "cflab-lab-ctl-01", "10.89.100.11", "control", None),
        ("lab-gpu-01", "cflab-lab-gpu-01", "10.89.100.12", "gpu", "h100-healthy"),
        ("lab-gpu-02", "cflab-lab-gpu-02", "10.89.100.13", "gpu", "h100-healthy"),
        ("lab-npu-01", "cflab-lab-npu-01", "10.89.100.14", "npu", "910b-healthy"),
        ("lab-sto-01", "cflab-lab-sto-01", "10.89.100.15", "storage", None),
    ]
    assert [ROLES[r].default_count for r in ("control", "gpu", "npu", "storage")] == [1, 2, 1, 1]


def test_roles_follow_the_inventory_model():
    assert set(ROLES["control"].groups) == {
        "k8s_control_plane",
        "slurm_controller",
        "monitoring",
        "juicefs_meta",
    }
    assert set(ROLES["gpu"].groups) == {"gpu_nvidia", "slurm_workers"}
    assert set(ROLES["npu"].groups) == {"npu_ascend", "k8s_workers"}
    assert set(ROLES["storage"].groups) == {"storage", "ceph_mon", "ceph_osd", "ceph_mds", "ceph_rgw"}
    assert {r.name: r.node_sku for r in ROLES.values()} == {
        "control": "cpu-generic",
        "gpu": "hgx-h100-8gpu",
        "npu": "atlas-800t-a2",
        "storage": "cpu-generic",
    }


def test_profile_override_replaces_the_default_of_one_host():
    nodes = plan_nodes(spec(profiles={"lab-gpu-02": "h100-xid79", "lab-ctl-01": "cpu-only"}))
    by_host = {n.host: n.hwreplay_profile for n in nodes}
    assert by_host["lab-gpu-01"] == "h100-healthy"
    assert by_host["lab-gpu-02"] == "h100-xid79"
    assert by_host["lab-ctl-01"] == "cpu-only"


def test_profile_for_an_unknown_host_names_the_valid_ones():
    with pytest.raises(InvalidInput) as err:
        plan_nodes(spec(profiles={"lab-gpu-09": "x"}))
    assert "lab-gpu-09" in err.value.message
    assert "lab-gpu-01" in err.value.fix


def test_hccn_plan_of_an_a2_node_is_eight_devices_in_one_subnet():
    devices = hccn_devices(1)
    assert [d["id"] for d in devices] == list(range(8))
    assert [d["address"] for d in devices] == [f"192.168.100.{i}" for i in range(10, 18)]
    assert {(d["netmask"], d["gateway"], d["netdetect"]) for d in devices} == {
        ("255.255.255.0", "192.168.100.1", "192.168.100.1")
    }
    # the second NPU node continues after the first, without overlap
    assert hccn_devices(2)[0]["address"] == "192.168.100.18"


@pytest.mark.parametrize("name", ["lab", "cftest", "lab2", "ci-42"])
def test_valid_names(name):
    assert check_name(name) == name


@pytest.mark.parametrize("name", ["", "Lab", "2lab", "lab_1", "a-b-c", "x" * 17, "lab/../x"])
def test_invalid_names_are_refused_with_a_fix(name):
    with pytest.raises(InvalidInput) as err:
        check_name(name)
    assert "--name" in err.value.fix


def test_counts_out_of_range_and_empty_labs_are_refused():
    with pytest.raises(InvalidInput, match="--gpu 100"):
        check_counts({**DEFAULT_MIX, "gpu": 100})
    with pytest.raises(InvalidInput, match="--npu 31"):
        check_counts({**DEFAULT_MIX, "npu": 31})
    with pytest.raises(InvalidInput, match="at least one node"):
        check_counts({"control": 0, "gpu": 0, "npu": 0, "storage": 0})


def test_subnet_validation():
    assert check_subnet("10.1.2.0/24", 5) == "10.1.2.0/24"
    with pytest.raises(InvalidInput, match="not an IPv4 network"):
        check_subnet("10.1.2.3/24", 5)  # host bits set
    with pytest.raises(InvalidInput, match="not an IPv4 network"):
        check_subnet("fd00::/64", 5)
    with pytest.raises(InvalidInput, match="too small for 5 nodes"):
        check_subnet("10.1.2.0/28", 5)  # .11-.15 would reach the broadcast .15
    assert check_subnet("10.1.2.0/27", 5) == "10.1.2.0/27"


def test_parse_profiles():
    assert parse_profiles(["lab-gpu-01=h100-xid79", "lab-npu-01=910b-hbm.ecc"]) == {
        "lab-gpu-01": "h100-xid79",
        "lab-npu-01": "910b-hbm.ecc",
    }
    for bad in ("lab-gpu-01", "=x", "lab-gpu-01=", "lab-gpu-01=a b"):
        with pytest.raises(InvalidInput, match="HOST=PROFILE"):
            parse_profiles([bad])
