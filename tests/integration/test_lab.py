"""Lab integration: real podman nodes, real SSH, real Ansible (run with `pytest -m lab tests/integration`).

One small lab named `cftest` (its own name, so a developer's `lab` is never
touched) goes through up, Ansible over SSH, status, reconcile, inventory and
down; the last test proves nothing with its label is left behind.
Needs root, podman and the node image (scripts/test.sh sets all of them up).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from clusterforge.errors import EXIT_ENV, EXIT_FAILED

pytestmark = pytest.mark.lab

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
LAB = "cftest"
LABEL = f"label=org.clusterforge.lab={LAB}"
INVENTORY = ROOT / "inventories" / f"lab-{LAB}"
STATE = ROOT / ".cache" / "lab" / LAB
HOSTS = ["cftest-ctl-01", "cftest-gpu-01", "cftest-npu-01"]
ENV = {
    **os.environ,
    "CONTAINERS_CONF": os.environ.get("CONTAINERS_CONF", str(ROOT / "images" / "node" / "containers.conf")),
    "ANSIBLE_NOCOLOR": "1",
    "NO_COLOR": "1",
}

if os.geteuid() != 0 or shutil.which("podman") is None:
    pytest.skip("lab tests need root and podman (scripts/setup-host.sh)", allow_module_level=True)


def run(*argv: str | Path, timeout: float = 600, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(arg) for arg in argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env or ENV,
        timeout=timeout,
        check=False,
    )


def clusterforge(*args: str) -> subprocess.CompletedProcess:
    return run(BIN / "clusterforge", "lab", *args)


def ansible(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return run(BIN / "ansible", "-i", INVENTORY, *args, timeout=300, env=env)


def podman_json(*args: str) -> list:
    proc = run("podman", *args, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout or "[]") or []


def explain(proc: subprocess.CompletedProcess) -> str:
    return f"rc={proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"


@pytest.fixture(scope="module")
def lab():
    """A 3-node lab (control, GPU, NPU); removed at the end whatever happens."""
    clusterforge("down", "--name", LAB)  # a leftover of an interrupted run
    t0 = time.monotonic()
    proc = clusterforge(
        "up", "--name", LAB, "--control", "1", "--gpu", "1", "--npu", "1", "--storage", "0", "--no-hwreplay"
    )
    print(f"\nlab up: {time.monotonic() - t0:.1f}s")
    assert proc.returncode == 0, explain(proc)
    try:
        yield proc
    finally:
        clusterforge("down", "--name", LAB)


def test_up_writes_the_inventory_of_the_running_nodes(lab):
    assert f"inventory: inventories/lab-{LAB}" in lab.stdout
    hosts = yaml.safe_load((INVENTORY / "hosts.yml").read_text())["all"]
    assert list(hosts["hosts"]) == HOSTS
    assert list(hosts["children"]["npu_ascend"]["hosts"]) == ["cftest-npu-01"]
    containers = podman_json("ps", "--filter", LABEL)
    assert sorted(c["Names"][0] for c in containers) == [f"cflab-{host}" for host in HOSTS]
    assert all(c["State"] == "running" for c in containers)


def host_ip(host: str) -> str:
    return yaml.safe_load((INVENTORY / "hosts.yml").read_text())["all"]["hosts"][host]["ansible_host"]


def test_ansible_reaches_every_node_over_ssh_with_sudo(lab):
    t0 = time.monotonic()
    proc = ansible("all", "-m", "ansible.builtin.ping")
    print(f"\nansible ping: {time.monotonic() - t0:.1f}s")
    assert proc.returncode == 0, explain(proc)
    for host in HOSTS:
        assert f"{host} | SUCCESS" in proc.stdout
    # logged in as `ansible`; root through sudo (become); each node named like its inventory host
    proc = ansible("all", "-m", "ansible.builtin.command", "-a", "id -un", "-e", "ansible_become=false")
    assert proc.stdout.count("rc=0 >>\nansible\n") == len(HOSTS), explain(proc)
    proc = ansible("all", "-m", "ansible.builtin.command", "-a", "id -un")
    assert proc.stdout.count("rc=0 >>\nroot\n") == len(HOSTS), explain(proc)
    proc = ansible("all", "-m", "ansible.builtin.command", "-a", "hostname")
    for host in HOSTS:
        assert f"{host} | CHANGED | rc=0 >>\n{host}\n" in proc.stdout, explain(proc)
    # nodes find each other by inventory hostname
    proc = ansible("all", "-m", "ansible.builtin.command", "-a", "getent hosts cftest-ctl-01")
    assert proc.stdout.count(host_ip("cftest-ctl-01")) == len(HOSTS), explain(proc)


def test_host_keys_are_checked_strictly(lab):
    known_hosts = STATE / "known_hosts"
    good = known_hosts.read_text()
    gpu_ip, ctl_ip = host_ip("cftest-gpu-01"), host_ip("cftest-ctl-01")
    # give the GPU node's address the control node's keys: a man in the middle, as SSH sees it
    ctl_keys = [line.split(" ", 1)[1] for line in good.splitlines() if line.startswith(ctl_ip + " ")]
    forged = [line for line in good.splitlines() if not line.startswith(gpu_ip + " ")]
    forged += [f"{gpu_ip} {key}" for key in ctl_keys]
    known_hosts.write_text("\n".join(forged) + "\n")
    no_reuse = {**ENV, "ANSIBLE_SSH_ARGS": "-o ControlMaster=no -o ControlPath=none"}  # no open master
    try:
        proc = ansible("cftest-gpu-01", "-m", "ansible.builtin.ping", env=no_reuse)
        assert proc.returncode != 0
        assert "Host key verification failed" in proc.stdout + proc.stderr, explain(proc)
    finally:
        known_hosts.write_text(good)
    proc = ansible("cftest-gpu-01", "-m", "ansible.builtin.ping", env=no_reuse)
    assert proc.returncode == 0, explain(proc)


def test_status_reports_every_node_healthy(lab):
    proc = clusterforge("status", "--name", LAB, "--format", "json")
    assert proc.returncode == 0, explain(proc)
    status = json.loads(proc.stdout)
    assert status["healthy"] is True
    assert [(n["host"], n["state"], n["ssh"]) for n in status["nodes"]] == [
        (h, "running", "ok") for h in HOSTS
    ]


def test_up_again_restarts_a_stopped_node(lab):
    assert run("podman", "stop", "--time", "10", "cflab-cftest-npu-01").returncode == 0
    proc = clusterforge("status", "--name", LAB)
    assert proc.returncode == EXIT_FAILED and "cftest-npu-01" in proc.stderr, explain(proc)
    t0 = time.monotonic()
    proc = clusterforge("up", "--name", LAB, "--no-hwreplay")
    print(f"\nlab up (reconcile): {time.monotonic() - t0:.1f}s")
    assert proc.returncode == 0 and "1 started, 2 already running" in proc.stdout, explain(proc)
    assert ansible("all", "-m", "ansible.builtin.ping").returncode == 0


def test_inventory_is_regenerated_from_the_containers(lab):
    shutil.rmtree(INVENTORY)
    proc = clusterforge("inventory", "--name", LAB)
    assert proc.returncode == 0 and proc.stdout.strip() == f"inventories/lab-{LAB}", explain(proc)
    assert ansible("all", "-m", "ansible.builtin.ping").returncode == 0


def test_generated_inventory_passes_inventory_check(lab):
    proc = run(BIN / "clusterforge", "inventory", "check", "-i", INVENTORY)
    assert proc.returncode == 0, explain(proc)


def test_down_leaves_nothing_behind(lab):
    t0 = time.monotonic()
    proc = clusterforge("down", "--name", LAB)
    print(f"\nlab down: {time.monotonic() - t0:.1f}s")
    assert proc.returncode == 0, explain(proc)
    assert podman_json("ps", "-a", "--filter", LABEL) == []
    assert podman_json("network", "ls", "--filter", LABEL) == []
    assert podman_json("volume", "ls", "--filter", LABEL) == []
    assert not [n for n in podman_json("network", "ls") if n["name"] == f"cflab-{LAB}"]
    assert not INVENTORY.exists() and not STATE.exists()
    proc = clusterforge("down", "--name", LAB)
    assert proc.returncode == 0 and "nothing to remove" in proc.stdout
    proc = clusterforge("status", "--name", LAB)
    assert proc.returncode == EXIT_ENV
