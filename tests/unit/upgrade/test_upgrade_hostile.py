"""Versions that reach playbooks/upgrade.yml as extra variables (templated by ansible-playbook) are
plain versions (issue 32): --to and --installed are refused (exit 2) otherwise; a version read from a
node that is free text fails that node untouched, never passed; a run's ledger whose versions are
not versions refuses --resume and --rollback (exit 2) before anything runs (docs/design.md, "Data
that reaches Ansible")."""

from __future__ import annotations

import json

import pytest
import yaml
from cfcore.inputs import VERSION_FORM, is_plain, plain_problem
from clusterforge.upgrade import versions
from clusterforge.validation.runner import PlaybookRun
from test_upgrade_plan_cli import INSTALLED, TARGET, cli, site  # noqa: F401  (the fixture)
from test_upgrade_run import fake, nodes, only_run, upgrade_args  # noqa: F401  (the fixture)

TEMPLATE = "{{ lookup('pipe', 'id -un') }}"


def test_plain_values_are_one_line_of_their_form_without_template_syntax():
    for good in ("570.133.20", "24.1.rc2", "8.0.RC3.alpha001", "2.6.0+cu128", "1.2~rc1_x-y"):
        assert is_plain(good, VERSION_FORM), good
    assert "template syntax" in plain_problem(TEMPLATE, VERSION_FORM)
    assert "template syntax" in plain_problem("1.0{#", VERSION_FORM)
    assert "line break" in plain_problem("570.1\n", VERSION_FORM)
    assert "not of the form" in plain_problem("../x", VERSION_FORM)
    assert "not of the form" in plain_problem("", VERSION_FORM)
    assert "not a string" in plain_problem(570, VERSION_FORM)


@pytest.mark.parametrize("command", ["plan", "run"])
@pytest.mark.parametrize("target", [TEMPLATE, "570.1\ndeb http://x ./", "570.1 "])
def test_a_target_that_is_not_a_version_is_exit_2(site, fake, tmp_path, capsys, command, target):  # noqa: F811
    scripted = fake()
    inventory, installed = site
    args = ["upgrade", command, "-i", str(inventory), "--to", target, "--installed", str(installed)]
    assert cli(*args) == 2
    err = capsys.readouterr().err
    assert "error: --to" in err and "fix: " in err
    assert scripted.calls == [] and not (tmp_path / ".clusterforge").exists()


def test_an_installed_file_with_a_template_for_a_version_is_exit_2(site, tmp_path, capsys):  # noqa: F811
    inventory, _ = site
    bad = tmp_path / "bad.yml"
    bad.write_text(yaml.safe_dump({**INSTALLED, "g01": TEMPLATE}))
    assert cli("upgrade", "plan", "-i", str(inventory), "--to", TARGET, "--installed", str(bad)) == 2
    err = capsys.readouterr().err
    assert f"--installed {bad}: the version of g01" in err and "template syntax" in err and "fix: " in err


def test_a_free_text_node_version_fails_that_node_untouched(site, fake, tmp_path, monkeypatch, capsys):  # noqa: F811
    inventory, _ = site
    read = {"g01": TEMPLATE, "g02": TARGET, "g03": "560.35.03\n"}
    data = {versions.INSTALLED_KEY: read}
    monkeypatch.setattr(
        versions,
        "run_playbook",
        lambda *_a, **_k: PlaybookRun(
            rc=0, status="successful", stdout_path=None, stats={"artifact_data": data}
        ),
    )
    scripted = fake()
    assert cli("upgrade", "run", "-i", str(inventory), "--to", TARGET, "--max-failed", "5") == 3
    err = capsys.readouterr().err
    assert "g01: the installed version read from the node" in err
    passed = json.dumps([call["vars"] for call in scripted.calls])
    assert "lookup" not in passed and "560.35.03\\n" not in passed
    assert all(host not in call["hosts"] for call in scripted.calls for host in ("g01", "g03"))
    found = nodes(only_run(tmp_path))
    for host in ("g01", "g03"):
        assert found[host]["status"] == "failed" and found[host]["phases"] == [], host
        assert "the node is untouched" in found[host]["message"] and "from " in found[host]["message"]
    assert {found[h]["status"] for h in ("g04", "g05", "g06")} == {"done"}


def _died_run(site, fake, tmp_path, capsys):  # noqa: F811
    plan = json.loads(_plan(site, capsys))
    middle = plan["batches"][1]["hosts"][0]
    fake({middle: ("stop", "died")})
    assert cli(*upgrade_args(site)) == 3
    return only_run(tmp_path), middle


def _plan(site, capsys) -> str:  # noqa: F811
    inventory, installed = site
    args = ["upgrade", "plan", "-i", str(inventory), "--to", TARGET, "--installed", str(installed)]
    assert cli(*args, "--format", "json") == 0
    return capsys.readouterr().out


@pytest.mark.parametrize(
    ("key", "value"), [("to", TEMPLATE), ("from", "1.0\n- hosts: all"), ("phase", "{{ x }}")]
)
def test_resume_refuses_a_ledger_whose_node_values_are_not_plain(site, fake, tmp_path, capsys, key, value):  # noqa: F811
    folder, middle = _died_run(site, fake, tmp_path, capsys)
    capsys.readouterr()
    path = folder / "nodes" / f"{middle}.json"
    node = json.loads(path.read_text())
    node[key] = value
    path.write_text(json.dumps(node))
    scripted = fake()
    assert cli("upgrade", "run", "--resume", folder.name) == 2
    err = capsys.readouterr().err
    assert f"nodes/{middle}.json: {key} " in err and "nothing ran" in err and "fix: " in err
    assert scripted.calls == []


def test_resume_refuses_a_node_record_that_names_another_file(site, fake, tmp_path, capsys):  # noqa: F811
    folder, middle = _died_run(site, fake, tmp_path, capsys)
    path = folder / "nodes" / f"{middle}.json"
    node = json.loads(path.read_text())
    node["host"] = "../../../elsewhere"
    path.write_text(json.dumps(node))
    scripted = fake()
    assert cli("upgrade", "run", "--resume", folder.name) == 2
    assert "is not the file's name" in capsys.readouterr().err
    assert scripted.calls == [] and not (tmp_path / "elsewhere.json").exists()


def test_rollback_refuses_a_ledger_whose_previous_version_is_a_template(site, fake, tmp_path, capsys):  # noqa: F811
    _inventory, installed = site
    installed.write_text(json.dumps({**INSTALLED, **dict.fromkeys(("g04", "g05", "g06"), "565.57.01")}))
    fake()
    assert cli(*upgrade_args(site)) == 0
    original = only_run(tmp_path)
    path = original / "nodes" / "g04.json"
    node = json.loads(path.read_text())
    node["from"] = TEMPLATE
    path.write_text(json.dumps(node))
    capsys.readouterr()
    scripted = fake()
    assert cli("upgrade", "run", "--rollback", original.name) == 2
    err = capsys.readouterr().err
    assert "nodes/g04.json: from " in err and "template syntax" in err
    assert scripted.calls == []


# ------------------------------------------ issue 32 (medium): a garbage ledger, consent, secrets ----


def _edit(path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        ("max_failed", "{{ x }}", "options.max_failed"),
        ("forks", 0, "options.forks"),
        ("forks", "8", "options.forks"),
        ("drain_timeout_s", -1, "options.drain_timeout_s"),
        ("extra_vars", ["x"], "extra_vars is not a mapping"),
        ("limit", "a\nb", "options.limit"),
        ("surprise", 1, "unknown key(s) surprise"),
    ],
)
def test_resume_checks_the_recorded_options_as_a_command_line(
    site,  # noqa: F811
    fake,  # noqa: F811
    tmp_path,
    capsys,
    key,
    value,
    words,
):
    folder, _middle = _died_run(site, fake, tmp_path, capsys)
    _edit(folder / "run.json", lambda record: record["options"].__setitem__(key, value))
    capsys.readouterr()
    scripted = fake()
    assert cli("upgrade", "run", "--resume", folder.name) == 2
    err = capsys.readouterr().err
    assert words in err and "fix: " in err
    assert scripted.calls == []


def test_resume_refuses_an_unknown_component_in_the_recorded_plan_options(site, fake, tmp_path, capsys):  # noqa: F811
    folder, _middle = _died_run(site, fake, tmp_path, capsys)
    _edit(folder / "run.json", lambda record: record["options"]["plan"].__setitem__("component", "kernel"))
    capsys.readouterr()
    scripted = fake()
    assert cli("upgrade", "run", "--rollback", folder.name) == 2
    assert "options.plan.component 'kernel'" in capsys.readouterr().err
    assert scripted.calls == []


def test_resume_refuses_a_node_status_the_cli_never_writes(site, fake, tmp_path, capsys):  # noqa: F811
    """Never exit 0 with a node never upgraded: a status of no node is refused, not skipped."""
    folder, middle = _died_run(site, fake, tmp_path, capsys)
    _edit(folder / "nodes" / f"{middle}.json", lambda node: node.__setitem__("status", "finished"))
    capsys.readouterr()
    scripted = fake()
    assert cli("upgrade", "run", "--resume", folder.name) == 2
    err = capsys.readouterr().err
    assert f"nodes/{middle}.json: status 'finished'" in err and "fix: " in err
    assert scripted.calls == []


def test_resume_refuses_a_host_that_is_not_in_the_inventory(site, fake, tmp_path, capsys):  # noqa: F811
    """A host only the ledger names would reach the batch's --limit file: refused before."""
    folder, middle = _died_run(site, fake, tmp_path, capsys)
    ghost = "ghost-01"
    node_file = folder / "nodes" / f"{middle}.json"
    node = json.loads(node_file.read_text())
    node_file.unlink()
    (folder / "nodes" / f"{ghost}.json").write_text(json.dumps({**node, "host": ghost}))

    def rename(plan):
        for batch in plan["batches"]:
            batch["hosts"] = [ghost if h == middle else h for h in batch["hosts"]]

    _edit(folder / "plan.json", rename)
    _edit(
        folder / "run.json",
        lambda r: r.__setitem__("hosts", [ghost if h == middle else h for h in r["hosts"]]),
    )
    capsys.readouterr()
    scripted = fake()
    assert cli("upgrade", "run", "--resume", folder.name) == 2
    err = capsys.readouterr().err
    assert "not in the inventory" in err and ghost in err
    assert scripted.calls == []


def test_resume_takes_consent_from_the_command_line_only(site, fake, tmp_path, capsys):  # noqa: F811
    folder, _middle = _died_run(site, fake, tmp_path, capsys)
    _edit(folder / "run.json", lambda record: record["options"].update(allow_reboot=True, allow_scripts=True))
    scripted = fake()
    assert cli("upgrade", "run", "--resume", folder.name) == 0
    assert [call["vars"]["upgrade_node_allow_reboot"] for call in scripted.calls] == [False] * len(
        scripted.calls
    )


def test_resume_with_allow_reboot_given_again_reboots(site, fake, tmp_path, capsys):  # noqa: F811
    folder, _middle = _died_run(site, fake, tmp_path, capsys)
    scripted = fake()
    assert cli("upgrade", "run", "--resume", folder.name, "--allow-reboot") == 0
    assert scripted.calls and all(call["vars"]["upgrade_node_allow_reboot"] for call in scripted.calls)


def test_an_upgrade_run_records_a_secret_as_a_digest_and_resume_asks_for_it(site, fake, tmp_path, capsys):  # noqa: F811
    plan = json.loads(_plan(site, capsys))
    middle = plan["batches"][1]["hosts"][0]
    fake({middle: ("stop", "died")})
    secret = "FAKE-UPGRADE-SECRET-7731"
    assert cli(*upgrade_args(site), "-e", f"registry_password={secret}", "-e", "note=plain") == 3
    folder = only_run(tmp_path)
    record = json.loads((folder / "run.json").read_text())
    assert record["options"]["extra_vars"]["note"] == "plain"
    assert record["options"]["extra_vars"]["registry_password"].startswith("<redacted sha256:")
    assert not [p for p in folder.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]
    capsys.readouterr()
    scripted = fake()
    assert cli("upgrade", "run", "--resume", folder.name) == 2
    err = capsys.readouterr().err
    assert "registry_password" in err and "-e registry_password=" in err and scripted.calls == []
    assert cli("upgrade", "run", "--resume", folder.name, "-e", "note=other") == 2
    assert "recorded in full" in capsys.readouterr().err
    assert cli("upgrade", "run", "--resume", folder.name, "-e", f"registry_password={secret}") == 0
