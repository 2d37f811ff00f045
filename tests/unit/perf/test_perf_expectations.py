"""Expected benchmark figures (cfcore/perf_expectations.py, data/perf_expectations.yml): the built-in
data, site overrides merged per SKU and figure, the schema with its "did you mean", the derived
ib_write_bw figure."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import yaml
from cfcore import perf_expectations as pe
from cfcore.catalog import load_catalog
from cfcore.inputs import InputError

MODULE = Path(pe.__file__)
H100 = "hgx-h100-8gpu"


# -- the built-in data ---------------------------------------------------------------------------


def test_builtin_data_loads_and_passes_its_schema():
    data = pe.load_expectations()
    assert pe.validate_expectations(data) == []
    assert data[H100]["nccl_local_busbw_gbps"]["typical"] == 480  # the issue's 8x H100 NVLS figure


def test_every_sku_key_is_a_sku_of_the_catalog():
    assert set(pe.load_expectations()) <= set(load_catalog())


def test_every_accelerator_sku_has_an_entry():
    accelerated = {name for name, spec in load_catalog().items() if spec["accelerator"]}
    assert accelerated <= set(pe.load_expectations())


def test_every_figure_has_a_source_and_sane_numbers():
    for sku, figures in pe.load_expectations().items():
        for figure, spec in figures.items():
            assert figure in pe.FIGURES, (sku, figure)
            assert len(spec["source"].split()) >= 8, f"{sku}.{figure}: say where the figure comes from"
            if figure in pe.BANDWIDTH_FIGURES:
                assert 0 < spec["floor"] <= spec.get("warn", spec["floor"]) <= spec["typical"], (sku, figure)


def test_figures_without_a_public_source_are_left_out_and_said_so():
    data, text = pe.load_expectations(), pe.builtin_text()
    assert "hccl_local_algbw_gbps" not in data["atlas-800t-a2"]
    assert "nccl_local_busbw_gbps" not in data["hgx-b200-8gpu"]
    assert data["alibaba-ppu-zw810e-16"] == {}
    assert text.count("site must measure") >= 3


def test_ib_write_bw_is_derived_for_the_builtin_skus_not_listed():
    # Left out of the data on purpose: a site that overrides the HCA rate gets matching figures.
    assert all(pe.IB_FIGURE not in figures for figures in pe.load_expectations().values())


def test_yaml_aliases_do_not_share_one_spec_between_figures():
    data = pe.load_expectations()
    assert data[H100]["h2d_gbps"] == data[H100]["d2h_gbps"]
    assert data[H100]["h2d_gbps"] is not data[H100]["d2h_gbps"]
    assert pe._builtin()[H100]["h2d_gbps"] is not pe._builtin()["hgx-h200-8gpu"]["h2d_gbps"]


def test_the_module_parses_as_python_3_8():
    ast.parse(MODULE.read_text(), feature_version=(3, 8))


# -- lookups -------------------------------------------------------------------------------------


def test_expectation_of_a_listed_figure():
    spec = pe.expectation(H100, "h2d_gbps")
    assert (spec["typical"], spec["warn"], spec["floor"]) == (55, 48, 40)
    assert "PCIe Gen5 x16" in spec["source"]
    assert pe.expectation("atlas-800t-a2", "hccn_ping_loss_pct_max")["max"] == 0


def test_a_figure_the_sku_does_not_have_is_none():
    assert pe.expectation("atlas-800t-a2", "nccl_local_busbw_gbps") is None
    assert pe.expectation("atlas-800t-a2", "ib_write_bw_gbps") is None  # hca: null
    assert pe.expectation("cpu-generic", "storage_write_mibps") is None
    assert pe.expectation("site-sku-nobody-knows", "h2d_gbps") is None
    assert pe.expectations_for("site-sku-nobody-knows") == {}


def test_derived_ib_write_bw_from_the_catalog_rate():
    spec = pe.expectation(H100, "ib_write_bw_gbps")
    assert (spec["typical"], spec["warn"], spec["floor"]) == (390, 380, 360)
    assert spec["source"].startswith("derived from the catalog's hca.rate_gbps (400 Gb/s)")
    assert "~390 Gb/s" in spec["source"]


def test_derived_ib_write_bw_follows_the_site_catalog():
    hdr = load_catalog({H100: {"hca": {"rate_gbps": 200}}})[H100]
    spec = pe.expectation(H100, "ib_write_bw_gbps", sku_spec=hdr)
    assert (spec["typical"], spec["warn"], spec["floor"]) == (195, 190, 180)
    assert pe.expectation(H100, "ib_write_bw_gbps", sku_spec={}) is None  # a spec without hca


def test_an_explicit_ib_figure_wins_over_the_derived_one():
    overrides = {H100: {"ib_write_bw_gbps": {"typical": 380, "floor": 330, "source": "measured, 2026-05"}}}
    spec = pe.expectation(H100, "ib_write_bw_gbps", overrides=overrides)
    assert spec == {"typical": 380, "floor": 330, "source": "measured, 2026-05"}


def test_expectations_for_lists_every_figure_the_derived_one_included():
    found = pe.expectations_for(H100)
    assert set(found) == {
        "nccl_local_busbw_gbps",
        "nccl_pair_busbw_gbps",
        "h2d_gbps",
        "d2h_gbps",
        "ib_write_bw_gbps",
    }
    assert pe.expectations_for("atlas-800t-a3") == {
        "hccn_ping_loss_pct_max": pe.expectation("atlas-800t-a3", "hccn_ping_loss_pct_max")
    }


def test_an_unknown_figure_name_is_an_input_error_with_a_hint():
    with pytest.raises(
        InputError, match=r"unknown performance figure 'h2d_gbs' \(did you mean 'h2d_gbps'\?\)"
    ):
        pe.expectation(H100, "h2d_gbs")


# -- site overrides ------------------------------------------------------------------------------


def test_override_merges_per_figure_key_by_key():
    merged = pe.load_expectations({H100: {"nccl_local_busbw_gbps": {"floor": 350}}})
    spec = merged[H100]["nccl_local_busbw_gbps"]
    assert (spec["typical"], spec["warn"], spec["floor"]) == (480, 400, 350)
    assert merged[H100]["h2d_gbps"]["floor"] == 40  # other figures untouched
    assert pe.load_expectations()[H100]["nccl_local_busbw_gbps"]["floor"] == 300  # the built-in intact


def test_changed_numbers_without_a_source_get_a_source_saying_so():
    spec = pe.load_expectations({H100: {"h2d_gbps": {"typical": 53, "warn": 45}}})[H100]["h2d_gbps"]
    assert spec["source"].startswith("site override of typical, warn (perf_expectations); built-in figure: ")
    assert "PCIe Gen5 x16" in spec["source"]
    sourced = {H100: {"h2d_gbps": {"typical": 53, "source": "measured on gpu-r1-n01..n08, 2026-05"}}}
    assert pe.load_expectations(sourced)[H100]["h2d_gbps"]["source"] == "measured on gpu-r1-n01..n08, 2026-05"


def test_override_adds_figures_and_skus_and_null_removes():
    overrides = {
        "atlas-800t-a2": {"hccl_local_algbw_gbps": {"typical": 170, "floor": 120, "source": "site, 2026-05"}},
        "site-h100-4gpu": {"h2d_gbps": {"typical": 26, "floor": 20, "source": "Gen4 hosts, measured"}},
        H100: {"nccl_pair_busbw_gbps": None, "nccl_local_busbw_gbps": {"warn": None}},
        "hgx-h200-8gpu": None,
    }
    merged = pe.load_expectations(overrides)
    assert merged["atlas-800t-a2"]["hccl_local_algbw_gbps"]["typical"] == 170
    assert merged["atlas-800t-a2"]["hccn_ping_loss_pct_max"]["max"] == 0
    assert merged["site-h100-4gpu"] == {
        "h2d_gbps": {"typical": 26, "floor": 20, "source": "Gen4 hosts, measured"}
    }
    assert "nccl_pair_busbw_gbps" not in merged[H100]
    assert "warn" not in merged[H100]["nccl_local_busbw_gbps"]
    assert merged["hgx-h200-8gpu"] == {}
    assert pe.expectation("hgx-h200-8gpu", "h2d_gbps", overrides=overrides) is None


def test_known_skus_makes_an_unknown_sku_an_error_with_a_hint():
    with pytest.raises(pe.ExpectationsError) as caught:
        pe.load_expectations({"hgx-h100-8gpus": {}}, known_skus=load_catalog())
    assert caught.value.issues == [
        (
            "hgx-h100-8gpus",
            "unknown SKU 'hgx-h100-8gpus' (did you mean 'hgx-h100-8gpu'?) (a SKU of the catalog)",
        )
    ]
    assert pe.load_expectations({"site-sku": {}})["site-sku"] == {}  # without known_skus: any name


@pytest.mark.parametrize(
    ("overrides", "path", "words"),
    [
        (
            {H100: {"nccl_local_busbw_gbs": {}}},
            f"{H100}.nccl_local_busbw_gbs",
            "did you mean 'nccl_local_busbw_gbps'",
        ),
        (
            {H100: {"h2d_gbps": {"typcal": 50}}},
            f"{H100}.h2d_gbps.typcal",
            "unknown key (did you mean 'typical'?)",
        ),
        (
            {H100: {"h2d_gbps": {"floor": "forty"}}},
            f"{H100}.h2d_gbps.floor",
            "must be a number >= 0, got str 'forty'",
        ),
        (
            {H100: {"h2d_gbps": {"warn": True}}},
            f"{H100}.h2d_gbps.warn",
            "must be a number >= 0, got bool True",
        ),
        (
            {H100: {"h2d_gbps": {"floor": 60}}},
            f"{H100}.h2d_gbps.floor",
            "must be at most typical (55), got 60",
        ),
        (
            {H100: {"h2d_gbps": {"warn": 30}}},
            f"{H100}.h2d_gbps.warn",
            "must lie between floor (40) and typical",
        ),
        (
            {H100: {"h2d_gbps": {"warn": 60}}},
            f"{H100}.h2d_gbps.warn",
            "must lie between floor and typical (55)",
        ),
        (
            {H100: {"h2d_gbps": {"source": ""}}},
            f"{H100}.h2d_gbps.source",
            "must say where the figure comes from",
        ),
        ({H100: {"h2d_gbps": 50}}, f"{H100}.h2d_gbps", "must be a mapping, got int 50"),
        ({H100: ["h2d_gbps"]}, H100, "must be a mapping of figure name to spec, or null"),
        ({"site": {"d2h_gbps": {"typical": 50, "floor": 40}}}, "site.d2h_gbps.source", "is missing"),
        ({"site": {"d2h_gbps": {"floor": 40, "source": "x"}}}, "site.d2h_gbps.typical", "is missing"),
        (
            {"atlas-800t-a2": {"hccn_ping_loss_pct_max": {"max": 150}}},
            "atlas-800t-a2.hccn_ping_loss_pct_max.max",
            "0..100",
        ),
        (
            {"atlas-800t-a2": {"hccn_ping_loss_pct_max": {"floor": 1}}},
            "atlas-800t-a2.hccn_ping_loss_pct_max.floor",
            "unknown key",
        ),
    ],
)
def test_bad_overrides_are_reported_with_their_key_path(overrides, path, words):
    with pytest.raises(pe.ExpectationsError) as caught:
        pe.load_expectations(overrides)
    assert any(where == path and words in what for where, what in caught.value.issues), caught.value.issues
    assert "inventory variable perf_expectations" in caught.value.message
    assert isinstance(caught.value, InputError) and "docs/design.md" in caught.value.fix


def test_overrides_must_be_a_mapping():
    with pytest.raises(pe.ExpectationsError, match="must be a mapping of SKU name to figures, got list"):
        pe.load_expectations(["hgx-h100-8gpu"])


def test_a_broken_builtin_file_is_reported_as_the_builtin_one(monkeypatch):
    broken = yaml.safe_load(pe.builtin_text())
    broken[H100]["h2d_gbps"]["warn"] = 99
    monkeypatch.setattr(pe, "builtin_text", lambda: yaml.safe_dump(broken))
    pe._builtin.cache_clear()
    try:
        with pytest.raises(
            pe.ExpectationsError, match="built-in plugins/module_utils/cfcore/data/perf_expectations"
        ):
            pe.load_expectations()
    finally:
        monkeypatch.undo()
        pe._builtin.cache_clear()
