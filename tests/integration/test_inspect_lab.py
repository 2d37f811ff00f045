"""`clusterforge inspect` on the shared lab (conftest.py): drift before any fixed check fails, and the
timers on the lab's control node, which is also its ClusterForge controller (the checkout is
bind-mounted read-only there at the same path: cli/clusterforge/lab/model.py, clusterforge_checkout).

1. gpu-01 steps through the degrading replay profiles (h100-degrading-1 .. -4: correctable ECC errors
   rising on GPU 2, then GPU 5's PCIe link replaying packets); `inspect run` keeps one report per
   step. Every fixed check of gpu-01 passes in each run, and `inspect trend` reports drift on both
   figures for gpu-01 and none on the healthy nodes. gpu-01's profile is restored at the end.
2. `inspect install --on cftest-ctl-01` writes the quick and full timers there; systemd lists them,
   and starting the quick service once leaves a report in the node's history folder.

Runs after perf (LAB_ORDER 40), which leaves every node healthy, before add-node (80).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from labkit import BIN, INVENTORY, LAB, ROOT, VAULT_PASSWORD_FILE, explain, node, run, sh

pytestmark = pytest.mark.lab
LAB_ORDER = 45  # after perf (40: leaves every node healthy), before add-node (80)
DEGRADING = f"{LAB}-gpu-01"
STEPS = ("h100-degrading-1", "h100-degrading-2", "h100-degrading-3", "h100-degrading-4")
HEALTHY = [f"{LAB}-gpu-02", f"{LAB}-gpu-03", f"{LAB}-npu-01", f"{LAB}-npu-02"]
CONTROLLER = f"{LAB}-ctl-01"
# On the controller: the inventory's default inspect_history_dir.
NODE_HISTORY = "/var/lib/clusterforge/inspect"
# The lab's storage shares this machine's disks and CPUs with the test run: a slow fsync there is
# the host's load, not the node's (the figure's noise floor is for real mounts).
HOST_BOUND = {"node.mount_probe_ms"}


def set_profile(host: str, profile: str) -> None:
    proc = node(host, "hwreplay", "profile", "set", profile, timeout=120)
    assert proc.returncode == 0, explain(proc)


def current_profile(host: str) -> str:
    return sh(host, "cat /var/lib/hwreplay/profile").strip()


@pytest.fixture(scope="module")
def history(lab, tmp_path_factory):
    """One quick inspection run per step of the degrading profile; gpu-01's profile restored after."""
    folder = tmp_path_factory.mktemp("inspect-history")
    original = current_profile(DEGRADING)
    try:
        for step in STEPS:
            set_profile(DEGRADING, step)
            command = ("inspect", "run", "-i", INVENTORY, "--history", folder)
            proc = run(BIN / "clusterforge", *command, timeout=900)
            assert proc.returncode in (0, 3), explain(proc)
        yield folder
    finally:
        set_profile(DEGRADING, original)


def reports(folder: Path) -> list[dict]:
    runs = sorted(p for p in folder.iterdir() if p.name.endswith("-quick"))
    assert len(runs) == len(STEPS), [p.name for p in folder.iterdir()]
    return [json.loads((run_dir / "report.json").read_text()) for run_dir in runs]


def test_every_fixed_check_of_the_degrading_node_passes_in_each_run(history):
    for step, report in zip(STEPS, reports(history), strict=True):
        (degrading,) = [n for n in report["nodes"] if n["host"] == DEGRADING]
        bad = {c["id"]: c["message"] for c in degrading["checks"] if c["status"] in ("fail", "error")}
        assert not bad, f"{step}: {bad}"
        gpu = {c["id"]: c["status"] for c in degrading["checks"] if c["id"].startswith("gpu.")}
        assert gpu and set(gpu.values()) <= {"pass", "skip"}, f"{step}: {gpu}"


def test_the_figures_worsen_run_by_run(history):
    metrics = [
        next(n for n in report["nodes"] if n["host"] == DEGRADING)["metrics"] for report in reports(history)
    ]
    assert [m["gpu.ecc_corrected_volatile_total"] for m in metrics] == [0, 3, 12, 40]
    assert [m["gpu.pcie_replay_total"] for m in metrics] == [0, 0, 0, 180]
    assert {m["gpu.pcie_width_min"] for m in metrics} == {16}


def test_the_trend_reports_drift_on_the_degrading_node_only(history):
    proc = run(BIN / "clusterforge", "inspect", "trend", "--history", history, "--format", "json")
    assert proc.returncode == 3, explain(proc)
    result = json.loads(proc.stdout)
    drifting = {d["metric"] for d in result["nodes"][DEGRADING]["drifts"]}
    wanted = {"gpu.ecc_corrected_volatile_total", "gpu.pcie_replay_total"}
    assert wanted <= drifting, result["nodes"][DEGRADING]
    for host in HEALTHY:
        drifts = [d for d in result["nodes"][host]["drifts"] if d["metric"] not in HOST_BOUND]
        assert drifts == [], f"{host}: {drifts}"
    html = run(BIN / "clusterforge", "inspect", "trend", "--history", history, "--format", "html")
    assert html.returncode == 3 and html.stdout.count('<svg class="spark"') >= 2, explain(html)


@pytest.fixture(scope="module")
def timers(lab):
    proc = run(
        BIN / "clusterforge", "inspect", "install", "-i", INVENTORY, "--on", CONTROLLER,
        "-e", f"clusterforge_cli={BIN / 'clusterforge'}",
        "-e", f"clusterforge_inventory={INVENTORY}",
        "-e", f"clusterforge_vault_password_file={VAULT_PASSWORD_FILE}",
        timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, explain(proc)
    assert str(ROOT) in sh(CONTROLLER, f"findmnt --noheadings --output TARGET {ROOT}"), "checkout not mounted"
    return proc


def test_the_timers_are_registered_on_the_controller(timers):
    listed = sh(CONTROLLER, "systemctl list-timers --all --no-pager")
    for level in ("quick", "full"):
        assert f"clusterforge-inspect-{level}.timer" in listed, listed
    unit = sh(CONTROLLER, "cat /etc/systemd/system/clusterforge-inspect-quick.service")
    assert unit.startswith("# managed by clusterforge ops_timers owner=inspect"), unit
    assert sh(CONTROLLER, "stat -c %a /etc/clusterforge/ops-timers-inspect.env").strip() == "600"


def test_the_quick_service_stores_a_report_on_the_controller(timers):
    started = node(CONTROLLER, "systemctl", "start", "clusterforge-inspect-quick.service", timeout=900)
    journal = sh(CONTROLLER, "journalctl -u clusterforge-inspect-quick.service --no-pager -n 60 || true")
    assert started.returncode == 0, f"{explain(started)}\njournal:\n{journal}"
    found = sh(CONTROLLER, f"ls -1 {NODE_HISTORY}/*-quick/report.json")
    report = json.loads(sh(CONTROLLER, f"cat {found.split()[-1]}"))
    assert {n["host"] for n in report["nodes"]} >= {DEGRADING, *HEALTHY, CONTROLLER}, found
