"""The groups of the inventory model (docs/design.md, "Inventory model"), one list for the
plugins (scrape targets), `inventory check` and the lab.

- `EXPECTED_GROUPS`: the groups playbooks and `clusterforge validate` address; `inventory
  check` warns about a group outside them and lists the empty ones.
- `CEPH_GROUPS`: the Ceph daemon groups of the storage stack ("Shared storage");
  ceph_mgr, ceph_mds and ceph_rgw are optional (the monitors' hosts stand in).
- `INVENTORY_GROUPS`: both, in that order: every group a host can belong to.
"""

from __future__ import annotations

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
CEPH_GROUPS = ("ceph_mon", "ceph_mgr", "ceph_osd", "ceph_mds", "ceph_rgw")
INVENTORY_GROUPS = EXPECTED_GROUPS + tuple(g for g in CEPH_GROUPS if g not in EXPECTED_GROUPS)
