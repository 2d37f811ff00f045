"""Slurm on the shared lab (conftest.py): what site.yml's scheduler part left running, judged through
Slurm itself.

slurmctld runs on the control node, slurmd on every GPU node (8 replayed H100 each), with cgroup
enforcement made possible by the lab (container flags of model.py, the boot-time unit of
bare_metal.py). Checked: the workers idle with their GRES; a job given 2 GPUs sees exactly those
(CUDA_VISIBLE_DEVICES, and the device cgroup lets it open no other); a replayed fault drains its
node through ClusterForge's health check with the check id in the reason, and the healed node
returns; Slurm knows the lab's fabric (topology.conf from the inventory's leaf and spine) and puts
a one-switch job on the one pair of a leaf; a restarted node comes back working. Nothing re-runs
site.yml.

gpu-01 and gpu-02 are the workers used here (test_validate_lab, which runs first, leaves both on
the healthy replay); gpu-03 stays on a fault of that module, checked for its GRES and healthy only
for the topology test's job (it shares a leaf with gpu-01), then put back on its fault.
"""

from __future__ import annotations

import re
import time

import pytest
from clusterforge.lab.sitevars import SLURM_HEALTH_CHECK_INTERVAL_S
from labkit import CLIENTS, LAB, explain, node, run, sh

pytestmark = pytest.mark.lab
LAB_ORDER = 30  # after validation (10: switches replay profiles) and storage (20); before the lifecycle (90)
CONTROLLER = f"{LAB}-ctl-01"
GPU_1, GPU_2, GPU_3 = f"{LAB}-gpu-01", f"{LAB}-gpu-02", f"{LAB}-gpu-03"
# The lab's fabric (lab/model.py fabric_of): gpu-01 and gpu-03 on leaf 1, gpu-02 on leaf 2, one spine.
LEAF_1, LEAF_2, SPINE = f"{LAB}-leaf-1", f"{LAB}-leaf-2", f"{LAB}-spine-1"
GPU_NODES = [host for host in CLIENTS if "-gpu-" in host]  # the Slurm workers of the lab
GRES = "gpu:h100:8"
JOB_USER, JOB_UID = "alice", 2000
# A health-check transition takes at most one interval plus the run that sees the change (a run
# already going may have read the old replay): bounded well above, polled every 2 s.
TRANSITION_S = 2 * SLURM_HEALTH_CHECK_INTERVAL_S + 20


def set_profile(host: str, profile: str) -> str:
    """Switch the node's replayed hardware; the profile it had before."""
    out = sh(host, f"hwreplay profile set {profile}")
    was = re.search(r"\(was: ([^)]+)\)", out)
    return was.group(1) if was and was.group(1) != "none" else profile


def nodes_view() -> dict[str, tuple[str, str, str]]:
    """host -> (state, GRES, reason) as sinfo prints them ('idle*' while a node is not responding)."""
    out = sh(CONTROLLER, "sinfo --noheader --Node --format='%N|%t|%G|%E'")
    rows = (line.split("|", 3) for line in out.splitlines() if line.count("|") == 3)
    return {name: (state, gres, reason) for name, state, gres, reason in rows}


def wait_for(predicate, timeout: float, poll: float = 2.0) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(poll)


def idle(host: str) -> bool:
    return nodes_view().get(host, ("", "", ""))[0] == "idle"


@pytest.fixture(scope="module")
def slurm(lab):
    """The two workers on the healthy replay and idle, and a job user on every Slurm node."""
    for host in (CONTROLLER, *GPU_NODES):
        sh(
            host,
            f"id -u {JOB_USER} >/dev/null 2>&1 || "
            f"useradd --uid {JOB_UID} --create-home --shell /bin/bash {JOB_USER}",
        )
    for host in (GPU_1, GPU_2):
        set_profile(host, "h100-healthy")
    clock = time.monotonic()
    settled = wait_for(lambda: idle(GPU_1) and idle(GPU_2), TRANSITION_S)
    assert settled, f"workers not idle after {TRANSITION_S} s: {nodes_view()}"
    print(f"\nslurm: workers idle after {time.monotonic() - clock:.0f} s")
    return lab


def test_gpu_workers_are_idle_with_their_gres(slurm):
    view = nodes_view()
    assert sorted(view) == sorted(GPU_NODES), view
    for host in GPU_NODES:
        assert view[host][1] == GRES, f"{host}: {view[host]}"
    assert view[GPU_1][0] == view[GPU_2][0] == "idle", view


JOB = """#!/bin/sh
echo "visible=$CUDA_VISIBLE_DEVICES"
echo "host=$(hostname -s)"
python3 - <<'PY'
import errno, os
for i in range(3):
    try:
        os.close(os.open(f"/dev/nvidia{i}", os.O_RDWR))
        print(f"nvidia{i}=open")
    except OSError as err:
        print(f"nvidia{i}={errno.errorcode[err.errno]}")
PY
"""


def test_a_two_gpu_job_runs_on_exactly_its_gpus(slurm):
    """sbatch --wait --gres=gpu:2: CUDA_VISIBLE_DEVICES=0,1, and ConstrainDevices lets the job open
    its own GPUs (ENXIO: no driver behind the replay's device files) and not a third (EPERM)."""
    script = f"/home/{JOB_USER}/cftest-gres.sh"
    sh(CONTROLLER, f"cat > {script} <<'EOF'\n{JOB}EOF\nchown {JOB_USER} {script}; chmod 0755 {script}")
    clock = time.monotonic()
    job = sh(
        CONTROLLER,
        f"runuser -u {JOB_USER} -- sbatch --wait --parsable --gres=gpu:2 --nodes=1 --nodelist={GPU_1} "
        f"--time=2 --chdir=/tmp --output=/tmp/cftest-gres-%j.out {script}",
        timeout=180,
    ).strip()
    assert re.fullmatch(r"\d+", job), job
    output = sh(GPU_1, f"cat /tmp/cftest-gres-{job}.out; rm -f /tmp/cftest-gres-{job}.out")
    print(f"\nslurm: sbatch --wait --gres=gpu:2: {time.monotonic() - clock:.1f} s")
    values = dict(line.split("=", 1) for line in output.split() if "=" in line)
    assert values == {
        "visible": "0,1",
        "host": GPU_1,
        "nvidia0": "ENXIO",
        "nvidia1": "ENXIO",
        "nvidia2": "EPERM",
    }, output


def test_a_replayed_fault_drains_the_node_and_healing_returns_it(slurm):
    clock = time.monotonic()
    set_profile(GPU_2, "h100-xid79")
    try:

        def drained() -> bool:
            state, _, reason = nodes_view()[GPU_2]
            return (
                state.startswith("drain")
                and reason.startswith("clusterforge-health:")
                and "gpu.xid" in reason
            )

        assert wait_for(drained, TRANSITION_S), f"{GPU_2} did not drain itself: {nodes_view()[GPU_2]}"
        drained_after = time.monotonic() - clock
        assert idle(GPU_1), f"the healthy worker drained too: {nodes_view()[GPU_1]}"
    finally:
        set_profile(GPU_2, "h100-healthy")
    clock = time.monotonic()
    assert wait_for(lambda: idle(GPU_2), TRANSITION_S), f"{GPU_2} did not return: {nodes_view()[GPU_2]}"
    assert nodes_view()[GPU_2][2] in ("", "none"), nodes_view()[GPU_2]
    print(f"\nslurm: drained in {drained_after:.0f} s, returned in {time.monotonic() - clock:.0f} s")


def topology_switches() -> dict[str, dict[str, str]]:
    """`scontrol show topology` (what slurmctld read from topology.conf): switch -> its fields."""
    out = sh(CONTROLLER, "scontrol show topology")
    rows = (dict(item.split("=", 1) for item in line.split() if "=" in item) for line in out.splitlines())
    return {row["SwitchName"]: row for row in rows if "SwitchName" in row}


def hostnames(expression: str) -> list[str]:
    return sh(CONTROLLER, f"scontrol show hostnames '{expression}'").split()


def test_slurm_places_a_one_switch_job_on_the_pair_that_shares_a_leaf(slurm):
    """topology.conf from the inventory (leaf, spine): `scontrol show topology` shows the lab's two
    GPU leaves under its spine. A 2-node job asking for one switch (`--switches=1`) gets gpu-01 and
    gpu-03, the one pair on one leaf, where name order would take gpu-01 and gpu-02 across both.
    gpu-03 (a fault of its own otherwise) is on the healthy replay for the job, then put back."""
    switches = topology_switches()
    assert set(switches) == {LEAF_1, LEAF_2, SPINE}, switches
    assert hostnames(switches[LEAF_1]["Nodes"]) == [GPU_1, GPU_3]
    assert hostnames(switches[LEAF_2]["Nodes"]) == [GPU_2]
    assert hostnames(switches[SPINE]["Switches"]) == [LEAF_1, LEAF_2]
    assert hostnames(switches[SPINE]["Nodes"]) == [GPU_1, GPU_2, GPU_3]  # every worker under the one top

    def ready(host: str) -> bool:
        state, _, reason = nodes_view()[host]
        if state.startswith("drain") and not reason.startswith("clusterforge-health:"):
            sh(CONTROLLER, f"scontrol update NodeName={host} State=RESUME")  # an earlier module's drain
        return idle(host)

    was = set_profile(GPU_3, "h100-healthy")
    try:
        settled = wait_for(lambda: all(ready(h) for h in (GPU_1, GPU_2, GPU_3)), TRANSITION_S)
        assert settled, f"workers not idle after {TRANSITION_S} s: {nodes_view()}"
        clock = time.monotonic()
        # At most 2 minutes' wait for one switch: past it Slurm would run the job anyway, across leaves.
        out = sh(
            CONTROLLER,
            f"runuser -u {JOB_USER} -- srun --nodes=2 --ntasks-per-node=1 --switches=1@2:00 --time=2 "
            "--chdir=/tmp hostname -s",
            timeout=240,
        )
        print(f"\nslurm: srun -N2 --switches=1: {time.monotonic() - clock:.1f} s on {sorted(out.split())}")
        assert sorted(out.split()) == [GPU_1, GPU_3], out
    finally:
        set_profile(GPU_3, was)


def test_a_restarted_worker_comes_back_working(slurm):
    """A container restart brings a fresh /dev and read-only cgroup controllers: the lab's unit
    restores both before slurmd starts, and the node returns to idle with its GRES."""
    clock = time.monotonic()
    proc = run("podman", "restart", "--time", "10", f"cflab-{GPU_1}", timeout=120)
    assert proc.returncode == 0, explain(proc)
    assert wait_for(lambda: node(GPU_1, "systemctl", "is-active", "slurmd").stdout.strip() == "active", 90)
    state = sh(
        GPU_1,
        "systemctl is-active cflab-bare-metal.service; ls /dev/nvidia7 /dev/nvidiactl; "
        "findmnt -n -o OPTIONS /sys/fs/cgroup/memory",
    ).split()
    assert state[:3] == ["active", "/dev/nvidia7", "/dev/nvidiactl"], state
    assert state[3].split(",")[0] == "rw", state
    assert wait_for(lambda: idle(GPU_1), TRANSITION_S + 30), f"{GPU_1}: {nodes_view().get(GPU_1)}"
    assert nodes_view()[GPU_1][1] == GRES
    print(f"\nslurm: restarted worker idle again after {time.monotonic() - clock:.0f} s")
