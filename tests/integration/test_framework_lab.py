"""`clusterforge validate --level framework` on the shared lab (conftest.py): the honest CPU path.

The lab's training environment is a CPU-only PyTorch venv (scripts/setup-train-venv.sh, built once on
the host and mounted read-only at /opt/train/venv on the accelerator nodes; framework_env in the lab's
inventory). Lab GPUs and NPUs are replayed, so the framework sees none of them:
- every GPU node fails framework.env and framework.devices (a CPU build: 0 of 8 GPUs), its NCCL
  all-reduce could not be attempted (error, with the reason), and framework.versions fails on the
  build's CUDA and the driver (no NVIDIA kernel module in a container) while PyTorch's own version is
  the BOM's;
- every NPU node fails for the missing torch_npu, and its versions (Ascend driver, CANN, PyTorch) are
  the BOM's;
- the reports and a dry-run --quarantine see them like any other check.
Then the probe's all-reduce machinery runs for real on a GPU node over gloo with 2 ranks (what
production runs over NCCL/HCCL with a rank per device). Changes nothing on the nodes.
"""

from __future__ import annotations

import json
import time

import pytest
from conftest import TIMINGS
from labkit import BIN, INVENTORY, LAB, ROOT, explain, run, sh

pytestmark = pytest.mark.lab
LAB_ORDER = 42  # reads only: after perf (40), before inspect (45)
GPUS = [f"{LAB}-gpu-0{i}" for i in (1, 2, 3)]
NPUS = [f"{LAB}-npu-0{i}" for i in (1, 2)]


@pytest.fixture(scope="module")
def framework(lab, tmp_path_factory):
    sh(GPUS[0], "test -x /opt/train/venv/bin/python")  # the venv is mounted (conftest built it)
    out = tmp_path_factory.mktemp("framework")
    clock = time.monotonic()
    proc = run(
        BIN / "clusterforge", "validate", "-i", INVENTORY, "--level", "framework",
        "--quarantine", "--quarantine-dry-run", "--format", "json", "--out", out,
        timeout=900,
    )  # fmt: skip
    TIMINGS.append(f"framework validation of 5 nodes (dry-run quarantine): {time.monotonic() - clock:.0f} s")
    assert (out / "report.json").is_file(), explain(proc)
    return proc, json.loads((out / "report.json").read_text()), out


def check(report: dict, host: str, check_id: str) -> dict:
    node = next(n for n in report["nodes"] if n["host"] == host)
    found = [c for c in node["checks"] if c["id"] == check_id]
    assert found, f"{host} has no {check_id}: {[c['id'] for c in node['checks']]}"
    return found[0]


def test_exit_3_with_every_accelerator_node_unhealthy(framework):
    proc, report, _ = framework
    assert proc.returncode == 3, explain(proc)
    assert report["run"]["level"] == "framework"
    assert sorted(report["summary"]["unhealthy_nodes"]) == sorted(GPUS + NPUS), report["summary"]


def test_gpu_nodes_fail_on_the_cpu_build_and_cannot_all_reduce(framework):
    _, report, _ = framework
    for host in GPUS:
        env = check(report, host, "framework.env")
        assert env["status"] == "fail" and "CPU build" in env["message"] and env["remedy"], env
        devices = check(report, host, "framework.devices")
        assert devices["status"] == "fail", devices
        assert "CPU build" in devices["message"] and "0 of 8 GPUs" in devices["message"], devices
        allreduce = check(report, host, "framework.allreduce")
        assert allreduce["status"] == "error", allreduce
        assert "no device visible" in allreduce["message"], allreduce
        versions = check(report, host, "framework.versions")
        assert versions["status"] == "fail", versions
        assert "pytorch_cuda_version 12.6" in versions["message"], versions
        assert "PyTorch: 2.13.0 = pytorch_version" in versions["evidence"]["lines"], versions


def test_npu_nodes_fail_for_the_missing_torch_npu_and_their_versions_are_the_boms(framework):
    _, report, _ = framework
    for host in NPUS:
        env = check(report, host, "framework.env")
        assert env["status"] == "fail" and "torch_npu is missing" in env["message"], env
        assert check(report, host, "framework.devices")["status"] == "fail"
        assert check(report, host, "framework.allreduce")["status"] == "error"
        versions = check(report, host, "framework.versions")
        assert versions["status"] == "pass", versions
        lines = versions["evidence"]["lines"]
        assert "Ascend driver: 25.5.0 = ascend_driver_version" in lines, lines
        assert "CANN: 8.5.0 = cann_version" in lines, lines


def test_reports_and_quarantine_see_the_framework_checks(framework):
    _, report, out = framework
    assert "framework.devices" in (out / "junit.xml").read_text()
    assert 'check="framework.devices"' in (out / "clusterforge.prom").read_text()
    actions = report["quarantine"]["actions"]
    drained = {a["host"] for a in actions if a["scheduler"] == "slurm"}
    assert drained == set(GPUS), actions  # the Slurm workers; a dry run changes nothing
    assert all(a["outcome"] == "would run" for a in actions if a["scheduler"] == "slurm"), actions
    slurm = [a for a in actions if a["scheduler"] == "slurm"]
    assert all("framework." in a["command"] for a in slurm), slurm  # the drain reason names the checks


def test_the_probe_all_reduces_for_real_over_gloo_with_two_ranks(lab):
    clock = time.monotonic()
    proc = run(
        BIN / "ansible-playbook", "-i", INVENTORY, ROOT / "playbooks" / "validate_framework.yml",
        "-l", GPUS[0], "-e", "framework_backend=gloo", "-e", "framework_world_size=2",
        "-e", "validate_block_on_fail=false",
        env={**_env(), "ANSIBLE_STDOUT_CALLBACK": "json"}, timeout=600,
    )  # fmt: skip
    TIMINGS.append(f"framework probe over gloo, 2 ranks, on {GPUS[0]}: {time.monotonic() - clock:.0f} s")
    assert proc.returncode == 0, explain(proc)
    start = proc.stdout.index("{")  # the json callback's document; profile_tasks prints lines around it
    result = _node_result(json.JSONDecoder().raw_decode(proc.stdout[start:])[0], GPUS[0])
    allreduce = next(c for c in result["checks"] if c["id"] == "framework.allreduce")
    assert allreduce["status"] == "pass", allreduce
    assert "2 ranks over gloo summed to 3" in allreduce["message"], allreduce
    assert result["facts"]["framework_allreduce"]["sums"] == [3.0, 3.0], result["facts"]
    assert result["metrics"]["framework.allreduce_s"] > 0, result["metrics"]


def _env() -> dict:
    from labkit import ENV

    return dict(ENV)


def _node_result(output: dict, host: str) -> dict:
    for play in output["plays"]:
        for task in play["tasks"]:
            res = task["hosts"].get(host) or {}
            if isinstance(res.get("node_result"), dict):
                return res["node_result"]
    raise AssertionError(f"no node_result for {host} in the playbook's output")
