"""Benchmark of `clusterforge inventory check` on a large generated fleet: prints figures, asserts nothing.

    .venv/bin/python tests/bench/bench_inventory_check.py [--gpu-nodes 1600] [--npu-nodes 400]

Builds, in a temporary folder, the example inventory (inventories/example)
scaled up: racks of 32 HGX H100 nodes and racks of 32 Atlas 800T A2 nodes, each
with its management and storage addresses and, for the Ascend nodes, a full
8-entry NPU NIC plan in host_vars. The control, JuiceFS and Ceph nodes and every
group_vars file stay as in the example. Then it times the whole check (Ansible
loading the inventory included) in a fresh process, the way an operator runs it,
and prints what the check found (a valid fleet must come out valid).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "inventories" / "example"
RACK_SIZE = 32


def scaled_inventory(dest: Path, gpu_nodes: int, npu_nodes: int) -> int:
    """Copy the example to dest with gpu_nvidia/npu_ascend scaled up; return the host count."""
    shutil.copytree(EXAMPLE, dest)
    for old_plan in (dest / "host_vars").glob("npu-*.yml"):
        old_plan.unlink()
    hosts_file = dest / "hosts.yml"
    model = yaml.safe_load(hosts_file.read_text())
    children = model["all"]["children"]
    # Racks 10.. for GPUs, then NPU racks: management 10.10.<rack>.x, storage 10.20.<rack>.x.
    rack = 10
    gpu_hosts = {}
    for index in range(gpu_nodes):
        if index and index % RACK_SIZE == 0:
            rack += 1
        slot = index % RACK_SIZE + 11
        gpu_hosts[f"gpu-r{rack}-n{slot:02d}"] = {
            "ansible_host": f"10.10.{rack}.{slot}",
            "node_sku": "hgx-h100-8gpu",
            "rack": f"r{rack}",
            "fabric_storage_address": f"10.20.{rack}.{slot}",
        }
    rack += 1
    npu_hosts = {}
    for index in range(npu_nodes):
        if index and index % RACK_SIZE == 0:
            rack += 1
        slot = index % RACK_SIZE + 11
        name = f"npu-r{rack}-n{slot:02d}"
        npu_hosts[name] = {
            "ansible_host": f"10.10.{rack}.{slot}",
            "node_sku": "atlas-800t-a2",
            "rack": f"r{rack}",
            "fabric_storage_address": f"10.20.{rack}.{slot}",
        }
        # 8 NIC addresses per node inside fabric_npu_network (10.30.0.0/16), one subnet.
        base = 8 * index + 256
        plan = [
            {
                "id": device,
                "address": f"10.30.{(base + device) // 256}.{(base + device) % 256}",
                "netmask": "255.255.0.0",
                "gateway": "10.30.0.1",
                "netdetect": "10.30.0.1",
            }
            for device in range(8)
        ]
        (dest / "host_vars" / f"{name}.yml").write_text(yaml.safe_dump({"hccn_devices": plan}))
    children["gpu_nvidia"]["hosts"] = gpu_hosts
    children["npu_ascend"]["hosts"] = npu_hosts
    # As in the example: half the GPU nodes and every NPU node in Kubernetes, the other GPU half in Slurm.
    half = len(gpu_hosts) // 2
    gpu_names = list(gpu_hosts)
    children["k8s_workers"]["hosts"] = dict.fromkeys(gpu_names[:half] + list(npu_hosts))
    children["slurm_workers"]["hosts"] = dict.fromkeys(gpu_names[half:])
    hosts_file.write_text(yaml.safe_dump(model, sort_keys=False))
    others = sum(1 for _ in _all_hosts(model)) - len(gpu_hosts) - len(npu_hosts)
    return len(gpu_hosts) + len(npu_hosts) + others


def _all_hosts(model: dict):
    seen = set()

    def walk(group: dict):
        for name in group.get("hosts") or {}:
            if name not in seen:
                seen.add(name)
                yield name
        for child in (group.get("children") or {}).values():
            yield from walk(child or {})

    yield from walk(model["all"])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--gpu-nodes", type=int, default=1600)
    parser.add_argument("--npu-nodes", type=int, default=400)
    args = parser.parse_args()
    clusterforge = Path(sys.executable).with_name("clusterforge")
    with tempfile.TemporaryDirectory() as tmp:
        inventory = Path(tmp) / "fleet"
        hosts = scaled_inventory(inventory, args.gpu_nodes, args.npu_nodes)
        rows = []
        for label, path in (("example inventory", EXAMPLE), (f"generated fleet ({hosts} hosts)", inventory)):
            start = time.perf_counter()
            proc = subprocess.run(
                [str(clusterforge), "inventory", "check", "-i", str(path)],
                capture_output=True,
                text=True,
                check=False,
            )
            elapsed = time.perf_counter() - start
            verdict = (proc.stdout.strip().splitlines() or ["(no output)"])[-1]
            rows.append((label, elapsed, proc.returncode, verdict))
    print(f"{'inventory':<36} {'wall':>8}  {'exit':>4}  verdict")
    for label, elapsed, code, verdict in rows:
        print(f"{label:<36} {elapsed:7.2f}s  {code:>4}  {verdict}")


if __name__ == "__main__":
    main()
