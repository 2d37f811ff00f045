"""Fixtures of the Ascend/PPU package stand-ins' tests: one build per session, a fresh fake root per test."""

from __future__ import annotations

import shutil

import pytest
from ascend_pkgs_testlib import Sandbox, build_module


@pytest.fixture(scope="session")
def builder():
    missing = [tool for tool in ("bash", "base64", "sha256sum", "tar", "gzip") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed: the installers need them")
    return build_module()


@pytest.fixture(scope="session")
def packages(builder, tmp_path_factory):
    """The built package root (in a private cache directory)."""
    return builder.build(tmp_path_factory.mktemp("ascend-pkgs-cache"))


@pytest.fixture
def sandbox(packages, tmp_path):
    return Sandbox(tmp_path / "root", packages)
