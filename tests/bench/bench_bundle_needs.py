"""Benchmark of what an offline bundle must hold for a fleet: prints figures, asserts nothing.

    .venv/bin/python tests/bench/bench_bundle_needs.py [--gpu-nodes 400] [--npu-nodes 100]

The example inventory (inventories/example) scaled up as bench_inventory_check.py
does. For the example and the scaled fleet: the hosts, the kinds of host
(clusterforge.bundle.needs.representatives: hosts alike but for their identity
and past the first three of each group), and the wall time of compute_needs
(playbooks/bundle_needs.yml on one host of each kind: what `bundle build`,
`bundle verify -i` and an offline bring-up's preflight pay). The playbook's
cost per host, measured on 206 hosts before the kinds: 1.9 s on 2 cores.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_inventory_check import EXAMPLE, scaled_inventory
from clusterforge.bundle.needs import compute_needs, representatives
from clusterforge.validation.inventory import load_inventory


def measure(path: Path) -> tuple[int, int, float, int]:
    inventory = load_inventory(path)
    kinds = representatives(inventory, list(inventory.targets))
    start = time.perf_counter()
    needs = compute_needs(inventory)
    elapsed = time.perf_counter() - start
    return len(inventory.targets), len(kinds), elapsed, sum(len(e["needs"]) for e in needs.hosts.values())


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--gpu-nodes", type=int, default=400)
    parser.add_argument("--npu-nodes", type=int, default=100)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        fleet = Path(tmp) / "fleet"
        scaled_inventory(fleet, args.gpu_nodes, args.npu_nodes)
        for label, path in (("example inventory", EXAMPLE), ("generated fleet", fleet)):
            rows.append((label, *measure(path)))
    print(f"{'inventory':<20} {'hosts':>6} {'kinds':>6} {'needs s':>8} {'needs':>7}")
    for label, hosts, kinds, elapsed, count in rows:
        print(f"{label:<20} {hosts:>6} {kinds:>6} {elapsed:8.1f} {count:>7}")


if __name__ == "__main__":
    main()
