"""node_validate's own check of its parameters (cfcore.expected.normalize): malformed
expectations are refused with the variable and the fix named, with the catalog's schema."""

from __future__ import annotations

import copy

import pytest
from cfcore.expected import InvalidExpectation, build_expected, normalize

PLAN = [
    {"id": n, "address": f"10.20.0.{10 + n}", "netmask": "255.255.255.0", "gateway": "10.20.0.1"}
    for n in range(8)
]


def h100_expected(**change) -> dict:
    expected = build_expected("gpu-1", {"node_sku": "hgx-h100-8gpu", "nvidia_driver_version": "535.183.01"})
    return {**copy.deepcopy(expected), **change}


def atlas_expected(**change) -> dict:
    expected = build_expected("npu-1", {"node_sku": "atlas-800t-a2", "hccn_devices": copy.deepcopy(PLAN)})
    return {**copy.deepcopy(expected), **change}


def test_valid_expectations_are_normalised():
    exp = normalize(h100_expected())
    assert exp["accelerator"]["count"] == 8 and exp["accelerator"]["mig_mode"] == "disabled"
    assert exp["hca"]["rate_gbps"] == 400
    assert normalize(atlas_expected())["hccn_devices"][3]["id"] == 3


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"node_sku": ""}, "node_sku is missing"),
        ({"sku": None}, "the spec of SKU hgx-h100-8gpu is invalid: hgx-h100-8gpu: must be a mapping"),
        ({"required_mounts": ["mnt/jfs"]}, "validate_required_mounts"),
        ({"skip_checks": ["gpu.nope"]}, "unknown check ids gpu.nope"),
        ({"bom": ["535"]}, "bom must be a mapping"),
        ({"os_release": "debian twelve and a half"}, "os_release must be the OS ID and VERSION_ID"),
        ({"root_min_free_gib": float("nan")}, "validate_root_min_free_gib must be a number"),
    ],
)
def test_bad_top_level_values(change, words):
    with pytest.raises(InvalidExpectation) as raised:
        normalize(h100_expected(**change))
    assert words in str(raised.value)


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        ("vendor", "nvida", "hgx-h100-8gpu.accelerator.vendor: must be one of nvidia, huawei, alibaba"),
        ("count", "eight", "hgx-h100-8gpu.accelerator.count: must be a positive integer, got str 'eight'"),
        ("count", 0, "hgx-h100-8gpu.accelerator.count: must be a positive integer"),
        ("kernel_module_flavour", "closed", "kernel_module_flavour: must be one of proprietary, open, any"),
        ("mig_mode", "sometimes", "mig_mode: must be one of disabled, enabled"),
        ("colour", "green", "hgx-h100-8gpu.accelerator.colour: unknown key"),
    ],
)
def test_bad_accelerator_spec_names_the_sku_and_the_catalog(key, value, words):
    expected = h100_expected()
    expected["sku"]["accelerator"][key] = value
    with pytest.raises(InvalidExpectation) as raised:
        normalize(expected)
    assert words in str(raised.value)
    assert "clusterforge_sku_catalog" in str(raised.value)


def test_bad_nic_plan_names_the_entry():
    plan = copy.deepcopy(PLAN)
    del plan[2]["address"]
    with pytest.raises(InvalidExpectation, match=r"hccn_devices\[2\] lacks 'address'"):
        normalize(atlas_expected(hccn_devices=plan))
    twice = copy.deepcopy(PLAN)
    twice[1]["id"] = 0
    with pytest.raises(InvalidExpectation, match="appears twice"):
        normalize(atlas_expected(hccn_devices=twice))


def test_bad_hca_spec():
    expected = h100_expected()
    expected["sku"]["hca"]["link_layer"] = "OmniPath"
    with pytest.raises(InvalidExpectation, match="link_layer: must be one of InfiniBand, Ethernet"):
        normalize(expected)
