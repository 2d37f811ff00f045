"""plugins/filter/ascend.py (the roles' plans and argv) and the Ascend rules of cfcore/bom.py."""

from __future__ import annotations

import importlib

import pytest
from ansible.errors import AnsibleFilterError
from ansible.plugins.loader import init_plugin_loader
from cfcore import bom
from cfcore.catalog import sku_spec
from clusterforge.ansible_env import ensure_collection_link

# Loaded as Ansible loads it: through the checkout's collection link.
init_plugin_loader([str(ensure_collection_link().parents[2])])
filters = importlib.import_module("ansible_collections.clusterforge.cluster.plugins.filter.ascend")

SHA = "b" * 64
MANIFEST = {
    "Ascend-hdk-910b-npu-driver_25.2.0_linux-x86-64.run": SHA,
    "Ascend-hdk-910b-npu-firmware_7.7.0.6.236.run": SHA,
    "Ascend-cann-toolkit_8.2.RC1_linux-x86_64.run": SHA,
    "Ascend-cann-kernels-910b_8.2.RC1_linux-x86_64.run": SHA,
    "Ascend-cann-nnal_8.2.RC1_linux-x86_64.run": SHA,
    "Ascend-cann-toolkit_8.5.0_linux-x86_64.run": SHA,
    "Ascend-cann-910b-ops_8.5.0_linux-x86_64.run": SHA,
    "Ascend-cann-nnal_8.5.0_linux-x86_64.run": SHA,
}
CACHE = "/var/cache/clusterforge/ascend"


def driver_plan(state, physical=True, **kw):
    return filters.cf_ascend_driver_plan(
        state, "25.2.0", "7.7.0.6.236", physical=physical, manifest=MANIFEST, chip="910b", arch="x86_64", **kw
    )


def test_driver_plan_fresh_commands():
    plan = driver_plan({"installed": None, "firmware": None})
    assert [s["command"] for s in plan["steps"]] == [
        [
            "bash",
            f"{CACHE}/Ascend-hdk-910b-npu-driver_25.2.0_linux-x86-64.run",
            "--nox11",
            "--full",
            "--quiet",
            "--install-username=HwHiAiUser",
            "--install-usergroup=HwHiAiUser",
        ],
        ["bash", f"{CACHE}/Ascend-hdk-910b-npu-firmware_7.7.0.6.236.run", "--nox11", "--full", "--quiet"],
    ]
    assert [f["kind"] for f in plan["files"]] == ["driver", "firmware"]
    assert plan["files"][0]["sha256"] == SHA


def test_driver_plan_upgrade_never_passes_user_options():
    plan = driver_plan(
        {"installed": "24.1.rc2", "firmware": "7.5.0.1.129"}, for_all=True, user="root", group="root"
    )
    assert [s["kind"] for s in plan["steps"]] == ["firmware", "driver"]
    assert plan["steps"][1]["argv"] == ["--nox11", "--upgrade", "--quiet"]


def test_driver_plan_vm_fetches_no_firmware():
    plan = driver_plan({"installed": None}, physical=False, vm_type="kvm")
    assert [f["kind"] for f in plan["files"]] == ["driver"] and len(plan["steps"]) == 1


def test_driver_plan_errors_name_the_variable():
    with pytest.raises(AnsibleFilterError, match="ascend_packages"):
        filters.cf_ascend_driver_plan(
            {}, "25.5.0", "7.8.0.5.216", manifest=MANIFEST, chip="910b", arch="x86_64"
        )
    with pytest.raises(AnsibleFilterError, match="non-empty mapping"):
        filters.cf_ascend_driver_plan({}, "25.2.0", "7.7.0.6.236", manifest={}, chip="910b", arch="x86_64")


def test_chips_from_the_model_or_the_variables():
    assert filters.cf_ascend_chips("910B") == {"hdk": "910b", "ops": "910b"}
    assert filters.cf_ascend_chips("Ascend910") == {"hdk": "910c", "ops": "A3"}
    assert filters.cf_ascend_chips("H100", "x", "y") == {"hdk": "x", "ops": "y"}
    with pytest.raises(AnsibleFilterError, match="cann_ops_chip"):
        filters.cf_ascend_chips("H100")


def test_cann_plan_fresh_old_layout():
    plan = filters.cf_cann_plan(
        {"version": None, "nnal": False}, "8.2.RC1", manifest=MANIFEST, ops_chip="910b", for_all=True
    )
    assert plan["action"] == "install"
    assert [s["kind"] for s in plan["steps"]] == ["toolkit", "kernels", "nnal"]
    assert plan["steps"][0]["argv"] == [
        "--install",
        "--quiet",
        "--install-path=/usr/local/Ascend",
        "--install-for-all",
    ]
    assert plan["steps"][2]["source_env"] == "/usr/local/Ascend/ascend-toolkit/set_env.sh"


def test_cann_plan_same_version_runs_nothing_but_keeps_the_files():
    plan = filters.cf_cann_plan({"version": "8.2.RC1"}, "8.2.RC1", manifest=MANIFEST, ops_chip="910b")
    assert plan["action"] == "none" and plan["steps"] == [] and len(plan["files"]) == 3


def test_cann_plan_crossing_to_8_5():
    state = {"version": "8.2.RC1", "home": "/usr/local/Ascend/ascend-toolkit/latest", "nnal": True}
    plan = filters.cf_cann_plan(state, "8.5.0", manifest=MANIFEST, ops_chip="910b", for_all=True)
    assert plan["action"] == "reinstall" and plan["crossing"] is True
    assert (
        plan["uninstall_script"] == "/usr/local/Ascend/ascend-toolkit/latest/x86_64-linux/script/uninstall.sh"
    )
    assert [(s["kind"], s["mode"]) for s in plan["steps"]] == [
        ("toolkit", "install"),
        ("ops", "install"),
        ("nnal", "upgrade"),
    ]
    assert "--install-for-all" not in plan["steps"][2]["argv"]
    assert plan["steps"][2]["source_env"] == "/usr/local/Ascend/cann/set_env.sh"


def test_cann_plan_repo_source_needs_no_manifest():
    plan = filters.cf_cann_plan({"version": None}, "9.1.0", ops_chip="910b", source="repo")
    assert plan["action"] == "install" and plan["files"] == [] and plan["steps"] == []


def test_repo_packages_filter():
    assert (
        filters.cf_cann_repo_packages("9.1.0", "910b", "Debian", nnal=False)[1]
        == "ascend-cann-910b-ops=9.1.0"
    )


def test_vm_and_container_filters():
    virt = importlib.import_module("ansible_collections.clusterforge.cluster.plugins.filter.virt")
    assert virt.cf_is_virtual_machine("kvm", "guest") and not virt.cf_is_virtual_machine("podman", "guest")
    assert virt.cf_is_container("podman", "guest") and not virt.cf_is_container("kvm", "guest")


# --------------------------------------------------------------------- BOM ----


def findings(values, sku="atlas-800t-a2"):
    return bom.bom_findings(values.get, sku, sku_spec(sku), bom.load_rules())


def test_new_cann_rows():
    rules = bom.load_rules()
    table = {cann: driver for _key, cann, driver in rules.cann_minimum_driver}
    assert table["8.2.RC1"] == "25.2.0" and table["8.5.0"] == "25.5.0"
    assert findings({"ascend_driver_version": "25.2.0", "cann_version": "8.2.RC1"}) == []
    found = findings({"ascend_driver_version": "25.2.0", "cann_version": "8.5.0"})
    assert [f["rule"] for f in found] == ["bom.cann_driver"] and found[0]["severity"] == "error"


def test_firmware_released_with_the_driver():
    good = {
        "ascend_driver_version": "25.2.0",
        "ascend_firmware_version": "7.7.0.6.236",
        "cann_version": "8.2.RC1",
    }
    assert findings(good) == []
    bad = findings({**good, "ascend_firmware_version": "7.5.0.1.129"})
    assert [(f["rule"], f["severity"], f["variable"]) for f in bad] == [
        ("bom.ascend_firmware", "warning", "ascend_firmware_version")
    ]
    assert '"7.7.0.6.236"' in bad[0]["fix"]
    unknown_driver = {"ascend_driver_version": "25.3.0", "ascend_firmware_version": "7.8.0.1.1"}
    assert [f["rule"] for f in findings(unknown_driver)] == []
    assert [f["rule"] for f in findings({**good, "ascend_firmware_version": 7.7})] == ["bom.format"]
    assert findings({**good, "ascend_firmware_version": bom.UNRESOLVED}) == []
    assert findings({"ascend_firmware_version": "7.5.0.1.129"}) == []  # no driver: nothing to pair with
