"""Per-concern site variables of a lab (group_vars), as the roles of each group need them.

Versions are the ones lab nodes can really install: they are Debian 12 systems
that reach Debian's mirror and nothing else (Slurm and Prometheus from Debian).
Shared storage is real: Ceph (CephFS, RGW) on the storage nodes, whose data disk
is /dev/vdb, and a JuiceFS volume with its metadata in Redis on the control node
(the juicefs_meta group) and its data in an RGW bucket; the GPU and NPU nodes
mount both (StoragePlan). Slurm runs for real on the GPU nodes, with cgroup
enforcement (bare_metal.py). Secrets: vault.py.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass

from clusterforge.lab.disks import DATA_DISK
from clusterforge.lab.model import Node

K8S_VERSION = "1.30.6"
SLURM_VERSION = "22.05.8"  # Debian 12's slurm-wlm
PROMETHEUS_VERSION = "2.42.0"  # Debian 12's prometheus
JUICEFS_MOUNT_POINT = "/mnt/jfs"
JUICEFS_VOLUME = "jfs"
CEPHFS_MOUNT_POINT = "/mnt/cephfs"
CEPHFS_NAME = "cephfs"  # the ceph role's default ceph_cephfs_name
CEPHFS_CLIENT = "fsuser"
CEPH_RGW_PORT = 7480  # the ceph role's default ceph_rgw_port
CEPH_OSD_MEMORY_TARGET = 1024**3  # 1 GiB instead of 4: a lab host runs many nodes
# Seconds between two health-check runs of slurmd (the role's default is 300). Short enough
# that a replayed fault drains its node, and a healed node returns, within a test's patience
# (at most one interval plus a run each way); long enough that the quick validation of every
# GPU worker does not load a 2-core lab host.
SLURM_HEALTH_CHECK_INTERVAL_S = 20
# Prometheus's scrape and rule evaluation interval in the lab (a site's default: 30s).
MONITORING_INTERVAL = "15s"
# Seconds between two quick validations of a node Slurm does not check (the role's default is
# 300): these are cpu-generic and NPU nodes, whose runs would otherwise load a 2-core lab host.
VALIDATION_TIMER_S = 120


def scheduler_vars(lab: str, nodes: Sequence[Node]) -> dict[str, object]:
    """Kubernetes and Slurm; one Slurm partition with the GPU nodes when there are any.

    Slurm enforces cgroups on the lab's workers (the default, said here because the lab makes
    it possible: model.SLURM_WORKER_CAPABILITIES, bare_metal.py). The munge key is a Vault
    variable (vault.py); only its name is here.
    """
    gpu_workers = [n for n in nodes if {"gpu_nvidia", "slurm_workers"} <= set(n.role.groups)]
    partitions = [{"name": "gpu", "nodes_group": "gpu_nvidia", "default": True, "max_time": "1-00:00:00"}]
    return {
        "k8s_version": K8S_VERSION,
        # Kubernetes server binaries and images cannot be fetched on these machines: the lab
        # plans its Kubernetes part (control plane on ctl, the NPU nodes as workers, images from
        # a site mirror) and tests/k8s_render renders and schema-checks that plan, but site.yml
        # does not deploy it (schedulers.yml skips the Kubernetes plays).
        "k8s_deploy": False,
        "k8s_image_registry": f"registry.{lab}.cflab.internal:5000",
        "slurm_version": SLURM_VERSION,
        "slurm_cluster_name": f"cf-{lab}",
        "slurm_munge_key": "{{ vault_slurm_munge_key }}",
        "slurm_partitions": partitions if gpu_workers else [],
        "slurm_health_check_interval": SLURM_HEALTH_CHECK_INTERVAL_S,
        "slurm_enforce_cgroups": True,
    }


@dataclass(frozen=True)
class StoragePlan:
    """Which lab nodes take which part of the storage stack (docs/design.md, "Shared storage").

    Ceph runs on the storage nodes (every one a monitor, OSD, MDS and gateway); the
    JuiceFS volume keeps its metadata in Redis on the juicefs_meta nodes (the control
    node) and its data in a bucket of the first storage node's gateway; the nodes
    that run jobs mount both file systems. Without a storage node there is no
    cluster and nothing to mount; without a metadata node no JuiceFS volume.
    """

    ceph: tuple[Node, ...]
    meta: tuple[Node, ...]
    clients: tuple[Node, ...]

    @property
    def cephfs(self) -> bool:
        return bool(self.ceph)

    @property
    def juicefs(self) -> bool:
        return bool(self.ceph and self.meta)

    @property
    def mounts_anything(self) -> bool:
        return bool(self.clients) and (self.cephfs or self.juicefs)


def storage_plan(nodes: Sequence[Node]) -> StoragePlan:
    return StoragePlan(
        ceph=tuple(n for n in nodes if "ceph_mon" in n.role.groups),
        meta=tuple(n for n in nodes if "juicefs_meta" in n.role.groups),
        clients=tuple(n for n in nodes if n.role.storage_client),
    )


def storage_vars(nodes: Sequence[Node], subnet: str, fsid: str) -> dict[str, object]:
    """group_vars/all/storage.yml: the cluster, its client identities and gateway users, the volume.

    The lab has one network: Ceph's public network is it (no cluster network). Pool
    sizes follow the number of OSDs (one per storage node): one node makes the
    one-replica cluster of the Molecule scenario. Secrets are Vault variables
    (vault.py); only their names are here.
    """
    plan = storage_plan(nodes)
    values: dict[str, object] = {"juicefs_meta_password": "{{ vault_juicefs_meta_password }}"}
    if plan.ceph:
        osds = len(plan.ceph)
        size = min(osds, 3)
        values.update(
            {
                "ceph_fsid": fsid,
                "ceph_mon_secret": "{{ vault_ceph_mon_secret }}",
                "ceph_admin_secret": "{{ vault_ceph_admin_secret }}",
                "ceph_public_network": subnet,
                "ceph_pool_default_size": size,
                "ceph_pool_default_min_size": 1 if size < 3 else 2,
                "ceph_pool_default_pg_num": 8,
                "ceph_cephfs_pg_num": 8,
                # One node: place replicas across OSDs, not hosts.
                "ceph_crush_chooseleaf_type": 0 if osds == 1 else 1,
                # The host's disk may be fuller than the 30 % free monitors warn at.
                "ceph_mon_data_avail_warn": 5,
                "ceph_osd_memory_target": CEPH_OSD_MEMORY_TARGET,
                # Least privilege: read the monitors, read/write the one file system's data.
                "ceph_clients": [
                    {
                        "name": CEPHFS_CLIENT,
                        "key": "{{ vault_ceph_fsuser_key }}",
                        "caps": {
                            "mon": "allow r",
                            "mds": f"allow rw fsname={CEPHFS_NAME}",
                            "osd": f"allow rw tag cephfs data={CEPHFS_NAME}",
                        },
                    }
                ],
                "ceph_rgw_users": [
                    {
                        "uid": "juicefs",
                        "display_name": "JuiceFS volume data",
                        "access_key": "{{ vault_rgw_juicefs_access_key }}",
                        "secret_key": "{{ vault_rgw_juicefs_secret_key }}",
                    },
                    {
                        "uid": "backup",
                        "display_name": "ClusterForge backup sets",
                        "access_key": "{{ vault_rgw_backup_access_key }}",
                        "secret_key": "{{ vault_rgw_backup_secret_key }}",
                    },
                ],
            }
        )
    if plan.juicefs:
        gateway = plan.ceph[0].ip
        values["juicefs_volumes"] = [
            {
                "name": JUICEFS_VOLUME,
                "storage": "s3",
                "bucket": f"http://{gateway}:{CEPH_RGW_PORT}/{JUICEFS_VOLUME}",
                "region": "default",  # RGW's zonegroup: JuiceFS creates the bucket there
                "access_key": "{{ vault_rgw_juicefs_access_key }}",
                "secret_key": "{{ vault_rgw_juicefs_secret_key }}",
                "format": {"block_size": 4096, "trash_days": 1},
            }
        ]
        # The nodes that run jobs need the shared volume (validate adds the rest from
        # juicefs_mounts / ceph_cephfs_mounts).
        values["validate_required_mounts"] = [JUICEFS_MOUNT_POINT]
    return values


def backup_vars(nodes: Sequence[Node]) -> dict[str, object]:
    """Backups of the lab (`clusterforge backup`): secrets encrypted with the lab's own key, and each
    set copied to a bucket of the lab's Ceph RGW, as a site puts its sets on its own object store."""
    plan = storage_plan(nodes)
    values: dict[str, object] = {"backup_encryption_key": "{{ vault_backup_encryption_key }}"}
    if plan.ceph:
        values.update(
            backup_s3_bucket="clusterforge-backup",
            backup_s3_endpoint=f"http://{plan.ceph[0].ip}:{CEPH_RGW_PORT}",
            backup_s3_access_key="{{ vault_rgw_backup_access_key }}",
            backup_s3_secret_key="{{ vault_rgw_backup_secret_key }}",
            backup_s3_region="default",
        )
    return values


def storage_client_vars(nodes: Sequence[Node]) -> dict[str, object]:
    """What a storage client mounts (the group_vars of the job nodes' groups): CephFS through
    ceph-fuse with the least-privilege keyring, the JuiceFS volume with lab-sized caches."""
    plan = storage_plan(nodes)
    values: dict[str, object] = {}
    if plan.cephfs:
        values["ceph_client_keyrings"] = [CEPHFS_CLIENT]
        values["ceph_cephfs_mounts"] = [{"path": CEPHFS_MOUNT_POINT, "client": CEPHFS_CLIENT}]
    if plan.juicefs:
        values["juicefs_mounts"] = [
            {
                "volume": JUICEFS_VOLUME,
                "path": JUICEFS_MOUNT_POINT,
                # Small enough for a lab host; the defaults are sized for NVMe caches.
                "cache_size_mib": 2048,
                "buffer_size_mib": 256,
            }
        ]
    return values


def storage_client_groups(nodes: Sequence[Node]) -> list[str]:
    """The groups whose group_vars carry storage_client_vars: each client role's first group."""
    groups: list[str] = []
    for node in storage_plan(nodes).clients:
        if node.role.groups[0] not in groups:
            groups.append(node.role.groups[0])
    return groups


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
    """Prometheus and Alertmanager on the control node (Debian's), scraping every node. Grafana
    is not deployed: it is not in Debian and no package can be fetched here (its dashboards are
    checked in tests/unit/grafana). Short scrape and rule intervals, so a replayed fault is an
    alert within a test's patience; the nodes Slurm does not check validate themselves every
    VALIDATION_TIMER_S (the first run as soon as the timer starts)."""
    return {
        "monitoring_prometheus_version": PROMETHEUS_VERSION,
        "prometheus_scrape_interval": MONITORING_INTERVAL,
        "prometheus_evaluation_interval": MONITORING_INTERVAL,
        "node_healthcheck_interval_s": VALIDATION_TIMER_S,
        "grafana_deploy": False,
    }


def perf_vars() -> dict[str, object]:
    """Perf validation (`clusterforge validate --level perf`) at lab scale: a small `juicefs bench`
    (a 2-core host runs every node), and the lab's own storage figures, as a site sets its own:
    the built-in figures are per accelerator SKU, and a lab's JuiceFS on one Ceph OSD is no site's."""
    lab_storage = {
        "storage_write_mibps": {"typical": 100, "floor": 1, "source": "lab: one Ceph OSD on a loop device"},
        "storage_read_mibps": {"typical": 100, "floor": 1, "source": "lab: one Ceph OSD on a loop device"},
    }
    # No public HCCL figure exists for the 910B (cfcore/data/perf_expectations.yml: "site must
    # measure"): the lab's is the replay's healthy figure, as a site puts its own measurement.
    hccl = {"typical": 170, "floor": 120, "source": "lab: the healthy 910B replay (tests/hwreplay)"}
    return {
        "perf_storage_bench": {"threads": 1, "big_file_mib": 16, "small_file_count": 10},
        "perf_ib_duration_s": 1,
        "perf_expectations": {
            # Copies: one dict in two places would be a YAML anchor in the generated file.
            "hgx-h100-8gpu": copy.deepcopy(lab_storage),
            "atlas-800t-a2": {**copy.deepcopy(lab_storage), "hccl_local_algbw_gbps": hccl},
        },
    }


def ceph_osd_vars() -> dict[str, object]:
    # BlueStore straight on the data disk: no device mapper (LVM) in a container.
    return {"ceph_osd_devices": [DATA_DISK], "ceph_osd_method": "raw"}


def nvidia_vars() -> dict[str, object]:
    """The NVIDIA stack on lab GPU nodes: containers on the host's kernel, so no kernel headers
    (the role skips them in a container anyway; so does the lab's offline bundle then)."""
    return {"nvidia_driver_kernel_headers": False}


def ascend_vars() -> dict[str, object]:
    """The Ascend stack on lab NPU nodes. No container engine runs on lab nodes yet (the
    scheduler roles will bring containerd), so Ascend Docker Runtime waits for one; the
    device plugin's prerequisites and npu-exporter still apply."""
    return {
        "ascend_docker_runtime_enabled": False,
        # Lab nodes are containers on the host's kernel: no headers, no DKMS build (the role
        # skips them in a container anyway; so does the lab's offline bundle then).
        "ascend_driver_kernel_headers": False,
        # Prometheus on the control node scrapes it (the role's default listens on 127.0.0.1).
        "npu_exporter_listen_address": "{{ ansible_host }}",
    }
