"""Node validation checks, one module per area: nvidia, gpudirect, infiniband, roce, ascend, ppu, node, dcgm,
storage.

Check ids are fixed: reports, tests and quarantine reasons use them.
"""

from __future__ import annotations

GPU_CHECKS = (
    "gpu.tool",
    "gpu.count",
    "gpu.model",
    "gpu.driver_version",
    "gpu.kernel_modules",
    # nvidia_peermem (GPUDirect RDMA) where the SKU has compute HCAs: checks/gpudirect.py.
    "gpu.peermem",
    "gpu.pcie_link",
    "gpu.nvlink",
    "gpu.fabric_manager",
    "gpu.persistence_mode",
    "gpu.xid",
    "gpu.ecc",
    "gpu.retired_pages",
    "gpu.remapped_rows",
    "gpu.mig",
)
GPU_FULL_CHECKS = ("gpu.dcgm_diag",)
IB_CHECKS = ("ib.hca_count", "ib.link_layer", "ib.port_state", "ib.port_rate", "ib.ipoib")
ROCE_CHECKS = ("roce.qos",)
NPU_CHECKS = (
    "npu.tool",
    "npu.count",
    "npu.model",
    "npu.health",
    "npu.driver_version",
    "npu.firmware_compat",
    "npu.nic_link",
    "npu.nic_net_health",
    "npu.nic_ip",
)
PPU_CHECKS = ("ppu.tool", "ppu.count", "ppu.model", "ppu.health", "ppu.sdk_version")
# Every node has these, with accelerators or without (control, storage): each gets a real verdict.
NODE_CHECKS = ("node.mounts", "node.time_sync", "node.root_fs", "node.os_release")
# Shared storage (checks/storage.py): JuiceFS sessions of the host's mounts, the Ceph cluster's health.
STORAGE_CHECKS = ("storage.juicefs_session", "storage.ceph_health")

# The compute fabric's checks (playbooks/fabric.yml validates these only).
FABRIC_CHECKS = IB_CHECKS + ROCE_CHECKS

CHECK_IDS = (
    GPU_CHECKS + GPU_FULL_CHECKS + FABRIC_CHECKS + NPU_CHECKS + PPU_CHECKS + NODE_CHECKS + STORAGE_CHECKS
)
