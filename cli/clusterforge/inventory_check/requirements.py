"""Which variables each host must have, by group and by accelerator vendor (docs/design.md)."""

from __future__ import annotations

# Every managed host (not ansible_connection=local).
HOST_REQUIRED = ("ansible_host", "node_sku", "rack")

# Hosts of a group need these (the roles of that group read them).
GROUP_REQUIRED: dict[str, tuple[str, ...]] = {
    "npu_ascend": ("hccn_devices",),
    "k8s_control_plane": ("k8s_version",),
    "k8s_workers": ("k8s_version",),
    "slurm_controller": ("slurm_version", "slurm_cluster_name", "slurm_partitions"),
    "slurm_workers": ("slurm_version", "slurm_cluster_name"),
    "juicefs_meta": ("juicefs_meta_engine", "juicefs_volume_name"),
    "ceph_mon": ("ceph_public_network",),
    "ceph_osd": ("ceph_public_network", "ceph_cluster_network", "ceph_osd_devices"),
    "monitoring": ("monitoring_prometheus_version",),
}

# Hosts whose SKU has an accelerator of this vendor need its BOM variables.
VENDOR_REQUIRED: dict[str, tuple[str, ...]] = {
    "nvidia": ("nvidia_driver_version", "cuda_version", "nccl_version", "dcgm_version"),
    "huawei": ("ascend_driver_version", "cann_version"),
}

# The groups playbooks and `clusterforge validate` address (design.md).
EXPECTED_GROUPS = (
    "gpu_nvidia",
    "npu_ascend",
    "npu_ppu",
    "storage",
    "juicefs_meta",
    "ceph_mon",
    "ceph_osd",
    "k8s_control_plane",
    "k8s_workers",
    "slurm_controller",
    "slurm_workers",
    "monitoring",
)

# Where a missing variable belongs, for the fix text (by name prefix).
_HOMES = (
    (
        ("nvidia_", "cuda_", "nccl_", "dcgm_", "ascend_driver", "cann_", "mlnx_"),
        "group_vars/all/versions.yml",
    ),
    (("fabric_",), "group_vars/all/fabric.yml"),
    (("juicefs_", "ceph_", "validate_required_mounts"), "group_vars/all/storage.yml"),
    (("k8s_", "volcano_", "slurm_"), "group_vars/all/scheduler.yml"),
    (("monitoring_",), "group_vars/all/monitoring.yml"),
)


def home_of(variable: str, host: str) -> str:
    """Where an operator would set `variable` in a ClusterForge inventory."""
    if variable in HOST_REQUIRED:
        return f"the inventory entry of host {host}"
    if variable == "hccn_devices":
        return f"host_vars/{host}.yml (one entry per NPU NIC: id, address, netmask, gateway, netdetect)"
    for prefixes, path in _HOMES:
        if variable.startswith(prefixes):
            return path
    return "group_vars/"
