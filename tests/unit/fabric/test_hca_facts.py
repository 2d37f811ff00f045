"""hca_facts: the HCAs of a sysfs tree and the OFED release, as Ansible runs the module."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import module_runner
import pytest
from cfcore.parsers.infiniband import read_sysfs_infiniband
from cfcore.rdma_packages import hcas_from_sysfs

ROOT = Path(__file__).resolve().parents[3]
CAPTURES = ROOT / "tests" / "fixtures" / "captures"


def run_module(args: dict, path: str | None = None) -> dict:
    return module_runner.run_module("hca_facts", args, {**os.environ, "PATH": path} if path else None, 60)


def test_the_contract_shape_from_a_healthy_h100_tree(watchdog):
    result = run_module({"sysfs_root": str(CAPTURES / "h100-healthy"), "_ansible_check_mode": True})
    assert result["changed"] is False and result["message"] == ""
    hcas = result["hcas"]
    assert len(hcas) == 10
    assert hcas["mlx5_0"] == {
        "type": "MT4129",
        "board_id": "MT_0000000838",
        "firmware": "28.39.1002",
        "node_guid": "0x946dae0300cde72c",
        "ports": {
            "1": {"state": "Active", "physical_state": "LinkUp", "rate_gbps": 400, "link_layer": "InfiniBand"}
        },
    }
    assert result["fact"] == {"install_method": "distro", "ofed_version": None, "hcas": hcas}


def test_a_port_down_is_recorded_as_such(watchdog):
    hcas = run_module({"sysfs_root": str(CAPTURES / "h100-ib-port-down")})["hcas"]
    states = {name: hca["ports"]["1"]["state"] for name, hca in hcas.items()}
    assert "Down" in states.values() and "Active" in states.values()


def test_the_same_reader_as_node_validate():
    """One implementation: the module's hcas are cfcore's parse of the tree, reshaped."""
    parsed = read_sysfs_infiniband(str(CAPTURES / "h100-healthy"))
    hcas = hcas_from_sysfs(parsed)
    assert sorted(hcas) == sorted(ca["name"] for ca in parsed["cas"])
    assert [hcas[ca["name"]]["firmware"] for ca in parsed["cas"]] == [ca["firmware"] for ca in parsed["cas"]]


def test_no_tree_is_no_hca_with_the_reason(tmp_path, watchdog):
    result = run_module({"sysfs_root": str(tmp_path)})
    assert result.get("failed") is not True
    assert result["hcas"] == {} and "no RDMA device" in result["message"]
    (tmp_path / "sys" / "class" / "infiniband").mkdir(parents=True)
    assert "is empty" in run_module({"sysfs_root": str(tmp_path)})["message"]


def test_a_malformed_tree_fails_with_the_path(tmp_path, watchdog):
    (tmp_path / "sys" / "class" / "infiniband" / "mlx5_0").mkdir(parents=True)
    result = run_module({"sysfs_root": str(tmp_path)})
    assert result["failed"] is True and "mlx5_0 has no ports/ directory" in result["msg"]


@pytest.mark.parametrize(("method", "version"), [("doca", "25.01-0.6.0"), ("distro", None)])
def test_ofed_version_from_ofed_info_for_the_vendor_methods(tmp_path, watchdog, method, version):
    tool = tmp_path / "bin" / "ofed_info"
    tool.parent.mkdir()
    tool.write_text('#!/bin/sh\n[ "$1" = -s ] && echo "OFED-internal-25.01-0.6.0:"\n')
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    result = run_module(
        {"sysfs_root": str(tmp_path), "install_method": method}, path=f"{tool.parent}:/usr/bin:/bin"
    )
    assert result["ofed_version"] == version
    assert result["fact"]["install_method"] == method


def test_ofed_version_is_null_without_ofed_info(tmp_path, watchdog):
    (tmp_path / "bin").mkdir()
    result = run_module(
        {"sysfs_root": str(tmp_path), "install_method": "mlnx_ofed"}, path=str(tmp_path / "bin")
    )
    assert result["ofed_version"] is None


def test_unknown_method_is_refused(tmp_path, watchdog):
    result = run_module({"sysfs_root": str(tmp_path), "install_method": "snap"})
    assert result["failed"] is True and "install_method" in result["msg"]
