"""Benchmark of role base's /etc/hosts block on a large fleet: prints figures, asserts nothing.

    .venv/bin/python tests/bench/bench_base_hosts.py [--hosts 2000] [--per-host-hosts 200 500]

The block lists every cluster host; computing it walks all hostvars. The role
computes it once per play (`run_once`). This times that task, taken verbatim
from roles/base/tasks/hosts.yml, in a real ansible-playbook run over a
generated inventory of N hosts, and the same task without `run_once` (what
every host walking all hostvars costs: O(N²)) at smaller N for comparison.
Only the computation is timed: set_fact runs on the controller, so no host is
contacted (the hosts' addresses are TEST-NET-2, never reached).
"""

from __future__ import annotations

import argparse
import copy
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
HOSTS_TASKS = ROOT / "roles" / "base" / "tasks" / "hosts.yml"


def compute_task() -> dict:
    """The role's own task that computes the block."""
    for task in yaml.safe_load(HOSTS_TASKS.read_text()):
        if "ansible.builtin.set_fact" in task:
            return task
    raise SystemExit(f"no set_fact task in {HOSTS_TASKS}: update this benchmark")


def write_inventory(folder: Path, count: int) -> Path:
    hosts = {
        f"node-{index:05d}": {"ansible_host": f"198.51.{100 + index // 250}.{index % 250 + 1}"}
        for index in range(count)
    }
    path = folder / f"hosts-{count}.yml"
    path.write_text(yaml.safe_dump({"all": {"hosts": hosts}}))
    return path


def write_playbook(folder: Path, once: bool) -> Path:
    task = copy.deepcopy(compute_task())
    if not once:
        task.pop("run_once", None)
    play = {
        "name": "Compute the cluster hosts block",
        "hosts": "all",
        "gather_facts": False,
        "vars": {"base_hosts_group": "all", "base_cluster_domain": "cluster.test"},
        "tasks": [
            task,
            {
                "name": "Check the block of one host",
                "ansible.builtin.assert": {
                    "that": ["base__hosts_block.splitlines() | length == groups.all | length"]
                },
                "run_once": True,
            },
        ],
    }
    path = folder / f"play-{'once' if once else 'per-host'}.yml"
    path.write_text(yaml.safe_dump([play], sort_keys=False))
    return path


def timed_run(inventory: Path, playbook: Path) -> float:
    env = {
        **os.environ,
        "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
        "ANSIBLE_STDOUT_CALLBACK": os.environ.get("BENCH_CALLBACK", "ansible.builtin.null"),
        "ANSIBLE_CACHE_PLUGIN": "memory",
    }
    clock = time.monotonic()
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory), str(playbook)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.monotonic() - clock
    if proc.returncode != 0:
        raise SystemExit(
            f"ansible-playbook failed (rc {proc.returncode}):\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}"
        )
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, nargs="+", default=[200, 2000])
    parser.add_argument("--per-host-hosts", type=int, nargs="+", default=[200, 500])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        once, per_host = write_playbook(folder, True), write_playbook(folder, False)
        print(f"{'hosts':>6}  {'variant':<34} {'wall':>8}")
        for count in sorted(set(args.hosts) | set(args.per_host_hosts)):
            inventory = write_inventory(folder, count)
            if count in args.hosts:
                print(
                    f"{count:>6}  {'run_once (the role)':<34} {timed_run(inventory, once):>7.1f}s", flush=True
                )
            if count in args.per_host_hosts:
                wall = timed_run(inventory, per_host)
                print(f"{count:>6}  {'every host walks all hostvars':<34} {wall:>7.1f}s", flush=True)


if __name__ == "__main__":
    main()
