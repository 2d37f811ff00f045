"""`clusterforge facts parse KIND FILE`: only regular files within KIND's input limit are read."""

from __future__ import annotations

import io
import os

import pytest
from cfcore.parsers import max_bytes
from clusterforge.main import main

KIND = "ibstat"


def run(argv: list[str]) -> int:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    return exc.value.code


def test_a_fifo_is_refused_without_hanging(tmp_path, capsys, watchdog):
    fifo = tmp_path / "ibstat.txt"
    os.mkfifo(fifo)
    assert run(["facts", "parse", KIND, str(fifo)]) == 2
    err = capsys.readouterr().err
    assert f"error: {fifo} is a FIFO, not a regular file; refusing to read it" in err
    assert "fix: pass the captured output as a regular file" in err


def test_a_device_is_refused_not_read_into_memory(capsys, watchdog):
    assert run(["facts", "parse", KIND, "/dev/zero"]) == 2
    assert "error: /dev/zero is a character device, not a regular file" in capsys.readouterr().err


def test_a_link_to_a_device_is_refused(tmp_path, capsys, watchdog):
    link = tmp_path / "ibstat.txt"
    link.symlink_to("/dev/zero")
    assert run(["facts", "parse", KIND, str(link)]) == 2
    assert "is a character device, not a regular file" in capsys.readouterr().err


def test_a_file_over_the_kind_limit_is_refused(tmp_path, capsys):
    big = tmp_path / "ibstat.txt"
    with big.open("wb") as out:
        out.truncate(max_bytes(KIND) + 1)  # sparse: no disk used
    assert run(["facts", "parse", KIND, str(big)]) == 2
    assert f"over the limit of {max_bytes(KIND)} bytes" in capsys.readouterr().err


def test_stdin_over_the_kind_limit_is_refused(monkeypatch, capsys):
    class Stdin:
        buffer = io.BytesIO(b"x" * (max_bytes(KIND) + 10))

    monkeypatch.setattr("sys.stdin", Stdin)
    assert run(["facts", "parse", KIND, "-"]) == 2
    assert "error: <stdin>: output over" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("path", "words"), [("", "FILE is empty"), ("/nonexistent/ibstat.txt", "No such file")]
)
def test_missing_or_empty_paths_are_bad_input(capsys, path, words):
    assert run(["facts", "parse", KIND, path]) == 2
    assert words in capsys.readouterr().err
