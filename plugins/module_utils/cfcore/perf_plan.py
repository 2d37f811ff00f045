"""From hosts to pair tests: each host's pairing identity and one round's work per host.

Used by the CLI (rails as the nodes reported them in the single-node phase) and by filter
cf_perf_survey_roles (a plain ansible-playbook run: rails as planned by the SKU catalog).
The pairing itself is cfcore/perf_pairing.py. Stdlib only.
"""

from __future__ import annotations

from .perf_pairing import PerfNode, PlannedPair

NCCL = "nccl"


def npu_rail(nic_id) -> str:
    return f"npu{int(nic_id)}"


def planned_rails(sku: dict, hostvars: dict) -> list:
    """The rails a host should have: `perf_rails` when the inventory names them, else the catalog's
    HCA count as mlx5_0.. (the kernel's names on Mellanox/NVIDIA HCAs)."""
    if hostvars.get("perf_rails"):
        return [str(rail) for rail in hostvars["perf_rails"]]
    hca = sku.get("hca") or {}
    return [f"mlx5_{index}" for index in range(int(hca.get("count") or 0))]


def perf_node(host: str, hostvars: dict, sku: dict, rails: list, nccl: bool, npu_nics: list) -> PerfNode:
    """The host as the pairing sees it: its SKU is its group (only like nodes pair)."""
    tested = [*rails, *([NCCL] if nccl else []), *(npu_rail(n) for n in npu_nics)]
    return PerfNode(
        name=host,
        group=str(hostvars.get("node_sku") or "?"),
        rack=hostvars.get("rack"),
        rails=tuple(tested),
    )


def host_info(host: str, hostvars: dict, sku: dict, expectations: dict, gpudirect: bool = True) -> dict:
    """What a pair's other side and mpirun need of a host: its address, NPU NIC addresses, GPUs."""
    accel = sku.get("accelerator") or {}
    gpus = int(accel.get("count") or 0) if accel.get("vendor") == "nvidia" else 0
    return {
        "address": str(hostvars.get("perf_address") or hostvars.get("ansible_host") or host),
        "npu_nics": {
            str(d["id"]): d["address"] for d in hostvars.get("hccn_devices") or [] if "address" in d
        },
        "gpus": max(gpus, 1),
        "gpudirect_gpus": gpus if gpudirect and sku.get("hca") else 0,
        "expectations": expectations,
    }


def pair_roles(pairs: list, info: dict) -> dict:
    """{host: the work of its side in this round} for perf_pair_roles (roles/perf)."""
    roles = {}
    for pair in pairs:
        if isinstance(pair, PlannedPair):
            a, b, rails = pair.a, pair.b, list(pair.rails)
        else:
            a, b, rails = pair["a"], pair["b"], list(pair["rails"])
        mine, theirs = info[a], info[b]
        shared = {"rails": rails, "gpudirect_gpus": min(mine["gpudirect_gpus"], theirs["gpudirect_gpus"])}
        roles[a] = {
            **shared,
            "side": "a",
            "self_address": mine["address"],
            "gpus": min(mine["gpus"], theirs["gpus"]),
            "expectations": mine["expectations"],
            "peer": {"name": b, "address": theirs["address"], "npu_nics": theirs["npu_nics"]},
        }
        roles[b] = {**shared, "side": "b", "peer": {"name": a, "address": mine["address"], "npu_nics": {}}}
    return roles
