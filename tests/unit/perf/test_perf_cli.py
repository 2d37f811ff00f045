"""`clusterforge validate --level perf` through its entry point, ansible-runner replaced by a simulated
fleet: the single-node results and the pair tests come from an oracle with injected faults, so the
rounds, verdicts, perf.pairs checks, report section and exit code are the CLI's own work."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from clusterforge.main import main
from clusterforge.validation import perf as perf_workflow
from clusterforge.validation import workflow

RAILS = [f"mlx5_{i}" for i in range(8)]


def run_cli(*args):
    with pytest.raises(SystemExit) as exited:
        main(["validate", *args])
    return exited.value.code


def inventory(tmp_path: Path, gpus: int = 6, racks: int = 3) -> Path:
    hosts = {
        f"gpu-{n:02d}": {"ansible_host": f"10.0.0.{n}", "node_sku": "hgx-h100-8gpu", "rack": f"r{n % racks}"}
        for n in range(1, gpus + 1)
    }
    hosts["npu-01"] = {"ansible_host": "10.0.1.1", "node_sku": "atlas-800t-a2", "rack": "r9"}
    document = {
        "all": {
            "children": {
                "gpu_nvidia": {"hosts": {h: v for h, v in hosts.items() if h.startswith("gpu")}},
                "npu_ascend": {"hosts": {"npu-01": hosts["npu-01"]}},
                "slurm_workers": {"hosts": {h: None for h in hosts if h.startswith("gpu")}},
            }
        }
    }
    path = tmp_path / "inv"
    path.mkdir()
    (path / "hosts.yml").write_text(yaml.safe_dump(document))
    return path


class Fleet:
    """Answers the playbook's phases like nodes would: `alone` host -> status of the single-node
    tests, `bad_ports` {(host, rail)} fail every pair test through them."""

    def __init__(self, alone=None, bad_ports=()):
        self.alone = alone or {}
        self.bad_ports = set(bad_ports)
        self.rounds: list[dict] = []

    def __call__(self, playbook, inventory, private_dir, on_event, *, extravars=None, limit=None, **_):
        phase = extravars["perf_phase"]
        if phase == "local":
            for host in (limit or "").split(",") if limit else self.hosts(inventory):
                on_event("runner_on_ok", {"host": host, "res": {"node_result": self.local(host)}})
        else:
            roles = extravars["perf_pair_roles"]
            self.rounds.append(roles)
            for host, role in roles.items():
                if role["side"] == "a":
                    on_event("runner_on_ok", {"host": host, "res": {"pair_result": self.pair(host, role)}})
        return _Run()

    @staticmethod
    def hosts(inventory) -> list[str]:
        document = yaml.safe_load((Path(inventory) / "hosts.yml").read_text())
        groups = document["all"]["children"]
        return [*groups["gpu_nvidia"]["hosts"], *groups["npu_ascend"]["hosts"]]

    def local(self, host: str) -> dict:
        status = self.alone.get(host, "pass")
        gpu = host.startswith("gpu")
        return {
            "host": host,
            "node_sku": "hgx-h100-8gpu" if gpu else "atlas-800t-a2",
            "level": "perf",
            "status": status,
            "checks": [
                {
                    "id": "perf.nccl_local" if gpu else "perf.hccl_local",
                    "status": status,
                    "message": "simulated",
                    "evidence": {},
                    "remedy": "" if status == "pass" else "fix",
                }
            ],
            "metrics": {},
            "facts": {
                "perf_rails": RAILS if gpu else [],
                "perf_nccl": gpu,
                "perf_npu_nics": [] if gpu else [0, 1],
            },
        }

    def pair(self, host: str, role: dict) -> dict:
        peer = role["peer"]["name"]
        results = {}
        for rail in role["rails"]:
            bad = (host, rail) in self.bad_ports or (peer, rail) in self.bad_ports
            results[rail] = {
                "status": "fail" if bad else "pass",
                "gbps": 120.0 if bad else 391.0,
                "message": "simulated",
                "evidence": {},
            }
        return {"a": host, "b": peer, "results": results}


class _Run:
    rc = 0
    status = "successful"
    stdout_path = None

    def stdout_tail(self) -> str:
        return ""


def run_perf(tmp_path, monkeypatch, fleet: Fleet, *extra: str) -> tuple[int, dict]:
    monkeypatch.setattr(perf_workflow, "run_playbook", fleet)  # the pairs phases
    monkeypatch.setattr(workflow, "run_playbook", fleet)  # the local phase (workflow.run_node_playbook)
    out = tmp_path / "out"
    code = run_cli(
        "-i", str(inventory(tmp_path)), "--level", "perf", "--out", str(out), "--format", "json", *extra
    )
    return code, json.loads((out / "report.json").read_text())


def test_a_healthy_fleet_passes_after_one_survey_round(tmp_path, monkeypatch, capsys):
    fleet = Fleet()
    code, report = run_perf(tmp_path, monkeypatch, fleet)
    assert code == 0, capsys.readouterr().err
    assert report["perf"]["rounds"] == len(fleet.rounds) == 1
    assert {v["verdict"] for h, v in report["perf"]["verdicts"].items() if h.startswith("gpu")} == {"healthy"}
    survey = fleet.rounds[0]
    assert sorted(survey) == [f"gpu-{n:02d}" for n in range(1, 7)]  # 6 GPU nodes: 3 pairs; the NPU alone
    for role in survey.values():
        assert "nccl" in role["rails"] and set(RAILS) <= set(role["rails"]), role
        if role["side"] == "a":
            assert role["peer"]["address"].startswith("10.0.0.") and role["self_address"].startswith(
                "10.0.0."
            )
    gpu = next(n for n in report["nodes"] if n["host"] == "gpu-01")
    assert any(c["id"] == "perf.pairs" and c["status"] == "pass" for c in gpu["checks"])


def test_a_bad_cable_is_a_bad_link_of_one_node_found_by_re_pairing(tmp_path, monkeypatch, capsys):
    fleet = Fleet(bad_ports={("gpu-04", "mlx5_3")})
    code, report = run_perf(tmp_path, monkeypatch, fleet)
    assert code == 3
    verdicts = report["perf"]["verdicts"]
    assert verdicts["gpu-04"]["verdict"] == "bad_link" and verdicts["gpu-04"]["rails"] == ["mlx5_3"]
    assert all(
        v["verdict"] == "healthy" for h, v in verdicts.items() if h.startswith("gpu") and h != "gpu-04"
    )
    assert report["summary"]["unhealthy_nodes"] == ["gpu-04"]
    assert len(fleet.rounds) == 2 and "gpu-04" in fleet.rounds[1]
    # The re-pairing tests only the suspect rail.
    assert fleet.rounds[1]["gpu-04"]["rails"] == ["mlx5_3"]
    check = next(c for c in report["nodes"][3]["checks"] if c["id"] == "perf.pairs")
    assert check["status"] == "fail" and "mlx5_3" in check["message"] and check["remedy"]


def test_a_node_that_fails_alone_is_not_paired(tmp_path, monkeypatch, capsys):
    fleet = Fleet(alone={"gpu-02": "fail"})
    code, report = run_perf(tmp_path, monkeypatch, fleet)
    assert code == 3
    assert report["perf"]["verdicts"]["gpu-02"]["verdict"] == "bad_node"
    assert all("gpu-02" not in roles for roles in fleet.rounds)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--level", "perf", "--from-capture", "/tmp"], "a capture cannot be benchmarked"),
        (["-i", "x", "--max-rounds", "2"], "--max-rounds only applies with --level perf"),
        (["-i", "x", "--level", "perf", "--skip-check", "gpu.xid"], "--skip-check does not apply"),
    ],
)
def test_bad_flags_exit_2(args, words, capsys):
    assert run_cli(*args) == 2
    assert words in capsys.readouterr().err


def test_no_accelerator_node_in_the_limit_is_bad_input(tmp_path, capsys):
    code = run_cli("-i", str(inventory(tmp_path)), "--level", "perf", "--limit", "nonexistent*")
    assert code == 2
