"""The degrading profile steps: figures that worsen run after run while every fixed check passes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cfcore.expected import build_expected
from cfcore.trend import trend
from cfcore.validate import validate_node
from hwreplay_testlib import DEGRADING
from replaylib import control
from replaylib.profiles import resolve
from test_hwreplay_shims import RenderedSource

SKU = "hgx-h100-8gpu"


def validate(ctx, tmp_path: Path, name: str) -> dict:
    control.set_profile(ctx, name)
    profile = resolve(ctx, name)
    hostvars = {
        "node_sku": SKU,
        "sysfs_root": str(tmp_path / "sysroot"),
        "nvidia_driver_version": profile["nvidia"]["driver_version"],
    }
    return validate_node(RenderedSource(ctx, profile), build_expected("node", hostvars), "quick")


def test_each_step_is_a_patch_of_the_one_before(ctx):
    bases = ["h100-healthy", *DEGRADING[:-1]]
    for name, base in zip(DEGRADING, bases, strict=True):
        raw = json.loads((Path(ctx.profile_dir) / f"{name}.json").read_text())
        assert raw["base"] == base and raw["fault"] and raw["description"], name
    assert resolve(ctx, DEGRADING[0])["nvidia"] == resolve(ctx, "h100-healthy")["nvidia"]


def test_the_figures_worsen_step_by_step(ctx, tmp_path):
    metrics = [validate(ctx, tmp_path, name)["metrics"] for name in DEGRADING]
    assert [m["gpu.ecc_corrected_volatile_total"] for m in metrics] == [0, 3, 12, 40]
    assert [m["gpu.pcie_replay_total"] for m in metrics] == [0, 0, 0, 180]
    assert {m["gpu.pcie_width_min"] for m in metrics} == {16}  # the link has not trained down yet


@pytest.mark.parametrize("name", DEGRADING)
def test_every_fixed_gpu_and_ib_check_still_passes(ctx, tmp_path, name):
    checks = {c["id"]: c["status"] for c in validate(ctx, tmp_path, name)["checks"]}
    checks.pop("gpu.fabric_manager")  # systemctl is no replayed tool (test_hwreplay_installed.py)
    judged = {check: status for check, status in checks.items() if check.startswith(("gpu.", "ib."))}
    assert judged and set(judged.values()) <= {"pass", "skip"}, judged


def test_the_trend_reports_drift_at_the_last_step(ctx, tmp_path):
    reports = []
    for number, name in enumerate(DEGRADING):
        node = {**validate(ctx, tmp_path, name), "host": "gpu-1"}
        reports.append({"run": {"id": f"run-{number}"}, "nodes": [node]})
    drifts = trend(reports)["nodes"]["gpu-1"]["drifts"]
    fired = {(d["metric"], d["rule"]) for d in drifts}
    assert fired == {
        ("gpu.ecc_corrected_volatile_total", "own_baseline"),
        ("gpu.ecc_corrected_volatile_total", "monotonic_rise"),
        ("gpu.pcie_replay_total", "own_baseline"),
    }
