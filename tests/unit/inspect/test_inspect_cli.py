"""`clusterforge inspect run|trend|install` through the entry point; ansible-runner is replaced at the
same boundary as the validate and perf CLI tests (`run_playbook`): a simulated fleet answers
playbooks/validate.yml with node results, so history, pruning, textfile, quarantine and exit codes
are the CLI's own work."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml
from clusterforge import ops_timers as install_module
from clusterforge.inspection import history
from clusterforge.inspection import run as run_module
from clusterforge.main import main
from clusterforge.validation import quarantine_apply, workflow

HOSTS = ("gpu-01", "gpu-02", "gpu-03")


class Run:
    def __init__(self, rc: int = 0, stats: dict | None = None):
        self.rc, self.status, self.stdout_path, self.stats = (
            rc,
            "successful" if rc == 0 else "failed",
            None,
            stats or {},
        )

    def stdout_tail(self, lines: int = 15) -> str:
        return "TASK [ops_timers : Fail when clusterforge_cli is missing] fatal" if self.rc else ""


class Fleet:
    """Answers validate.yml: `failing` host -> failing check id; `metrics` host -> figures."""

    def __init__(self):
        self.failing: dict[str, str] = {}
        self.metrics: dict[str, dict] = {}
        self.limits: list[str | None] = []

    def __call__(self, playbook, inventory, private_dir, on_event, *, extravars=None, limit=None, **_):
        assert Path(playbook).name == "validate.yml"
        self.limits.append(limit)
        for host in limit.split(",") if limit else (*HOSTS, "ctl-01"):
            bad = self.failing.get(host)
            checks = [
                {"id": "gpu.count", "status": "pass", "message": "8 GPUs", "evidence": {}, "remedy": ""}
            ]
            if bad:
                checks.append(
                    {"id": bad, "status": "fail", "message": "broken", "evidence": {}, "remedy": "fix"}
                )
            result = {
                "host": host,
                "node_sku": "hgx-h100-8gpu",
                "level": extravars["validate_level"],
                "status": "fail" if bad else "pass",
                "checks": checks,
                "metrics": self.metrics.get(host, {"gpu.pcie_replay_total": 0}),
                "facts": {},
                "source": "live",
                "collected_at": "2026-12-01T03:15:00Z",
                "duration_s": 0.5,
            }
            on_event("runner_on_ok", {"host": host, "res": {"node_result": result}})
        return Run()


def write_inventory(tmp_path: Path, **all_vars) -> Path:
    document = {
        "all": {
            "vars": all_vars,
            "children": {
                "gpu_nvidia": {"hosts": {h: {"node_sku": "hgx-h100-8gpu"} for h in HOSTS}},
                "slurm_workers": {"hosts": dict.fromkeys(HOSTS)},
                "slurm_controller": {"hosts": {"ctl-01": {"node_sku": "cpu-generic"}}},
                "clusterforge_controller": {"hosts": {"ctl-01": None}},
            },
        }
    }
    path = tmp_path / "inv"
    path.mkdir(exist_ok=True)
    (path / "hosts.yml").write_text(yaml.safe_dump(document))
    return path


def cli(*args: str) -> int:
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    return exited.value.code


@pytest.fixture
def fleet(monkeypatch) -> Fleet:
    simulated = Fleet()
    monkeypatch.setattr(workflow, "run_playbook", simulated)
    return simulated


def inspect_run(inventory: Path, hist: Path, *extra: str, level: str = "quick") -> int:
    return cli("inspect", "run", "-i", str(inventory), "--level", level, "--history", str(hist), *extra)


def test_a_run_is_stored_whole_under_its_stamp(tmp_path, fleet):
    hist = tmp_path / "history"
    assert inspect_run(write_inventory(tmp_path), hist) == 0
    (folder,) = history.run_dirs(hist)
    assert history.RUN_NAME.match(folder.name) and folder.name.endswith("-quick")
    assert {"report.json", "report.html", "junit.xml", "clusterforge.prom", "inspect.json"} <= set(
        os.listdir(folder)
    )
    record = json.loads((folder / "inspect.json").read_text())
    assert (
        record["exit_code"] == 0
        and sorted(record["targets"]) == sorted([*HOSTS, "ctl-01"])
        and record["new_failures"] == {}
    )
    assert not [p for p in hist.iterdir() if p.name.startswith(".tmp-")]


def test_a_new_failure_exits_3_and_writes_the_textfile(tmp_path, fleet, monkeypatch):
    textfiles = tmp_path / "textfile"
    textfiles.mkdir()
    inventory = write_inventory(tmp_path, inspect_textfile_dir=str(textfiles))
    hist = tmp_path / "history"
    stamps = iter(["20261201T031500Z-quick", "20261202T031500Z-quick"])
    monkeypatch.setattr(history, "new_run_id", lambda level: next(stamps))
    assert inspect_run(inventory, hist) == 0
    fleet.failing["gpu-02"] = "gpu.xid"
    assert inspect_run(inventory, hist) == 3
    record = json.loads((hist / "20261202T031500Z-quick" / "inspect.json").read_text())
    assert record["new_failures"] == {"gpu-02": ["gpu.xid"]} and record["exit_code"] == 3
    prom = (textfiles / "clusterforge_inspect_quick.prom").read_text()
    assert 'clusterforge_inspect_new_failures{node="gpu-02",level="quick"} 1' in prom
    assert (
        'clusterforge_inspect_check_status{node="gpu-02",check="gpu.xid",status="fail",level="quick"} 1'
        in prom
    )
    assert 'clusterforge_inspect_last_run_exit_code{level="quick"} 3' in prom
    assert "gpu.count" not in prom  # passing checks are not series


def test_auto_quarantine_takes_out_only_nodes_that_newly_fail(tmp_path, fleet, monkeypatch):
    requests = []

    def quarantine_playbook(playbook, inventory, private_dir, on_event, *, extravars=None, **_):
        requests.append(extravars["quarantine_nodes"])
        return Run(stats={"artifact_data": {}})

    monkeypatch.setattr(quarantine_apply, "run_playbook", quarantine_playbook)
    inventory = write_inventory(tmp_path, inspect_auto_quarantine=True)
    hist = tmp_path / "history"
    stamps = iter(["20261201T031500Z-quick", "20261202T031500Z-quick"])
    monkeypatch.setattr(history, "new_run_id", lambda level: next(stamps))
    fleet.failing["gpu-01"] = "node.mounts"
    assert inspect_run(inventory, hist) == 3  # first run: gpu-01's failure is new
    fleet.failing["gpu-03"] = "gpu.xid"
    assert inspect_run(inventory, hist) == 3
    assert [[entry["name"] for entry in request] for request in requests] == [["gpu-01"], ["gpu-03"]]
    record = json.loads((hist / "20261202T031500Z-quick" / "inspect.json").read_text())
    assert [a["host"] for a in record["quarantine"]["actions"]] == ["gpu-03"]


def test_full_level_runs_only_on_idle_or_drained_slurm_nodes(tmp_path, fleet, monkeypatch):
    lines = [
        "NodeName=gpu-01 Arch=x86_64 State=IDLE Partitions=gpu",
        "NodeName=gpu-02 Arch=x86_64 State=ALLOCATED Partitions=gpu",
        "NodeName=gpu-03 Arch=x86_64 State=IDLE+DRAIN Reason=maintenance [root@2026-12-01T00:00:00]",
    ]
    asked = []

    def slurm(playbook, inventory, private_dir, on_event, **_):
        asked.append(Path(playbook).name)
        return Run(stats={"artifact_data": {"inspect_slurm_nodes": lines}})

    monkeypatch.setattr(run_module, "run_playbook", slurm)
    hist = tmp_path / "history"
    assert inspect_run(write_inventory(tmp_path), hist, level="full") == 0
    assert asked == ["inspect_slurm_states.yml"]
    assert [sorted(limit.split(",")) for limit in fleet.limits] == [["ctl-01", "gpu-01", "gpu-03"]]
    record = json.loads((history.run_dirs(hist)[0] / "inspect.json").read_text())
    assert record["skipped"] == {"gpu-02": "Slurm node gpu-02 is ALLOCATED: jobs may run there"}


def test_full_level_skips_slurm_workers_when_slurm_cannot_be_asked(tmp_path, fleet, monkeypatch):
    monkeypatch.setattr(run_module, "run_playbook", lambda *a, **k: Run(rc=2))
    hist = tmp_path / "history"
    assert inspect_run(write_inventory(tmp_path), hist, level="full") == 0
    assert fleet.limits == ["ctl-01"]


def test_retention_prunes_by_count_and_age_but_keeps_the_newest(tmp_path):
    hist = tmp_path / "history"
    now = datetime(2026, 12, 10, tzinfo=UTC)
    for days in (40, 20, 3, 2, 1):
        (hist / history.new_run_id("quick", now - timedelta(days=days))).mkdir(parents=True)
    (hist / "notes").mkdir()
    removed = history.prune(hist, keep_runs=3, keep_days=30, now=now)
    assert [p.name[:8] for p in removed] == ["20261031", "20261120"]
    assert len(history.run_dirs(hist)) == 3 and (hist / "notes").is_dir()
    assert history.prune(hist, keep_runs=0, keep_days=1, now=now + timedelta(days=99)) != []
    assert len(history.run_dirs(hist)) == 1  # the newest run always stays


def test_bad_retention_variable_is_exit_2_naming_it(tmp_path, fleet, capsys):
    code = inspect_run(write_inventory(tmp_path, inspect_keep_runs="many"), tmp_path / "h")
    assert code == 2
    assert "inspect_keep_runs" in capsys.readouterr().err


def degrading_history(tmp_path: Path) -> Path:
    hist = tmp_path / "history"
    for day, replays in enumerate([0, 0, 0, 180], start=1):
        folder = hist / f"202612{day:02d}T031500Z-quick"
        folder.mkdir(parents=True)
        nodes = [
            {
                "host": h,
                "node_sku": "hgx-h100-8gpu",
                "status": "pass",
                "checks": [{"id": "gpu.count", "status": "pass"}],
                "metrics": {"gpu.pcie_replay_total": replays if h == "gpu-01" else 0},
            }
            for h in HOSTS
        ]
        (folder / "report.json").write_text(json.dumps({"run": {"level": "quick"}, "nodes": nodes}))
    return hist


def test_trend_json_reports_drift_and_exits_3(tmp_path, capsys):
    assert cli("inspect", "trend", "--history", str(degrading_history(tmp_path)), "--format", "json") == 3
    result = json.loads(capsys.readouterr().out)
    assert result["schema"] == "clusterforge.inspect.trend/1" and result["summary"]["drifts"] == 1
    assert [d["metric"] for d in result["nodes"]["gpu-01"]["drifts"]] == ["gpu.pcie_replay_total"]
    assert result["nodes"]["gpu-02"]["drifts"] == []


def test_trend_last_narrows_the_window_and_says_when_history_is_too_short(tmp_path, capsys):
    hist = str(degrading_history(tmp_path))
    assert cli("inspect", "trend", "--history", hist, "--last", "3", "--format", "json") == 0
    result = json.loads(capsys.readouterr().out)
    assert [r["id"][:8] for r in result["runs"]] == ["20261202", "20261203", "20261204"]
    assert result["nodes"]["gpu-01"]["drifts"] == []
    assert any(note.startswith("gpu-01: history too short") for note in result["notes"])


def test_trend_html_has_a_sparkline_per_drift(tmp_path):
    out = tmp_path / "trend.html"
    assert (
        cli(
            "inspect",
            "trend",
            "--history",
            str(degrading_history(tmp_path)),
            "--format",
            "html",
            "--out",
            str(out),
        )
        == 3
    )
    page = out.read_text()
    assert page.count('<svg class="spark"') == 1 and "gpu.pcie_replay_total" in page
    assert "<script src" not in page and "<link" not in page


def test_trend_table_names_the_drifting_node(tmp_path, capsys):
    assert cli("inspect", "trend", "--history", str(degrading_history(tmp_path))) == 3
    out = capsys.readouterr().out
    assert "gpu-01" in out and "gpu.pcie_replay_total" in out and "own_baseline" in out


def test_a_quiet_history_exits_0(tmp_path, capsys):
    hist = degrading_history(tmp_path)
    for folder in history.run_dirs(hist)[-1:]:
        folder.rename(hist / ".tmp-half-written")
    assert cli("inspect", "trend", "--history", str(hist), "--format", "json") == 0


@pytest.mark.parametrize("setup", ["missing", "empty", "broken"])
def test_a_bad_history_is_exit_2_naming_the_file(tmp_path, capsys, setup):
    hist = tmp_path / "history"
    if setup != "missing":
        hist.mkdir()
    if setup == "broken":
        (hist / "20261201T031500Z-quick").mkdir()
        (hist / "20261201T031500Z-quick" / "report.json").write_text("{not json")
    assert cli("inspect", "trend", "--history", str(hist)) == 2
    err = capsys.readouterr().err
    assert str(hist) in err and "fix:" in err
    if setup == "broken":
        assert "20261201T031500Z-quick/report.json" in err


def test_install_passes_the_two_jobs_to_the_controller(tmp_path, monkeypatch):
    calls = []

    def playbook(
        path, inventory, private_dir, on_event, *, extravars=None, operator_vars=None, limit=None, **_
    ):
        calls.append((Path(path).name, {**(operator_vars or {}), **extravars}, limit))
        return Run()

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(install_module, "run_playbook", playbook)
    inventory = write_inventory(
        tmp_path, inspect_quick_schedule="*-*-* 01:00:00", inspect_history_dir="/srv/h"
    )
    assert (
        cli("inspect", "install", "-i", str(inventory), "-e", "clusterforge_cli=/opt/cf/bin/clusterforge")
        == 0
    )
    ((name, extravars, limit),) = calls
    assert (name, limit, extravars["ops_timers_hosts"], extravars["ops_timers_owner"]) == (
        "ops_timers.yml",
        "ctl-01",
        "ctl-01",
        "inspect",
    )
    quick, full = extravars["ops_timers_jobs"]
    assert quick["schedule"] == "*-*-* 01:00:00" and full["schedule"] == "Sun *-*-* 04:30:00"
    assert quick["args"] == [
        "inspect",
        "run",
        "-i",
        "{{ clusterforge_inventory }}",
        "--level",
        "quick",
        "--history",
        "/srv/h",
    ]
    assert extravars["clusterforge_cli"] == "/opt/cf/bin/clusterforge"


def test_install_without_a_controller_is_exit_2_naming_on_and_the_group(tmp_path, capsys):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {"hosts": {"gpu-01": {"node_sku": "hgx-h100-8gpu"}}}}))
    assert cli("inspect", "install", "-i", str(inventory)) == 2
    err = capsys.readouterr().err
    assert "--on" in err and "clusterforge_controller" in err


def test_install_failure_is_exit_3_with_the_task(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(install_module, "run_playbook", lambda *a, **k: Run(rc=2))
    assert cli("inspect", "install", "-i", str(write_inventory(tmp_path)), "--on", "gpu-01") == 3
    assert "Fail when clusterforge_cli is missing" in capsys.readouterr().err


def test_a_broken_earlier_run_does_not_cost_the_new_one(tmp_path, fleet, capsys):
    hist = tmp_path / "history"
    broken = hist / history.new_run_id("quick", datetime.now(UTC) - timedelta(days=1))
    broken.mkdir(parents=True)
    (broken / "report.json").write_text("[]")
    assert inspect_run(write_inventory(tmp_path), hist) == 0
    assert len(history.run_dirs(hist)) == 2
    assert f"{broken}/report.json is not a validation report" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        ("metrics", [1, 2], "'metrics' is a list, not a mapping of figures"),
        ("metrics", {"gpu.pcie_replay_total": 10**400}, "metric gpu.pcie_replay_total is out of range"),
        ("checks", {"id": "gpu.count"}, "'checks' is a dict, not a list"),
        # the table crashed on it (rich cannot render a list)
        (
            "checks",
            [{"id": "gpu.count", "status": "fail", "message": ["x"]}],
            "a check's 'message' is a list",
        ),
    ],
)
def test_trend_over_a_malformed_node_result_is_exit_2_naming_the_file(tmp_path, capsys, key, value, words):
    hist = degrading_history(tmp_path)
    latest = history.run_dirs(hist)[-1] / "report.json"
    report = json.loads(latest.read_text())
    report["nodes"][0][key] = value
    latest.write_text(json.dumps(report))
    for fmt in ("json", "table"):
        assert cli("inspect", "trend", "--history", str(hist), "--format", fmt) == 2
        err = capsys.readouterr().err
        assert f"error: {latest}: node gpu-01: {words}" in err and "fix: remove the broken run folder" in err


def test_trend_over_deeply_nested_json_is_exit_2(tmp_path, capsys):
    hist = degrading_history(tmp_path)
    (history.run_dirs(hist)[-1] / "report.json").write_text("[" * 100_000 + "]" * 100_000)
    assert cli("inspect", "trend", "--history", str(hist), "--format", "json") == 2
    err = capsys.readouterr().err
    assert "nested deeper than" in err and "fix:" in err and "Traceback" not in err
