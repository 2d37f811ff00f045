"""`clusterforge add-node` on the shared lab (conftest.py): a GPU worker leaves the cluster, comes
back as a fresh node (its container removed and re-created: nothing of the first bring-up left on
it) and is added with `clusterforge add-node`. Its own stages run on it alone; `members` then
updates /etc/hosts, slurm.conf and the scrape targets on the other nodes without re-running their
roles; Slurm runs it, Prometheus scrapes it.

Leaving is `playbooks/members.yml` with an inventory that no longer lists the host (the documented
way to remove nodes): the same playbook must drop it from the same places.

Runs late (LAB_ORDER): it re-creates a node the other modules test, and leaves the lab as it
found it (the node back, healthy, in Slurm and Prometheus) for the lab's lifecycle tests.
"""

from __future__ import annotations

import json
import shutil
import time

import pytest
import yaml
from conftest import LEDGER, TIMINGS
from labkit import BIN, INVENTORY, LAB, explain, lab_cli, run, sh

pytestmark = pytest.mark.lab
LAB_ORDER = 80  # after the modules that test this node (slurm: 30), before the lab's lifecycle (90)
NEW = f"{LAB}-gpu-01"  # its replay profile is the healthy default: its validation passes
OTHER = f"{LAB}-gpu-02"
CONTROLLER = f"{LAB}-ctl-01"  # slurm_controller and monitoring
NODE_STAGES = ["preflight", "base", "fabric", "accelerators", "storage", "schedulers", "monitoring"]
# What members may change on a node that was already in the cluster: the names, nothing else.
MEMBERS_CHANGES = {
    "Write the cluster hosts block in /etc/hosts",
    "Write slurm.conf",
    "Write topology.conf (the fabric's switches, or its NVLink blocks)",
    "Restart slurmctld",
    "Restart slurmd",
    "Reconfigure Slurm (scontrol reconfigure)",
    "Scrape targets of the jobs node, dcgm and npu",
}


def members(inventory) -> dict[str, dict[str, int]]:
    """playbooks/members.yml on `inventory`; the play recap per host (ansible-runner's stats)."""
    proc = run(
        BIN / "ansible-playbook", "-i", inventory, "playbooks/members.yml", timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, explain(proc)
    recap = {}
    for line in proc.stdout.split("PLAY RECAP", 1)[1].splitlines():
        if ":" in line and "ok=" in line:
            host, counts = line.split(":", 1)
            recap[host.strip()] = {k: int(v) for k, v in (p.split("=") for p in counts.split())}
    return recap


def slurm_nodes() -> dict[str, str]:
    out = sh(CONTROLLER, "sinfo --noheader --Node --format='%N|%t'")
    return dict(line.split("|", 1) for line in out.splitlines() if "|" in line)


def hosts_block(host: str) -> str:
    """ClusterForge's block of the node's /etc/hosts (podman writes every lab node above it)."""
    return sh(
        host, "sed -n '/BEGIN ClusterForge cluster hosts/,/END ClusterForge cluster hosts/p' /etc/hosts"
    )


def scrape_targets() -> list[str]:
    text = sh(CONTROLLER, "cat /etc/prometheus/file_sd/node.json")
    return [group["labels"]["node"] for group in json.loads(text)]


def eventually(predicate, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() >= deadline:
            return False
        time.sleep(3)
    return True


def without(host: str, folder) -> None:
    """A copy of the lab's inventory in `folder` that no longer lists `host`."""
    shutil.copytree(INVENTORY, folder)
    hosts_file = folder / "hosts.yml"
    data = yaml.safe_load(hosts_file.read_text())
    del data["all"]["hosts"][host]
    for group in data["all"].get("children", {}).values():
        if group and group.get("hosts"):
            group["hosts"].pop(host, None)
    hosts_file.write_text(yaml.safe_dump(data, sort_keys=False))


@pytest.fixture(scope="module")
def added(lab, tmp_path_factory):
    # 1. The worker leaves: members.yml with an inventory without it.
    smaller = tmp_path_factory.mktemp("inventory") / "lab"
    without(NEW, smaller)
    members(smaller)
    left = {
        "slurm": slurm_nodes(),
        "hosts": hosts_block(OTHER),
        "targets": scrape_targets(),
    }
    # 2. It comes back fresh: a new container from the node image, nothing of the first bring-up.
    removed = run("podman", "rm", "--force", f"cflab-{NEW}")
    assert removed.returncode == 0, explain(removed)
    up = lab_cli("up", "--name", LAB, timeout=600)
    assert up.returncode == 0, explain(up)
    # 3. add-node.
    clock = time.monotonic()
    proc = run(
        BIN / "clusterforge", "add-node", "-i", INVENTORY, NEW, "--ledger", LEDGER, timeout=1500
    )  # fmt: skip
    took = time.monotonic() - clock
    assert proc.returncode == 0, explain(proc)
    listed = run(BIN / "clusterforge", "runs", "list", "--ledger", LEDGER, "--format", "json")
    assert listed.returncode == 0, explain(listed)
    newest = next(r["id"] for r in json.loads(listed.stdout) if r["kind"] == "add-node")  # newest first
    folder = LEDGER / newest
    stages = {
        (s := json.loads(p.read_text()))["stage"]: s for p in sorted((folder / "stages").glob("*.json"))
    }
    per_stage = ", ".join(f"{name} {s.get('duration_s', 0):.0f}" for name, s in stages.items())
    TIMINGS.append(f"add-node of a fresh {NEW}: {took:.0f} s (per stage: {per_stage} s)")
    return {"left": left, "run": json.loads((folder / "run.json").read_text()), "stages": stages, "out": proc}


def test_a_host_left_out_of_the_inventory_leaves_slurm_hosts_and_targets(added):
    left = added["left"]
    assert NEW not in left["slurm"] and OTHER in left["slurm"], left["slurm"]
    assert NEW not in left["hosts"] and CONTROLLER in left["hosts"]
    assert NEW not in left["targets"] and OTHER in left["targets"]


def test_add_node_runs_the_node_stages_on_the_new_host_alone(added, lab):
    run_record, stages = added["run"], added["stages"]
    assert (run_record["kind"], run_record["status"], run_record["hosts"]) == ("add-node", "succeeded", [NEW])
    assert list(stages) == [*NODE_STAGES, "members", "validate"]
    for name in NODE_STAGES:
        assert list(stages[name]["hosts"]) == [NEW], name
    assert stages["validate"]["hosts"][NEW]["result"] == "ok"
    assert sorted(stages["members"]["hosts"]) == sorted(lab.hosts)


def test_members_changed_only_the_names_on_the_other_nodes(added):
    for host, result in added["stages"]["members"]["hosts"].items():
        assert result["result"] in ("ok", "changed"), (host, result)
        if host != NEW:
            changed = {change["task"] for change in result["changed_tasks"]}
            assert changed <= MEMBERS_CHANGES, (host, changed - MEMBERS_CHANGES)


def test_the_new_node_is_in_slurm_hosts_and_prometheus(added):
    assert eventually(lambda: slurm_nodes().get(NEW) == "idle", 120), slurm_nodes()
    address = yaml.safe_load((INVENTORY / "hosts.yml").read_text())["all"]["hosts"][NEW]["ansible_host"]
    for host in (OTHER, CONTROLLER):
        assert f"{address} {NEW}" in hosts_block(host), host
    assert NEW in scrape_targets()
    assert NEW in sh(CONTROLLER, f"srun --nodelist={NEW} --time=1 hostname", timeout=180)


def test_members_again_changes_nothing(added):
    recap = members(INVENTORY)
    assert recap and all(counts["changed"] == 0 for counts in recap.values()), recap
