"""A run ledger is data when --resume reads it back (issue 32, medium): the recorded options are
checked as a command line would be, consent comes from the command line only, a secret given with
-e is recorded as a digest (and asked for again), every ledger file is 0600 in 0700 folders, and a
FIFO or a damaged file in the ledger is refused without hanging (docs/design.md, "Bring-up runs and
the run ledger", "Secrets in records and output")."""

from __future__ import annotations

import json
import os
import signal
import stat
import tarfile
from pathlib import Path

import pytest
from clusterforge.bringup import workflow
from fake_ansible import FakeAnsible
from patience import HANG_S
from test_bu_workflow import NO_VALIDATE, cli, only_run, site  # noqa: F401  (the fixture)

SECRETS = ("FAKE-SECRET-db-4417", "FAKE-SECRET-token-9921", "FAKE-SECRET-munge-0042", "FAKE-SECRET-url-7")


class Recording(FakeAnsible):
    """FakeAnsible that also keeps what each stage got as extra variables."""

    def __call__(self, playbook, inventory, private_dir, on_event, **kwargs):
        self.given = getattr(self, "given", [])
        self.given.append({**(kwargs.get("operator_vars") or {}), **(kwargs.get("extravars") or {})})
        return super().__call__(playbook, inventory, private_dir, on_event, **kwargs)


def install(monkeypatch, tmp_path, **kwargs) -> Recording:
    fake = Recording(tmp_path / "calls.jsonl", **kwargs)
    monkeypatch.setattr(workflow, "run_playbook", fake)
    return fake


@pytest.fixture(autouse=True)
def no_hang():
    """A reader that opens a FIFO blocks forever: fail the test instead."""

    def expired(*_):
        raise TimeoutError("the ledger reader hung (a FIFO opened?)")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(HANG_S)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def secret_args() -> list[str]:
    db, token, munge, url = SECRETS
    return [
        "-e", f"db_password={db}",
        "-e", json.dumps({"site": {"api_token": token}, "plain_note": "kept"}),
        "-e", f"slurm_munge_key={munge}",  # a role's no_log option, and named like a secret
        "-e", f"mirror=https://ops:{url}@mirror.example/repo/",
    ]  # fmt: skip


def failed_run(site, monkeypatch, *more):  # noqa: F811
    tmp_path, inventory = site
    fake = install(monkeypatch, tmp_path, outcomes={"fabric": {"n3": "failed"}})
    assert cli("bringup", "-i", str(inventory), *NO_VALIDATE, *more) == 3
    return only_run(tmp_path), fake


def files_holding(folder: Path, needles) -> list[str]:
    return [
        f"{path}: {needle}"
        for path in folder.rglob("*")
        if path.is_file()
        for needle in needles
        if needle.encode() in path.read_bytes()
    ]


# ------------------------------------------------------------------------ secrets ----


def test_no_written_file_holds_a_secret_given_with_e(site, monkeypatch, capsys):  # noqa: F811
    """The mechanism: recognisable fake secrets in -e; every file the run wrote, `runs show`, the
    ledger as a backup set tars it: none holds one. The playbook itself still gets them."""
    tmp_path, _inventory = site
    ledger, fake = failed_run(site, monkeypatch, *secret_args())
    assert all(SECRETS[0] == given["db_password"] for given in fake.given)
    options = ledger["run"]["options"]["extra_vars"]
    assert options["plain_note"] == "kept"
    for key in ("db_password", "site", "slurm_munge_key", "mirror"):
        assert "<redacted sha256:" in json.dumps(options[key]), key
    assert files_holding(tmp_path / ".clusterforge", SECRETS) == []
    capsys.readouterr()
    assert cli("runs", "show", ledger["dir"].name, "--format", "json") == 0
    assert cli("runs", "show", ledger["dir"].name) == 0
    assert cli("runs", "list", "--format", "json") == 0
    out = capsys.readouterr()
    assert not [s for s in SECRETS if s in out.out + out.err]
    archive = tmp_path / "ledger.tar.gz"  # what role backup packs of the ledger (backup.yml)
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(tmp_path / ".clusterforge" / "runs", arcname="runs")
    with tarfile.open(archive) as tar:
        packed = b"".join(tar.extractfile(m).read() for m in tar.getmembers() if m.isfile())
    assert not [s for s in SECRETS if s.encode() in packed]


def test_ledger_files_are_0600_in_0700_folders(site, monkeypatch):  # noqa: F811
    ledger, _fake = failed_run(site, monkeypatch)
    root = ledger["dir"].parent
    for path in [root, *root.rglob("*")]:
        mode = stat.S_IMODE(path.stat().st_mode)
        if path.is_dir():
            assert mode == 0o700, (path, oct(mode))
        elif path.suffix == ".json":
            assert mode == 0o600, (path, oct(mode))


def test_resume_asks_again_for_a_secret_the_ledger_holds_as_a_digest(site, monkeypatch, capsys):  # noqa: F811
    ledger, fake = failed_run(site, monkeypatch, "-e", f"db_password={SECRETS[0]}", "-e", "plain_note=kept")
    run_id = ledger["dir"].name
    fake.outcomes, fake.given = {}, []
    capsys.readouterr()
    assert cli("bringup", "--resume", run_id) == 2
    err = capsys.readouterr().err
    assert f"run {run_id} recorded -e db_password only as a digest" in err
    assert f"fix: give it again: --resume {run_id} -e db_password=..." in err
    assert fake.given == []
    assert cli("bringup", "--resume", run_id, "-e", "plain_note=other") == 2
    assert "recorded in full" in capsys.readouterr().err
    assert cli("bringup", "--resume", run_id, "-e", "db_password=changed") == 0
    assert "warning: -e db_password differs" in capsys.readouterr().err
    assert fake.given and all(g["db_password"] == "changed" and g["plain_note"] == "kept" for g in fake.given)


def test_resume_does_not_take_a_template_from_the_ledger(site, monkeypatch, capsys):  # noqa: F811
    ledger, fake = failed_run(site, monkeypatch, "-e", "plain_note=kept")
    path = ledger["dir"] / "run.json"
    record = json.loads(path.read_text())
    record["options"]["extra_vars"]["plain_note"] = "{{ lookup('pipe', 'id') }}"
    path.write_text(json.dumps(record))
    fake.outcomes, fake.given = {}, []
    capsys.readouterr()
    assert cli("bringup", "--resume", ledger["dir"].name) == 2
    assert "plain_note" in capsys.readouterr().err and fake.given == []


# ----------------------------------------------------------- the recorded options ----


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        ("max_fail_percent", "20", "options.max_fail_percent"),
        ("max_fail_percent", 101, "options.max_fail_percent"),
        ("max_fail_percent", True, "options.max_fail_percent"),
        ("forks", 0, "options.forks"),
        ("forks", 10**9, "options.forks"),
        ("forks", 2.5, "options.forks"),
        ("shard_size", "500", "options.shard_size"),
        ("extra_vars", ["a=b"], "extra_vars is not a mapping"),
        ("stages", ["base", "rootkit"], "options.stages names 'rootkit'"),
        ("stages", [], "options.stages names no stage"),
        ("check", "yes", "options.check"),
        ("limit", "n1\n{{ x }}", "options.limit"),
        ("surprise", 1, "unknown key(s) surprise"),
    ],
)
def test_resume_checks_the_recorded_options_as_a_command_line(site, monkeypatch, capsys, key, value, words):  # noqa: F811
    ledger, fake = failed_run(site, monkeypatch)
    path = ledger["dir"] / "run.json"
    record = json.loads(path.read_text())
    record["options"][key] = value
    path.write_text(json.dumps(record))
    fake.outcomes, fake.given = {}, []
    capsys.readouterr()
    assert cli("bringup", "--resume", ledger["dir"].name) == 2
    err = capsys.readouterr().err
    assert words in err and "error: " in err and "fix: " in err
    assert fake.given == []


def test_resume_refuses_a_host_that_is_not_in_the_inventory(site, monkeypatch, capsys):  # noqa: F811
    ledger, fake = failed_run(site, monkeypatch)
    path = ledger["dir"] / "run.json"
    record = json.loads(path.read_text())
    record["hosts"].append("all")  # a pattern in a --limit file: every host of the inventory
    path.write_text(json.dumps(record))
    fake.outcomes, fake.given = {}, []
    capsys.readouterr()
    assert cli("bringup", "--resume", ledger["dir"].name) == 2
    assert "1 host(s) that are not in the inventory" in capsys.readouterr().err
    assert fake.given == []


def test_resume_takes_allow_scripts_from_the_command_line_only(site, monkeypatch):  # noqa: F811
    ledger, fake = failed_run(site, monkeypatch)
    path = ledger["dir"] / "run.json"
    record = json.loads(path.read_text())
    record["options"]["allow_scripts"] = True
    path.write_text(json.dumps(record))
    seen = []
    real = workflow.checked_inventory
    monkeypatch.setattr(
        workflow, "checked_inventory", lambda o, d: seen.append(o.allow_scripts) or real(o, d)
    )
    fake.outcomes = {}
    assert cli("bringup", "--resume", ledger["dir"].name) == 0
    assert seen == [False]


# ------------------------------------------------------------ FIFOs, damaged files ----


def test_a_fifo_in_the_ledger_hangs_nothing(site, monkeypatch, capsys):  # noqa: F811
    ledger, _fake = failed_run(site, monkeypatch)
    good = ledger["dir"].name
    bad = ledger["dir"].parent / "20200101T000000Z-bringup-beef"
    bad.mkdir()
    os.mkfifo(bad / "run.json")
    capsys.readouterr()
    assert cli("runs", "list", "--format", "json") == 0
    rows = {row["id"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows[good]["status"] == "failed"
    assert rows[bad.name]["status"] == "corrupt" and "a FIFO" in rows[bad.name]["error"]
    assert cli("runs", "list") == 0
    captured = capsys.readouterr()
    assert good in captured.out and f"warning: run {bad.name} cannot be read" in captured.err
    assert cli("runs", "show", bad.name) == 2
    assert "a FIFO, not a regular file" in capsys.readouterr().err
    assert cli("bringup", "--resume", bad.name) == 2
    stage = next((ledger["dir"] / "stages").glob("*-fabric.json"))
    stage.unlink()
    os.mkfifo(stage)
    assert cli("runs", "show", good) == 2
    assert cli("bringup", "--resume", good) == 2
    assert "a FIFO" in capsys.readouterr().err


def test_a_deeply_nested_or_outside_ledger_file_is_refused(site, monkeypatch, capsys, tmp_path):  # noqa: F811
    ledger, _fake = failed_run(site, monkeypatch)
    path = ledger["dir"] / "run.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    capsys.readouterr()
    assert cli("runs", "show", ledger["dir"].name) == 2
    assert "nested deeper than" in capsys.readouterr().err
    outside = tmp_path / "elsewhere.json"
    outside.write_text(json.dumps({"kind": "bringup"}))
    path.unlink()
    path.symlink_to(outside)
    assert cli("runs", "show", ledger["dir"].name) == 2
    assert "points outside" in capsys.readouterr().err


# ---------------------------------------------------- wrong types, issue 32 (low) ----

# One value of another type each, in run.json or in a stage record: what a crash (exit 1, an
# AttributeError) met before `runs show` or `--resume` could say what is wrong.
WRONG_TYPES = {
    "run.json": {
        "attempts[0].pid 2**70": lambda d: d["attempts"][-1].update(pid=2**70),
        "attempts[0].pid a string": lambda d: d["attempts"][-1].update(pid="1"),
        "attempts a string": lambda d: d.update(attempts="x"),
        "attempts of numbers": lambda d: d.update(attempts=[5]),
        "hosts of numbers": lambda d: d.update(hosts=[1, 2]),
        "inventory a string": lambda d: d.update(inventory="x"),
        "bom a list": lambda d: d.update(bom=[1]),
        "status a number": lambda d: d.update(status=5),
        "stages a mapping": lambda d: d.update(stages={"a": 1}),
    },
    "fabric stage": {
        "hosts a string": lambda d: d.update(hosts="x"),
        "a host a number": lambda d: d["hosts"].update(n3=5),
        "a host's result a number": lambda d: d["hosts"]["n3"].update(result=7),
        "attempt a string": lambda d: d.update(attempt="x"),
    },
}


@pytest.mark.parametrize(
    ("where", "change"), [(where, change) for where, changes in WRONG_TYPES.items() for change in changes]
)
def test_a_ledger_value_of_another_type_is_refused(site, monkeypatch, capsys, where, change):  # noqa: F811
    ledger, fake = failed_run(site, monkeypatch)
    folder, run_id = ledger["dir"], ledger["dir"].name
    path = folder / "run.json" if where == "run.json" else next((folder / "stages").glob("*-fabric.json"))
    data = json.loads(path.read_text())
    WRONG_TYPES[where][change](data)
    path.write_text(json.dumps(data))
    stages_run = len(fake.calls())
    capsys.readouterr()
    assert cli("runs", "list") == 0  # the run is listed, flagged: the others stay readable
    assert "cannot be read" in capsys.readouterr().err
    for argv in (("runs", "show", run_id), ("bringup", "--resume", run_id)):
        assert cli(*argv) == 2, argv
        err = capsys.readouterr().err
        assert f"{path.name} is not a ledger file this ClusterForge wrote" in err and "fix: " in err
    assert len(fake.calls()) == stages_run  # nothing ran


@pytest.mark.parametrize("run_id", ["2" * 5000, "20261207T000000Z-bringup-\x00", "../runs"])
def test_a_run_id_that_names_no_run_is_bad_input(site, capsys, run_id):  # noqa: F811
    for argv in (
        ("runs", "show", run_id),
        ("bringup", "--resume", run_id),
        ("upgrade", "run", "--resume", run_id),
    ):
        assert cli(*argv) == 2, argv
        err = capsys.readouterr().err
        assert "error: " in err and "fix: " in err
