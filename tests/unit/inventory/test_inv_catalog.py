"""The SKU catalog (built-in data, schema, site overrides) and the BOM rules data."""

from __future__ import annotations

import pytest
from cfcore.bom import load_rules
from clusterforge.catalog import CatalogError, load_catalog, sku_spec, validate_catalog
from clusterforge.errors import InvalidInput
from invcase import Inventory, run_check

REQUIRED_SKUS = (
    "hgx-h100-8gpu",
    "hgx-h200-8gpu",
    "hgx-b200-8gpu",
    "atlas-800t-a2",
    "atlas-800t-a3",
    "cpu-generic",
)


def test_builtin_catalog_has_the_required_skus_and_passes_its_schema():
    catalog = load_catalog()
    assert set(REQUIRED_SKUS) <= set(catalog)
    assert validate_catalog(catalog) == []


def test_builtin_facts_that_checks_rely_on():
    h100, h200, b200 = (
        sku_spec(n)["accelerator"] for n in ("hgx-h100-8gpu", "hgx-h200-8gpu", "hgx-b200-8gpu")
    )
    assert (h100["min_driver"], h200["min_driver"], b200["min_driver"]) == ("525", "550", "570")
    assert b200["kernel_module_flavour"] == "open" and h100["kernel_module_flavour"] == "any"
    assert all(a["interconnect"] == "nvswitch" and a["count"] == 8 for a in (h100, h200, b200))
    assert sku_spec("hgx-h100-8gpu")["hca"] == {"count": 8, "rate_gbps": 400, "link_layer": "InfiniBand"}
    a2, a3 = sku_spec("atlas-800t-a2"), sku_spec("atlas-800t-a3")
    assert a2["npu_nics"] == {"count": 8, "rate_gbps": 200, "subnet_rule": "single-subnet"}
    assert a3["npu_nics"]["subnet_rule"] == "die-pairs-split" and a3["npu_nics"]["count"] == 16
    assert a2["accelerator"]["vendor"] == "huawei" and a2["hca"] is None
    assert sku_spec("atlas-800-9000")["npu_nics"]["subnet_rule"] == "four-subnet-pairs"
    assert sku_spec("cpu-generic")["accelerator"] is None


def test_unknown_sku_names_it_and_the_known_ones():
    with pytest.raises(InvalidInput) as exc:
        sku_spec("hgx-h100-8gpus")
    assert "unknown SKU 'hgx-h100-8gpus'" in exc.value.message
    assert "did you mean 'hgx-h100-8gpu'" in exc.value.message
    assert "atlas-800t-a2" in exc.value.fix and "clusterforge_sku_catalog" in exc.value.fix


def test_override_merges_key_by_key():
    catalog = load_catalog(
        {"hgx-h100-8gpu": {"hca": {"rate_gbps": 200}, "description": "HGX H100, 200G HDR"}}
    )
    hca = catalog["hgx-h100-8gpu"]["hca"]
    assert hca == {"count": 8, "rate_gbps": 200, "link_layer": "InfiniBand"}
    assert catalog["hgx-h100-8gpu"]["accelerator"]["count"] == 8
    assert load_catalog()["hgx-h100-8gpu"]["hca"]["rate_gbps"] == 400  # the built-in stays intact


def test_override_null_replaces_and_new_sku_is_added():
    catalog = load_catalog(
        {
            "hgx-h100-8gpu": {"hca": None},
            "login-node": {"description": "login", "accelerator": None, "hca": None, "npu_nics": None},
        }
    )
    assert catalog["hgx-h100-8gpu"]["hca"] is None and "login-node" in catalog


def test_optional_keys_the_validator_reads_are_accepted():
    catalog = load_catalog(
        {
            "hgx-h100-8gpu": {
                "accelerator": {"mig_mode": "enabled"},
                "hca": {"ca_types": ["MT4129"], "devices": ["mlx5_0", "mlx5_[3-6]", "mlx5_9", "mlx5_1[01]"]},
            }
        }
    )
    assert catalog["hgx-h100-8gpu"]["hca"]["ca_types"] == ["MT4129"]
    assert catalog["hgx-h100-8gpu"]["accelerator"]["mig_mode"] == "enabled"


def test_returned_catalog_is_a_copy():
    load_catalog()["hgx-h100-8gpu"]["accelerator"]["count"] = 1
    assert load_catalog()["hgx-h100-8gpu"]["accelerator"]["count"] == 8


@pytest.mark.parametrize(
    ("overrides", "path", "words"),
    [
        ({"new-sku": {"description": "x"}}, "new-sku.accelerator", "is missing"),
        (
            {"hgx-h100-8gpu": {"accelerator": {"cuont": 8}}},
            "hgx-h100-8gpu.accelerator.cuont",
            "did you mean 'count'",
        ),
        (
            {"hgx-h100-8gpu": {"accelerator": {"vendor": "amd"}}},
            "hgx-h100-8gpu.accelerator.vendor",
            "must be one of",
        ),
        (
            {"hgx-b200-8gpu": {"accelerator": {"min_driver": 570}}},
            "hgx-b200-8gpu.accelerator.min_driver",
            "quoted",
        ),
        (
            {"atlas-800t-a2": {"npu_nics": {"subnet_rule": "flat"}}},
            "atlas-800t-a2.npu_nics.subnet_rule",
            "one of",
        ),
        ({"atlas-800t-a2": {"npu_nics": None}}, "atlas-800t-a2.npu_nics", "Ascend SKUs need"),
        (
            {"hgx-h100-8gpu": {"accelerator": {"pcie_width": True}}},
            "hgx-h100-8gpu.accelerator.pcie_width",
            "one of",
        ),
        ({"hgx-h100-8gpu": "big"}, "hgx-h100-8gpu", "must be a mapping"),
        (
            {"hgx-h100-8gpu": {"accelerator": {"mig_mode": "on"}}},
            "hgx-h100-8gpu.accelerator.mig_mode",
            "one of",
        ),
        ({"hgx-h100-8gpu": {"hca": {"ca_types": "MT4129"}}}, "hgx-h100-8gpu.hca.ca_types", "list of strings"),
    ],
)
def test_bad_overrides_are_reported_with_their_key_path(overrides, path, words):
    with pytest.raises(CatalogError) as exc:
        load_catalog(overrides)
    assert any(p == path and words in what for p, what in exc.value.issues), exc.value.issues
    assert exc.value.exit_code == 2


def test_overrides_must_be_a_mapping():
    with pytest.raises(CatalogError, match="clusterforge_sku_catalog"):
        load_catalog(["hgx-h100-8gpu"])


def test_inventory_override_changes_what_hosts_must_have(tmp_path, capsys):
    """A site whose A2 variant has 16 NIC entries: the 8-entry plans of the example no longer fit."""
    inv = Inventory(tmp_path / "inv")
    catalog = inv.load("group_vars/all/skus.yml")["clusterforge_sku_catalog"]
    catalog["atlas-800t-a2"] = {"npu_nics": {"count": 16}}
    inv.set_var("group_vars/all/skus.yml", "clusterforge_sku_catalog", catalog)
    outcome = run_check(capsys, inv.root)
    assert outcome.code == 2
    assert sorted(p["host"] for p in outcome.errors("hccn.count")) == ["npu-r2-n01", "npu-r2-n02"]


def test_site_sku_of_the_example_comes_from_the_inventory(tmp_path, capsys):
    inv = Inventory(tmp_path / "inv")
    inv.set_var("group_vars/all/skus.yml", "clusterforge_sku_catalog", {})
    outcome = run_check(capsys, inv.root)
    assert outcome.code == 2
    unknown = outcome.errors("sku.unknown")
    assert sorted(p["host"] for p in unknown) == [f"ceph-r3-n0{i}" for i in range(1, 5)]
    assert "ceph-nvme-2u" in unknown[0]["message"]


def test_bom_rules_load_and_every_rule_cites_a_source():
    rules = load_rules()
    for name in (
        "cuda_minimum_driver",
        "cuda_toolkit_driver",
        "cuda_minimum_for_accelerator",
        "fabricmanager",
        "kernel_modules",
        "nccl_cuda",
        "cann_minimum_driver",
    ):
        assert len(rules.source(name)) > 20, name
    assert rules.cuda_minimum_driver[12] == "525.60.13"
    assert rules.cuda_toolkit_driver[(12, 4)] == "550.54.14"
    assert rules.cuda_minimum_for_model["b200"] == "12.8"
    assert [c for _k, c, _d in rules.cann_minimum_driver][:2] == ["7.0.RC1", "7.0.0"]


def test_skus_command_lists_builtin_and_site_skus(capsys):
    from clusterforge.main import main
    from invcase import EXAMPLE

    with pytest.raises(SystemExit) as exc:
        main(["inventory", "skus", "--format", "json", "-i", str(EXAMPLE)])
    assert exc.value.code == 0
    import json

    catalog = json.loads(capsys.readouterr().out)
    assert set(REQUIRED_SKUS) | {"ceph-nvme-2u"} <= set(catalog)
    with pytest.raises(SystemExit) as exc:
        main(["inventory", "skus"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "hgx-b200-8gpu" in out and "open" in out and "ceph-nvme-2u" not in out
