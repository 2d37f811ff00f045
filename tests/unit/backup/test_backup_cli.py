"""`clusterforge backup` and `clusterforge restore` without nodes: the target, the set's
verification before anything runs (a corrupted item refuses the restore), the ledger's restore,
and the exit codes from the playbook's outcome (run_playbook replaced at the runner boundary)."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest
from cfcore import backup_set
from click.testing import CliRunner
from clusterforge.backups import workflow
from clusterforge.errors import ChecksFailed, InvalidInput
from clusterforge.main import cli

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = str(ROOT / "inventories" / "example")


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), standalone_mode=False)


def make_set(target: Path, set_id: str = "20261203T013000Z", ledger_runs: tuple[str, ...] = ()) -> Path:
    staging = target / backup_set.partial_name(set_id)
    files = {
        "slurm/ctl-01/slurm-state.tar.gz": b"state" * 64,
        "slurm/ctl-01/slurm-queue.txt": b"7|PENDING|x|gpu\n",
    }
    for relpath, data in files.items():
        (staging / relpath).parent.mkdir(parents=True, exist_ok=True)
        (staging / relpath).write_bytes(data)
    if ledger_runs:
        source = target / "ledger-src" / "runs"
        for run_id in ledger_runs:
            (source / run_id).mkdir(parents=True)
            (source / run_id / "run.json").write_text(json.dumps({"id": run_id}))
        (staging / "ledger/controller").mkdir(parents=True)
        with tarfile.open(staging / "ledger/controller/ledger.tar.gz", "w:gz") as archive:
            archive.add(source, arcname="runs")
    plan = {
        "slurm": {"hosts": ["ctl-01"], "applies": True},
        "ledger": {"hosts": ["controller"], "applies": bool(ledger_runs)},
    }
    taken = {"ctl-01": ["slurm"], "controller": ["ledger"]}
    backup_set.finish(
        str(target), set_id, created="c", finished="f", version="0", inventory={},
        components=backup_set.component_statuses(plan, taken), keep=14,
    )  # fmt: skip
    return target / set_id


@pytest.fixture
def no_playbooks(monkeypatch):
    """Any playbook run fails the test: the command must stop before one."""

    def refuse(*_args, **_kwargs):
        raise AssertionError("a playbook ran")

    monkeypatch.setattr(workflow, "run_playbook", refuse)


def test_verify_passes_a_whole_set_and_names_a_corrupted_item_with_exit_3(tmp_path):
    folder = make_set(tmp_path)
    assert invoke("backup", "verify", str(folder)).exit_code == 0
    state = folder / "slurm/ctl-01/slurm-state.tar.gz"
    state.write_bytes(b"X" + state.read_bytes()[1:])
    result = invoke("backup", "verify", str(folder))
    assert isinstance(result.exception, ChecksFailed)
    assert "slurm/ctl-01/slurm-state.tar.gz: sha256" in result.exception.message


def test_a_restore_refuses_a_corrupted_set_before_anything_runs(tmp_path, no_playbooks):
    folder = make_set(tmp_path)
    queue = folder / "slurm/ctl-01/slurm-queue.txt"
    queue.write_bytes(queue.read_bytes().replace(b"7", b"8"))
    result = invoke("restore", "-i", EXAMPLE, "--from", str(folder))
    assert isinstance(result.exception, InvalidInput), result.output
    assert "fails its checksums, so nothing is restored" in result.exception.message
    assert "slurm/ctl-01/slurm-queue.txt" in result.exception.message


def test_a_restore_of_a_missing_set_id_is_bad_input(tmp_path, no_playbooks):
    make_set(tmp_path)
    result = invoke("restore", "-i", EXAMPLE, "--from", "20261101T000000Z", "--target", str(tmp_path))
    assert isinstance(result.exception, InvalidInput)
    assert "no set 20261101T000000Z in" in result.exception.message
    result = invoke("restore", "-i", EXAMPLE, "--from", "yesterday", "--target", str(tmp_path))
    assert "neither a set folder nor a set id" in result.exception.message


def test_a_backup_without_a_target_says_where_to_set_one(no_playbooks):
    result = invoke("backup", "-i", EXAMPLE)
    assert isinstance(result.exception, InvalidInput)
    assert "--target" in result.exception.fix and "backup_target" in result.exception.fix


def test_an_unknown_component_is_bad_input(tmp_path, no_playbooks):
    result = invoke("backup", "-i", EXAMPLE, "--target", str(tmp_path), "--component", "postgres")
    assert isinstance(result.exception, InvalidInput)
    assert "postgres" in result.exception.message and "slurm" in result.exception.fix


def test_an_s3_target_stages_in_a_local_cache():
    target = workflow.resolve_target("s3://backups/site-a/cluster/", None)
    assert (target.bucket, target.prefix) == ("backups", "site-a/cluster")
    assert target.folder == workflow.S3_CACHE / "backups" / "site-a/cluster"
    assert target.extravars()["backup_s3_bucket"] == "backups"
    with pytest.raises(InvalidInput, match="names no bucket"):
        workflow.resolve_target("s3:///x", None)


def test_the_backup_reports_the_set_and_exits_3_when_a_component_failed(tmp_path, monkeypatch):
    """The playbook's work stands in: it finishes the set as module backup_set does."""

    def playbook(playbook, _inventory, _private, _on_event, extravars=None, **_kw):
        assert Path(playbook).name == "backup.yml"
        staging = Path(extravars["backup_target"]) / backup_set.partial_name(extravars["backup_set_id"])
        (staging / "slurm/ctl-r1-n01").mkdir(parents=True)
        (staging / "slurm/ctl-r1-n01/slurm-state.tar.gz").write_bytes(b"s")
        plan = {
            "slurm": {"hosts": ["ctl-r1-n01"], "applies": True},
            "ceph": {"hosts": ["sto-1"], "applies": True},
        }
        backup_set.finish(
            extravars["backup_target"], extravars["backup_set_id"], created="c", finished="f", version="0",
            inventory=extravars["backup_inventory_record"],
            components=backup_set.component_statuses(plan, {"ctl-r1-n01": ["slurm"]}), keep=14,
        )  # fmt: skip
        return _Run(2)

    monkeypatch.setattr(workflow, "run_playbook", playbook)
    result = invoke("backup", "-i", EXAMPLE, "--target", str(tmp_path / "sets"))
    assert isinstance(result.exception, ChecksFailed), result.output
    assert "ceph: sto-1: no items" in result.exception.message
    (set_dir,) = [p for p in (tmp_path / "sets").iterdir() if backup_set.is_set_id(p.name)]
    data = backup_set.load_manifest(str(set_dir))
    assert data["inventory"]["path"] == EXAMPLE and len(data["inventory"]["sha256"]) == 64
    assert data["components"]["slurm"]["status"] == "ok"


class _Run:
    def __init__(self, rc: int):
        self.rc, self.status, self.stdout_path = rc, "failed" if rc else "successful", None


def test_the_ledger_comes_back_beside_the_runs_already_there(tmp_path):
    folder = make_set(
        tmp_path / "t", ledger_runs=("20261201T000000Z-bringup-aaaa", "20261202T000000Z-upgrade-bbbb")
    )
    data = backup_set.load_manifest(str(folder))
    ledger = tmp_path / "ledger"
    (ledger / "20261202T000000Z-upgrade-bbbb").mkdir(parents=True)
    (ledger / "20261202T000000Z-upgrade-bbbb" / "run.json").write_text('{"id": "newer"}')
    result = workflow.restore_ledger(folder, data, ledger)
    assert result == {
        "restored": ["20261201T000000Z-bringup-aaaa"],
        "kept": ["20261202T000000Z-upgrade-bbbb"],
    }
    assert json.loads((ledger / "20261201T000000Z-bringup-aaaa" / "run.json").read_text())["id"].endswith(
        "aaaa"
    )
    assert json.loads((ledger / "20261202T000000Z-upgrade-bbbb" / "run.json").read_text())["id"] == "newer"


def test_backup_install_passes_the_daily_job_to_the_controller(tmp_path, monkeypatch):
    from clusterforge import ops_timers

    calls = []

    def playbook(
        path, _inventory, _private, _on_event, *, extravars=None, operator_vars=None, limit=None, **_
    ):
        calls.append((Path(path).name, {**(operator_vars or {}), **extravars}, limit))
        return _Run(0)

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(ops_timers, "run_playbook", playbook)
    inventory = tmp_path / "hosts.yml"
    site = {"backup_schedule": "*-*-* 02:45", "backup_ledger_dir": "/srv/cf/runs"}
    inventory.write_text(
        json.dumps(
            {"all": {"vars": site, "children": {"clusterforge_controller": {"hosts": {"adm-01": {}}}}}}
        )
    )
    result = invoke(
        "backup", "install", "-i", str(inventory), "-e", "clusterforge_cli=/opt/cf/bin/clusterforge"
    )
    assert result.exception is None, result.output
    ((name, extravars, limit),) = calls
    assert (name, limit, extravars["ops_timers_owner"]) == ("ops_timers.yml", "adm-01", "backup")
    (job,) = extravars["ops_timers_jobs"]
    assert job["schedule"] == "*-*-* 02:45"
    assert job["args"] == ["backup", "-i", "{{ clusterforge_inventory }}", "--ledger", "/srv/cf/runs"]
    assert extravars["clusterforge_cli"] == "/opt/cf/bin/clusterforge"
