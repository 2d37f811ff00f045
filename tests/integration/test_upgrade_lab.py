"""`clusterforge upgrade run` on the shared lab (conftest.py): a rolling driver upgrade of the three
GPU workers of a real Slurm cluster, from branch 570 to 590 of the lab's test NVIDIA repository, and
of the Ascend driver of the NPU nodes with the test installers.

Set up first: every GPU and NPU node on its healthy replay (the run's precheck refuses unhealthy
nodes), then, from the plan (`clusterforge upgrade plan`, deterministic), the second batch's node is
made to turn faulty once the 590 driver is installed on it (an apt hook of the test switches its
replay profile to an XID fault), and a Slurm job is held on the third batch's node.

Checked:
- the run is killed (SIGKILL of the CLI) while the third node waits in phase drain for its job, and
  `--resume` finishes it from that phase without running the done nodes again;
- the job was drained, not killed: it completes once the test lets it;
- the faulty node ends failed, drained with the reason (phase validate, the XID check), the others
  are done and back in service;
- the ledger's versions are what the nodes have;
- `--rollback` takes the done nodes back to 570;
- the Ascend path: both NPU nodes to driver 25.5.1 and back in service.

Runs late (LAB_ORDER): it changes drivers and Slurm states the earlier modules test. Afterwards it
puts the replay profiles back as the lab had them.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time

import pytest
from conftest import LEDGER, PROFILES, TIMINGS, add_to_bundle
from labkit import BIN, BUNDLE, ENV, INVENTORY, LAB, ROOT, STATE, explain, run, sh

pytestmark = pytest.mark.lab
LAB_ORDER = 85  # after add-node (80), before the lab's lifecycle (90)
CONTROLLER = f"{LAB}-ctl-01"
GPUS = [f"{LAB}-gpu-0{i}" for i in (1, 2, 3)]
NPUS = [f"{LAB}-npu-0{i}" for i in (1, 2)]
FROM, TO = "570.133.20", "590.48.01"
ASCEND_FROM, ASCEND_TO = "25.5.0", "25.5.1"
HEALTHY = {**dict.fromkeys(GPUS, "h100-healthy"), **dict.fromkeys(NPUS, "910b-healthy")}
FAULT = "h100-xid79"
# apt runs this after every dpkg call: once the 590 driver's NVML is installed, the replay turns faulty.
FAULT_HOOK = "/etc/apt/apt.conf.d/99cftest-fault-after-upgrade"
NVML_TO = f"/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.{TO}"  # libnvidia-compute of the target ships it
JOB_RELEASE = "/tmp/cftest-upgrade-release"
JOB_OUT = "/tmp/cftest-upgrade-job.out"


def sinfo() -> dict[str, tuple[str, str]]:
    out = sh(CONTROLLER, "sinfo --noheader --Node --format='%N|%t|%E'")
    return {
        n: (s, r) for n, s, r in (line.split("|", 2) for line in out.splitlines() if line.count("|") == 2)
    }


def wait_for(predicate, timeout: float, poll: float = 2.0) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() >= deadline:
            return False
        time.sleep(poll)
    return True


def upgrade(*args: str, timeout: float = 1500) -> subprocess.CompletedProcess:
    return run(BIN / "clusterforge", "upgrade", "run", *args, "--ledger", LEDGER, timeout=timeout)


def nodes_of(run_id: str) -> dict[str, dict]:
    folder = LEDGER / run_id / "nodes"
    return {p.stem: json.loads(p.read_text()) for p in folder.glob("*.json")}


def newest_upgrade_run(before: set[str]) -> str:
    found = [p.name for p in LEDGER.iterdir() if "-upgrade-" in p.name and p.name not in before]
    assert len(found) == 1, found
    return found[0]


def installed_driver(host: str) -> str:
    """The NVIDIA driver version dpkg has installed (libnvidia-compute's), as the role pins it."""
    out = sh(host, "dpkg-query -W -f='${Package} ${Version} ${Status}\\n' 'libnvidia-compute*'")
    versions = {
        line.split()[1].split(":")[-1].rsplit("-", 1)[0]
        for line in out.splitlines()
        if line.endswith(" ok installed")  # held: "hold ok installed"
    }
    assert len(versions) == 1, out
    return versions.pop()


def ascend_driver(host: str) -> str:
    out = sh(host, "sed -n 's/^Version=//p' /usr/local/Ascend/driver/version.info")
    return out.strip()


@pytest.fixture(scope="module")
def fleet(lab):
    """Every accelerator node healthy and in service; the plan's order; the fault and the job staged.

    The lab is air-gapped (conftest.offline_bundle): the target versions go into its bundle first.
    """
    before = set(json.loads((BUNDLE / "bundle.json").read_text())["files"])
    summary = add_to_bundle(f"nvidia_driver_version={TO}", f"ascend_driver_version={ASCEND_TO}")
    TIMINGS.append(f"bundle rebuild with the upgrade's versions: {summary}")
    # A second build into the same folder fetches only what changed, and keeps the earlier files
    # (rollback installs them again).
    manifest = json.loads((BUNDLE / "bundle.json").read_text())
    build = manifest["builds"][-1]
    assert 0 < build["fetched"] <= 20 and build["failed"] == 0 and build["reused"] > 100, build
    assert set(manifest["files"]) > before
    for host, profile in HEALTHY.items():
        sh(host, f"hwreplay profile set {profile}")
    idle = lambda: all(sinfo().get(h, ("",))[0] == "idle" for h in GPUS)  # noqa: E731
    assert wait_for(idle, 90), sinfo()
    proc = run(BIN / "clusterforge", "upgrade", "plan", "-i", INVENTORY, "--to", TO, "--format", "json")
    assert proc.returncode == 0, explain(proc)
    plan = json.loads(proc.stdout)
    order = [host for batch in plan["batches"] for host in batch["hosts"]]
    assert sorted(order) == GPUS and plan["batches"][0]["canary"], plan
    canary, faulty, held = order
    sh(
        faulty,
        f"""cat > {FAULT_HOOK} <<'EOF'
DPkg::Post-Invoke {{"ls {NVML_TO} >/dev/null 2>&1 && hwreplay profile set {FAULT} >/dev/null || true";}};
EOF""",
    )
    sh(held, f"rm -f {JOB_RELEASE} {JOB_OUT}")
    job = sh(
        CONTROLLER,
        f"sbatch --parsable --nodelist={held} --output={JOB_OUT} --wrap "
        f"'while [ ! -e {JOB_RELEASE} ]; do sleep 1; done; echo finished'",
    ).strip()
    assert wait_for(lambda: sinfo()[held][0] in ("alloc", "mix"), 60), sinfo()
    try:
        yield {"canary": canary, "faulty": faulty, "held": held, "job": job, "plan": plan}
    finally:
        sh(faulty, f"rm -f {FAULT_HOOK}")
        for host in (*GPUS, *NPUS):
            sh(host, f"hwreplay profile set {PROFILES.get(host, HEALTHY[host])}")


@pytest.fixture(scope="module")
def upgraded(fleet):
    """The upgrade, SIGKILLed while the held node waits in drain, then resumed to the end."""
    before = {p.name for p in LEDGER.iterdir()}
    argv = [
        str(BIN / "clusterforge"),
        "upgrade",
        "run",
        "-i",
        str(INVENTORY),
        "--to",
        TO,
        "--max-failed",
        "1",
        "--drain-timeout",
        "900",
        "--ledger",
        str(LEDGER),
    ]
    log = STATE / "upgrade-killed.log"
    clock = time.monotonic()
    with log.open("w") as out:
        proc = subprocess.Popen(argv, cwd=ROOT, env=ENV, stdout=out, stderr=subprocess.STDOUT)
    held = fleet["held"]

    def held_in_drain() -> bool:
        found = [
            p for p in LEDGER.glob(f"*-upgrade-*/nodes/{held}.json") if p.parent.parent.name not in before
        ]
        return bool(found) and json.loads(found[0].read_text())["phase"] == "drain"

    reached = wait_for(lambda: proc.poll() is not None or held_in_drain(), 1200)
    assert reached and proc.poll() is None, f"never reached drain on {held}:\n{log.read_text()[-4000:]}"
    time.sleep(5)  # into the wait for the job
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    run_id = newest_upgrade_run(before)
    killed_batch = f"{run_id}/artifacts/batch-3-1/"
    at_kill = nodes_of(run_id)
    job_state_at_kill = sh(CONTROLLER, f"scontrol show job {fleet['job']} -o")
    first = time.monotonic() - clock
    # The resumed run waits in drain for the job; the test lets the job finish once it does.
    resumed = subprocess.Popen(
        [str(BIN / "clusterforge"), "upgrade", "run", "--resume", run_id, "--ledger", str(LEDGER)],
        cwd=ROOT,
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    time.sleep(20)
    sh(held, f"touch {JOB_RELEASE}")
    out, _ = resumed.communicate(timeout=1200)
    # ansible-runner's child ignores SIGHUP: the killed controller's ansible-playbook, still waiting
    # for the job, is stopped by the resume before it runs anything.
    assert "stopped" in out and "the killed controller left running" in out, out[-3000:]
    assert run("pgrep", "-f", killed_batch).returncode != 0
    TIMINGS.append(
        f"upgrade of {len(GPUS)} GPU nodes to {TO}: {first:.0f} s to the kill, "
        f"{time.monotonic() - clock - first:.0f} s resumed"
    )
    return {
        "run": run_id,
        "at_kill": at_kill,
        "job_at_kill": job_state_at_kill,
        "rc": resumed.returncode,
        "out": out,
        "record": json.loads((LEDGER / run_id / "run.json").read_text()),
        **fleet,
    }


def test_the_killed_run_resumed_without_redoing_done_nodes(upgraded):
    at_kill, nodes = upgraded["at_kill"], nodes_of(upgraded["run"])
    canary, faulty, held = upgraded["canary"], upgraded["faulty"], upgraded["held"]
    assert (at_kill[canary]["status"], at_kill[faulty]["status"]) == ("done", "failed"), at_kill
    assert (at_kill[held]["status"], at_kill[held]["phase"]) == ("running", "drain"), at_kill[held]
    assert len(upgraded["record"]["attempts"]) == 2
    limits = (LEDGER / upgraded["run"] / "artifacts" / "batch-3-2" / "limit.txt").read_text().split()
    assert limits == [held]
    assert not (LEDGER / upgraded["run"] / "artifacts" / "batch-1-2").exists()
    # The resumed node started again from its recorded phase: no second precheck.
    phases = [(p["phase"], p["attempt"]) for p in nodes[held]["phases"]]
    assert ("precheck", 2) not in phases and ("drain", 2) in phases, phases
    assert (nodes[canary]["attempt"], nodes[faulty]["attempt"], nodes[held]["attempt"]) == (1, 1, 2)


def test_the_job_was_drained_not_killed(upgraded):
    assert "JobState=RUNNING" in upgraded["job_at_kill"], upgraded["job_at_kill"]
    state = sh(CONTROLLER, f"scontrol show job {upgraded['job']} -o")
    assert "JobState=COMPLETED" in state and "ExitCode=0:0" in state, state
    assert sh(upgraded["held"], f"cat {JOB_OUT}").strip() == "finished"


def test_the_node_that_turned_faulty_stays_drained_with_the_reason(upgraded):
    nodes, faulty = nodes_of(upgraded["run"]), upgraded["faulty"]
    assert upgraded["rc"] == 3, upgraded["out"][-3000:]
    assert (nodes[faulty]["status"], nodes[faulty]["phase"]) == ("failed", "validate"), nodes[faulty]
    assert "gpu.xid" in nodes[faulty]["message"], nodes[faulty]
    state, reason = sinfo()[faulty]
    assert state.startswith("drain") and reason.startswith(
        f"clusterforge-upgrade: {upgraded['run']} failed in validate"
    )
    for host in (upgraded["canary"], upgraded["held"]):
        assert nodes[host]["status"] == "done", nodes[host]
        assert wait_for(lambda h=host: sinfo()[h][0] == "idle", 90), (host, sinfo()[host])  # idle* may pass
    assert upgraded["record"]["status"] == "failed" and upgraded["record"]["halted"] is None


def test_the_ledger_matches_the_nodes(upgraded):
    for host, record in nodes_of(upgraded["run"]).items():
        assert (record["from"], record["to"]) == (FROM, TO)
        assert installed_driver(host) == TO, host  # the faulty one was upgraded, then failed validation
    shown = run(BIN / "clusterforge", "runs", "show", upgraded["run"], "--ledger", LEDGER, "--format", "json")
    assert shown.returncode == 0, explain(shown)
    statuses = {node["host"]: node["status"] for node in json.loads(shown.stdout)["nodes"]}
    assert statuses[upgraded["faulty"]] == "failed" and statuses[upgraded["held"]] == "done", statuses


def test_rollback_takes_the_done_nodes_back(upgraded):
    before = {p.name for p in LEDGER.iterdir()}
    proc = upgrade("--rollback", upgraded["run"])
    assert proc.returncode == 0, explain(proc)
    rollback = newest_upgrade_run(before)
    nodes = nodes_of(rollback)
    assert sorted(nodes) == sorted([upgraded["canary"], upgraded["held"]])
    for host, record in nodes.items():
        assert (record["status"], record["to"]) == ("done", FROM)
        assert installed_driver(host) == FROM, host
        assert wait_for(lambda h=host: sinfo()[h][0] == "idle", 90), (host, sinfo()[host])


def test_the_ascend_driver_upgrade_takes_the_same_path(fleet):
    assert all(ascend_driver(h) == ASCEND_FROM for h in NPUS)
    before = {p.name for p in LEDGER.iterdir()}
    clock = time.monotonic()
    proc = upgrade("-i", str(INVENTORY), "--component", "ascend-driver", "--to", ASCEND_TO)
    TIMINGS.append(f"Ascend driver upgrade of {len(NPUS)} NPU nodes: {time.monotonic() - clock:.0f} s")
    assert proc.returncode == 0, explain(proc)
    nodes = nodes_of(newest_upgrade_run(before))
    assert sorted(nodes) == NPUS
    for host, record in nodes.items():
        assert [p["phase"] for p in record["phases"]][-1] == "resume" and record["status"] == "done"
        assert ascend_driver(host) == ASCEND_TO
