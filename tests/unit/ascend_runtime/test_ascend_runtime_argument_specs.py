"""meta/argument_specs.yml of roles hccn and ascend_runtime: typed, described, matching the defaults."""

from __future__ import annotations

import pytest
import role_specs

NAMES = ["hccn", "ascend_runtime"]
PLAN = [
    {
        "id": d,
        "address": f"10.30.2.{11 + d}",
        "netmask": "255.255.255.0",
        "gateway": "10.30.2.1",
        "netdetect": "10.30.2.1",
    }
    for d in range(8)
]
GOOD_INVENTORY = {
    "hccn_devices": PLAN,
    "node_sku": "atlas-800t-a2",
    "ascend_packages": {"Ascend-docker-runtime_6.0.0_linux-x86_64.run": "0" * 64},
    "ascend_docker_runtime_version": "6.0.0",
    "npu_exporter_version": "6.0.0",
}


def validate(role, **values):
    return role_specs.validate(role, GOOD_INVENTORY, **values)


@pytest.mark.parametrize("role", NAMES)
def test_the_defaults_with_a_good_inventory_are_valid(role):
    assert validate(role) == []


def test_hccn_entry_shape_is_enforced():
    broken = [dict(PLAN[0])]
    del broken[0]["netdetect"]
    assert any("netdetect" in error for error in validate("hccn", hccn_devices=broken))
    assert validate("hccn", hccn_devices=[{**PLAN[0], "id": "zero"}]) != []


def test_install_scene_choices():
    assert validate("ascend_runtime", ascend_runtime_install_scene="podman") != []
    assert validate("ascend_runtime", ascend_runtime_install_scene="isula") == []
