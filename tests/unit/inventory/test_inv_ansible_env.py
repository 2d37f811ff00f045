"""The one place that sets ANSIBLE_CONFIG, finds ansible-* executables and links the collection."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from clusterforge import ansible_env
from clusterforge.errors import EnvironmentNotReady
from clusterforge.paths import project_root


@pytest.fixture
def checkout(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "checkout"
    (root / "playbooks").mkdir(parents=True)
    (root / "ansible.cfg").write_text("[defaults]\n")
    monkeypatch.setattr(ansible_env, "checkout", lambda: root)
    return root


def test_env_names_the_checkout_config_and_puts_the_venv_first(checkout):
    env = ansible_env.ansible_env({"PATH": "/usr/bin", "ANSIBLE_CONFIG": "/elsewhere/ansible.cfg"})
    assert env["ANSIBLE_CONFIG"] == str(checkout / "ansible.cfg")
    assert env["PATH"].split(os.pathsep)[0] == str(Path(sys.executable).parent)
    assert env["ANSIBLE_NOCOLOR"] == "1"
    link = checkout / ".collections" / "ansible_collections" / "clusterforge" / "cluster"
    assert link.is_symlink() and link.resolve() == checkout.resolve()


def test_use_project_config_sets_this_process(checkout, monkeypatch):
    monkeypatch.delenv("ANSIBLE_CONFIG", raising=False)
    ansible_env.use_project_config()
    assert os.environ["ANSIBLE_CONFIG"] == str(checkout / "ansible.cfg")


def test_collection_link_is_idempotent_and_repaired(checkout):
    link = ansible_env.ensure_collection_link(checkout)
    assert ansible_env.ensure_collection_link(checkout) == link
    assert (link / "ansible.cfg").is_file()  # the checkout, seen as the collection clusterforge.cluster
    link.unlink()
    link.symlink_to("/nowhere")
    ansible_env.ensure_collection_link(checkout)
    assert link.resolve() == checkout.resolve()


def test_collection_path_taken_by_something_else_is_reported(checkout):
    link = ansible_env.collection_link(checkout)
    link.mkdir(parents=True)
    with pytest.raises(EnvironmentNotReady, match="is not the link to the checkout") as caught:
        ansible_env.ensure_collection_link(checkout)
    assert "ln -sfn" in caught.value.fix


def test_no_checkout_leaves_ansible_alone(monkeypatch):
    monkeypatch.setattr(ansible_env, "checkout", lambda: None)
    env = ansible_env.ansible_env({"PATH": "/usr/bin"})
    assert "ANSIBLE_CONFIG" not in env
    assert ansible_env.ensure_collection_link() is None


def test_tools_come_from_the_venv_first_and_missing_ones_are_env_errors(monkeypatch):
    assert ansible_env.ansible_tool("ansible-playbook") == str(
        Path(sys.executable).parent / "ansible-playbook"
    )
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(EnvironmentNotReady, match="ansible-nosuchtool not found") as caught:
        ansible_env.ansible_tool("ansible-nosuchtool")
    assert caught.value.exit_code == 4 and "setup-venv.sh" in caught.value.fix


def test_the_real_checkout_is_found():
    assert ansible_env.config_path() == project_root() / "ansible.cfg"


def test_no_cli_module_sets_ansible_config_itself():
    """Every caller goes through ansible_env: the variable is named nowhere else in the CLI."""
    cli = project_root() / "cli" / "clusterforge"
    offenders = [
        str(path.relative_to(cli))
        for path in cli.rglob("*.py")
        if "ANSIBLE_CONFIG" in path.read_text() and path.name != "ansible_env.py"
    ]
    assert offenders == [], offenders
