"""The framework compatibility table (cfcore/data/framework_compat.yml): its schema, checked once, and
the rules `clusterforge inventory check` applies with it (PyTorch against the CUDA major, torch_npu
against CANN and PyTorch; a version not in the table warns)."""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import pytest
import yaml
from cfcore import framework_compat
from cfcore.bom import UNRESOLVED, load_rules
from cfcore.framework_compat import CompatError, compat_findings, load_compat, validate_compat
from cfcore.inputs import SchemaError

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "inventory"))
from invcase import Inventory, run_check

NVIDIA = {"accelerator": {"vendor": "nvidia"}}
HUAWEI = {"accelerator": {"vendor": "huawei"}}


def raw() -> dict:
    with open(framework_compat.COMPAT_PATH, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def findings(values: dict, sku: dict) -> list:
    return compat_findings(values.get, sku, load_compat(), load_rules())


def rules_of(values: dict, sku: dict) -> list:
    return [(f["rule"], f["variable"], f["severity"]) for f in findings(values, sku)]


def test_the_built_in_table_is_valid_and_every_table_names_its_source():
    assert validate_compat(raw()) == []
    compat = load_compat()
    assert compat.source("pytorch_cuda").endswith("RELEASE.md#release-compatibility-matrix")
    assert "Ascend/pytorch" in compat.source("torch_npu_cann")
    assert compat.pytorch_cuda["2.13"] == ["12.6", "13.0", "13.2"]
    assert "2.6.0.post5" in compat.torch_npu_cann["8.5.0"][1]


@pytest.mark.parametrize(
    ("edit", "path", "what"),
    [
        (lambda d: d["pytorch_cuda"]["by_minor"].update({2.9: {"cuda": ["12.8"]}}), "by_minor.2.9", "quoted"),
        (lambda d: d["pytorch_cuda"]["by_minor"]["2.9"].update(cuda=[12.8]), "2.9.cuda", "quoted string"),
        (lambda d: d["pytorch_cuda"]["by_minor"]["2.9"].update(wheels=["x"]), "2.9.wheels", "unknown key"),
        (lambda d: d["torch_npu_cann"].pop("source"), "torch_npu_cann.source", "must name the document"),
        (
            lambda d: d["torch_npu_cann"]["by_cann"].update({"8.x": {"torch_npu": ["2.6.0"]}}),
            "8.x",
            "cann_version",
        ),
        (lambda d: d.update(jax={}), "jax", "unknown table"),
    ],
)
def test_schema_errors_name_the_key(edit, path, what):
    data = copy.deepcopy(raw())
    edit(data)
    issues = validate_compat(data)
    assert any(path in where and what in problem for where, problem in issues), issues
    error = CompatError(issues, "built-in x")
    assert isinstance(error, SchemaError) and "framework compatibility table" in error.message


def test_a_broken_built_in_table_fails_loudly(monkeypatch, tmp_path):
    broken = tmp_path / "framework_compat.yml"
    broken.write_text("pytorch_cuda: {}\n")
    monkeypatch.setattr(framework_compat, "COMPAT_PATH", str(broken))
    load_compat.cache_clear()
    try:
        with pytest.raises(CompatError, match=r"pytorch_cuda\.by_minor"):
            load_compat()
    finally:
        load_compat.cache_clear()


def test_pytorch_against_the_cuda_major():
    ok = {"pytorch_version": "2.7.1", "pytorch_cuda_version": "12.8", "cuda_version": "12.8"}
    assert findings(ok, NVIDIA) == []
    no_build = {**ok, "pytorch_cuda_version": "12.4"}
    assert rules_of(no_build, NVIDIA) == [("framework.pytorch_cuda", "pytorch_cuda_version", "error")]
    other_major = {"pytorch_version": "2.7.1", "pytorch_cuda_version": "11.8", "cuda_version": "12.8"}
    [found] = findings(other_major, NVIDIA)
    assert (found["rule"], found["variable"]) == ("framework.pytorch_cuda_major", "pytorch_cuda_version")
    assert "CUDA 11.8 but cuda_version is 12.8" in found["message"] and "12.6, 12.8" in found["fix"]
    unset_build = {"pytorch_version": "2.9.0", "cuda_version": "11.8"}
    assert rules_of(unset_build, NVIDIA) == [("framework.pytorch_cuda_major", "pytorch_version", "error")]
    assert findings({"pytorch_version": "2.9.0", "cuda_version": "12.2"}, NVIDIA) == []


def test_the_driver_must_run_the_builds_cuda():
    values = {"pytorch_version": "2.9.0", "pytorch_cuda_version": "13.0", "cuda_version": "13.0"}
    [found] = findings({**values, "nvidia_driver_version": "570.133.20"}, NVIDIA)
    assert found["rule"] == "framework.pytorch_cuda_major" and "driver >= 580" in found["message"]
    assert findings({**values, "nvidia_driver_version": "580.65.06"}, NVIDIA) == []


def test_a_newer_pytorch_than_the_table_warns():
    [found] = findings({"pytorch_version": "2.99.0", "cuda_version": "12.8"}, NVIDIA)
    assert (found["rule"], found["severity"]) == ("framework.pytorch_cuda", "warning")
    assert "not in the framework compatibility table" in found["message"]


def test_torch_npu_against_cann_and_pytorch():
    ok = {"pytorch_version": "2.6.0", "torch_npu_version": "2.6.0.post5", "cann_version": "8.5.0"}
    assert findings(ok, HUAWEI) == []
    [found] = findings({**ok, "torch_npu_version": "2.6.0.post3"}, HUAWEI)
    assert (found["rule"], found["variable"], found["severity"]) == (
        "framework.torch_npu_cann",
        "torch_npu_version",
        "error",
    )
    assert 'torch_npu_version: "2.6.0.post5"' in found["fix"]
    [found] = findings({**ok, "pytorch_version": "2.7.1"}, HUAWEI)
    assert found["rule"] == "framework.torch_npu_pytorch" and "extends PyTorch 2.6.0" in found["message"]
    assert rules_of({**ok, "cann_version": "9.0.0"}, HUAWEI) == [
        ("framework.torch_npu_cann", "cann_version", "warning")
    ]
    assert rules_of({**ok, "torch_npu_version": "2.6.0.post9"}, HUAWEI) == [
        ("framework.torch_npu_cann", "torch_npu_version", "warning")
    ]


def test_unset_unresolved_and_other_vendors_are_left_alone():
    assert findings({}, NVIDIA) == findings({}, HUAWEI) == []
    assert findings({"pytorch_version": "2.7.1", "pytorch_cuda_version": "11.8"}, HUAWEI) == []
    values = {"pytorch_version": UNRESOLVED, "cuda_version": "12.8"}
    assert findings(values, NVIDIA) == []
    assert findings({"pytorch_version": "2.7", "cuda_version": "12.8"}, NVIDIA) == []  # the format check's


def test_inventory_check_reports_the_rules_where_the_variable_is(tmp_path, capsys):
    inv = Inventory(tmp_path / "inv")
    versions = "group_vars/all/versions.yml"
    inv.set_var(versions, "pytorch_version", "2.7.1")
    inv.set_var(versions, "pytorch_cuda_version", "11.8")
    inv.set_var(versions, "torch_npu_version", "2.6.0.post3")
    outcome = run_check(capsys, inv.root)
    assert outcome.code == 2
    rules = {(p["rule"], p["variable"]) for p in outcome.errors()}
    assert ("framework.pytorch_cuda_major", "pytorch_cuda_version") in rules
    assert ("framework.torch_npu_pytorch", "torch_npu_version") in rules
    located = [p for p in outcome.errors("framework.pytorch_cuda_major")]
    assert located and all(p["file"].endswith(versions) for p in located), located
    assert all("RELEASE.md" in (p.get("source") or "") for p in located)


def test_inventory_check_passes_a_compatible_bom_and_only_warns_for_newer_releases(tmp_path, capsys):
    inv = Inventory(tmp_path / "inv")
    versions = "group_vars/all/versions.yml"
    inv.set_var(versions, "pytorch_version", "2.1.0")  # the example's CUDA 12.2: PyTorch 2.1's 12.1 build
    inv.set_var(versions, "pytorch_cuda_version", "12.1")
    inv.set_var(versions, "torch_npu_version", "2.1.0.post13")  # the example's CANN 8.2.RC1
    outcome = run_check(capsys, inv.root)
    assert outcome.code == 0, outcome.out
    inv.set_var(versions, "pytorch_version", "2.99.0")
    inv.del_var(versions, "torch_npu_version")
    outcome = run_check(capsys, inv.root)
    assert outcome.code == 0, outcome.out
    assert any(p["rule"] == "framework.pytorch_cuda" and p["severity"] == "warning" for p in outcome.problems)


# -- the framework_* settings (issue 32) ---------------------------------------------------------


@pytest.mark.parametrize(
    ("variable", "value", "rule", "words"),
    [
        ("framework_env", {"kind": "conda", "path": "/x"}, "framework.env", "kind must be one of venv"),
        ("framework_env", {"kind": "venv", "path": "opt/venv"}, "framework.env", "absolute path"),
        (
            "framework_env",
            {"kind": "image", "image": "reg/t:1", "run_args": "--shm-size=8g"},
            "framework.env",
            "run_args must be a list",
        ),
        ("framework_world_size", -1, "framework.settings", "framework_world_size must be 0 or more"),
        ("framework_timeout_s", "abc", "framework.settings", "framework_timeout_s must be positive"),
        ("framework_allreduce_timeout_s", 0, "framework.settings", "must be positive"),
        ("framework_allreduce_max_s", ".inf", "framework.settings", "must be positive"),
        ("framework_backend", "mpi", "framework.settings", "must be one of nccl, hccl, gloo"),
        ("framework_cann_version_files", "/a/version.info", "framework.settings", "list of absolute paths"),
    ],
)
def test_inventory_check_refuses_bad_framework_settings(tmp_path, capsys, variable, value, rule, words):
    inv = Inventory(tmp_path / "inv")
    inv.set_var("group_vars/all/framework.yml", variable, value)
    outcome = run_check(capsys, inv.root)
    assert outcome.code == 2, outcome.out
    [problem] = [p for p in outcome.errors() if p["variable"] == variable]
    assert problem["rule"] == rule and words in problem["message"], problem
    assert problem["file"].endswith("group_vars/all/framework.yml") and problem["fix"]


def test_inventory_check_passes_good_framework_settings_and_warns_for_warn_above_max(tmp_path, capsys):
    inv = Inventory(tmp_path / "inv")
    rel = "group_vars/all/framework.yml"
    for variable, value in (
        ("framework_world_size", 2),
        ("framework_timeout_s", "600"),
        ("framework_allreduce_max_s", 2.5),
        ("framework_backend", "gloo"),
        ("framework_cann_version_files", ["/usr/local/Ascend/cann/opp/version.info"]),
    ):
        inv.set_var(rel, variable, value)
    outcome = run_check(capsys, inv.root)
    assert outcome.code == 0 and outcome.problems == [], outcome.out
    inv.set_var(rel, "framework_allreduce_warn_s", 5)
    outcome = run_check(capsys, inv.root)
    assert outcome.code == 0, outcome.out
    [warning] = outcome.problems
    assert warning["variable"] == "framework_allreduce_warn_s" and warning["severity"] == "warning"


def test_settings_rules_are_cfcores_and_the_modules():
    from cfcore.framework_run import setting_problem, settings_findings

    assert setting_problem("framework_world_size", 10**400) is None  # a whole number is one
    assert setting_problem("framework_allreduce_max_s", 10**400) is not None  # no finite float
    assert setting_problem("framework_timeout_s", True) is not None
    assert setting_problem("framework_timeout_s", 8.0) is None
    assert settings_findings({}) == []
    assert [f["variable"] for f in settings_findings({"framework_env": "venv"})] == ["framework_env"]
