"""`clusterforge validate` on the shared lab (conftest.py): real nodes, SSH, Ansible, the hardware replay.

The lab has a healthy node of each kind and one GPU/NPU node per fault, so
one validation run covers several faults; then faulty nodes are switched to
other faults with `hwreplay profile set` and re-validated with --limit; then
one is healed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from labkit import BIN, LAB, PROFILES, ROOT, STORAGE, VAULT_PASSWORD_FILE, explain, run

pytestmark = pytest.mark.lab
LAB_ORDER = 10
# Host -> (check id that must fail, words its message or evidence must hold).
FIRST_FAULTS = {
    f"{LAB}-gpu-02": ("gpu.xid", "79"),
    f"{LAB}-gpu-03": ("ib.port_state", "Down"),
    f"{LAB}-npu-02": ("npu.health", "Alarm"),
}
assert set(FIRST_FAULTS) == set(PROFILES), "the lab's faulty nodes (labkit.PROFILES)"
SECOND_PROFILES = {
    f"{LAB}-gpu-02": "h100-remapped-rows-pending",
    f"{LAB}-gpu-03": "h100-pcie-x8",
    f"{LAB}-npu-02": "910b-nic-net-health-fail",
}
SECOND_FAULTS = {
    f"{LAB}-gpu-02": ("gpu.remapped_rows", "pending"),
    f"{LAB}-gpu-03": ("gpu.pcie_link", "x8"),
    f"{LAB}-npu-02": ("npu.nic_net_health", "Receive timeout"),
}
HEALTHY = [f"{LAB}-gpu-01", f"{LAB}-npu-01"]
CONTROL = f"{LAB}-ctl-01"  # cpu-generic: node checks only (time sync, root space, OS release)
NODE_CHECKS = ("node.time_sync", "node.root_fs", "node.os_release")


def validate(lab, out: Path, *args: str) -> tuple[subprocess.CompletedProcess, dict]:
    proc = run(BIN / "clusterforge", "validate", "-i", lab.inventory, "--out", out, "--format", "json", *args)
    assert (out / "report.json").is_file(), explain(proc)
    report = json.loads((out / "report.json").read_text())
    assert json.loads(proc.stdout) == report, "--format json prints report.json"
    return proc, report


def container_of(host: str) -> str:
    proc = run(
        "podman", "ps", "--filter", f"label=org.clusterforge.lab.host={host}", "--format", "{{.Names}}"
    )
    names = proc.stdout.split()
    assert len(names) == 1, f"no single container for {host}: {explain(proc)}"
    return names[0]


def set_profile(host: str, profile: str) -> None:
    proc = run("podman", "exec", container_of(host), "hwreplay", "profile", "set", profile, timeout=120)
    assert proc.returncode == 0, explain(proc)


def check_of(node: dict, check_id: str) -> dict:
    found = [c for c in node["checks"] if c["id"] == check_id]
    assert found, f"{node['host']} has no check {check_id}: {[c['id'] for c in node['checks']]}"
    return found[0]


def assert_fault(node: dict, check_id: str, words: str) -> None:
    check = check_of(node, check_id)
    assert node["status"] == "fail", f"{node['host']}: {json.dumps(node, indent=1)[:3000]}"
    assert check["status"] == "fail", f"{node['host']} {check_id}: {check}"
    assert check["evidence"] and (check["evidence"].get("lines") or check["evidence"].get("command")), check
    text = (check["message"] + json.dumps(check["evidence"])).lower()
    assert words.lower() in text, f"{node['host']} {check_id}: '{words}' not in {text[:2000]}"
    assert check["remedy"], check


def test_fleet_run_finds_each_fault_and_passes_healthy_nodes(lab, tmp_path):
    clock = time.monotonic()
    proc, report = validate(lab, tmp_path / "run1", "--quarantine", "--quarantine-dry-run")
    wall = time.monotonic() - clock
    print(f"validate: {wall:.1f} s for {len(report['nodes'])} nodes")
    assert proc.returncode == 3, explain(proc)
    nodes = {n["host"]: n for n in report["nodes"]}
    assert set(nodes) == {CONTROL, STORAGE, *HEALTHY, *FIRST_FAULTS}
    # A node without accelerators still gets a real verdict from its node checks.
    control = {c["id"]: c for c in nodes[CONTROL]["checks"]}
    assert nodes[CONTROL]["status"] in ("pass", "warn"), nodes[CONTROL]
    assert control["node.os_release"]["status"] == "pass", control["node.os_release"]
    assert control["node.root_fs"]["status"] in ("pass", "warn"), control["node.root_fs"]
    # The control node is the lab's time server (local stratum): synchronised at once.
    assert control["node.time_sync"]["status"] == "pass", control["node.time_sync"]
    for node in nodes.values():
        assert {c["id"] for c in node["checks"]} >= set(NODE_CHECKS), node["host"]
    for host in HEALTHY:
        bad = [
            (c["id"], c["status"], c["message"])
            for c in nodes[host]["checks"]
            if c["status"] in ("fail", "error")
        ]
        assert nodes[host]["status"] in ("pass", "warn"), f"{host}: {bad}"
    for host, (check_id, words) in FIRST_FAULTS.items():
        assert_fault(nodes[host], check_id, words)
    assert sorted(report["summary"]["unhealthy_nodes"]) == sorted(FIRST_FAULTS)
    assert "failed validation" in proc.stderr

    # Quarantine: every command is reported with what became of it.
    quarantine = report["quarantine"]
    # The lab gives NVIDIA nodes to Slurm and Ascend nodes to Kubernetes: each
    # failed node is taken out of the scheduler it works for, and only that one.
    gpu_faults = {host for host in FIRST_FAULTS if "-gpu-" in host}
    npu_faults = set(FIRST_FAULTS) - gpu_faults
    slurm = {a["host"]: a for a in quarantine["actions"] if a["scheduler"] == "slurm"}
    assert set(slurm) == gpu_faults
    xid = slurm[f"{LAB}-gpu-02"]
    assert xid["argv"][:4] == ["scontrol", "update", f"NodeName={LAB}-gpu-02", "State=DRAIN"]
    assert xid["argv"][4].startswith("Reason=clusterforge: gpu.xid")
    # The lab runs Slurm (schedulers.yml): with --quarantine-dry-run the drain is checked
    # on the controller and reported, not run.
    assert xid["outcome"] == "would run" and "check mode on" in xid["detail"], xid
    taints = [a for a in quarantine["actions"] if a["scheduler"] == "kubernetes" and "taint" in a["argv"]]
    assert {a["host"] for a in taints} == npu_faults
    # The lab does not deploy Kubernetes (k8s_deploy: false): no kubectl, nothing runs.
    for taint in taints:
        assert taint["outcome"] == "not run" and "kubectl is not installed" in taint["detail"], taint
    assert f"quarantine: [would run] {LAB}-gpu-02: scontrol update" in proc.stderr

    junit = (tmp_path / "run1" / "junit.xml").read_text()
    assert 'name="gpu.xid"><failure' in junit
    prom = (tmp_path / "run1" / "clusterforge.prom").read_text()
    assert f'clusterforge_check_failed{{check="gpu.xid",node="{LAB}-gpu-02"}} 1.0' in prom


def plain_ansible(tmp_path: Path) -> tuple[list[str], dict[str, str]]:
    """ansible-playbook as a plain environment runs it: the collection installed from
    its tarball, stock settings, and neither the clusterforge CLI nor cfcore importable.

    The venv's site-packages are added without processing their .pth files
    (python -S), so the checkout's editable installs are not on the path; only
    ansible-core, the `ansible` package's collections and their dependencies are.
    """
    dist, collections = tmp_path / "dist", tmp_path / "collections"
    build = run(BIN / "ansible-galaxy", "collection", "build", "--output-path", dist, ROOT)
    assert build.returncode == 0, explain(build)
    tarball = next(dist.glob("clusterforge-cluster-*.tar.gz"))
    config = tmp_path / "ansible.cfg"
    config.write_text("[defaults]\ninterpreter_python = auto_silent\n")
    site = next(p for p in sys.path if p.endswith("site-packages"))
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "ANSIBLE_CONFIG": str(config),
        "ANSIBLE_COLLECTIONS_PATH": str(collections),
        "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json",
        "ANSIBLE_NOCOLOR": "1",
        # A site has its Vault password too: the storage plan's secrets are vaulted.
        "ANSIBLE_VAULT_PASSWORD_FILE": str(VAULT_PASSWORD_FILE),
    }
    # Installed with the plain settings: the checkout's ansible.cfg would see the
    # collection as installed already (its .collections link) and skip it.
    install = subprocess.run(
        [BIN / "ansible-galaxy", "collection", "install", "--no-deps", "-p", collections, tarball],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300, check=False,
    )  # fmt: skip
    assert install.returncode == 0, explain(install)
    installed = (
        collections / "ansible_collections" / "clusterforge" / "cluster" / "playbooks" / "validate.yml"
    )
    assert installed.is_file(), explain(install)
    prelude = f"import sys; sys.path.append({site!r}); "
    isolated = subprocess.run(
        [sys.executable, "-S", "-c", prelude + "import importlib.util as u; "
         "print(u.find_spec('clusterforge'), u.find_spec('cfcore'))"],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    assert isolated.stdout.split() == ["None", "None"], isolated.stdout + isolated.stderr
    argv = [sys.executable, "-S", "-c", prelude + "from ansible.cli.playbook import main; main()"]
    return argv, env


def test_collection_validates_from_a_plain_ansible_environment(lab, tmp_path):
    """`ansible-playbook clusterforge.cluster.validate`, no CLI: healthy nodes pass, faulty
    ones fail, with the same check results as `clusterforge validate`."""
    argv, env = plain_ansible(tmp_path)
    playbook = subprocess.run(
        [*argv, "-i", str(lab.inventory), "clusterforge.cluster.validate"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600, check=False,
    )  # fmt: skip
    assert playbook.returncode == 2, explain(playbook)  # 2: hosts failed (the faulty ones)
    plays = json.loads(playbook.stdout)
    stats = plays["stats"]
    assert {host for host, counts in stats.items() if counts["failures"]} == set(FIRST_FAULTS)
    assert {host for host, counts in stats.items() if not counts["failures"]} == {CONTROL, STORAGE, *HEALTHY}
    # strategy free: the json callback records a task once per batch of hosts that ran it.
    from_playbook = {
        host: result["node_result"]
        for task in plays["plays"][0]["tasks"]
        if task["task"]["name"] == "Validate the node"
        for host, result in task["hosts"].items()
    }

    _, report = validate(lab, tmp_path / "cli")
    from_cli = {node["host"]: node for node in report["nodes"]}
    assert set(from_playbook) == set(from_cli)
    for host, node in from_playbook.items():
        # The clock may settle between the two runs; every other check must agree.
        ours = {c["id"]: c["status"] for c in node["checks"] if c["id"] != "node.time_sync"}
        theirs = {c["id"]: c["status"] for c in from_cli[host]["checks"] if c["id"] != "node.time_sync"}
        assert ours == theirs, host
    for host, (check_id, _words) in FIRST_FAULTS.items():
        assert check_of(from_playbook[host], check_id)["status"] == "fail"


def test_switched_faults_are_found_with_limit(lab, tmp_path):
    for host, profile in SECOND_PROFILES.items():
        set_profile(host, profile)
    proc, report = validate(lab, tmp_path / "run2", "--limit", ":".join(SECOND_PROFILES))
    assert proc.returncode == 3, explain(proc)
    nodes = {n["host"]: n for n in report["nodes"]}
    assert set(nodes) == set(SECOND_PROFILES)
    for host, (check_id, words) in SECOND_FAULTS.items():
        assert_fault(nodes[host], check_id, words)


def test_a_healed_node_passes_again(lab, tmp_path):
    host = f"{LAB}-gpu-02"
    set_profile(host, "h100-healthy")
    proc, report = validate(lab, tmp_path / "run3", "--limit", host)
    assert proc.returncode == 0, explain(proc)
    assert [n["status"] for n in report["nodes"]] in (["pass"], ["warn"])
