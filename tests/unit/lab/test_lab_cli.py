"""`clusterforge lab ...` through the real CLI entry point: output, exit codes, error rendering."""

from __future__ import annotations

import importlib
import json

import pytest
from clusterforge.errors import EXIT_ENV, EXIT_FAILED, EXIT_INVALID
from clusterforge.main import main

# The module, not the `lab` group that clusterforge.commands re-exports under the same name.
lab_commands = importlib.import_module("clusterforge.commands.lab")


@pytest.fixture
def cli(ctx, checkout, monkeypatch, capsys):
    """Run `clusterforge ARGS` against the fake host; returns (exit code, stdout, stderr)."""
    monkeypatch.setattr(lab_commands, "project_root", lambda: checkout)
    monkeypatch.setattr(lab_commands.LabContext, "create", classmethod(lambda cls, root: ctx))
    monkeypatch.chdir(checkout)

    def run(*args: str) -> tuple[int, str, str]:
        with pytest.raises(SystemExit) as exc:
            main(list(args))
        out, err = capsys.readouterr()
        return exc.value.code, out, err

    return run


def test_up_prints_the_nodes_timings_and_the_next_step(cli, progress):
    code, out, _ = cli("lab", "up", "--control", "1", "--gpu", "1", "--npu", "0", "--storage", "0")
    assert code == 0
    assert "lab-gpu-01" in out and "10.89.100.12" in out and "hgx-h100-8gpu" in out
    assert "lab 'lab' is up: 2 nodes (2 created, 0 started, 0 already running)" in out
    assert "inventory: inventories/lab" in out
    assert "ansible -i inventories/lab all -m ping" in out
    # not a terminal: plain progress lines with durations
    assert "ok create 2 node containers (" in progress.getvalue()
    assert "ok SSH login as ansible + sudo on every node (" in progress.getvalue()


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--gpu", "-1"], "Invalid value for '--gpu'"),
        (["--npu", "100"], "Invalid value for '--npu'"),
        (["--subnet", "10.0.0.1/24"], "is not an IPv4 network"),
        (["--name", "Bad_Name"], "lab name 'Bad_Name' is not valid"),
        (["--profile", "lab-gpu-01"], "is not HOST=PROFILE"),
        (["--profile", "nohost=x"], "--profile names host(s) not in this lab: nohost"),
        (["--control", "0", "--gpu", "0", "--npu", "0", "--storage", "0"], "a lab needs at least one node"),
    ],
)
def test_bad_flags_exit_2_with_a_fix(cli, host, args, says):
    code, _, err = cli("lab", "up", *args)
    assert code == EXIT_INVALID
    assert says in err
    assert not host.containers


def test_environment_problems_exit_4_with_the_fixing_command(cli, ctx):
    ctx.which = lambda tool: None
    code, _, err = cli("lab", "up")
    assert code == EXIT_ENV
    assert err == (
        "error: podman, ssh, ssh-keygen, losetup not found on PATH\n"
        "  fix: run scripts/setup-host.sh as root\n"
    )


def test_status_table_and_json(cli, host):
    cli("lab", "up", "--gpu", "1", "--npu", "0", "--storage", "0")
    code, out, _ = cli("lab", "status")
    assert code == 0
    assert "lab-ctl-01" in out and "running" in out and "ok" in out
    code, out, _ = cli("lab", "status", "--format", "json")
    assert code == 0
    data = json.loads(out)
    assert data["healthy"] is True and [n["host"] for n in data["nodes"]] == ["lab-ctl-01", "lab-gpu-01"]


def test_status_of_an_unhealthy_lab_exits_3(cli, host):
    cli("lab", "up", "--gpu", "1", "--npu", "0", "--storage", "0")
    host.containers["cflab-lab-gpu-01"].state = "exited"
    code, out, err = cli("lab", "status", "--format", "json")
    assert code == EXIT_FAILED
    assert json.loads(out)["healthy"] is False
    assert "1 of 2 nodes not ready: lab-gpu-01" in err and "lab up --name lab" in err


def test_status_of_an_absent_lab_exits_4(cli):
    code, _, err = cli("lab", "status", "--name", "ghost")
    assert code == EXIT_ENV and "lab 'ghost' is not up" in err


def test_down_reports_what_it_removed_then_that_nothing_is_left(cli):
    cli("lab", "up", "--gpu", "1", "--npu", "0", "--storage", "0")
    code, out, _ = cli("lab", "down")
    assert code == 0
    assert out.startswith("lab 'lab' removed in ")
    assert "2 containers, network cflab-lab, inventories/lab, .cache/lab/lab" in out
    code, out, _ = cli("lab", "down")
    assert (code, out) == (0, "lab 'lab' is not up; nothing to remove\n")


def test_inventory_prints_the_path(cli):
    cli("lab", "up", "--name", "cftest", "--gpu", "1", "--npu", "0", "--storage", "0")
    code, out, _ = cli("lab", "inventory", "--name", "cftest")
    assert (code, out) == (0, "inventories/lab-cftest\n")
