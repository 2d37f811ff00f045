"""`clusterforge bringup` and `clusterforge runs` through the CLI's entry point, with the stages'
ansible-runner events scripted (fake_ansible.py) and everything else real: the inventory check,
the inventory, the ledger on disk, the summary and the exit codes (docs/design.md, "Bring-up
runs and the run ledger"). The validate stage is left out here (--skip validate): the lab
tests run it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from clusterforge.bringup import workflow
from clusterforge.main import main
from fake_ansible import FakeAnsible

HERE = Path(__file__).resolve().parent
HOSTS = ["n1", "n2", "n3", "n4", "n5"]
NO_VALIDATE = ["--skip", "validate"]
PLAYBOOK_STAGES = ["preflight", "base", "fabric", "accelerators", "storage", "schedulers", "monitoring"]


@pytest.fixture
def site(tmp_path, monkeypatch):
    inventory = tmp_path / "inv.yml"
    lines = ["all:", "  vars: {nvidia_driver_version: '570.124.06'}", "  hosts:"]
    lines += [
        f"    {h}: {{node_sku: cpu-generic, ansible_host: 10.9.0.{i}, rack: r1}}"
        for i, h in enumerate(HOSTS, 1)
    ]
    inventory.write_text("\n".join(lines) + "\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CI", raising=False)
    # The CLI points this process's Ansible at the checkout's ansible.cfg (use_project_config):
    # set here so that monkeypatch restores it afterwards, or later tests' subprocesses (an
    # ansible-galaxy install into a folder of its own) would inherit it.
    monkeypatch.setenv("ANSIBLE_CONFIG", str(HERE.parents[2] / "ansible.cfg"))
    return tmp_path, inventory


def install(monkeypatch, tmp_path, **kwargs) -> FakeAnsible:
    fake = FakeAnsible(tmp_path / "calls.jsonl", **kwargs)
    monkeypatch.setattr(workflow, "run_playbook", fake)
    return fake


def cli(*args) -> int:
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    return exited.value.code


def only_run(tmp_path) -> dict:
    [run] = [p for p in (tmp_path / ".clusterforge" / "runs").iterdir()]
    record = json.loads((run / "run.json").read_text())
    stages = {
        json.loads(p.read_text())["stage"]: json.loads(p.read_text()) for p in (run / "stages").glob("*.json")
    }
    return {"dir": run, "run": record, "stages": stages}


def test_a_clean_bringup_runs_every_stage_in_order_and_records_it(site, monkeypatch, capsys):
    tmp_path, inventory = site
    fake = install(monkeypatch, tmp_path)
    assert cli("bringup", "-i", str(inventory), *NO_VALIDATE) == 0
    assert [c["stage"] for c in fake.calls()] == PLAYBOOK_STAGES
    assert all(c["hosts"] == HOSTS and not c["check"] for c in fake.calls())
    ledger = only_run(tmp_path)
    run = ledger["run"]
    assert (run["status"], run["exit_code"]) == ("succeeded", 0) and run["ended"]
    assert run["hosts"] == HOSTS and run["stages"] == PLAYBOOK_STAGES
    assert run["bom"] == {"nvidia_driver_version": "570.124.06"}
    assert len(run["inventory"]["sha256"]) == 64 and run["attempts"][0]["pid"] == os.getpid()
    assert {s: r["status"] for s, r in ledger["stages"].items()} == dict.fromkeys(PLAYBOOK_STAGES, "ok")
    assert (ledger["dir"] / "artifacts" / "base-1" / "limit.txt").read_text().split() == HOSTS
    out = capsys.readouterr().out
    assert f"clusterforge runs show {ledger['dir'].name}" in out
    assert cli("runs", "list", "--format", "json") == 0
    [listed] = json.loads(capsys.readouterr().out)
    assert (listed["id"], listed["status"], listed["stages_ok"], listed["hosts"]) == (
        ledger["dir"].name, "succeeded", 7, 5,
    )  # fmt: skip


def test_a_failed_host_is_held_out_of_the_later_stages_and_the_exit_is_3(site, monkeypatch, capsys):
    tmp_path, inventory = site
    fake = install(monkeypatch, tmp_path, outcomes={"storage": {"n2": "failed"}})
    assert cli("bringup", "-i", str(inventory), *NO_VALIDATE) == 3
    calls = {c["stage"]: c["hosts"] for c in fake.calls()}
    assert calls["storage"] == HOSTS
    assert calls["schedulers"] == calls["monitoring"] == ["n1", "n3", "n4", "n5"]
    ledger = only_run(tmp_path)
    assert (ledger["run"]["status"], ledger["run"]["exit_code"]) == ("failed", 3)
    n2 = ledger["stages"]["storage"]["hosts"]["n2"]
    assert (n2["result"], n2["failed_task"], n2["message"]) == (
        "failed",
        "storage: the task",
        "storage broke on n2",
    )
    assert ledger["stages"]["monitoring"]["hosts"]["n2"]["result"] == "held"
    captured = capsys.readouterr()
    assert "n2: storage failed in 'storage: the task': storage broke on n2" in captured.out
    assert f"clusterforge bringup --resume {ledger['dir'].name}" in captured.err


def test_force_lets_a_failed_host_go_on(site, monkeypatch):
    tmp_path, inventory = site
    fake = install(monkeypatch, tmp_path, outcomes={"storage": {"n2": "failed"}})
    assert cli("bringup", "-i", str(inventory), *NO_VALIDATE, "--force") == 3
    assert {c["stage"]: c["hosts"] for c in fake.calls()}["schedulers"] == HOSTS


def test_a_systematic_failure_stops_the_run_at_the_threshold(site, monkeypatch, capsys):
    tmp_path, inventory = site
    fake = install(monkeypatch, tmp_path, outcomes={"base": {"n1": "failed", "n2": "unreachable"}})
    assert cli("bringup", "-i", str(inventory), *NO_VALIDATE, "--max-fail-percent", "30") == 3
    assert [c["stage"] for c in fake.calls()] == ["preflight", "base"]  # 2 of 5 > 30 %: stopped
    ledger = only_run(tmp_path)
    assert (ledger["run"]["status"], ledger["run"]["stopped_at"]) == ("stopped", "base")
    assert ledger["stages"]["fabric"]["status"] == "stopped"
    assert "stopped after stage base: 2 host(s) failed" in capsys.readouterr().err


def test_resume_reruns_only_the_hosts_and_stages_not_finished(site, monkeypatch, capsys):
    tmp_path, inventory = site
    fake = install(monkeypatch, tmp_path, outcomes={"fabric": {"n3": "failed"}})
    assert cli("bringup", "-i", str(inventory), *NO_VALIDATE) == 3
    run_id = only_run(tmp_path)["dir"].name
    fake.log.unlink()
    fake.outcomes = {}  # the operator fixed n3
    assert cli("bringup", "--resume", run_id) == 0
    assert [(c["stage"], c["hosts"]) for c in fake.calls()] == [
        ("fabric", ["n3"]),
        ("accelerators", ["n3"]),
        *[(stage, HOSTS) for stage in ("storage", "schedulers", "monitoring")],  # cluster-wide: all hosts
    ]  # preflight and base: every host had finished them
    ledger = only_run(tmp_path)
    assert ledger["run"]["status"] == "succeeded" and len(ledger["run"]["attempts"]) == 2
    assert ledger["stages"]["fabric"]["hosts"]["n1"]["attempt"] == 1
    assert ledger["stages"]["fabric"]["hosts"]["n3"] | {} == {
        **ledger["stages"]["fabric"]["hosts"]["n3"],
        "attempt": 2,
    }
    assert "every host finished it before, skipped" in capsys.readouterr().err


def test_a_controller_killed_mid_stage_leaves_a_readable_ledger_and_resumes(site, monkeypatch, capsys):
    tmp_path, inventory = site
    log = tmp_path / "calls.jsonl"
    killed = subprocess.run(
        [sys.executable, str(HERE / "fake_ansible.py"), str(log), "storage",
         "bringup", "-i", str(inventory), *NO_VALIDATE],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(HERE)},
    )  # fmt: skip
    assert killed.returncode == -9, killed.stderr
    ledger = only_run(tmp_path)
    assert ledger["run"]["status"] == "running"  # as written; the reader sees the controller is gone
    assert ledger["stages"]["storage"]["status"] == "running"
    assert cli("runs", "list", "--format", "json") == 0
    assert json.loads(capsys.readouterr().out)[0]["status"] == "interrupted"
    fake = install(monkeypatch, tmp_path)
    log.unlink()
    assert cli("bringup", "--resume", ledger["dir"].name) == 0
    assert [(c["stage"], c["hosts"]) for c in fake.calls()] == [(s, HOSTS) for s in PLAYBOOK_STAGES[4:]]
    assert only_run(tmp_path)["run"]["status"] == "succeeded"


def test_check_reports_the_drift_with_its_diff_and_exits_3(site, monkeypatch, capsys):
    tmp_path, inventory = site
    fake = install(monkeypatch, tmp_path, outcomes={"base": {"n4": "changed"}})
    assert cli("bringup", "-i", str(inventory), "--check") == 3
    assert all(c["check"] and c["diff"] for c in fake.calls())
    assert "validate" not in [c["stage"] for c in fake.calls()]
    out = capsys.readouterr().out
    assert "drift on n4:" in out and "[base] base : base: the task" in out
    assert "-mode=old" in out and "+mode=new" in out
    assert "drift on n1" not in out


def test_check_of_a_converged_fleet_reports_no_drift(site, monkeypatch, capsys):
    tmp_path, inventory = site
    install(monkeypatch, tmp_path)
    assert cli("bringup", "-i", str(inventory), "--check") == 0
    assert "no drift" in capsys.readouterr().out


def test_stages_and_limit_choose_what_runs(site, monkeypatch):
    tmp_path, inventory = site
    fake = install(monkeypatch, tmp_path)
    assert cli("bringup", "-i", str(inventory), "--stages", "storage,base", "--limit", "n2:n4") == 0
    assert [(c["stage"], c["hosts"]) for c in fake.calls()] == [
        ("base", ["n2", "n4"]),
        ("storage", ["n2", "n4"]),
    ]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--stages", "base,gpu"], "unknown stage gpu"),
        (
            ["--skip", "preflight,base,fabric,accelerators,storage,schedulers,monitoring,validate"],
            "no stage to run",
        ),
        (["--limit", "nosuchhost"], "check the name against `ansible-inventory"),
        (["-e", "not a pair"], "is not KEY=VALUE"),
        (["--resume", "20261202T000000Z-bringup-0000"], "not with -i"),
    ],
)
def test_bad_input_exits_2_and_creates_no_run(site, monkeypatch, capsys, args, words):
    tmp_path, inventory = site
    fake = install(monkeypatch, tmp_path)
    assert cli("bringup", "-i", str(inventory), *args) == 2
    assert words in capsys.readouterr().err
    assert fake.calls() == [] and not (tmp_path / ".clusterforge" / "runs").exists()


def test_an_invalid_inventory_runs_nothing(site, monkeypatch, capsys):
    tmp_path, inventory = site
    fake = install(monkeypatch, tmp_path)
    inventory.write_text("all:\n  hosts:\n    n1: {node_sku: no-such-sku, ansible_host: 10.9.0.1}\n")
    assert cli("bringup", "-i", str(inventory)) == 2
    assert "nothing ran" in capsys.readouterr().err and fake.calls() == []


def test_resume_of_an_unknown_run_says_how_to_list_them(site, monkeypatch, capsys):
    install(monkeypatch, site[0])
    assert cli("bringup", "--resume", "nosuchrun") == 2
    assert "clusterforge runs list" in capsys.readouterr().err


def test_node_local_stages_run_in_shards_by_rack_and_cluster_stages_in_one_process(site, monkeypatch):
    tmp_path, inventory = site
    racks = {"n1": "r1", "n2": "r2", "n3": "r1", "n4": "r2", "n5": "r3"}
    lines = ["all:", "  hosts:"]
    lines += [
        f"    {h}: {{node_sku: cpu-generic, ansible_host: 10.9.0.{i}, rack: {racks[h]}}}"
        for i, h in enumerate(HOSTS, 1)
    ]
    inventory.write_text("\n".join(lines) + "\n")
    fake = install(monkeypatch, tmp_path, outcomes={"base": {"n4": "failed"}})
    assert (
        cli("bringup", "-i", str(inventory), *NO_VALIDATE, "--shard-size", "2", "--max-fail-percent", "50")
        == 3
    )
    calls: dict[str, list[list[str]]] = {}
    for call in fake.calls():
        calls.setdefault(call["stage"], []).append(call["hosts"])
    assert sorted(calls["base"]) == [["n1", "n3"], ["n2", "n4"], ["n5"]]  # whole racks, at most 2
    assert sorted(calls["fabric"]) == [["n1", "n3"], ["n2", "n5"]]  # n4 failed base: held; racks packed
    assert calls["storage"] == [["n1", "n2", "n3", "n5"]]
    ledger = only_run(tmp_path)
    base = ledger["stages"]["base"]["hosts"]
    assert {h: r["result"] for h, r in base.items()} == {**dict.fromkeys(HOSTS, "ok"), "n4": "failed"}
    assert (ledger["dir"] / "artifacts" / "base-1" / "shard-3" / "limit.txt").is_file()


# ---------------------------------------------------------------- add-node ----
NODE_STAGES = PLAYBOOK_STAGES  # add-node's node stages are the bring-up's stage playbooks


def test_add_node_runs_the_node_stages_on_the_new_hosts_and_members_on_every_host(site, monkeypatch, capsys):
    tmp_path, inventory = site
    fake = install(monkeypatch, tmp_path)
    assert cli("add-node", "-i", str(inventory), "n4", "n5", "--skip", "fabric,validate") == 0
    calls = fake.calls()
    node_calls = [c for c in calls if c["stage"] != "members"]
    assert [c["stage"] for c in node_calls] == [s for s in NODE_STAGES if s != "fabric"]
    assert all(c["hosts"] == ["n4", "n5"] for c in node_calls)
    [members] = [c for c in calls if c["stage"] == "members"]
    assert members["hosts"] == HOSTS  # the whole inventory: /etc/hosts, slurm.conf, targets name every host
    ledger = only_run(tmp_path)
    run = ledger["run"]
    assert run["kind"] == "add-node" and run["hosts"] == ["n4", "n5"] and run["cluster_hosts"] == HOSTS
    assert set(ledger["stages"]["members"]["hosts"]) == set(HOSTS)
    assert "stage members on the 3 other host(s) of the inventory: 3 ok" in capsys.readouterr().out
    assert cli("runs", "list", "--format", "json") == 0
    [listed] = json.loads(capsys.readouterr().out)
    assert (listed["id"], listed["kind"], listed["status"]) == (ledger["dir"].name, "add-node", "succeeded")
    assert cli("runs", "show", ledger["dir"].name) == 0
    assert "stage members on the 3 other host(s)" in capsys.readouterr().out


def test_add_node_keeps_a_new_host_that_failed_out_of_members_and_resumes_with_its_own_command(
    site, monkeypatch, capsys
):
    tmp_path, inventory = site
    fake = install(monkeypatch, tmp_path, outcomes={"base": {"n5": "failed"}, "members": {"n1": "failed"}})
    args = ["add-node", "-i", str(inventory), "n4", "n5", "--skip", "validate", "--max-fail-percent", "100"]
    assert cli(*args) == 3
    [members] = [c for c in fake.calls() if c["stage"] == "members"]
    assert members["hosts"] == ["n1", "n2", "n3", "n4"]  # n5 failed base: held out of the cluster
    ledger = only_run(tmp_path)
    assert ledger["stages"]["members"]["hosts"]["n1"]["result"] == "failed"
    err = capsys.readouterr().err
    assert f"clusterforge add-node --resume {ledger['dir'].name}" in err


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["nosuch"], "nosuch: not in the inventory"),
        ([], "no HOST given"),
        (["n1", "--skip", "members"], "unknown stage members"),
    ],
)
def test_add_node_bad_input_exits_2_and_creates_no_run(site, monkeypatch, capsys, args, words):
    tmp_path, inventory = site
    fake = install(monkeypatch, tmp_path)
    assert cli("add-node", "-i", str(inventory), *args) == 2
    assert words in capsys.readouterr().err
    assert fake.calls() == [] and not (tmp_path / ".clusterforge" / "runs").exists()
