"""Benchmark of the rolling-upgrade planner (cfcore/upgrade_plan.py): prints figures, asserts nothing.

    .venv/bin/python tests/bench/bench_upgrade_plan.py [--nodes 10000] [--racks 400] [--repeats 3]

A synthetic GPU fleet: --nodes hosts in --racks racks, a leaf switch per 4
racks, NVLink domains of 8 hosts within a rack; three racks in four are Slurm
workers (partitions h100-a/b/c by rack), the fourth Kubernetes workers (queues
training and eval); 10% of the hosts already run the target. For each
setting: the planning time (candidates() and make_plan(), best of --repeats),
the batches against the lower bound, and the hosts planned, current and blocked.

Aim (issue 15): 10,000 nodes in 400 racks plan in well under 1 s.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "plugins" / "module_utils"))

from cfcore.upgrade_plan import candidates, make_plan  # noqa: E402

TARGET = "570.133.20"
OLD = "560.35.03"
COLUMNS = ("plan ms", "batches", "bound", "planned", "current", "blocked")
SETTINGS = {
    "defaults (10%, domain 50%, canary 1)": {},
    "max-unavailable 5%": {"max_unavailable": "5%"},
    "domain-share 25%": {"domain_share": "25%"},
    "domain-share 1 (one host a domain at a time)": {"domain_share": "1"},
    "floor 90%": {"floor": "90%"},
    "max-unavailable 20%, floor 90%, domain 25%": {
        "max_unavailable": "20%",
        "floor": "90%",
        "domain_share": "25%",
    },
}


def synthetic_fleet(nodes: int, racks: int, seed: int = 15) -> tuple[dict, dict, list, dict]:
    """(hostvars, groups, slurm_partitions, installed) of the fleet the module docstring describes."""
    rng = random.Random(seed)
    per_rack = -(-nodes // racks)
    hostvars, installed = {}, {}
    groups = {"gpu_nvidia": [], "slurm_controller": ["ctl-01"], "slurm_workers": [], "k8s_workers": []}
    partitions = [{"name": f"h100-{p}", "nodes_group": f"h100_{p}"} for p in "abc"]
    for p in "abc":
        groups[f"h100_{p}"] = []
    for i in range(nodes):
        rack, slot = divmod(i, per_rack)
        host = f"gpu-r{rack:03d}-n{slot:02d}"
        variables = {"rack": f"r{rack:03d}", "leaf_switch": f"leaf{rack // 4:03d}"}
        variables["nvlink_domain"] = f"nvl-r{rack:03d}-{slot // 8}"
        groups["gpu_nvidia"].append(host)
        if rack % 4 == 0:
            groups["k8s_workers"].append(host)
            variables["volcano_queue"] = "training" if slot % 3 else "eval"
        else:
            groups["slurm_workers"].append(host)
            groups[f"h100_{'abc'[rack % 4 - 1]}"].append(host)
        hostvars[host] = variables
        installed[host] = TARGET if rng.random() < 0.10 else OLD
    hostvars["ctl-01"] = {"slurm_partitions": partitions}
    return hostvars, groups, partitions, installed


def best_of(repeats: int, action) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = action()
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, default=10000)
    parser.add_argument("--racks", type=int, default=400)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    hostvars, groups, partitions, installed = synthetic_fleet(args.nodes, args.racks)
    hosts = groups["gpu_nvidia"]
    took, found = best_of(args.repeats, lambda: candidates(hosts, hostvars, groups, partitions))
    print(
        f"{args.nodes} nodes, {args.racks} racks; candidates(): {took * 1000:.0f} ms (best of {args.repeats})"
    )
    print(f"{'setting':<44}" + "".join(f"{column:>9}" for column in COLUMNS))
    for name, options in SETTINGS.items():
        took, plan = best_of(
            args.repeats, lambda options=options: make_plan(found, installed, TARGET, **options)
        )
        figures = (f"{took * 1000:.0f}", len(plan.batches), plan.lower_bound, len(plan.hosts()),
                   len(plan.current), len(plan.blocked))  # fmt: skip
        print(f"{name:<44}" + "".join(f"{figure:>9}" for figure in figures))


if __name__ == "__main__":
    main()
