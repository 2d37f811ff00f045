"""Node validation on real tool outputs captured on real hardware (../shared/real-outputs).

The files are not part of the repository: these tests skip when the folder is
absent. Each file's first line is a `# source:` header, dropped here.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cfcore.collect import CaptureSource
from cfcore.validate import validate_node
from chkdata import atlas_expected, h100_expected

REAL = Path(__file__).resolve().parents[3].parent / "shared" / "real-outputs"
pytestmark = pytest.mark.skipif(not REAL.is_dir(), reason=f"no real outputs at {REAL}")


def capture(tmp_path: Path, files: dict) -> CaptureSource:
    for name, real in files.items():
        text = (REAL / real).read_text()
        (tmp_path / name).write_text(text.split("\n", 1)[1] if text.startswith("# source:") else text)
    return CaptureSource(str(tmp_path))


def by_id(result: dict) -> dict:
    return {check["id"]: check for check in result["checks"]}


def test_real_8x_h100_node(tmp_path):
    source = capture(
        tmp_path,
        {
            "nvidia-smi-q.txt": "nvidia/nvidia-smi-q_8xH100-80GB-HBM3_drv535.183.01_gpud-fixture.txt",
            "ibstat.txt": "ib/ibstat.47.0.h100.some.down.0_gpud-fixture.txt",
            "dmesg.txt": "nvidia/dmesg_NVRM-Xid-119-GSP-timeout_gpud-fixture.txt",
        },
    )
    expected = h100_expected(required_mounts=[])
    expected["sku"]["hca"]["ca_types"] = ["MT4129"]
    checks = by_id(validate_node(source, expected))
    for check_id in (
        "gpu.tool",
        "gpu.count",
        "gpu.model",
        "gpu.driver_version",
        "gpu.pcie_link",
        "gpu.persistence_mode",
        "gpu.ecc",
        "gpu.remapped_rows",
        "gpu.mig",
        "ib.hca_count",
        "ib.port_state",
        "ib.port_rate",
    ):
        assert checks[check_id]["status"] == "pass", checks[check_id]
    # Its two front-end ConnectX-6 Dx ports are down: not compute ports, so not judged.
    xid = checks["gpu.xid"]
    assert xid["status"] == "fail" and "Xid 119 (GSP RPC timeout)" in xid["message"]
    assert any("NVRM: Xid (PCI:0000:9b:00): 119" in line for line in xid["evidence"]["lines"])
    assert checks["gpu.nvlink"]["status"] == "error"  # not in this capture, so never a pass


def test_real_roce_node_with_two_compute_ports_down(tmp_path):
    source = capture(tmp_path, {"ibstat.txt": "ib/ibstat.47.0.h100.some.down.1_gpud-fixture.txt"})
    expected = h100_expected(required_mounts=[])
    expected["sku"]["hca"] = {"count": 8, "rate_gbps": 400, "link_layer": "Ethernet", "ca_types": ["MT4129"]}
    checks = by_id(validate_node(source, expected))
    assert checks["ib.hca_count"]["status"] == "pass"
    state = checks["ib.port_state"]
    assert state["status"] == "fail"
    assert "mlx5_11 port 1: Down" in state["message"] and "mlx5_5 port 1: Down" in state["message"]
    assert "mlx5_1 " not in state["message"]  # a front-end ConnectX-6 Dx


def test_real_nvlink_output_with_every_link_inactive(tmp_path):
    source = capture(
        tmp_path,
        {
            "nvidia-smi-q.txt": "nvidia/nvidia-smi-q_8xH100-80GB-HBM3_drv535.183.01_gpud-fixture.txt",
            "nvidia-smi-nvlink-s.txt": "nvidia/nvlink-s_all-links-inactive_a100_azure-ahc-fixture.txt",
        },
    )
    check = by_id(validate_node(source, h100_expected(required_mounts=[])))["gpu.nvlink"]
    assert check["status"] == "fail"
    assert "GPU 6: 0 of 18 NVLinks active" in check["message"]


def test_real_a3_npu_table(tmp_path):
    source = capture(
        tmp_path, {"npu-smi-info.txt": "ascend/npu-smi-info_A3-Ascend910_25.2.0_nputop-fixture.txt"}
    )
    expected = atlas_expected(required_mounts=[], hccn_devices=[], bom={"ascend_driver_version": "25.2.0"})
    expected["sku"]["accelerator"].update(model="Ascend910", count=2)
    checks = by_id(validate_node(source, expected))
    assert checks["npu.count"]["status"] == "pass" and "4 chips" in checks["npu.count"]["message"]
    assert checks["npu.health"]["status"] == "pass"
    assert checks["npu.driver_version"]["status"] == "pass"
    assert checks["npu.firmware_compat"]["status"] == "error"  # board info not in this capture
