"""A backup set written by someone else (issue 32): its manifest's `id` and its folder reach the
restore playbooks as extra variables, which ansible-playbook templates. `backup verify` and
`restore` refuse (exit 2, error: and fix:) an id that is not a set id or not its folder's name, a
set folder whose path is a template, and an item that is a symbolic link (docs/design.md, "Data
that reaches Ansible")."""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile

import pytest
from cfcore import backup_set
from clusterforge.backups import workflow
from clusterforge.main import main
from test_backup_cli import EXAMPLE, make_set

HOSTILE_IDS = [
    "{{ lookup('pipe', 'touch /tmp/cf-issue-32') }}",
    "../../../../x",
    "20261203T013000Z\n",
    "20261204T013000Z",  # a set id, but another set's: not this folder's name
]


def cli(*args: str) -> int:
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    return exited.value.code


@pytest.fixture
def no_playbooks(monkeypatch):
    def refuse(*_args, **_kwargs):
        raise AssertionError("a playbook ran")

    monkeypatch.setattr(workflow, "run_playbook", refuse)


def _with_id(folder, set_id) -> None:
    path = folder / backup_set.MANIFEST_NAME
    data = json.loads(path.read_text())
    data["id"] = set_id
    path.write_text(json.dumps(data))


@pytest.mark.parametrize("set_id", HOSTILE_IDS)
def test_verify_refuses_a_set_whose_id_is_not_its_plain_folder_name(tmp_path, capsys, set_id):
    folder = make_set(tmp_path)
    _with_id(folder, set_id)
    assert cli("backup", "verify", str(folder)) == 2
    err = capsys.readouterr().err
    assert "error: " in err and "fix: " in err and "manifest.json: id" in err


@pytest.mark.parametrize("set_id", HOSTILE_IDS)
def test_restore_refuses_a_set_whose_id_is_not_its_plain_folder_name(tmp_path, capsys, no_playbooks, set_id):
    folder = make_set(tmp_path)
    _with_id(folder, set_id)
    assert cli("restore", "-i", EXAMPLE, "--from", str(folder)) == 2
    err = capsys.readouterr().err
    assert "error: " in err and "fix: " in err and "manifest.json: id" in err


def test_restore_refuses_a_set_folder_whose_path_is_a_template(tmp_path, capsys, no_playbooks):
    folder = make_set(tmp_path / "{{ lookup('pipe', 'id') }}")
    assert cli("restore", "-i", EXAMPLE, "--from", str(folder)) == 2
    err = capsys.readouterr().err
    assert "holds template syntax" in err and "fix: " in err


def test_verify_names_an_item_that_is_a_symbolic_link(tmp_path, capsys):
    folder = make_set(tmp_path / "sets")
    item = folder / "slurm/ctl-01/slurm-queue.txt"
    outside = tmp_path / "secret"
    outside.write_bytes(item.read_bytes())  # the same bytes: the checksums alone would pass it
    item.unlink()
    os.symlink(outside, item)
    assert cli("backup", "verify", str(folder)) == 3
    assert "slurm/ctl-01/slurm-queue.txt: is a symbolic link" in capsys.readouterr().err


def test_a_set_id_is_exactly_the_form_a_backup_makes():
    assert backup_set.is_set_id(backup_set.new_set_id())
    for bad in ("20261203T013000Z\n", "２０２６１２０３T013000Z", "x20261203T013000Z", None, 20261203):
        assert not backup_set.is_set_id(bad), bad


# ------------------------------------------------------------ issue 32 (medium) ----


@pytest.mark.parametrize("again", ["slurm/ctl-01/slurm-queue.txt", "slurm/ctl-01/./slurm-queue.txt"])
def test_verify_refuses_a_manifest_that_lists_one_file_twice(tmp_path, capsys, again):
    """One file, one item: a second entry would be checked once, or restored twice."""
    folder = make_set(tmp_path)
    path = folder / backup_set.MANIFEST_NAME
    data = json.loads(path.read_text())
    first = next(i for i in data["items"] if i["path"] == "slurm/ctl-01/slurm-queue.txt")
    data["items"].append({**first, "path": again, "sha256": "0" * 64})
    path.write_text(json.dumps(data))
    assert cli("backup", "verify", str(folder)) == 2
    err = capsys.readouterr().err
    assert f"{again!r} is items[" in err and "file again" in err and "fix: " in err


def test_verify_names_an_item_reached_through_a_linked_folder(tmp_path, capsys):
    """`slurm/ctl-01 -> elsewhere`: the items' bytes are right, their place is not the set."""
    folder = make_set(tmp_path / "sets")
    host = folder / "slurm" / "ctl-01"
    elsewhere = tmp_path / "elsewhere"
    host.rename(elsewhere)
    os.symlink(elsewhere, host)
    assert cli("backup", "verify", str(folder)) == 3
    err = capsys.readouterr().err
    assert "slurm/ctl-01/slurm-queue.txt: is a symbolic link or lies under one" in err


# --------------------------------------------------------------- issue 32 (low) ----

RUN_ID = "20261201T000000Z-bringup-aaaa"


def _rewrite_manifest(folder, change) -> None:
    path = folder / backup_set.MANIFEST_NAME
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def test_verify_refuses_a_deeply_nested_manifest(tmp_path, capsys):
    folder = make_set(tmp_path)
    (folder / backup_set.MANIFEST_NAME).write_text("[" * 100_000 + "]" * 100_000)
    assert cli("backup", "verify", str(folder)) == 2
    err = capsys.readouterr().err
    assert "nested deeper than" in err and "fix: " in err


@pytest.mark.parametrize("path", [7, "slurm/ctl-01/slurm-queue.txt\x00", "slurm/ctl-01/x\ny", None])
def test_verify_refuses_an_item_path_that_is_no_path(tmp_path, capsys, path):
    folder = make_set(tmp_path)
    _rewrite_manifest(folder, lambda data: data["items"][0].update(path=path))
    assert cli("backup", "verify", str(folder)) == 2
    err = capsys.readouterr().err
    assert "items[0].path" in err and "is not a path inside the set" in err and "fix: " in err


def _with_ledger_archive(folder, members) -> None:
    """The set's ledger.tar.gz replaced by one of `members` ((TarInfo, bytes | None)), and the
    manifest's checksum with it: what whoever can write the backup target can do."""
    path = folder / "ledger/controller/ledger.tar.gz"
    with tarfile.open(path, "w:gz") as archive:
        for info, data in members:
            archive.addfile(info, io.BytesIO(data) if data is not None else None)

    def fix_item(data):
        item = next(i for i in data["items"] if i["component"] == "ledger")
        item.update(size=path.stat().st_size, sha256=hashlib.sha256(path.read_bytes()).hexdigest())

    _rewrite_manifest(folder, fix_item)


def _entry(name, kind=tarfile.REGTYPE, data=b"{}", **more):
    info = tarfile.TarInfo(name)
    info.type, info.size = kind, len(data) if kind == tarfile.REGTYPE else 0
    for key, value in more.items():
        setattr(info, key, value)
    return info, data if kind == tarfile.REGTYPE else None


HOSTILE_LEDGERS = {
    "absolute": [_entry(f"/runs/{RUN_ID}/run.json")],
    "parent": [_entry(f"runs/{RUN_ID}/../../../x.json")],
    "symlink": [_entry(f"runs/{RUN_ID}/run.json", tarfile.SYMTYPE, linkname="/etc/shadow")],
    "hardlink": [_entry(f"runs/{RUN_ID}/run.json", tarfile.LNKTYPE, linkname="/etc/shadow")],
    "device": [_entry(f"runs/{RUN_ID}/run.json", tarfile.CHRTYPE, devmajor=1, devminor=3)],
    "fifo": [_entry(f"runs/{RUN_ID}/run.json", tarfile.FIFOTYPE)],
    "not a run": [_entry("runs/.bashrc")],
    "good then bad": [_entry(f"runs/{RUN_ID}/run.json"), _entry("runs/x", tarfile.SYMTYPE, linkname="/")],
}


@pytest.mark.parametrize("kind", HOSTILE_LEDGERS)
def test_restore_refuses_a_ledger_archive_it_would_not_unpack_before_anything_runs(
    tmp_path, capsys, no_playbooks, kind
):
    folder = make_set(tmp_path / "t", ledger_runs=(RUN_ID,))
    _with_ledger_archive(folder, HOSTILE_LEDGERS[kind])
    ledger = tmp_path / "ledger"
    assert cli("restore", "-i", EXAMPLE, "--from", str(folder), "--ledger", str(ledger)) == 2
    err = capsys.readouterr().err
    assert "the set's ledger archive" in err and "fix: " in err
    assert not ledger.exists()  # nothing unpacked, not even the good members


def test_restore_refuses_a_ledger_archive_that_unpacks_past_its_bound(
    tmp_path, capsys, no_playbooks, monkeypatch
):
    """A gzip of zeros: 300 KB became 301 MB. Bounded at a hundredfold (here, a smaller floor)."""
    monkeypatch.setattr(workflow, "LEDGER_MIN_LIMIT_BYTES", 1 << 20)
    folder = make_set(tmp_path / "t", ledger_runs=(RUN_ID,))
    _with_ledger_archive(folder, [_entry(f"runs/{RUN_ID}/run.json", data=bytes(8 << 20))])
    ledger = tmp_path / "ledger"
    assert cli("restore", "-i", EXAMPLE, "--from", str(folder), "--ledger", str(ledger)) == 2
    assert "unpacks to more than 1048576 bytes" in capsys.readouterr().err
    assert not ledger.exists()


def test_the_checked_ledger_archive_still_comes_back(tmp_path):
    folder = make_set(tmp_path / "t", ledger_runs=(RUN_ID,))
    data = backup_set.load_manifest(str(folder))
    ledger = tmp_path / "ledger"
    assert workflow.restore_ledger(folder, data, ledger) == {"restored": [RUN_ID], "kept": []}
    assert json.loads((ledger / RUN_ID / "run.json").read_text()) == {"id": RUN_ID}
