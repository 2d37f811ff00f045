"""The framework.* judge (cfcore/checks/framework.py) over probe reports written as fixtures: every
status, and `error` only where nothing could be measured or attempted."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from cfcore.checks import framework
from cfcore.checks.framework import ProbeError, judge
from cfcore.results import STATUSES

FIXTURES = Path(__file__).parent / "fixtures"
NVIDIA_BOM = {
    "pytorch_version": "2.7.1",
    "pytorch_cuda_version": "12.8",
    "nvidia_driver_version": "570.133.20",
}
ASCEND_BOM = {
    "pytorch_version": "2.6.0",
    "torch_npu_version": "2.6.0.post5",
    "ascend_driver_version": "25.5.0",
    "cann_version": "8.5.0",
}


def load(name: str) -> dict:
    return json.loads((FIXTURES / f"{name}.json").read_text())


def expected(vendor: str = "nvidia", bom: dict | None = None, **extra) -> dict:
    default = NVIDIA_BOM if vendor == "nvidia" else ASCEND_BOM
    return {
        "vendor": vendor,
        "count": 8,
        "env": "venv /opt/train/venv",
        "bom": default if bom is None else bom,
        "allreduce_max_s": 30,
        "allreduce_warn_s": 5,
        **extra,
    }


def by_id(checks: list) -> dict:
    assert [c["id"] for c in checks] == list(framework.CHECK_IDS)
    for check in checks:
        assert check["status"] in STATUSES
        assert check["status"] in ("pass", "skip") or check["remedy"], check
    return {c["id"]: c for c in checks}


def test_a_healthy_nvidia_node_passes_with_its_metrics():
    checks, metrics = judge(load("nvidia-healthy"), expected())
    found = by_id(checks)
    assert {c["status"] for c in checks} == {"pass"}, checks
    assert "8 ranks over nccl summed to 36 on every rank" in found["framework.allreduce"]["message"]
    assert "3 version(s) as the BOM says" in found["framework.versions"]["message"]
    assert metrics == {"framework.devices_visible": 8, "framework.allreduce_s": 0.0123}


def test_a_cpu_build_fails_env_and_devices_and_the_allreduce_could_not_run():
    found = by_id(
        judge(load("nvidia-cpu-build"), expected(bom={**NVIDIA_BOM, "pytorch_version": "2.13.0"}))[0]
    )
    assert found["framework.env"]["status"] == "fail"
    assert "CPU build (torch.version.cuda is None)" in found["framework.env"]["message"]
    assert found["framework.devices"]["status"] == "fail"
    assert "0 of 8 GPUs" in found["framework.devices"]["message"]
    assert found["framework.allreduce"]["status"] == "error"
    assert "no device visible" in found["framework.allreduce"]["message"]
    versions = found["framework.versions"]
    assert versions["status"] == "fail"
    assert "PyTorch's CUDA none (a CPU build) != pytorch_cuda_version 12.8" in versions["message"]
    assert "no NVIDIA kernel module loaded" in versions["message"]
    assert "PyTorch: 2.13.0 = pytorch_version" in versions["evidence"]["lines"]


def test_fewer_devices_than_the_sku_fail():
    found = by_id(judge(load("nvidia-seven-gpus"), expected())[0])
    assert found["framework.devices"]["status"] == "fail"
    assert "sees 7 of the SKU's 8 GPUs" in found["framework.devices"]["message"]
    assert found["framework.allreduce"]["status"] == "pass"  # over the seven it sees


def test_more_devices_than_the_sku_warn():
    found = by_id(judge(load("nvidia-healthy"), expected(count=4))[0])
    assert found["framework.devices"]["status"] == "warn"


def test_a_wrong_sum_fails_naming_the_rank():
    found = by_id(judge(load("nvidia-wrong-sum"), expected())[0])
    allreduce = found["framework.allreduce"]
    assert allreduce["status"] == "fail"
    assert "wrong all-reduce result on rank(s) 5" in allreduce["message"]
    assert "expected on every rank: 36.0 (n(n+1)/2, n=8)" in allreduce["evidence"]["lines"]


def test_hung_ranks_fail_with_the_probes_reason():
    allreduce = by_id(judge(load("nvidia-hung-ranks"), expected())[0])["framework.allreduce"]
    assert allreduce["status"] == "fail" and "rank(s) 6, 7 reported nothing" in allreduce["message"]


@pytest.mark.parametrize(("seconds", "status"), [(0.01, "pass"), (6.0, "warn"), (31.0, "fail")])
def test_the_time_bound(seconds, status):
    report = load("nvidia-healthy")
    report["allreduce"]["seconds"] = seconds
    checks, metrics = judge(report, expected())
    assert by_id(checks)["framework.allreduce"]["status"] == status
    assert metrics["framework.allreduce_s"] == seconds


def test_versions_off_the_bom_fail_and_unpinned_ones_are_not_compared():
    report = load("nvidia-healthy")
    report["torch"]["version"] = "2.7.0+cu126"
    report["torch"]["cuda"] = "12.6"
    found = by_id(judge(report, expected())[0])
    assert found["framework.versions"]["status"] == "fail"
    assert "PyTorch 2.7.0 != pytorch_version 2.7.1" in found["framework.versions"]["message"]
    found = by_id(judge(load("nvidia-healthy"), expected(bom={"nvidia_driver_version": "570.133.20"}))[0])
    assert found["framework.versions"]["status"] == "pass"
    assert "pytorch_version, pytorch_cuda_version unset" in found["framework.versions"]["message"]
    found = by_id(judge(load("nvidia-healthy"), expected(bom={}))[0])
    assert found["framework.versions"]["status"] == "skip"


def test_a_driver_whose_cuda_api_is_older_than_the_build_fails():
    report = load("nvidia-healthy")
    report["torch"]["cuda"] = "13.0"
    report["driver"]["cuda_api"] = "12.8"
    versions = by_id(judge(report, expected(bom={}))[0])["framework.versions"]
    assert (
        versions["status"] == "fail"
        and "CUDA API 12.8 is older than the build's CUDA 13.0" in versions["message"]
    )


def test_a_healthy_ascend_node_passes():
    checks, _ = judge(load("ascend-healthy"), expected("huawei"))
    found = by_id(checks)
    assert {c["status"] for c in checks} == {"pass"}, checks
    assert "torch_npu 2.6.0.post5" in found["framework.env"]["message"]
    assert "Ascend driver: 25.5.0 = ascend_driver_version" in found["framework.versions"]["evidence"]["lines"]


def test_an_ascend_env_without_torch_npu_fails():
    found = by_id(judge(load("ascend-no-torch-npu"), expected("huawei"))[0])
    assert found["framework.env"]["status"] == "fail"
    assert "torch_npu is missing" in found["framework.env"]["message"]
    assert found["framework.devices"]["status"] == "fail"
    assert found["framework.allreduce"]["status"] == "error"
    assert "torch_npu not installed" in found["framework.versions"]["message"]


def test_torch_that_does_not_import_fails_env_and_devices():
    report = load("nvidia-cpu-build")
    report["torch"] = {"version": None, "cuda": None, "nccl": None, "error": "ModuleNotFoundError: torch"}
    report["allreduce"]["reason"] = "torch does not import"
    found = by_id(judge(report, expected())[0])
    assert (
        found["framework.env"]["status"] == "fail" and "does not import" in found["framework.env"]["message"]
    )
    assert found["framework.devices"]["status"] == "fail"
    assert found["framework.allreduce"]["status"] == "error"


def test_a_probe_that_could_not_run_is_error_everywhere():
    checks, metrics = judge(
        ProbeError("/opt/train/venv/bin/python", "timed out after 300 s", ["x"]), expected()
    )
    assert {c["status"] for c in checks} == {"error"} and metrics == {}
    assert all("timed out after 300 s" in c["message"] for c in checks)


def test_a_crashed_probe_is_error_with_its_trace():
    checks, _ = judge(load("crashed"), expected())
    assert {c["status"] for c in checks} == {"error"}
    assert "the probe crashed: KeyError" in checks[0]["message"]
    assert any("KeyError" in line for line in checks[0]["evidence"]["lines"])


def test_mindspore_skips_the_allreduce_and_checks_its_version():
    report = copy.deepcopy(load("ascend-healthy"))
    report.update(
        framework="mindspore", torch=None, torch_npu=None, mindspore={"version": "2.7.1", "error": None}
    )
    report["devices"] = {"api": 'mindspore.hal.device_count("Ascend")', "count": 8, "error": None}
    report["allreduce"] = {"backend": "hccl", "world_size": 8, "attempted": False, "reason": "PyTorch's"}
    found = by_id(judge(report, expected("huawei", bom={"mindspore_version": "2.7.1"}))[0])
    assert found["framework.env"]["status"] == "pass"
    assert found["framework.devices"]["status"] == "pass"
    assert found["framework.allreduce"]["status"] == "skip"
    assert found["framework.versions"]["status"] == "pass"
