"""The PPU SDK stand-in (ClusterForge's assumed contract): --silent --prefix=DIR, replace, refusals."""

from __future__ import annotations

import os

import pytest
from ascend_pkgs_testlib import PPU

P211 = PPU.format(version="2.1.1")
P220 = PPU.format(version="2.2.0")
PREFIX = "/opt/ppu/sdk"


def test_silent_install_writes_the_sdk(sandbox):
    done = sandbox.ok(P211, "--silent", f"--prefix={PREFIX}", ppu=True)
    assert "PPU SDK 2.1.1 installed in /opt/ppu/sdk" in done.stdout
    assert sandbox.read(f"{PREFIX}/version.txt") == "2.1.1\n"
    assert sandbox.path(f"{PREFIX}/lib64/libhgml.so.2.1.1").is_file()
    assert os.readlink(sandbox.path(f"{PREFIX}/lib64/libhgml.so")) == "libhgml.so.2.1.1"
    smi = sandbox.path(f"{PREFIX}/ppu-smi/bin/ppu-smi")
    assert os.access(smi, os.X_OK)
    assert smi.read_text().splitlines()[0] == "#!/bin/sh"
    assert smi.read_text().splitlines()[-1] == 'exec /opt/hwreplay/bin/ppu-smi "$@"'


def test_default_prefix(sandbox):
    sandbox.ok(P220, "--silent", ppu=True)
    assert sandbox.read("/usr/local/PPU_SDK/version.txt") == "2.2.0\n"


def test_another_version_replaces_the_installed_one(sandbox):
    sandbox.ok(P211, "--silent", f"--prefix={PREFIX}", ppu=True)
    done = sandbox.ok(P220, "--silent", f"--prefix={PREFIX}", ppu=True)
    assert "PPU SDK 2.1.1 replaced by 2.2.0" in done.stdout
    assert sandbox.read(f"{PREFIX}/version.txt") == "2.2.0\n"
    assert sorted(p.name for p in sandbox.path(f"{PREFIX}/lib64").iterdir()) == [
        "libhgml.so",
        "libhgml.so.2.2.0",
    ]
    sandbox.ok(P220, "--silent", f"--prefix={PREFIX}", ppu=True)  # the same again: no refusal
    assert sandbox.read(f"{PREFIX}/version.txt") == "2.2.0\n"


@pytest.mark.parametrize(
    ("args", "expect"),
    [
        ([f"--prefix={PREFIX}"], "interactive installation is not supported"),
        (["--silent", "--prefix=opt/ppu"], "is not an absolute path"),
        (["--silent", "--prefix="], "needs a directory"),
        (["--silent", "--quiet"], "unknown option --quiet"),
        (["--silent", "--install-path=/opt"], "unknown option --install-path=/opt"),
    ],
)
def test_refusals(sandbox, args, expect):
    sandbox.refused(P211, *args, expect=expect, ppu=True)
    assert not sandbox.path("/opt").exists() and not sandbox.path("/usr/local/PPU_SDK").exists()


def test_check_and_help(sandbox):
    assert "Verifying archive integrity... OK" in sandbox.ok(P211, "--check", ppu=True).stdout
    assert "--silent" in sandbox.ok(P211, "--help", ppu=True).stdout
