"""The CLI shell: version, help on every group, and the documented exit codes."""

from __future__ import annotations

import importlib

import click
import pytest
from clusterforge import __version__
from clusterforge.errors import (
    EXIT_ENV,
    EXIT_FAILED,
    EXIT_INVALID,
    ChecksFailed,
    EnvironmentNotReady,
    InvalidInput,
)
from clusterforge.main import cli, main


def run(argv: list[str]) -> int:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    return exc.value.code


def walk(command: click.Command, path: list[str]):
    yield path
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            yield from walk(sub, [*path, name])


def test_version(capsys):
    assert run(["--version"]) == 0
    assert __version__ in capsys.readouterr().out


@pytest.mark.parametrize("path", list(walk(cli, [])), ids=lambda p: " ".join(p) or "clusterforge")
def test_help_on_every_command(path, capsys):
    assert run([*path, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Usage: clusterforge")
    assert "(being built)" not in out


def test_unknown_command_is_invalid_input(capsys):
    assert run(["no-such-command"]) == EXIT_INVALID
    assert "No such command" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("error", "code"),
    [(InvalidInput, EXIT_INVALID), (ChecksFailed, EXIT_FAILED), (EnvironmentNotReady, EXIT_ENV)],
)
def test_errors_map_to_exit_codes(monkeypatch, capsys, error, code):
    def boom(**_kwargs):
        raise error("something is wrong", "do this")

    monkeypatch.setattr(cli, "main", boom)
    assert run([]) == code
    assert capsys.readouterr().err == "error: something is wrong\n  fix: do this\n"


def test_unexpected_exception_is_internal_error(monkeypatch, capsys):
    def boom(**_kwargs):
        raise RuntimeError("kaput")

    monkeypatch.setattr(cli, "main", boom)
    assert run([]) == 1
    err = capsys.readouterr().err
    assert "internal error: RuntimeError: kaput" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("path", list(walk(cli, []))[1:], ids=lambda p: " ".join(p))
def test_debug_is_accepted_after_every_sub_command(path, capsys):
    assert run([*path, "--debug", "--help"]) == 0
    assert "--debug" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv",
    [["--debug", "facts", "kinds"], ["facts", "--debug", "kinds"], ["facts", "kinds", "--debug"]],
    ids=["before", "between", "after"],
)
def test_debug_anywhere_shows_the_traceback_of_an_internal_error(monkeypatch, capsys, argv):
    facts_module = importlib.import_module("clusterforge.commands.facts")  # the package re-exports the group

    def boom(*_args, **_kwargs):
        raise RuntimeError("kaput")

    monkeypatch.setattr(facts_module, "Table", boom)
    assert run(argv) == 1
    err = capsys.readouterr().err
    assert "Traceback" in err and "internal error: RuntimeError: kaput" in err
    # The flag does not stick to the next run in the same process.
    assert run(["facts", "kinds"]) == 1
    assert "Traceback" not in capsys.readouterr().err
