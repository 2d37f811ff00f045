"""`clusterforge upgrade run` through the CLI's entry point, playbooks/upgrade.yml scripted.

The stand-in answers each batch as role upgrade_node would in ansible-runner's event stream: per
host the "Upgrade phase <name>" tasks up to where the script says it fails (or the playbook dies),
then the play recap. Checked: each node's phase and result in the ledger, the halt rules (a failed
canary, --max-failed), --resume from the recorded phase without the done nodes, --rollback to each
node's previous version, and bad input.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from clusterforge.upgrade import run as workflow
from clusterforge.validation.runner import PlaybookRun
from patience import HANG_S
from test_upgrade_plan_cli import INSTALLED, TARGET, cli, site  # noqa: F401  (the fixture)

PHASES = list(workflow.PHASES)


class ScriptedUpgrade:
    """run_playbook for playbooks/upgrade.yml: `script[host]` = (phase, "failed" | "died"), else done."""

    def __init__(self, script: dict[str, tuple[str, str]] | None = None):
        self.script, self.calls = script or {}, []

    def __call__(self, playbook, inventory, private_dir, on_event, *, limit=None, extravars=None, **_):
        assert Path(playbook).name == "upgrade.yml"
        hosts = Path(limit[1:]).read_text().split()
        self.calls.append({"hosts": hosts, "vars": extravars})
        stats = {k: {} for k in ("ok", "changed", "failures", "dark", "processed")}
        died = False
        for host in hosts:
            start = PHASES.index(extravars["upgrade_node_start_phase"].get(host, "precheck"))
            stop_phase, how = self.script.get(host, (None, None))
            for phase in PHASES[start:]:
                on_event("runner_on_ok", {"host": host, "task": f"Upgrade phase {phase}", "res": {}})
                if phase == stop_phase:
                    break
            if how == "died":
                died = True
                continue
            stats["processed"][host] = 1
            if how == "failed":
                res = {"msg": f"upgrade failed in phase {stop_phase}: broke on {host}"}
                on_event("runner_on_failed", {"host": host, "task": "Fail the node", "res": res})
                stats["failures"][host] = 1
            else:
                stats["changed"][host] = 1
        if died:  # the playbook was killed before its recap
            return PlaybookRun(rc=-9, status="failed", stdout_path=None)
        on_event("playbook_on_stats", stats)
        rc = 2 if stats["failures"] else 0
        return PlaybookRun(rc=rc, status="failed" if rc else "successful", stdout_path=None, stats=stats)


@pytest.fixture
def fake(monkeypatch):
    def install(script=None) -> ScriptedUpgrade:
        scripted = ScriptedUpgrade(script)
        monkeypatch.setattr(workflow, "run_playbook", scripted)
        return scripted

    return install


def upgrade_args(site, *more) -> list[str]:  # noqa: F811
    inventory, installed = site
    return ["upgrade", "run", "-i", str(inventory), "--to", TARGET, "--installed", str(installed), *more]


def only_run(tmp_path: Path) -> Path:
    runs = [p for p in (tmp_path / ".clusterforge" / "runs").iterdir() if p.is_dir()]
    assert len(runs) == 1, runs
    return runs[0]


def nodes(folder: Path) -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text()) for p in (folder / "nodes").glob("*.json")}


def test_every_planned_node_goes_through_every_phase(site, fake, tmp_path):  # noqa: F811
    scripted = fake()
    assert cli(*upgrade_args(site)) == 0
    folder = only_run(tmp_path)
    record = json.loads((folder / "run.json").read_text())
    assert (record["kind"], record["status"], record["exit_code"]) == ("upgrade", "succeeded", 0)
    plan = json.loads((folder / "plan.json").read_text())
    assert [call["hosts"] for call in scripted.calls] == [list(b["hosts"]) for b in plan["batches"]]
    found = nodes(folder)
    assert sorted(found) == [*sorted(h for h, v in INSTALLED.items() if v != TARGET), "g04", "g05", "g06"]
    for host, node in found.items():
        assert (node["status"], node["to"], node["from"]) == ("done", TARGET, INSTALLED.get(host)), host
        assert [p["phase"] for p in node["phases"]] == PHASES
    first = scripted.calls[0]["vars"]
    assert first["upgrade_node_component"] == "nvidia-driver" and first["upgrade_node_run_id"] == folder.name
    assert first["upgrade_node_start_phase"] == {} and first["upgrade_node_allow_reboot"] is False


def test_a_failed_canary_halts_before_the_next_batch(site, fake, tmp_path, capsys):  # noqa: F811
    plan = json.loads(_plan_json(site, capsys))
    canary = plan["batches"][0]["hosts"][0]
    scripted = fake({canary: ("validate", "failed")})
    assert cli(*upgrade_args(site)) == 3
    assert len(scripted.calls) == 1
    folder = only_run(tmp_path)
    record = json.loads((folder / "run.json").read_text())
    assert record["status"] == "halted" and "canary" in record["halted"]["reason"]
    found = nodes(folder)
    assert (found[canary]["status"], found[canary]["phase"]) == ("failed", "validate")
    assert "broke on" in found[canary]["message"]
    assert {n["status"] for h, n in found.items() if h != canary} == {"pending"}
    assert f"--resume {folder.name}" in capsys.readouterr().err


def test_more_failures_than_max_failed_halt_the_run(site, fake, tmp_path, capsys):  # noqa: F811
    plan = json.loads(_plan_json(site, capsys))
    second = plan["batches"][1]["hosts"]
    fake(dict.fromkeys(second, ("upgrade", "failed")))
    assert cli(*upgrade_args(site, "--max-failed", "1")) == 3
    record = json.loads((only_run(tmp_path) / "run.json").read_text())
    assert record["halted"]["after_batch"] == 2 and "--max-failed 1" in record["halted"]["reason"]


def test_resume_finishes_the_node_in_the_middle_from_its_phase(site, fake, tmp_path, capsys):  # noqa: F811
    plan = json.loads(_plan_json(site, capsys))
    done_first, middle = plan["batches"][0]["hosts"][0], plan["batches"][1]["hosts"][0]
    fake({middle: ("stop", "died")})
    assert cli(*upgrade_args(site)) == 3
    folder = only_run(tmp_path)
    at_death = nodes(folder)
    assert (at_death[middle]["status"], at_death[middle]["phase"]) == ("running", "stop")
    scripted = fake()
    assert cli("upgrade", "run", "--resume", folder.name) == 0
    assert scripted.calls[0]["hosts"] == list(plan["batches"][1]["hosts"])
    # The whole batch died with its playbook: its other node had reached its last phase.
    others = {host: "resume" for host in plan["batches"][1]["hosts"] if host != middle}
    assert scripted.calls[0]["vars"]["upgrade_node_start_phase"] == {middle: "stop", **others}
    assert all(done_first not in call["hosts"] for call in scripted.calls)
    found = nodes(folder)
    assert found[middle]["status"] == "done" and found[middle]["attempt"] == 2
    assert [p["phase"] for p in found[middle]["phases"] if p["attempt"] == 2] == PHASES[
        PHASES.index("stop") :
    ]
    assert found[done_first]["attempt"] == 1
    assert json.loads((folder / "run.json").read_text())["status"] == "succeeded"


def test_rollback_takes_the_done_nodes_to_their_previous_versions(site, fake, tmp_path, capsys):  # noqa: F811
    _inventory, installed = site
    before = {**INSTALLED, **dict.fromkeys(("g04", "g05", "g06"), "565.57.01")}
    installed.write_text(json.dumps(before))
    plan = json.loads(_plan_json(site, capsys))
    failed = next(h for b in plan["batches"][1:] for h in b["hosts"] if h != "g03")
    fake({failed: ("validate", "failed")})
    assert cli(*upgrade_args(site, "--max-failed", "5")) == 3
    original = only_run(tmp_path)
    scripted = fake()
    assert cli("upgrade", "run", "--rollback", original.name) == 0
    back = next(p for p in (tmp_path / ".clusterforge" / "runs").iterdir() if p != original)
    record = json.loads((back / "run.json").read_text())
    assert record["rollback_of"] == original.name
    rolled = nodes(back)
    assert failed not in rolled and "g03" not in rolled  # g03's version before was unknown
    versions = {h: v for call in scripted.calls for h, v in call["vars"]["upgrade_node_versions"].items()}
    assert versions == {h: before[h] for h in rolled} and sorted(rolled) == ["g04", "g05", "g06"]


def test_resume_refuses_inventory_options_and_a_finished_run(site, fake, tmp_path):  # noqa: F811
    fake()
    assert cli(*upgrade_args(site)) == 0
    folder = only_run(tmp_path)
    assert cli("upgrade", "run", "--resume", folder.name, "-i", "x") == 2
    assert cli("upgrade", "run", "--resume", folder.name) == 2  # already succeeded


def test_bad_max_failed_is_refused_before_anything_runs(site, fake, tmp_path, capsys):  # noqa: F811
    scripted = fake()
    assert cli(*upgrade_args(site, "--max-failed", "lots")) == 2
    assert "--max-failed" in capsys.readouterr().err
    assert scripted.calls == [] and not (tmp_path / ".clusterforge").exists()


def _plan_json(site, capsys) -> str:  # noqa: F811
    inventory, installed = site
    args = ["upgrade", "plan", "-i", str(inventory), "--to", TARGET, "--installed", str(installed)]
    assert cli(*args, "--format", "json") == 0
    return capsys.readouterr().out


def test_a_killed_controller_s_leftover_processes_are_stopped(tmp_path):
    """What --resume does first: a process naming the run's artifacts folder is stopped, others kept."""
    import subprocess

    from clusterforge.runs.ledger import leftover_processes, stop_leftover_processes

    folder = tmp_path / "run" / "artifacts"
    folder.mkdir(parents=True)
    # One process each, naming its folder in its arguments: a shell would fork before it runs sleep,
    # and for a moment two processes would name the folder.
    nap = [sys.executable, "-c", "import time; time.sleep(300)"]
    leftover = subprocess.Popen([*nap, f"{folder}/batch-3-1/limit.txt"])
    bystander = subprocess.Popen([*nap, f"{tmp_path}/other/artifacts"])
    try:
        assert leftover_processes(folder) == [leftover.pid]
        assert stop_leftover_processes(folder, grace_s=5) == [leftover.pid]
        assert leftover.wait(timeout=HANG_S) is not None and bystander.poll() is None
    finally:
        for proc in (leftover, bystander):
            proc.kill()
            proc.wait()
