"""Malformed expectations are refused with the variable and the fix named."""

from __future__ import annotations

import pytest
from cfcore.expected import InvalidExpectation, normalize
from chkdata import atlas_expected, h100_expected


def test_valid_expectations_are_normalised():
    exp = normalize(h100_expected())
    assert exp["accelerator"]["count"] == 8 and exp["accelerator"]["mig_mode"] == "disabled"
    assert exp["hca"]["rate_gbps"] == 400.0
    assert normalize(atlas_expected())["hccn_devices"][3]["id"] == 3


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"node_sku": ""}, "node_sku is missing"),
        ({"sku": None}, "sku (the catalog spec of hgx-h100-8gpu) must be a mapping"),
        ({"required_mounts": ["mnt/jfs"]}, "validate_required_mounts"),
        ({"skip_checks": ["gpu.nope"]}, "unknown check ids gpu.nope"),
        ({"bom": ["535"]}, "bom must be a mapping"),
    ],
)
def test_bad_top_level_values(change, words):
    with pytest.raises(InvalidExpectation, match=words.replace("(", r"\(").replace(")", r"\)")):
        normalize(h100_expected(**change))


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        ("vendor", "nvida", "sku.accelerator of SKU hgx-h100-8gpu.vendor is 'nvida'"),
        ("count", "eight", "count must be a whole number, got 'eight'"),
        ("count", 0, "count must be at least 1"),
        ("kernel_module_flavour", "closed", "kernel_module_flavour is 'closed'"),
        ("mig_mode", "sometimes", "mig_mode is 'sometimes'"),
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
    plan = atlas_expected()["hccn_devices"]
    del plan[2]["address"]
    with pytest.raises(InvalidExpectation, match=r"hccn_devices\[2\] lacks 'address'"):
        normalize(atlas_expected(hccn_devices=plan))
    twice = atlas_expected()["hccn_devices"]
    twice[1]["id"] = 0
    with pytest.raises(InvalidExpectation, match="appears twice"):
        normalize(atlas_expected(hccn_devices=twice))


def test_bad_hca_spec():
    expected = h100_expected()
    expected["sku"]["hca"]["link_layer"] = "OmniPath"
    with pytest.raises(InvalidExpectation, match="not InfiniBand or Ethernet"):
        normalize(expected)
