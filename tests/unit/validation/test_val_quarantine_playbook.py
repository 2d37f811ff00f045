"""playbooks/quarantine.yml for real, on this machine (local connection) with a stand-in scontrol.

The stand-in records its argument vector, so the test sees exactly what a real
scontrol would receive (no shell in between), and fails for one node name to
exercise the failure path.
"""

import os
import shutil
import textwrap
from datetime import UTC, datetime

import pytest
from clusterforge.validation.inventory import load_inventory
from clusterforge.validation.quarantine import plan
from clusterforge.validation.quarantine_apply import apply_plan
from valfactory import xid79_node

pytestmark = pytest.mark.slow
WHEN = datetime(2026, 11, 30, 12, 5, tzinfo=UTC)

FAKE_SCONTROL = """\
#!/bin/sh
for arg in "$@"; do printf '%s\\n' "$arg"; done >> "{log}"
echo --- >> "{log}"
case "$2" in NodeName=gpu-bad) echo "scontrol: error: Invalid node name specified" >&2; exit 1;; esac
"""


@pytest.fixture
def lab(tmp_path):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(
        textwrap.dedent("""\
            all:
              vars: {ansible_connection: local, ansible_become: false}
              children:
                slurm_controller: {hosts: {ctl-01: {}}}
                gpu_nvidia: {hosts: {gpu-01: {}, gpu-bad: {}}}
        """)
    )
    assert shutil.which("scontrol") is None, "a real scontrol on this machine would be called"
    return tmp_path, load_inventory(inventory)


def install_scontrol(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "scontrol.log"
    script = bin_dir / "scontrol"
    script.write_text(FAKE_SCONTROL.format(log=log))
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    return log


def test_drains_through_scontrol_and_reports_each_outcome(lab, monkeypatch):
    tmp_path, inventory = lab
    log = install_scontrol(tmp_path, monkeypatch)
    the_plan = plan([xid79_node("gpu-01"), xid79_node("gpu-bad")], {}, when=WHEN)
    section = apply_plan(the_plan, inventory, tmp_path / "runner", dry_run=False)
    slurm = {a["host"]: a for a in section["actions"] if a["scheduler"] == "slurm"}
    assert slurm["gpu-01"]["outcome"] == "ran"
    assert slurm["gpu-bad"]["outcome"] == "failed"
    assert "Invalid node name specified" in slurm["gpu-bad"]["detail"]
    calls = log.read_text().split("---\n")
    assert calls[0].splitlines() == [
        "update",
        "NodeName=gpu-01",
        "State=DRAIN",
        "Reason=clusterforge: gpu.xid 2026-11-30T12:05Z",
    ]
    k8s = [a for a in section["actions"] if a["scheduler"] == "kubernetes"]
    assert len(k8s) == 4 and all(a["outcome"] == "not run" for a in k8s)
    assert any("no host in group k8s_control_plane" in note for note in section["notes"])


def test_check_mode_reports_without_running(lab, monkeypatch):
    tmp_path, inventory = lab
    log = install_scontrol(tmp_path, monkeypatch)
    section = apply_plan(plan([xid79_node("gpu-01")], {}, when=WHEN), inventory, tmp_path / "r", dry_run=True)
    slurm = [a for a in section["actions"] if a["scheduler"] == "slurm"]
    assert [(a["outcome"], a["detail"]) for a in slurm] == [("would run", "check mode on ctl-01")]
    assert not log.exists()


def test_without_scontrol_nothing_runs_and_the_reason_is_given(lab):
    tmp_path, inventory = lab
    section = apply_plan(
        plan([xid79_node("gpu-01")], {}, when=WHEN), inventory, tmp_path / "r", dry_run=False
    )
    slurm = [a for a in section["actions"] if a["scheduler"] == "slurm"]
    assert [(a["outcome"], a["detail"]) for a in slurm] == [
        ("not run", "scontrol is not installed on ctl-01")
    ]
    assert "slurm: scontrol not found on ctl-01: commands not run" in section["notes"]
