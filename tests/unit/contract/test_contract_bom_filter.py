"""cf_bom_findings: the roles' pre-check gives the findings `inventory check` gives (cfcore/bom.py)."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from ansible.plugins.loader import filter_loader, init_plugin_loader
from cfcore.bom import bom_findings, load_rules
from cfcore.catalog import sku_spec
from clusterforge.ansible_env import ensure_collection_link

init_plugin_loader([str(ensure_collection_link().parents[2])])
cf_bom_findings = filter_loader.get("clusterforge.cluster.cf_bom_findings").j2_function

GOOD = {
    "nvidia_driver_version": "570.133.20",
    "cuda_version": "12.8",
    "nccl_version": "2.26.2",
    "dcgm_version": "4.2.3",
    "nvidia_fabricmanager_version": None,
    "nvidia_kernel_module_flavour": None,
}


def errors(findings):
    return [f for f in findings if f["severity"] == "error"]


def test_a_compatible_bom_has_no_errors():
    assert errors(cf_bom_findings(GOOD, "hgx-h100-8gpu")) == []
    assert errors(cf_bom_findings(GOOD, "hgx-b200-8gpu")) == []


def test_proprietary_modules_on_blackwell_are_refused_with_the_fix():
    [found] = errors(
        cf_bom_findings({**GOOD, "nvidia_kernel_module_flavour": "proprietary"}, "hgx-b200-8gpu")
    )
    assert found["rule"] == "bom.kernel_modules"
    assert "hgx-b200-8gpu" in found["message"] and "open" in found["message"]
    assert found["fix"] == "set nvidia_kernel_module_flavour: open"
    assert found["source"]


def test_fabric_manager_must_equal_the_driver():
    [found] = errors(cf_bom_findings({**GOOD, "nvidia_fabricmanager_version": "570.124.06"}, "hgx-h100-8gpu"))
    assert found["rule"] == "bom.fabricmanager" and "802" in found["message"]


def test_same_findings_as_inventory_check_for_the_same_values():
    """One implementation: the filter is cfcore.bom on the host's values, nothing more."""
    bad = {**GOOD, "cuda_version": "13.0", "nvidia_driver_version": "570.133.20"}
    values = {k: v for k, v in bad.items() if v is not None}
    direct = bom_findings(values.get, "hgx-h100-8gpu", sku_spec("hgx-h100-8gpu"), load_rules())
    assert cf_bom_findings(bad, "hgx-h100-8gpu") == direct
    assert [f["rule"] for f in errors(direct)] == ["bom.cuda_driver"]


def test_an_unknown_sku_names_the_known_ones():
    with pytest.raises(AnsibleFilterError, match=r"unknown SKU 'hgx-h900'.*use one of"):
        cf_bom_findings(GOOD, "hgx-h900")
