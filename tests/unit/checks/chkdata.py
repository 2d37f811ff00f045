"""Shared data of the check tests: SKU specs as the catalog gives them, and helpers."""

from __future__ import annotations

import copy
from pathlib import Path

from cfcore.outputs import Output

CAPTURES = Path(__file__).resolve().parents[2] / "fixtures" / "captures"

H100_SKU = {
    "description": "NVIDIA HGX H100 8-GPU (SXM5), 8x ConnectX-7 NDR 400G",
    "accelerator": {
        "vendor": "nvidia",
        "model": "H100",
        "count": 8,
        "memory_gib": 80,
        "interconnect": "nvswitch",
        "nvlink_links_per_device": 18,
        "pcie_gen": 5,
        "pcie_width": 16,
        "min_driver": "525",
        "kernel_module_flavour": "any",
    },
    "hca": {"count": 8, "rate_gbps": 400, "link_layer": "InfiniBand"},
    "npu_nics": None,
}

ATLAS_SKU = {
    "description": "Huawei Atlas 800T A2, 8x Ascend 910B, 8x 200GE on-package RoCE",
    "accelerator": {
        "vendor": "huawei",
        "model": "910B",
        "count": 8,
        "memory_gib": 64,
        "interconnect": "hccs",
        "nvlink_links_per_device": None,
        "pcie_gen": 5,
        "pcie_width": 16,
        "min_driver": "23.0.0",
        "kernel_module_flavour": "any",
    },
    "hca": None,
    "npu_nics": {"count": 8, "rate_gbps": 200, "subnet_rule": "single-subnet"},
}

CPU_SKU = {"description": "CPU node", "accelerator": None, "hca": None, "npu_nics": None}

HCCN_PLAN = [
    {
        "id": n,
        "address": f"10.20.0.{10 + n}",
        "netmask": "255.255.255.0",
        "gateway": "10.20.0.1",
        "netdetect": "10.20.0.1",
    }
    for n in range(8)
]


def h100_expected(**changes) -> dict:
    expected = {
        "node_sku": "hgx-h100-8gpu",
        "sku": copy.deepcopy(H100_SKU),
        "bom": {"nvidia_driver_version": "535.183.01", "cuda_version": "12.2"},
        "required_mounts": ["/mnt/jfs"],
        "hccn_devices": [],
        "sysfs_root": "/",
        "skip_checks": [],
    }
    expected.update(changes)
    return expected


def atlas_expected(**changes) -> dict:
    expected = {
        "node_sku": "atlas-800t-a2",
        "sku": copy.deepcopy(ATLAS_SKU),
        "bom": {"ascend_driver_version": "24.1.rc2", "cann_version": "8.0.RC2"},
        "required_mounts": ["/mnt/jfs"],
        "hccn_devices": copy.deepcopy(HCCN_PLAN),
        "sysfs_root": "/",
        "skip_checks": [],
    }
    expected.update(changes)
    return expected


def gpu(index: int, **changes) -> dict:
    """One parsed GPU record of a healthy H100 (cfcore.parsers' keys)."""
    record = {
        "index": index,
        "name": "NVIDIA H100 80GB HBM3",
        "uuid": f"GPU-0000000{index}",
        "serial": f"165402201{index}",
        "pci_bus_id": f"0000:{0x18 + index * 0x10:02x}:00.0",
        "pcie_gen_max": 5,
        "pcie_gen_current": 5,
        "pcie_width_max": 16,
        "pcie_width_current": 16,
        "persistence_mode": "Enabled",
        "mig_mode": "Disabled",
        "ecc_mode": "Enabled",
        "ecc_uncorrected_volatile": 0,
        "retired_pages_pending": None,
        "remapped_rows_pending": False,
        "remapped_rows_failure": False,
        "temperature_c": 35,
        "power_draw_w": 70.5,
        "memory_total_mib": 81559,
        "fabric_state": "Completed",
        "fabric_status": "Success",
    }
    record.update(changes)
    return record


def smi(gpus=None, driver="535.183.01", cuda="12.2", **extra) -> Output:
    data = {
        "driver_version": driver,
        "cuda_version": cuda,
        "gpus": gpus if gpus is not None else [gpu(i) for i in range(8)],
        "tool_messages": [],
    }
    data.update(extra)
    return Output.from_data("nvidia-smi -q -x", data)


def failed_output(command: str, state: str, error: str, stderr: str = "", text: str = "") -> Output:
    return Output(
        command,
        state,
        text=text,
        stderr=stderr,
        rc={"not_found": 127, "timeout": 124}.get(state, 1),
        error=error,
    )
