"""Role scheduler_drain for real, on this machine (local connection) with stand-in scontrol and kubectl.

The stand-ins record their argument vectors; scontrol's `show node` reports the node
draining (MIXED+DRAIN) twice, then DRAINED (IDLE+DRAIN), so the wait is seen to poll.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from clusterforge.ansible_env import ansible_env, ansible_tool

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[3]
SCONTROL = """#!/bin/sh
printf '%s\\n' "$*" >> "{log}"
case "$1" in
show)
  n=$(cat "{count}" 2>/dev/null || echo 0); echo $((n + 1)) > "{count}"
  if [ "$n" -lt 2 ]; then state=MIXED+DRAIN; else state=IDLE+DRAIN; fi
  echo "NodeName=$4 Arch=x86_64 State=$state Reason=upgrade 2026-12 [root@2026-12-01T10:00:00]";;
esac
"""
KUBECTL = """#!/bin/sh
printf '%s\\n' "$*" >> "{log}"
echo "node/$2 drained"
"""


def run_role(
    tmp_path: Path, role_vars: dict, *flags: str, tools=("scontrol", "kubectl")
) -> subprocess.CompletedProcess:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, text in (("scontrol", SCONTROL), ("kubectl", KUBECTL)):
        if name not in tools:
            continue
        (bin_dir / name).write_text(text.format(log=tmp_path / f"{name}.log", count=tmp_path / "shows"))
        (bin_dir / name).chmod(0o755)
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(
        textwrap.dedent(f"""\
            all:
              vars: {{ansible_connection: local, ansible_python_interpreter: {sys.executable}}}
              children:
                slurm_controller: {{hosts: {{ctl-01: {{}}}}}}
                k8s_control_plane: {{hosts: {{cp-01: {{}}}}}}
        """)
    )
    playbook = tmp_path / "play.yml"
    playbook.write_text(
        textwrap.dedent("""\
            - hosts: ctl-01
              gather_facts: false
              tasks:
                - ansible.builtin.import_role:
                    name: clusterforge.cluster.scheduler_drain
                - ansible.builtin.copy:
                    content: "{{ scheduler_drain_report | to_json }}"
                    dest: "{{ report_file }}"
                  check_mode: false
        """)
    )
    env = ansible_env()
    env["PATH"] = f"{bin_dir}:{env['PATH']}"
    extra = {**role_vars, "report_file": str(tmp_path / "report.json"), "scheduler_drain_kubeconfig": "/none"}
    return subprocess.run(
        [
            ansible_tool("ansible-playbook"),
            "-i",
            str(inventory),
            str(playbook),
            "-e",
            json.dumps(extra),
            *flags,
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=300,
        check=False,
    )


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


NODES = [
    {"name": "gpu-01", "scheduler": "slurm", "reason": "upgrade 2026-12"},
    {"name": "gpu-01", "scheduler": "kubernetes", "reason": "upgrade"},
]


def test_drain_waits_until_drained_and_drains_kubernetes_with_a_timeout(tmp_path):
    done = run_role(
        tmp_path,
        {"scheduler_drain_nodes": NODES, "scheduler_drain_timeout_s": 30, "scheduler_drain_poll_s": 1},
    )
    assert done.returncode == 0, done.stdout[-3000:]
    assert lines(tmp_path / "scontrol.log") == [
        "update NodeName=gpu-01 State=DRAIN Reason=upgrade 2026-12",
        "show node -o gpu-01",
        "show node -o gpu-01",
        "show node -o gpu-01",
    ]
    assert lines(tmp_path / "kubectl.log") == [
        "drain gpu-01 --ignore-daemonsets --delete-emptydir-data --timeout=30s"
    ]
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["slurm"]["controller"] == "ctl-01" and report["kubernetes"]["controller"] == "cp-01"
    assert [r["rc"] for r in report["slurm"]["results"]] == [0]
    assert report["kubernetes"]["results"][0]["stdout"] == "node/gpu-01 drained"


def test_check_mode_reports_and_runs_nothing(tmp_path):
    done = run_role(tmp_path, {"scheduler_drain_nodes": NODES}, "--check")
    assert done.returncode == 0, done.stdout[-3000:]
    assert lines(tmp_path / "scontrol.log") == [] and lines(tmp_path / "kubectl.log") == []
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["check_mode"] is True
    assert [r.get("skipped") for r in report["slurm"]["results"] + report["kubernetes"]["results"]] == [
        True,
        True,
    ]


def test_resume_needs_no_reason_and_does_not_wait(tmp_path):
    nodes = [{"name": "gpu-01", "scheduler": "slurm"}, {"name": "gpu-01", "scheduler": "kubernetes"}]
    done = run_role(tmp_path, {"scheduler_drain_nodes": nodes, "scheduler_drain_action": "resume"})
    assert done.returncode == 0, done.stdout[-3000:]
    assert lines(tmp_path / "scontrol.log") == ["update NodeName=gpu-01 State=RESUME"]
    assert lines(tmp_path / "kubectl.log") == ["uncordon gpu-01"]


def test_a_bad_entry_fails_before_anything_runs(tmp_path):
    nodes = [*NODES, {"name": "gpu-02;reboot", "scheduler": "slurm", "reason": "x"}]
    done = run_role(tmp_path, {"scheduler_drain_nodes": nodes})
    assert done.returncode != 0
    assert "nothing was run: scheduler_drain_nodes[2]: slurm node refused" in done.stdout
    assert lines(tmp_path / "scontrol.log") == [] and lines(tmp_path / "kubectl.log") == []
    assert os.path.exists(tmp_path / "report.json") is False


def test_a_missing_scontrol_fails_the_role_after_reporting(tmp_path):
    # PATH: the stand-in kubectl only, then the system's folders (no scontrol on this machine).
    assert shutil.which("scontrol") is None
    done = run_role(tmp_path, {"scheduler_drain_nodes": NODES[:1]}, tools=("kubectl",))
    assert done.returncode != 0
    assert "scheduler_drain drain failed: scontrol not found on ctl-01" in done.stdout
    quiet = run_role(
        tmp_path, {"scheduler_drain_nodes": NODES[:1], "scheduler_drain_fail_on_error": False}, tools=()
    )
    assert quiet.returncode == 0, quiet.stdout[-3000:]
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["slurm"]["tool"] == "" and report["slurm"]["results"][0]["skipped"] is True
    assert report["kubernetes"]["results"] == []
