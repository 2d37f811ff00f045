"""Per-concern site variables of a lab (group_vars), as the roles of each group need them.

Versions are the ones lab nodes can really install: they are Debian 12 systems
that reach Debian's mirror and nothing else (Slurm and Prometheus from Debian).
Shared storage is JuiceFS with its metadata in Redis on the control node (the
juicefs_meta group) and Ceph on the storage nodes, whose data disk is /dev/vdb.
"""

from __future__ import annotations

from collections.abc import Sequence

from clusterforge.lab.disks import DATA_DISK
from clusterforge.lab.model import Node

K8S_VERSION = "1.30.6"
SLURM_VERSION = "22.05.8"  # Debian 12's slurm-wlm
PROMETHEUS_VERSION = "2.42.0"  # Debian 12's prometheus
JUICEFS_MOUNT_POINT = "/mnt/jfs"


def scheduler_vars(lab: str, nodes: Sequence[Node]) -> dict[str, object]:
    """Kubernetes and Slurm; one Slurm partition with the GPU nodes when there are any."""
    gpu_workers = [n for n in nodes if {"gpu_nvidia", "slurm_workers"} <= set(n.role.groups)]
    partitions = [{"name": "gpu", "nodes_group": "gpu_nvidia", "default": True, "max_time": "1-00:00:00"}]
    return {
        "k8s_version": K8S_VERSION,
        "slurm_version": SLURM_VERSION,
        "slurm_cluster_name": f"cf-{lab}",
        "slurm_partitions": partitions if gpu_workers else [],
    }


def storage_vars(lab: str, subnet: str) -> dict[str, object]:
    """JuiceFS and Ceph; the lab has one network, so Ceph's public and cluster networks are it."""
    return {
        "juicefs_volume_name": f"cf-{lab}",
        "juicefs_meta_engine": "redis",
        "juicefs_mount_point": JUICEFS_MOUNT_POINT,
        "ceph_public_network": subnet,
        "ceph_cluster_network": subnet,
    }


def time_vars(nodes: Sequence[Node]) -> tuple[dict[str, object], dict[str, dict[str, object]]]:
    """chrony as an air-gapped site runs it: (group_vars/all values, host vars by host).

    Lab nodes reach no NTP pool, so the first control node (else the first
    node) serves time from its own clock (local stratum) to the lab network
    and every other node takes its time from it.
    """
    if not nodes:
        return {}, {}
    server = next((n for n in nodes if n.role.name == "control"), nodes[0])
    everyone = {"base_chrony_pools": [], "base_chrony_servers": [server.host]}
    serving = {"base_chrony_servers": [], "base_chrony_local_stratum": 10, "base_chrony_allow": ["all"]}
    return everyone, {server.host: serving}


def monitoring_vars() -> dict[str, object]:
    return {"monitoring_prometheus_version": PROMETHEUS_VERSION}


def ceph_osd_vars() -> dict[str, object]:
    return {"ceph_osd_devices": [DATA_DISK]}


def ascend_vars() -> dict[str, object]:
    """The Ascend stack on lab NPU nodes. No container engine runs on lab nodes yet (the
    scheduler roles will bring containerd), so Ascend Docker Runtime waits for one; the
    device plugin's prerequisites and npu-exporter still apply."""
    return {"ascend_docker_runtime_enabled": False}
