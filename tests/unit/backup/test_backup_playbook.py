"""playbooks/backup.yml for real on this machine (a local-connection inventory): the plan, a
component that fails recorded in the set while the others are kept, the manifest and the
retention by module backup_set, the CLI's exit code. And the encryption contract: what role
backup's encrypt step writes, role restore's decrypt step reads back (openssl, as the tasks run it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from cfcore import backup_set
from click.testing import CliRunner
from clusterforge.errors import ChecksFailed
from clusterforge.main import cli

ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent


def inventory(folder: Path, monitoring: bool) -> Path:
    here = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    monitored = {"hosts": {"here": {}} if monitoring else {}}
    hosts = {"all": {"hosts": {"here": here}, "children": {"monitoring": monitored}}}
    folder.mkdir(parents=True)
    (folder / "hosts.yml").write_text(yaml.safe_dump(hosts))
    return folder


def ledger(folder: Path) -> Path:
    run = folder / "runs" / "20261202T000000Z-bringup-abcd"
    run.mkdir(parents=True)
    (run / "run.json").write_text('{"id": "20261202T000000Z-bringup-abcd"}')
    return folder / "runs"


@pytest.mark.skipif(not (BIN / "ansible-playbook").exists(), reason="needs the venv's ansible-playbook")
def test_a_backup_of_the_ledger_alone_is_a_complete_set(tmp_path):
    inv = inventory(tmp_path / "inv", monitoring=False)
    result = CliRunner().invoke(
        cli,
        ["backup", "-i", str(inv), "--target", str(tmp_path / "sets"), "--ledger", str(ledger(tmp_path)),
         "--format", "json"],
        standalone_mode=False,
    )  # fmt: skip
    assert result.exception is None, result.output
    (set_id,) = backup_set.complete_sets(str(tmp_path / "sets"))
    data = backup_set.load_manifest(str(tmp_path / "sets" / set_id))
    assert data["components"]["ledger"]["status"] == "ok"
    assert data["components"]["slurm"] == {
        "status": "not applicable",
        "reason": "no host in slurm_controller",
    }
    assert [item["path"] for item in data["items"]] == ["ledger/controller/ledger.tar.gz"]
    assert backup_set.verify(str(tmp_path / "sets" / set_id), data) == []


@pytest.mark.skipif(not (BIN / "ansible-playbook").exists(), reason="needs the venv's ansible-playbook")
def test_a_component_that_fails_is_failed_in_the_set_and_the_backup_exits_3(tmp_path):
    """`here` is a monitoring host without /etc/prometheus (and no encryption key): the monitoring
    component fails there; the ledger is still taken and the set kept."""
    inv = inventory(tmp_path / "inv", monitoring=True)
    result = CliRunner().invoke(
        cli,
        ["backup", "-i", str(inv), "--target", str(tmp_path / "sets"), "--ledger", str(ledger(tmp_path))],
        standalone_mode=False,
    )
    assert isinstance(result.exception, ChecksFailed), result.output
    assert "monitoring: here: task" in result.exception.message
    assert "backup_encryption_key is not set" in result.exception.message
    (set_id,) = backup_set.complete_sets(str(tmp_path / "sets"))
    data = backup_set.load_manifest(str(tmp_path / "sets" / set_id))
    assert data["components"]["monitoring"]["status"] == "failed"
    assert data["components"]["ledger"]["status"] == "ok"


def _task_argv(path: Path, name: str, **values: str) -> list[str]:
    """A task's argv from the role's YAML, with its Jinja expressions replaced by `values`."""
    task = next(t for t in yaml.safe_load(path.read_text()) if t["name"] == name)
    argv = task["ansible.builtin.command"]["argv"]
    out = []
    for arg in argv:
        for expression, value in values.items():
            arg = arg.replace(expression, value)
        assert "{{" not in arg, f"{name}: {arg} left unrendered"
        out.append(arg)
    return out


def test_what_the_backup_encrypts_the_restore_decrypts(tmp_path):
    plain = tmp_path / "item.tar.gz"
    plain.write_bytes(bytes(range(256)) * 64)
    key = "k" * 48 + "\n"  # Ansible's stdin ends with a newline
    encrypt = _task_argv(
        ROOT / "roles/backup/tasks/encrypt.yml", "Encrypt the secret items on the node",
        **{"{{ backup__dir }}": str(tmp_path), "{{ item }}": "item.tar.gz"},
    )  # fmt: skip
    subprocess.run(encrypt, input=key, text=True, check=True)
    assert (tmp_path / "item.tar.gz.enc").read_bytes()[:8] == b"Salted__"
    plain.rename(tmp_path / "original")
    decrypt = _task_argv(
        ROOT / "roles/restore/tasks/begin.yml",
        "Decrypt the secret items on the node (the key on standard input)",
        **{"{{ restore__dir }}": str(tmp_path), "{{ item.name }}": "item.tar.gz.enc",
           "{{ item.name | regex_replace('\\.enc$', '') }}": "item.tar.gz"},
    )  # fmt: skip
    subprocess.run(decrypt, input=key, text=True, check=True)
    assert (tmp_path / "item.tar.gz").read_bytes() == (tmp_path / "original").read_bytes()
    wrong = subprocess.run(decrypt, input="w" * 48 + "\n", text=True, capture_output=True, check=False)
    assert wrong.returncode != 0  # a wrong key does not give back a plausible file silently
