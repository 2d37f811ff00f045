"""`clusterforge validate --level perf --quarantine` on the shared lab (conftest.py).

The replay answers the benchmarks (tests/hwreplay: all_reduce_perf, ib_write_bw over a real socket
between the nodes, mpirun, hccl_test's all_reduce_test; juicefs bench is real on the lab's JuiceFS):
- gpu-03 replays a bad cable on rail mlx5_3 (its loopback is fine, the wire is not): it passes
  alone, its pair tests fail on mlx5_3 with a known-good partner, so it is a bad link, not a bad
  node, and is drained in Slurm;
- npu-02 replays a degraded HCCL all-reduce: a bad node from its single-node test, never paired;
- gpu-01 and gpu-02 are healthy and stay in service.
Runs after the modules that read the lab's first faults (LAB_ORDER) and leaves every node healthy
and in service again.
"""

from __future__ import annotations

import json
import time

import pytest
from conftest import TIMINGS
from labkit import BIN, INVENTORY, LAB, explain, run, sh

pytestmark = pytest.mark.lab
LAB_ORDER = 40  # after slurm (30), before add-node (80) and the upgrades (85)
CONTROLLER = f"{LAB}-ctl-01"
GPU_1, GPU_2, GPU_3 = (f"{LAB}-gpu-0{i}" for i in (1, 2, 3))
NPU_1, NPU_2 = f"{LAB}-npu-01", f"{LAB}-npu-02"
PROFILES = {
    GPU_1: "h100-healthy",
    GPU_2: "h100-healthy",
    GPU_3: "h100-perf-bad-rail",
    NPU_1: "910b-healthy",
    NPU_2: "910b-perf-degraded",
}
HEALTHY = {GPU_3: "h100-healthy", NPU_2: "910b-healthy"}
BAD_RAIL = "mlx5_3"


def sinfo() -> dict[str, tuple[str, str]]:
    out = sh(CONTROLLER, "sinfo --noheader --Node --format='%N|%t|%E'")
    rows = (line.split("|", 2) for line in out.splitlines() if line.count("|") == 2)
    return {name: (state, reason) for name, state, reason in rows}


def wait_for(predicate, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(2)
    return True


@pytest.fixture(scope="module")
def perf(lab, tmp_path_factory):
    """The perf run with --quarantine on the replayed faults; healthy profiles and Slurm afterwards."""
    for host, profile in PROFILES.items():
        sh(host, f"hwreplay profile set {profile}")
    gpus = (GPU_1, GPU_2, GPU_3)
    # The health check returns nodes earlier faults drained; perf validation wants them idle.
    assert wait_for(lambda: all(sinfo().get(h, ("",))[0] == "idle" for h in gpus), 120), sinfo()
    out = tmp_path_factory.mktemp("perf")
    clock = time.monotonic()
    proc = run(
        BIN / "clusterforge",
        "validate",
        "-i",
        INVENTORY,
        "--level",
        "perf",
        "--quarantine",
        "--format",
        "json",
        "--out",
        out,
        timeout=1200,
    )
    TIMINGS.append(f"perf validation of 5 nodes with --quarantine: {time.monotonic() - clock:.0f} s")
    try:
        assert (out / "report.json").is_file(), explain(proc)
        yield proc, json.loads((out / "report.json").read_text()), sinfo()
    finally:
        for host, profile in HEALTHY.items():
            sh(host, f"hwreplay profile set {profile}")
        sh(CONTROLLER, f"scontrol update NodeName={GPU_3} State=RESUME || true")


def node(report: dict, host: str) -> dict:
    return next(n for n in report["nodes"] if n["host"] == host)


def check(report: dict, host: str, check_id: str) -> dict:
    found = [c for c in node(report, host)["checks"] if c["id"] == check_id]
    assert found, f"{host} has no {check_id}: {[c['id'] for c in node(report, host)['checks']]}"
    return found[0]


def test_exit_3_naming_exactly_the_degraded_nodes(perf):
    proc, report, _ = perf
    assert proc.returncode == 3, explain(proc)
    assert sorted(report["summary"]["unhealthy_nodes"]) == sorted([GPU_3, NPU_2]), report["summary"]
    assert report["run"]["level"] == "perf"


def test_single_node_benchmarks_ran_and_passed_on_healthy_nodes(perf):
    _, report, _ = perf
    for host in (GPU_1, GPU_2):
        for check_id in ("perf.busy", "perf.nccl_local", "perf.ib_loopback", "perf.storage"):
            assert check(report, host, check_id)["status"] == "pass", check(report, host, check_id)
        assert node(report, host)["metrics"]["perf.nccl_local_busbw_gbps"] > 400
    assert check(report, GPU_3, "perf.ib_loopback")["status"] == "pass"  # the cable, not the HCA
    assert check(report, NPU_1, "perf.hccl_local")["status"] == "pass"


def test_the_bad_cable_is_a_bad_link_found_by_re_pairing(perf):
    _, report, _ = perf
    verdicts = report["perf"]["verdicts"]
    assert verdicts[GPU_3]["verdict"] == "bad_link" and verdicts[GPU_3]["rails"] == [BAD_RAIL], verdicts
    assert verdicts[GPU_1]["verdict"] == verdicts[GPU_2]["verdict"] == "healthy", verdicts
    pairs = check(report, GPU_3, "perf.pairs")
    assert pairs["status"] == "fail" and BAD_RAIL in pairs["message"] and pairs["remedy"], pairs
    # Round 1 surveys, round 2 re-pairs gpu-03 with a node the survey proved good.
    assert (
        report["perf"]["rounds"] >= 2 and report["perf"]["rounds"] <= report["perf"]["lower_bound_rounds"] + 1
    )
    failed = [
        (p["round"], r)
        for p in report["perf"]["pairs"]
        if GPU_3 in (p["a"], p["b"])
        for rail, r in p["results"].items()
        if rail == BAD_RAIL and r["status"] == "fail"
    ]
    assert failed and all(r["gbps"] < 200 for _, r in failed), report["perf"]["pairs"]


def test_the_degraded_npu_is_a_bad_node_and_not_paired(perf):
    _, report, _ = perf
    hccl = check(report, NPU_2, "perf.hccl_local")
    assert hccl["status"] == "fail" and hccl["remedy"], hccl
    assert report["perf"]["verdicts"][NPU_2]["verdict"] == "bad_node"
    assert all(NPU_2 not in (p["a"], p["b"]) for p in report["perf"]["pairs"])


def test_the_bad_link_node_is_drained_and_the_healthy_ones_are_not(perf):
    _, report, view = perf
    assert view[GPU_3][0].startswith("drain"), view
    assert "perf.pairs" in view[GPU_3][1], view
    assert view[GPU_1][0] == view[GPU_2][0] == "idle", view
    drained = [a for a in report["quarantine"]["actions"] if a["host"] == GPU_3]
    assert drained and drained[0]["outcome"] == "ran", report["quarantine"]
