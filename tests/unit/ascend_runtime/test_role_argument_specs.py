"""meta/argument_specs.yml of roles hccn and ascend_runtime: typed, described, matching the defaults."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

ROLES = Path(__file__).resolve().parents[3] / "roles"
NAMES = ["hccn", "ascend_runtime"]
INVENTORY_ONLY = {
    "hccn_devices",
    "node_sku",
    "clusterforge_sku_catalog",
    "fabric_npu_network",
    "ascend_docker_runtime_version",
    "npu_exporter_version",
}
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


def spec(role):
    return yaml.safe_load((ROLES / role / "meta" / "argument_specs.yml").read_text())["argument_specs"][
        "main"
    ]["options"]


def defaults(role):
    return yaml.safe_load((ROLES / role / "defaults" / "main.yml").read_text()) or {}


def validate(role, **values):
    options = spec(role)
    known = {k: v for k, v in {**GOOD_INVENTORY, **defaults(role), **values}.items() if k in options}
    return [str(error) for error in ArgumentSpecValidator(options).validate(known).errors]


@pytest.mark.parametrize("role", NAMES)
def test_every_default_has_a_spec_and_every_spec_a_default(role):
    assert set(spec(role)) - INVENTORY_ONLY == set(defaults(role))


@pytest.mark.parametrize("role", NAMES)
def test_options_are_typed_described_and_defaults_match(role):
    for name, option in spec(role).items():
        assert option.get("type") and option.get("description"), name
        if "default" in option:
            assert option["default"] == defaults(role)[name], name


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
