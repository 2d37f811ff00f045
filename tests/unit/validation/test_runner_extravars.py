"""Every value the CLI hands to ansible-playbook (issue 32, the mechanism): ansible-runner is called
in one place only (validation/runner.py run_playbook); there, `extravars` (what the CLI computed or
read from a file, a node, a ledger or a bundle) holding template syntax is refused before anything
runs, and only `operator_vars` (the operator's own -e and inventory settings) pass as given. A new
call site that hands data in as `operator_vars` fails `test_operator_vars_come_only_from_the_operator`
until it is reviewed and listed there (docs/design.md, "Data that reaches Ansible")."""

from __future__ import annotations

import ast
import sys
import types
from pathlib import Path

import pytest
from clusterforge.errors import InvalidInput
from clusterforge.validation import runner

CLI = Path(__file__).resolve().parents[3] / "cli" / "clusterforge"

# file -> the operator_vars expressions it may pass (each one the operator's own input).
OPERATOR_VARS = {
    "bringup/workflow.py": {"options.extra_vars"},  # -e, or re-checked by resumed_extra_vars
    "upgrade/run.py": {"options.extra_vars"},  # -e, or re-checked by resumed_extra_vars
    "backups/workflow.py": {"operator_vars"},  # run(): its callers' -e (extra_vars)
    "bundle/needs.py": {"extravars"},  # compute_needs(extravars=): `bundle build -e`
    "ops_timers.py": {"{**extra_vars, 'ops_timers_jobs': planned}"},  # -e; jobs: inventory settings
}


def _calls(name: str):
    for path in sorted(CLI.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call):
                func = node.func
                called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
                if called == name:
                    yield path.relative_to(CLI).as_posix(), node


def test_ansible_runner_is_called_only_by_run_playbook():
    direct = [where for where, node in _calls("run") if ast.unparse(node.func) == "ansible_runner.run"]
    assert direct == ["validation/runner.py"]
    interface = [where for where, _node in _calls("run_command")] + [
        where for where, _ in _calls("run_async")
    ]
    assert interface == []


def test_operator_vars_come_only_from_the_operator():
    sites = list(_calls("run_playbook"))
    assert len(sites) >= 10  # every call site is walked
    for where, node in sites:
        for keyword in node.keywords:
            assert keyword.arg is not None or where == "backups/workflow.py", (
                where,
                "a **splat hides keywords",
            )
            if keyword.arg == "operator_vars":
                assert ast.unparse(keyword.value) in OPERATOR_VARS.get(where, set()), (
                    f"{where}:{node.lineno} passes {ast.unparse(keyword.value)} as operator_vars: only the "
                    "operator's own input may skip the check; pass data as extravars"
                )


@pytest.fixture
def fake_runner(monkeypatch, tmp_path):
    calls = []

    def run(**kwargs):
        calls.append(kwargs)
        env = Path(kwargs["private_data_dir"]) / "env"
        env.mkdir(parents=True, exist_ok=True)
        (env / "extravars").write_text(repr(kwargs["extravars"]))  # as ansible-runner dumps them
        return types.SimpleNamespace(rc=0, status="successful", config=None)

    monkeypatch.setitem(sys.modules, "ansible_runner", types.SimpleNamespace(run=run))
    monkeypatch.setattr(runner, "ansible_tool", lambda _name: "ansible-playbook")
    monkeypatch.setattr(runner, "ansible_env", lambda **_kw: {})
    return calls


def _run(tmp_path, **kw):
    return runner.run_playbook(
        tmp_path / "site.yml", tmp_path / "hosts.yml", tmp_path / "private", lambda *_: None, **kw
    )


@pytest.mark.parametrize(
    "extravars",
    [
        {"upgrade_node_versions": {"g01": "{{ lookup('pipe', 'id') }}"}},
        {"restore_set_dir": "/srv/{% raw %}x"},
        {"quarantine_nodes": [{"name": "n1", "reason": "{# x #}"}]},
        {"{{ key }}": 1},
    ],
)
def test_data_with_template_syntax_never_reaches_the_runner(fake_runner, tmp_path, extravars):
    with pytest.raises(InvalidInput, match="template syntax") as raised:
        _run(tmp_path, extravars=extravars)
    assert raised.value.fix and fake_runner == []


def test_the_operators_own_vars_pass_as_given_and_their_copy_is_removed(fake_runner, tmp_path):
    _run(
        tmp_path,
        extravars={"upgrade_node_component": "nvidia"},
        operator_vars={"x": "{{ y }}", "db_password": "s"},
    )
    assert fake_runner[0]["extravars"] == {
        "x": "{{ y }}",
        "db_password": "s",
        "upgrade_node_component": "nvidia",
    }
    assert not (tmp_path / "private" / "env" / "extravars").exists()
    assert (tmp_path / "private").stat().st_mode & 0o077 == 0
