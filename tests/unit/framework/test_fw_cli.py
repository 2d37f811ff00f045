"""`clusterforge validate --level framework` through its entry point, ansible-runner replaced by nodes
answering with node results judged from the probe fixtures: the flag, its refusals, the preflight of
framework_env, and the reports and exit code of workflow.finish."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from cfcore.checks.framework import judge
from clusterforge.main import main
from clusterforge.validation import workflow

FIXTURES = Path(__file__).parent / "fixtures"


def run_cli(*args):
    with pytest.raises(SystemExit) as exited:
        main(["validate", *args])
    return exited.value.code


def inventory(tmp_path: Path, env: object = None) -> Path:
    hosts = {
        "gpu-01": {"ansible_host": "10.0.0.1", "node_sku": "hgx-h100-8gpu", "rack": "r1"},
        "gpu-02": {"ansible_host": "10.0.0.2", "node_sku": "hgx-h100-8gpu", "rack": "r1"},
        "npu-01": {"ansible_host": "10.0.1.1", "node_sku": "atlas-800t-a2", "rack": "r2"},
        "ctl-01": {"ansible_host": "10.0.2.1", "node_sku": "cpu-generic", "rack": "r3"},
    }
    document = {
        "all": {
            "hosts": hosts,
            "children": {
                "gpu_nvidia": {"hosts": {"gpu-01": None, "gpu-02": None}},
                "npu_ascend": {"hosts": {"npu-01": None}},
            },
        }
    }
    path = tmp_path / "inv"
    (path / "group_vars").mkdir(parents=True)
    (path / "hosts.yml").write_text(yaml.safe_dump(document))
    if env is not None:
        (path / "group_vars" / "all.yml").write_text(yaml.safe_dump({"framework_env": env}))
    return path


class Nodes:
    """Answers playbooks/validate_framework.yml like nodes would, from the probe fixtures."""

    def __init__(self, reports: dict[str, str]):
        self.reports = reports
        self.calls: list[dict] = []

    def __call__(self, playbook, inventory, private_dir, on_event, *, extravars=None, limit=None, **_):
        self.calls.append({"playbook": Path(playbook).name, "extravars": extravars, "limit": limit})
        for host, name in self.reports.items():
            vendor = "huawei" if host.startswith("npu") else "nvidia"
            report = json.loads((FIXTURES / f"{name}.json").read_text())
            checks, metrics = judge(report, {"vendor": vendor, "count": 8, "bom": {}, "allreduce_max_s": 30})
            result = {
                "host": host,
                "node_sku": None,
                "level": "framework",
                "status": "pass",
                "checks": checks,
                "metrics": metrics,
                "facts": {},
            }
            on_event("runner_on_ok", {"host": host, "res": {"node_result": result}})
        return _Run()


class _Run:
    rc = 0
    status = "successful"
    stdout_path = None

    def stdout_tail(self) -> str:
        return ""


def test_healthy_nodes_exit_0_and_the_playbook_gets_the_accelerator_groups(tmp_path, monkeypatch):
    nodes = Nodes({"gpu-01": "nvidia-healthy", "gpu-02": "nvidia-healthy", "npu-01": "ascend-healthy"})
    monkeypatch.setattr(workflow, "run_playbook", nodes)
    out = tmp_path / "out"
    inv = inventory(tmp_path, {"kind": "venv", "path": "/opt/train/venv"})
    assert run_cli("-i", str(inv), "--level", "framework", "--out", str(out), "--format", "json") == 0
    [call] = nodes.calls
    assert call["playbook"] == "validate_framework.yml"
    assert call["extravars"] == {
        "validate_hosts": "gpu_nvidia:npu_ascend:npu_ppu",
        "validate_block_on_fail": False,
    }
    report = json.loads((out / "report.json").read_text())
    assert report["run"]["level"] == "framework"
    assert sorted(n["host"] for n in report["nodes"]) == ["gpu-01", "gpu-02", "npu-01"]  # ctl-01 is no target


def test_a_cpu_build_and_a_missing_torch_npu_exit_3_in_every_report(tmp_path, monkeypatch):
    nodes = Nodes({"gpu-01": "nvidia-cpu-build", "gpu-02": "nvidia-healthy", "npu-01": "ascend-no-torch-npu"})
    monkeypatch.setattr(workflow, "run_playbook", nodes)
    out = tmp_path / "out"
    inv = inventory(tmp_path, {"kind": "venv", "path": "/opt/train/venv"})
    assert run_cli("-i", str(inv), "--level", "framework", "--out", str(out), "--format", "json") == 3
    report = json.loads((out / "report.json").read_text())
    assert sorted(report["summary"]["unhealthy_nodes"]) == ["gpu-01", "npu-01"]
    assert "framework.devices" in (out / "junit.xml").read_text()
    assert 'check="framework.allreduce"' in (out / "clusterforge.prom").read_text()


@pytest.mark.parametrize(
    ("env", "said"),
    [
        (None, "framework_env is not set"),
        ({"kind": "venv"}, "framework_env of kind venv needs path"),
    ],
)
def test_a_missing_or_bad_framework_env_is_invalid_input(tmp_path, monkeypatch, capsys, env, said):
    monkeypatch.setattr(workflow, "run_playbook", Nodes({}))
    assert (
        run_cli("-i", str(inventory(tmp_path, env)), "--level", "framework", "--out", str(tmp_path / "o"))
        == 2
    )
    err = capsys.readouterr().err
    assert said in err and "3 host(s) have no usable training environment" in err


def test_the_flag_is_refused_where_it_does_not_apply(tmp_path, capsys):
    inv = inventory(tmp_path, {"kind": "venv", "path": "/opt/train/venv"})
    assert run_cli("--from-capture", str(tmp_path), "--level", "framework") == 2
    assert "--level framework runs on live nodes" in capsys.readouterr().err
    assert run_cli("-i", str(inv), "--level", "framework", "--skip-check", "gpu.xid") == 2
    assert "--skip-check does not apply to --level framework" in capsys.readouterr().err
    assert run_cli("-i", str(inv), "--level", "framework", "--max-rounds", "2") == 2
    assert run_cli("-i", str(inv), "--level", "framework", "--limit", "ctl-01") == 2
    assert "no host of gpu_nvidia or npu_ascend or npu_ppu" in capsys.readouterr().err
