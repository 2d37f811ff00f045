"""Fixtures of the test NVIDIA repository's tests: one build per session, its packages unpacked on demand."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from nvidia_repo_testlib import build_module


@pytest.fixture(scope="session")
def builder():
    missing = [tool for tool in ("dpkg-deb", "gpg", "gpgv") if shutil.which(tool) is None]
    if missing:
        pytest.skip(
            f"{', '.join(missing)} not installed (apt-get install dpkg gnupg gpgv): "
            "cannot build the test repository"
        )
    return build_module()


@pytest.fixture(scope="session")
def repo(builder, tmp_path_factory):
    """The built repository root (in a private cache directory)."""
    return builder.build(tmp_path_factory.mktemp("nvidia-repo-cache"))


@pytest.fixture(scope="session")
def unpack(repo, tmp_path_factory):
    """unpack(deb_file_name, ...) -> a root with those packages' files (dpkg-deb -x)."""
    root = tmp_path_factory.mktemp("unpacked")

    def _unpack(*names: str):
        for name in names:
            matches = list(repo.glob(f"**/{name}"))
            assert len(matches) == 1, f"{name}: {matches}"
            subprocess.run(["dpkg-deb", "-x", str(matches[0]), str(root)], check=True)
        return root

    return _unpack
