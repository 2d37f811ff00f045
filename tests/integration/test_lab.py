"""The lab's own lifecycle on the shared lab (conftest.py): real podman nodes, real SSH, real Ansible.

Inventory, Ansible over SSH with sudo, strict host keys, status, reconcile of
a stopped node, inventory regeneration, and finally `lab down`, proving
nothing with the lab's label is left behind. Runs last (LAB_ORDER): it stops
and then removes the nodes the other modules test.
"""

from __future__ import annotations

import json
import shutil
import time

import pytest
import yaml
from clusterforge.errors import EXIT_ENV, EXIT_FAILED
from labkit import BIN, ENV, LAB, explain, lab_cli, run

pytestmark = pytest.mark.lab
LAB_ORDER = 90
LABEL = f"label=org.clusterforge.lab={LAB}"


def ansible(lab, *args: str, env: dict | None = None):
    return run(BIN / "ansible", "-i", lab.inventory, *args, timeout=300, env=env)


def podman_json(*args: str) -> list:
    proc = run("podman", *args, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout or "[]") or []


def test_up_writes_the_inventory_of_the_running_nodes(lab):
    assert f"inventory: inventories/lab-{LAB}" in lab.up.stdout
    hosts = yaml.safe_load((lab.inventory / "hosts.yml").read_text())["all"]
    assert list(hosts["hosts"]) == lab.hosts
    assert list(hosts["children"]["npu_ascend"]["hosts"]) == [f"{LAB}-npu-01", f"{LAB}-npu-02"]
    containers = podman_json("ps", "--filter", LABEL)
    assert sorted(c["Names"][0] for c in containers) == sorted(f"cflab-{host}" for host in lab.hosts)
    assert all(c["State"] == "running" for c in containers)


def host_ip(lab, host: str) -> str:
    return yaml.safe_load((lab.inventory / "hosts.yml").read_text())["all"]["hosts"][host]["ansible_host"]


def test_ansible_reaches_every_node_over_ssh_with_sudo(lab):
    t0 = time.monotonic()
    proc = ansible(lab, "all", "-m", "ansible.builtin.ping")
    print(f"\nansible ping: {time.monotonic() - t0:.1f}s")
    assert proc.returncode == 0, explain(proc)
    for host in lab.hosts:
        assert f"{host} | SUCCESS" in proc.stdout
    # logged in as `ansible`; root through sudo (become); each node named like its inventory host
    proc = ansible(lab, "all", "-m", "ansible.builtin.command", "-a", "id -un", "-e", "ansible_become=false")
    assert proc.stdout.count("rc=0 >>\nansible\n") == len(lab.hosts), explain(proc)
    proc = ansible(lab, "all", "-m", "ansible.builtin.command", "-a", "id -un")
    assert proc.stdout.count("rc=0 >>\nroot\n") == len(lab.hosts), explain(proc)
    proc = ansible(lab, "all", "-m", "ansible.builtin.command", "-a", "hostname")
    for host in lab.hosts:
        assert f"{host} | CHANGED | rc=0 >>\n{host}\n" in proc.stdout, explain(proc)
    # nodes find each other by inventory hostname
    # (after site.yml both podman's entry and the base role's /etc/hosts block answer)
    proc = ansible(lab, "all", "-m", "ansible.builtin.command", "-a", f"getent hosts {LAB}-ctl-01")
    answers = proc.stdout.split(" | CHANGED | rc=0 >>\n")[1:]
    assert len(answers) == len(lab.hosts), explain(proc)
    assert all(host_ip(lab, f"{LAB}-ctl-01") + " " in answer for answer in answers), explain(proc)


def test_host_keys_are_checked_strictly(lab):
    known_hosts = lab.state / "known_hosts"
    good = known_hosts.read_text()
    gpu_ip, ctl_ip = host_ip(lab, f"{LAB}-gpu-01"), host_ip(lab, f"{LAB}-ctl-01")
    # give the GPU node's address the control node's keys: a man in the middle, as SSH sees it
    ctl_keys = [line.split(" ", 1)[1] for line in good.splitlines() if line.startswith(ctl_ip + " ")]
    forged = [line for line in good.splitlines() if not line.startswith(gpu_ip + " ")]
    forged += [f"{gpu_ip} {key}" for key in ctl_keys]
    known_hosts.write_text("\n".join(forged) + "\n")
    no_reuse = {**ENV, "ANSIBLE_SSH_ARGS": "-o ControlMaster=no -o ControlPath=none"}  # no open master
    try:
        proc = ansible(lab, f"{LAB}-gpu-01", "-m", "ansible.builtin.ping", env=no_reuse)
        assert proc.returncode != 0
        assert "Host key verification failed" in proc.stdout + proc.stderr, explain(proc)
    finally:
        known_hosts.write_text(good)
    proc = ansible(lab, f"{LAB}-gpu-01", "-m", "ansible.builtin.ping", env=no_reuse)
    assert proc.returncode == 0, explain(proc)


def test_status_reports_every_node_healthy(lab):
    proc = lab_cli("status", "--name", LAB, "--format", "json")
    assert proc.returncode == 0, explain(proc)
    status = json.loads(proc.stdout)
    assert status["healthy"] is True
    assert [(n["host"], n["state"], n["ssh"]) for n in status["nodes"]] == [
        (h, "running", "ok") for h in lab.hosts
    ]


def test_up_again_restarts_a_stopped_node(lab):
    assert run("podman", "stop", "--time", "10", f"cflab-{LAB}-npu-01").returncode == 0
    proc = lab_cli("status", "--name", LAB)
    assert proc.returncode == EXIT_FAILED and f"{LAB}-npu-01" in proc.stderr, explain(proc)
    t0 = time.monotonic()
    proc = lab_cli("up", "--name", LAB, "--no-hwreplay")
    print(f"\nlab up (reconcile): {time.monotonic() - t0:.1f}s")
    running = len(lab.hosts) - 1
    assert proc.returncode == 0 and f"1 started, {running} already running" in proc.stdout, explain(proc)
    assert ansible(lab, "all", "-m", "ansible.builtin.ping").returncode == 0


def test_inventory_is_regenerated_from_the_containers(lab):
    shutil.rmtree(lab.inventory)
    proc = lab_cli("inventory", "--name", LAB)
    assert proc.returncode == 0 and proc.stdout.strip() == f"inventories/lab-{LAB}", explain(proc)
    assert ansible(lab, "all", "-m", "ansible.builtin.ping").returncode == 0


def test_generated_inventory_passes_inventory_check(lab):
    proc = run(BIN / "clusterforge", "inventory", "check", "-i", lab.inventory)
    assert proc.returncode == 0, explain(proc)


def test_down_leaves_nothing_behind(lab):
    t0 = time.monotonic()
    proc = lab_cli("down", "--name", LAB)
    print(f"\nlab down: {time.monotonic() - t0:.1f}s")
    assert proc.returncode == 0, explain(proc)
    assert podman_json("ps", "-a", "--filter", LABEL) == []
    assert podman_json("network", "ls", "--filter", LABEL) == []
    assert podman_json("volume", "ls", "--filter", LABEL) == []
    assert not [n for n in podman_json("network", "ls") if n["name"] == f"cflab-{LAB}"]
    assert not lab.inventory.exists() and not lab.state.exists()
    proc = lab_cli("down", "--name", LAB)
    assert proc.returncode == 0 and "nothing to remove" in proc.stdout
    proc = lab_cli("status", "--name", LAB)
    assert proc.returncode == EXIT_ENV
