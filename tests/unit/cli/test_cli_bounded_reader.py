"""The one bounded reader (cfcore/files.py) where the CLI reads files of any size or kind: the head
of an inventory file for its digest, the tail of a playbook's output, JSON from a file or an HTTP
body (issue 32: "One reader for every file the CLI reads")."""

from __future__ import annotations

import os

import pytest
from cfcore.files import UnsafeFile, parse_json, read_end
from clusterforge.bringup.workflow import inventory_sha256
from clusterforge.validation.runner import PlaybookRun


def test_read_end_gives_the_head_or_the_tail_of_a_file_of_any_size(tmp_path):
    path = tmp_path / "big"
    path.write_bytes(b"a" * 1000 + b"z" * 10)
    assert read_end(str(path), 5) == b"aaaaa"
    assert read_end(str(path), 12, tail=True) == b"aazzzzzzzzzz"
    assert read_end(str(path), 5000, tail=True) == path.read_bytes()


def test_read_end_refuses_a_fifo_without_opening_it(tmp_path, watchdog):
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(UnsafeFile, match="a FIFO"):
        read_end(str(tmp_path / "fifo"), 10)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[" * 100_000 + "]" * 100_000, "nested deeper than"),
        ("[[[1]]]", "nested deeper than 2"),
        (b"\xff", "utf-8"),
    ],
)
def test_parse_json_refuses_what_nests_too_deep_or_is_no_text(text, message):
    with pytest.raises(ValueError, match=message):
        parse_json(text, max_depth=2 if text == "[[[1]]]" else 64)
    assert parse_json('{"a": [1]}', max_depth=2) == {"a": [1]}


def test_a_playbook_s_output_tail_reads_only_its_end(tmp_path):
    out = tmp_path / "stdout"
    with out.open("wb") as handle:
        handle.write(b"x" * (8 << 20) + b"\n")
        handle.writelines(f"line {n}\n".encode() for n in range(20))
    run = PlaybookRun(rc=2, status="failed", stdout_path=out)
    assert run.stdout_tail(3) == "line 17\nline 18\nline 19"


def test_an_inventory_digest_skips_a_fifo_and_stays_bounded(tmp_path, watchdog):
    inventory = tmp_path / "inv"
    inventory.mkdir()
    (inventory / "hosts.yml").write_text("all: {hosts: {n1: {}}}\n")
    before = inventory_sha256(str(inventory))
    os.mkfifo(inventory / "group_vars")
    assert inventory_sha256(str(inventory)) == before
