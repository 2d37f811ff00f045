"""validate_node end to end on capture directories written in the real formats (tests/fixtures/captures)."""

from __future__ import annotations

import shutil

import pytest
from cfcore.checks import CHECK_IDS
from cfcore.collect import CaptureSource
from cfcore.expected import InvalidExpectation
from cfcore.validate import validate_node
from chkdata import CAPTURES, CPU_SKU, atlas_expected, h100_expected


def run(name: str, expected: dict, level: str = "quick", path=None) -> dict:
    return validate_node(CaptureSource(str(path or CAPTURES / name)), expected, level)


def by_id(result: dict) -> dict:
    return {check["id"]: check for check in result["checks"]}


def not_passing(result: dict) -> dict:
    return {c["id"]: c["status"] for c in result["checks"] if c["status"] not in ("pass", "skip")}


def test_healthy_h100_node_passes_every_applicable_check():
    result = run("h100-healthy", h100_expected(os_release="ubuntu 22.04"))
    assert result["status"] == "pass", not_passing(result)
    checks = by_id(result)
    assert [c["id"] for c in result["checks"]] == list(CHECK_IDS)
    applicable = [
        c
        for c in checks
        if c.startswith(("gpu.", "ib.", "node."))
        and c not in ("gpu.retired_pages", "gpu.dcgm_diag", "ib.ipoib")
    ]
    assert all(checks[c]["status"] == "pass" for c in applicable)
    assert checks["ib.ipoib"]["status"] == "skip"  # no IPoIB plan given
    assert checks["gpu.retired_pages"]["status"] == "skip"  # H100 remaps rows instead
    assert checks["npu.health"]["status"] == "skip"
    assert result["host"] == "gpu-r1-n01" and result["node_sku"] == "hgx-h100-8gpu"
    assert result["metrics"]["gpu.pcie_width_min"] == 16
    assert result["metrics"]["ib.rate_gbps_min"] == 400
    assert result["facts"]["driver_version"] == "535.183.01"
    assert result["facts"]["accelerator_count"] == 8
    assert result["facts"]["hca_count"] == 10
    assert result["collected_at"].endswith("Z") and result["duration_s"] >= 0


@pytest.mark.parametrize(
    ("capture", "check_id", "message", "evidence_line"),
    [
        (
            "h100-xid79",
            "gpu.xid",
            "fatal Xid 79 (GPU has fallen off the bus) on GPU 3 (0000:5d:00.0)",
            "NVRM: Xid (PCI:0000:5d:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
        ),
        (
            "h100-pcie-x8",
            "gpu.pcie_link",
            "GPU 3 (0000:5d:00.0): link trained at x8, expected x16",
            "<current_link_width>8x</current_link_width>",
        ),
        ("h100-ib-port-down", "ib.port_state", "mlx5_3 port 1: Down / Polling", "State: Down"),
        (
            "h100-remapped-rows-pending",
            "gpu.remapped_rows",
            "GPU 5 (0000:ab:00.0): row remapping pending",
            "<remapped_row_pending>Yes</remapped_row_pending>",
        ),
        (
            "h100-nvlink-down",
            "gpu.nvlink",
            "GPU 2: 16 of 18 NVLinks active (down: 4, 5)",
            "Link 4: <inactive>",
        ),
    ],
)
def test_each_h100_fault_fails_with_its_check_and_evidence(capture, check_id, message, evidence_line):
    result = run(capture, h100_expected())
    check = by_id(result)[check_id]
    assert result["status"] == "fail"
    assert check["status"] == "fail"
    assert message in check["message"]
    assert any(evidence_line in line for line in check["evidence"]["lines"]), check["evidence"]
    assert check["remedy"]
    # The fault is this capture's only one: every other failing check is the same fault seen twice.
    assert set(not_passing(result)) <= {check_id, "gpu.ecc"}


def test_missing_nvidia_smi_is_error_and_the_node_is_never_pass():
    result = run("h100-no-nvidia-smi", h100_expected())
    checks = by_id(result)
    assert checks["gpu.tool"]["status"] == "error"
    assert "nvidia-smi not found on PATH" in checks["gpu.tool"]["message"]
    assert checks["gpu.count"]["status"] == "error"
    assert result["status"] == "error"
    assert checks["ib.port_state"]["status"] == "pass"


def test_file_missing_from_a_capture_is_error_with_the_fix(tmp_path):
    copy = tmp_path / "capture"
    shutil.copytree(CAPTURES / "h100-healthy", copy)
    (copy / "ibstat.txt").unlink()
    shutil.rmtree(copy / "sys")
    (copy / "dmesg.txt").unlink()
    result = run("", h100_expected(), path=copy)
    checks = by_id(result)
    assert checks["ib.hca_count"]["status"] == "error"
    assert "ibstat.txt is not in the capture" in checks["ib.hca_count"]["message"]
    assert "cf-capture.sh" in checks["ib.hca_count"]["remedy"]
    assert checks["gpu.xid"]["status"] == "error"
    assert result["status"] == "error"


def test_sysfs_stands_in_for_a_missing_ibstat(tmp_path):
    copy = tmp_path / "capture"
    shutil.copytree(CAPTURES / "h100-ib-port-down", copy)
    (copy / "ibstat.txt").unlink()
    (copy / "ibstat.txt.err").write_text("rc: 127\nibstat not found on PATH\n")
    check = by_id(run("", h100_expected(), path=copy))["ib.port_state"]
    assert check["status"] == "fail" and check["message"] == "mlx5_3 port 1: Down / Polling"
    assert "mlx5_3/ports/1/state: Down" in check["evidence"]["lines"][0]


def test_plain_nvidia_smi_q_stands_in_for_the_xml(tmp_path):
    copy = tmp_path / "capture"
    shutil.copytree(CAPTURES / "h100-healthy", copy)
    (copy / "nvidia-smi-q-x.xml").unlink()
    (copy / "nvidia-smi-q.txt").write_text("this is not nvidia-smi output\n")
    check = by_id(run("", h100_expected(), path=copy))["gpu.tool"]
    assert check["status"] == "error"
    assert check["evidence"]["command"] == "nvidia-smi -q"


def test_healthy_ascend_node_passes():
    result = run("ascend-910b-healthy", atlas_expected())
    assert result["status"] == "pass", not_passing(result)
    checks = by_id(result)
    assert all(checks[c]["status"] == "pass" for c in checks if c.startswith("npu."))
    assert checks["gpu.tool"]["status"] == "skip" and checks["ib.hca_count"]["status"] == "skip"
    assert result["facts"]["firmware_versions"] == ["7.5.0.1.129"]
    assert result["metrics"]["npu.count"] == 8


def test_npu_alarm_fails_npu_health_with_the_row_and_error_code():
    result = run("ascend-910b-npu-alarm", atlas_expected())
    check = by_id(result)["npu.health"]
    assert result["status"] == "fail" and check["status"] == "fail"
    assert "NPU 3" in check["message"] and "Alarm" in check["message"]
    assert any(line.startswith("| 3     910B3") and "Alarm" in line for line in check["evidence"]["lines"])
    assert any("80E18005" in line for line in check["evidence"]["lines"])
    assert set(not_passing(result)) == {"npu.health"}


def test_npu_nic_net_health_failure():
    result = run("ascend-910b-net-health-fail", atlas_expected())
    check = by_id(result)["npu.nic_net_health"]
    assert check["status"] == "fail" and "NPU NIC 5: net health Receive timeout" in check["message"]
    assert check["evidence"] == {
        "command": "hccn_tool -i 5 -net_health -g",
        "lines": ["net health status: Receive timeout"],
        "file": "hccn-5-net_health.txt",
    }
    assert set(not_passing(result)) == {"npu.nic_net_health"}


def test_wrong_nic_plan_fails_nic_ip():
    plan = atlas_expected()["hccn_devices"]
    plan[4]["address"] = "10.20.1.14"
    check = by_id(run("ascend-910b-healthy", atlas_expected(hccn_devices=plan)))["npu.nic_ip"]
    assert check["status"] == "fail" and "NPU NIC 4" in check["message"]


def test_skip_checks_and_sku_without_accelerators():
    result = run("h100-xid79", h100_expected(skip_checks=["gpu.xid"]))
    assert by_id(result)["gpu.xid"] == {
        "id": "gpu.xid",
        "status": "skip",
        "message": "skipped by skip_checks",
        "evidence": None,
        "remedy": None,
    }
    assert result["status"] == "pass"
    cpu = run("h100-healthy", h100_expected(node_sku="cpu-generic", sku=CPU_SKU, required_mounts=[]))
    assert by_id(cpu)["gpu.count"]["message"] == "SKU cpu-generic has no accelerators"
    # A node without accelerators still gets a verdict from its node checks, never an overall skip.
    assert cpu["status"] == "pass", not_passing(cpu)
    assert {c: by_id(cpu)[c]["status"] for c in ("node.time_sync", "node.root_fs")} == {
        "node.time_sync": "pass",
        "node.root_fs": "pass",
    }
    assert cpu["metrics"]["node.root_free_gib"] == 1492.92  # 1565435092 KiB available


def test_full_level_reports_a_missing_dcgm_capture_as_error():
    check = by_id(run("h100-healthy", h100_expected(), level="full"))["gpu.dcgm_diag"]
    assert check["status"] == "error" and "dcgmi-diag-r2.json is not in the capture" in check["message"]
    quick = by_id(run("h100-healthy", h100_expected()))["gpu.dcgm_diag"]
    assert quick["status"] == "skip"


def test_bad_level_or_expectation_raises():
    with pytest.raises(InvalidExpectation, match="level must be one of quick, full"):
        run("h100-healthy", h100_expected(), level="thorough")
    with pytest.raises(InvalidExpectation, match=r"skip_checks names unknown check ids gpu\.xids"):
        run("h100-healthy", h100_expected(skip_checks=["gpu.xids"]))
