"""The package build: the contract's file names, the manifest, determinism, the cache, integrity checks."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import zipfile

import pytest
from ascend_pkgs_testlib import DRIVER, EXPORTER, FIRMWARE, KERNELS, NNAL, OPS, PPU, RUNTIME, TOOLKIT

# Issue 9's file names (x86_64: the driver says linux-x86-64, CANN says linux-x86_64).
ASCEND_FILES = {
    *(DRIVER.format(chip=c, version=v) for c in ("910b", "910c") for v in ("25.2.0", "25.5.0", "25.5.1")),
    *(FIRMWARE.format(chip=c, version=v) for c in ("910b", "910c") for v in ("7.7.0.6.236", "7.8.0.5.216")),
    TOOLKIT.format(version="8.2.RC1"),
    TOOLKIT.format(version="8.5.0"),
    KERNELS.format(chip="910b", version="8.2.RC1"),
    KERNELS.format(chip="A3", version="8.2.RC1"),
    OPS.format(chip="910b", version="8.5.0"),
    OPS.format(chip="A3", version="8.5.0"),
    NNAL.format(version="8.2.RC1"),
    NNAL.format(version="8.5.0"),
    RUNTIME.format(version="6.0.0"),
    RUNTIME.format(version="7.0.0"),
    EXPORTER.format(version="6.0.0"),
}
PPU_FILES = {PPU.format(version="2.1.1"), PPU.format(version="2.2.0")}


def sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_contract_files_are_built_and_nothing_else(packages):
    built = {p.name for p in packages.iterdir() if p.is_file()} - {"SHA256SUMS", "manifest.json"}
    assert built == ASCEND_FILES
    assert {p.name for p in (packages / "ppu").iterdir()} - {"SHA256SUMS"} == PPU_FILES


def test_manifest_and_sha256sums_hold_the_real_digests(packages):
    manifest = json.loads((packages / "manifest.json").read_text())
    assert set(manifest) == {"ascend", "ppu"}
    assert manifest["ascend"] == {name: sha256(packages / name) for name in ASCEND_FILES}
    assert manifest["ppu"] == {name: sha256(packages / "ppu" / name) for name in PPU_FILES}
    for directory, group in ((packages, "ascend"), (packages / "ppu", "ppu")):
        lines = (directory / "SHA256SUMS").read_text().splitlines()
        assert sorted(lines) == sorted(f"{d}  {n}" for n, d in manifest[group].items())
    # sha256sum itself agrees (the format get_url's checksum users and operators check by hand)
    done = subprocess.run(
        ["sha256sum", "--check", "--quiet", "SHA256SUMS"], cwd=packages, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_build_is_deterministic(builder, packages, tmp_path):
    again = builder.build(tmp_path / "other-cache")
    assert again.name == packages.name
    for name in ASCEND_FILES:
        assert (again / name).read_bytes() == (packages / name).read_bytes(), name
    for name in PPU_FILES:
        assert (again / "ppu" / name).read_bytes() == (packages / "ppu" / name).read_bytes(), name


def test_cached_build_is_reused_without_rebuilding(builder, packages, monkeypatch):
    def must_not_run(_root):
        raise AssertionError("build_into ran although the cache holds this build")

    monkeypatch.setattr(builder, "build_into", must_not_run)
    assert builder.build(packages.parent) == packages


def test_changed_installer_part_changes_the_hash(builder, tmp_path, monkeypatch):
    before = builder.input_hash()
    copy = tmp_path / "installers"
    shutil.copytree(builder.INSTALLERS, copy)
    (copy / "driver.sh").write_text((copy / "driver.sh").read_text() + "\n# changed\n")
    monkeypatch.setattr(builder, "INSTALLERS", copy)
    assert builder.input_hash() != before
    root = builder.build(tmp_path / "cache")
    assert root.name == f"ascend-pkgs-{builder.input_hash()}"
    assert "# changed" in (root / DRIVER.format(chip="910b", version="25.2.0")).read_text()


def test_main_prints_the_root(builder, packages, capsys):
    assert builder.main(["--out", str(packages.parent)]) == 0
    assert capsys.readouterr().out.strip() == str(packages)


def test_main_reports_an_unwritable_cache(builder, tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    assert builder.main(["--out", str(blocker / "cache")]) == 2
    err = capsys.readouterr().err
    assert "error:" in err and "fix:" in err


def installers(packages):
    return [packages / n for n in sorted(ASCEND_FILES) if n.endswith(".run")] + [
        packages / "ppu" / n for n in sorted(PPU_FILES)
    ]


def test_every_installer_is_one_bash_file_that_parses(packages):
    for path in installers(packages):
        text = path.read_text()
        assert text.startswith("#!/bin/bash\n")
        assert f"PKG_FILE={path.name}\n" in text
        assert text.count("\n__PAYLOAD_BELOW__\n") == 1
        done = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
        assert done.returncode == 0, f"{path.name}: {done.stderr}"


def test_check_verifies_every_payload(sandbox, packages):
    for path in installers(packages):
        done = sandbox.ok(path.name, "--check", ppu=path.parent.name == "ppu")
        assert "Verifying archive integrity... OK" in done.stdout


@pytest.mark.parametrize("damage", ["flip", "truncate"])
def test_check_refuses_a_damaged_package(sandbox, packages, tmp_path, damage):
    name = DRIVER.format(chip="910b", version="25.2.0")
    data = bytearray((packages / name).read_bytes())
    if damage == "flip":
        index = len(data) - 40  # inside the base64 payload
        data[index] = ord("A") if data[index] != ord("A") else ord("B")
    else:
        data = data[: len(data) - 300]
    sandbox.packages = tmp_path / "damaged"
    sandbox.packages.mkdir()
    (sandbox.packages / name).write_bytes(bytes(data))
    for args in (["--check"], ["--nox11", "--full", "--quiet"]):
        done = sandbox.run(name, *args)
        assert done.returncode == 2, done.stderr
        assert "integrity check failed" in done.stderr and "fix:" in done.stderr
    assert not sandbox.path("/usr/local/Ascend/driver").exists()


def test_help_and_version_answer_without_installing(sandbox):
    name = TOOLKIT.format(version="8.5.0")
    done = sandbox.ok(name, "--help")
    assert "--install" in done.stdout and "--install-path" in done.stdout
    assert sandbox.ok(name, "--version").stdout == "8.5.0\n"
    assert sandbox.ok(PPU.format(version="2.2.0"), "--version", ppu=True).stdout == "2.2.0\n"
    assert not sandbox.path("/usr/local/Ascend").exists()


def test_exporter_zip_holds_an_executable_npu_exporter(packages):
    with zipfile.ZipFile(packages / EXPORTER.format(version="6.0.0")) as archive:
        assert archive.namelist() == ["npu-exporter"]
        info = archive.getinfo("npu-exporter")
        assert (info.external_attr >> 16) & 0o777 == 0o755
        text = archive.read("npu-exporter").decode()
    assert text.startswith("#!/usr/bin/env python3\n")
    assert 'VERSION = "6.0.0"' in text and "@VERSION@" not in text
