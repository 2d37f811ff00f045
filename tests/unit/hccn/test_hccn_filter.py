"""cf_hccn_findings: the playbook's and role's pre-check, with the words of inventory check."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from hccn_plugins import load_plugin

hccn = load_plugin("filter", "hccn")


def a2_plan():
    return [
        {
            "id": d,
            "address": f"10.30.2.{11 + d}",
            "netmask": "255.255.255.0",
            "gateway": "10.30.2.1",
            "netdetect": "10.30.2.1",
        }
        for d in range(8)
    ]


def test_filter_is_registered():
    assert hccn.FilterModule().filters() == {"cf_hccn_findings": hccn.cf_hccn_findings}


def test_good_plan_gives_no_finding():
    assert hccn.cf_hccn_findings(a2_plan(), "atlas-800t-a2", {}, "10.30.0.0/16") == []
    assert hccn.cf_hccn_findings(a2_plan(), "atlas-800t-a2") == []


def test_subnet_rule_breach_is_an_error_without_the_raw_value():
    devices = a2_plan()
    devices[7].update(address="10.30.3.28", gateway="10.30.3.1", netdetect="10.30.3.1")
    found = hccn.cf_hccn_findings(devices, "atlas-800t-a2", {}, None)
    assert [(f["rule"], f["severity"], f["variable"]) for f in found] == [
        ("hccn.subnet_rule", "error", "hccn_devices[7].address")
    ]
    assert set(found[0]) == {"rule", "severity", "variable", "message", "fix"}


def test_empty_network_is_unset_and_a_bad_one_is_an_error():
    assert hccn.cf_hccn_findings(a2_plan(), "atlas-800t-a2", {}, "") == []
    found = hccn.cf_hccn_findings(a2_plan(), "atlas-800t-a2", {}, "10.30.0.0/33")
    assert [f["rule"] for f in found] == ["hccn.npu_network"]


def test_sku_without_npu_nics():
    assert hccn.cf_hccn_findings([], "cpu-generic") == []
    found = hccn.cf_hccn_findings(a2_plan(), "cpu-generic")
    assert [f["rule"] for f in found] == ["hccn.no_npu_nics"] and "8 device(s)" in found[0]["message"]


def test_catalog_override_changes_the_rule():
    overrides = {
        "atlas-800t-a2": {"npu_nics": {"count": 8, "rate_gbps": 200, "subnet_rule": "four-subnet-pairs"}}
    }
    found = hccn.cf_hccn_findings(a2_plan(), "atlas-800t-a2", overrides)
    assert {f["rule"] for f in found} == {"hccn.subnet_rule"}


def test_unknown_sku_names_the_variable():
    with pytest.raises(AnsibleFilterError, match="node_sku: unknown SKU 'atlas-800t-a9'"):
        hccn.cf_hccn_findings(a2_plan(), "atlas-800t-a9")


def test_missing_plan_on_an_ascend_sku_is_an_error():
    # playbooks/ascend.yml passes hccn_devices | default(none)
    found = hccn.cf_hccn_findings(None, "atlas-800t-a2", {}, None)
    assert [(f["rule"], f["severity"], f["message"]) for f in found] == [
        ("hccn.shape", "error", "hccn_devices must be a list, got null")
    ]
