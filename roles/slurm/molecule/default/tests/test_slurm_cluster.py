"""The Slurm part of the scheduler stack on three real Debian 12 nodes after side_effect.yml ran a
GPU job, drained gpu2 through the health check and through `clusterforge validate --quarantine`,
resumed it and re-ran the stack: slurmctld on the controller, slurmd on two workers that the
hardware replay makes 8x H100 nodes. Every check reads real state: Slurm's own view (sinfo,
scontrol, srun), munge across nodes, the files the roles wrote; none of it would hold on nodes
the roles did not touch.
"""

from __future__ import annotations

import json
import re

import cfmol_testinfra as cfmol
from cfmol_testinfra import on, root

CONTROLLER = "cfmol-sched-ctl"
WORKERS = ("cfmol-sched-gpu1", "cfmol-sched-gpu2")
GRES = "gpu:h100:8"
# The fields of a NodeName line that slurmd -C reports and slurm.conf must repeat.
SHAPE_KEYS = ("CPUs", "Boards", "SocketsPerBoard", "CoresPerSocket", "ThreadsPerCore")


def as_alice(host, command, *args):
    result = host.run("sudo -u alice -H " + command, *args)
    assert result.rc == 0, f"{command % args}: rc={result.rc} {result.stderr.strip()[-800:]}"
    return result.stdout


def fields(line):
    return dict(item.split("=", 1) for item in line.split() if "=" in item)


# --- the cluster as Slurm sees it ------------------------------------------------------------


def test_both_workers_idle_with_their_gpus(host):
    on(host, CONTROLLER)

    # Polled: the re-run's reconfigure may leave a worker "idle*" for a moment.
    def states():
        lines = root(host, "sinfo --noheader --Node --format=%s", "%N|%t:%G").split()
        return {w: dict(line.split("|", 1) for line in lines if "|" in line).get(w) for w in WORKERS}

    settled = cfmol.wait_for(lambda: set(states().values()) == {f"idle:{GRES}"})
    assert settled, f"workers not idle with {GRES}: {states()}"


def test_partition_holds_the_gpu_workers_and_is_default(host):
    on(host, CONTROLLER)
    line = root(host, "scontrol show partition gpu --oneliner").strip()
    part = fields(line)
    assert part["Default"] == "YES", line
    assert part["State"] == "UP", line
    nodes = root(host, "scontrol show hostnames %s", part["Nodes"]).split()
    assert sorted(nodes) == sorted(WORKERS)


def test_health_check_is_clusterforges(host):
    on(host, CONTROLLER)
    config = root(host, "scontrol show config")
    assert re.search(r"^HealthCheckProgram\s*=\s*/usr/local/sbin/clusterforge-healthcheck$", config, re.M)
    assert re.search(r"^HealthCheckNodeState\s*=\s*ANY", config, re.M)


def test_gres_job_ran_on_two_gpus(host):
    """The sbatch --gres=gpu:2 job of side_effect.yml: its output is on the worker that ran it."""
    on(host, *WORKERS)
    lines = [
        line.split()
        for worker in WORKERS
        for line in cfmol.other_node(host, worker)
        .run("cat /tmp/cfmol-gres-*.out 2>/dev/null")
        .stdout.splitlines()
    ]
    assert lines, "no output of the GPU job on any worker"
    for visible, job_gpus, where in lines:
        assert (visible, job_gpus) == ("0,1", "0,1") and where in WORKERS


def test_job_can_open_only_its_own_gpu(host):
    """ConstrainDevices: a job given one GPU may open it (ENXIO: no driver behind it), never
    another (EPERM from the device cgroup)."""
    on(host, CONTROLLER)
    out = as_alice(
        host,
        "srun --gres=gpu:1 --nodes=1 sh -c %s",
        "cat /dev/nvidia0 2>&1; cat /dev/nvidia5 2>&1; true",
    )
    assert "No such device or address" in out, out
    assert "Operation not permitted" in out, out


def test_job_memory_is_enforced(host):
    on(host, CONTROLLER)
    result = host.run(
        "sudo -u alice -H srun --mem=50M --nodes=1 python3 -c %s",
        "b = bytearray(300 * 1024 * 1024); print(len(b))",
    )
    assert result.rc != 0, f"a job over its --mem=50M was not stopped: {result.stdout}"


# --- what the roles wrote --------------------------------------------------------------------


def test_node_line_repeats_slurmd_c(host):
    """Each worker's NodeName line in slurm.conf carries the shape slurmd -C detects on it."""
    on(host, *WORKERS)
    me = cfmol.node_name(host)
    detected = fields(root(host, "slurmd -C").splitlines()[0])
    conf = host.file("/etc/slurm/slurm.conf").content_string
    line = next(x for x in conf.splitlines() if x.startswith(f"NodeName={me} "))
    planned = fields(line)
    assert {k: planned[k] for k in SHAPE_KEYS} == {k: detected[k] for k in SHAPE_KEYS}
    assert int(planned["RealMemory"]) <= int(detected["RealMemory"])
    assert planned["Gres"] == GRES


def test_same_slurm_conf_everywhere(host):
    on(host, CONTROLLER)
    for name in ("slurm.conf", "topology.conf"):
        mine = host.file(f"/etc/slurm/{name}").sha256sum
        for worker in WORKERS:
            assert cfmol.other_node(host, worker).file(f"/etc/slurm/{name}").sha256sum == mine, name


def test_topology_has_both_leaves_under_a_root(host):
    """topology.conf from the inventory's leaf: each worker on its leaf, and the root switch above
    the two (no spine declared) so that one job can span both: srun -N2 runs on both."""
    on(host, CONTROLLER)
    assert re.search(r"^TopologyPlugin\s*=\s*topology/tree$", root(host, "scontrol show config"), re.M)
    rows = [fields(line) for line in root(host, "scontrol show topology").splitlines()]
    switches = {row["SwitchName"]: row for row in rows if "SwitchName" in row}
    assert set(switches) == {"cfmol-leaf-1", "cfmol-leaf-2", "root"}, switches
    assert switches["cfmol-leaf-1"]["Nodes"] == WORKERS[0]
    assert switches["cfmol-leaf-2"]["Nodes"] == WORKERS[1]
    assert root(host, "scontrol show hostnames %s", switches["root"]["Switches"]).split() == [
        "cfmol-leaf-1",
        "cfmol-leaf-2",
    ]
    out = as_alice(host, "srun --nodes=2 --ntasks-per-node=1 --time=1 --chdir=/tmp hostname -s")
    assert sorted(out.split()) == sorted(WORKERS)


def test_gres_conf_names_the_gpu_devices(host):
    on(host, *WORKERS)
    conf = host.file("/etc/slurm/gres.conf").content_string
    assert re.search(r"Name=gpu\s+Type=h100\s+File=/dev/nvidia\[0-7\]", conf), conf


def test_cgroup_conf_constrains(host):
    on(host, *WORKERS)
    conf = host.file("/etc/slurm/cgroup.conf").content_string
    for setting in ("ConstrainCores=yes", "ConstrainRAMSpace=yes", "ConstrainDevices=yes"):
        assert re.search(rf"^{setting}$", conf, re.M | re.I), f"{setting} missing: {conf}"


def test_munge_key_is_the_vaults_and_private(host):
    # /etc/munge is munge's own (0700): stat it as root.
    assert root(host, "stat -c %s /etc/munge/munge.key", "%U %G %a").split() == ["munge", "munge", "400"]
    controller = cfmol.other_node(host, CONTROLLER)
    assert (
        root(host, "sha256sum /etc/munge/munge.key").split()[0]
        == root(controller, "sha256sum /etc/munge/munge.key").split()[0]
    )


def test_munge_credentials_cross_nodes(host):
    on(host, *WORKERS)
    credential = cfmol.other_node(host, CONTROLLER).run("munge -n").stdout.strip()
    decoded = host.run("echo %s | unmunge", credential)
    assert decoded.rc == 0 and "STATUS:          Success" in decoded.stdout, decoded.stdout + decoded.stderr


def test_health_check_installed_with_private_parameters(host):
    on(host, *WORKERS)
    params = host.file("/etc/clusterforge/healthcheck.json")
    assert (params.user, params.mode) == ("root", 0o600)
    assert host.file("/usr/local/sbin/clusterforge-healthcheck").mode & 0o111
    loaded = json.loads(root(host, "cat /etc/clusterforge/healthcheck.json"))
    assert loaded["scheduler"] == "slurm" and loaded["node_name"] == cfmol.node_name(host)
    assert loaded["expected"]["node_sku"] == "hgx-h100-8gpu"


def test_health_check_last_result_is_a_pass(host):
    """The last run (every 5 s here) saw the healthy replay again after side_effect's faults."""
    on(host, *WORKERS)

    def last():
        return json.loads(root(host, "cat /var/lib/clusterforge/healthcheck/last.json"))["result"]

    healthy = cfmol.wait_for(lambda: last()["status"] in ("pass", "warn"), timeout=20)
    result = last()
    assert healthy, [c["id"] for c in result.get("checks", []) if c["status"] in ("fail", "error")]
