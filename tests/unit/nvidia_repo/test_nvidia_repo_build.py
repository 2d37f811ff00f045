"""The test NVIDIA repositories: the contract's packages, signed indexes, keys, the cache."""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
import subprocess

import pytest
from nvidia_repo_testlib import CTK, CUDA, REPO_DIR, parse_packages

# The packages the roles and the Molecule scenario rely on (issue 8's contract): name -> versions.
CONTRACT = {
    CUDA: {
        **{
            name: {"570.133.20-1"}
            for name in (
                "nvidia-open-570",
                "cuda-drivers-570",
                "libnvidia-compute-570",
                "nvidia-dkms-570-open",
                "nvidia-dkms-570",
                "nvidia-kernel-common-570",
                "nvidia-compute-utils-570",
                "nvidia-fabricmanager-570",
                "libnvidia-nscq-570",
            )
        },
        **{
            name: {"590.44.01-1", "590.48.01-1"}
            for name in (
                "nvidia-open",
                "cuda-drivers",
                "libnvidia-compute",
                "nvidia-dkms-open",
                "nvidia-dkms",
                "nvidia-kernel-common",
                "nvidia-compute-utils",
                "nvidia-fabricmanager",
                "libnvidia-nscq",
            )
        },
        "nvidia-driver-pinning-590": {"590-1"},
        "nvidia-driver-pinning-590.44.01": {"590.44.01-1"},
        "nvidia-driver-pinning-590.48.01": {"590.48.01-1"},
        "nvlsm": {"2025.10.1-1"},
        "datacenter-gpu-manager-4-core": {"1:4.2.3-1"},
        "datacenter-gpu-manager-4-cuda12": {"1:4.2.3-1"},
        "datacenter-gpu-manager-4-cuda13": {"1:4.2.3-1"},
        "datacenter-gpu-manager": {"1:3.3.9"},
        "datacenter-gpu-manager-exporter": {"4.1.1-1"},
        "libnccl2": {"2.26.2-1+cuda12.8", "2.26.2-1+cuda13.0"},
        "libnccl-dev": {"2.26.2-1+cuda12.8", "2.26.2-1+cuda13.0"},
        "cuda-toolkit-12-8": {"12.8.1-1"},
        "cuda-toolkit-13-0": {"13.0.1-1"},
        "libnvinfer10": {"10.9.0.34-1+cuda12.8"},
        "libnvinfer-plugin10": {"10.9.0.34-1+cuda12.8"},
        "libnvonnxparsers10": {"10.9.0.34-1+cuda12.8"},
    },
    CTK: {
        name: {"1.17.8-1"}
        for name in (
            "nvidia-container-toolkit",
            "nvidia-container-toolkit-base",
            "libnvidia-container-tools",
            "libnvidia-container1",
        )
    },
}


def stanzas(repo, path) -> list:
    return parse_packages((repo / path / "Packages").read_text())


def by_name_version(repo, path) -> dict:
    return {(s["Package"], s["Version"]): s for s in stanzas(repo, path)}


@pytest.mark.parametrize("path", [CUDA, CTK])
def test_every_contract_package_is_in_its_repository(repo, path):
    found = {}
    for stanza in stanzas(repo, path):
        found.setdefault(stanza["Package"], set()).add(stanza["Version"])
    assert found == CONTRACT[path]


def test_every_listed_package_is_in_packages_as_listed(builder, repo):
    spec = builder.load_list()
    for package in builder.expand(spec):
        stanza = by_name_version(repo, spec["repos"][package["repo"]]["path"])[
            (package["name"], package["version"])
        ]
        assert stanza["Architecture"] == package["architecture"]
        assert stanza.get("Depends", "") == ", ".join(package["depends"])
        assert stanza.get("Conflicts", "") == ", ".join(package["conflicts"])


def test_dependency_structure(repo):
    cuda = by_name_version(repo, CUDA)
    assert cuda[("nvidia-open-570", "570.133.20-1")]["Depends"] == (
        "nvidia-dkms-570-open (= 570.133.20-1), libnvidia-compute-570 (= 570.133.20-1), "
        "nvidia-compute-utils-570 (= 570.133.20-1), nvidia-kernel-common-570 (= 570.133.20-1)"
    )
    assert "nvidia-dkms-570 (= 570.133.20-1)" in cuda[("cuda-drivers-570", "570.133.20-1")]["Depends"]
    assert "nvidia-dkms-open (= 590.44.01-1)" in cuda[("nvidia-open", "590.44.01-1")]["Depends"]
    # A branch change swaps the branch-named packages for the unversioned ones in one transaction.
    assert cuda[("libnvidia-compute", "590.48.01-1")]["Conflicts"] == "libnvidia-compute-570"
    assert cuda[("libnvidia-compute-570", "570.133.20-1")]["Replaces"] == "libnvidia-compute"
    assert cuda[("nvidia-dkms-570-open", "570.133.20-1")]["Conflicts"].startswith("nvidia-dkms-570")
    assert cuda[("datacenter-gpu-manager", "1:3.3.9")]["Conflicts"] == "datacenter-gpu-manager-4-core"
    assert (
        cuda[("datacenter-gpu-manager-4-cuda13", "1:4.2.3-1")]["Depends"]
        == "datacenter-gpu-manager-4-core (= 1:4.2.3-1)"
    )
    assert cuda[("libnccl-dev", "2.26.2-1+cuda13.0")]["Depends"] == "libnccl2 (= 2.26.2-1+cuda13.0)"
    assert cuda[("nvidia-driver-pinning-590", "590-1")]["Architecture"] == "all"
    ctk = by_name_version(repo, CTK)
    assert ctk[("nvidia-container-toolkit", "1.17.8-1")]["Depends"] == (
        "nvidia-container-toolkit-base (= 1.17.8-1), libnvidia-container-tools (>= 1.17.8-1), "
        "libnvidia-container-tools (<< 2.0.0)"
    )


@pytest.mark.parametrize("path", [CUDA, CTK])
def test_packages_name_real_files_with_their_hashes(repo, path):
    for stanza in stanzas(repo, path):
        deb = repo / path / stanza["Filename"]
        data = deb.read_bytes()
        assert int(stanza["Size"]) == len(data)
        assert stanza["SHA256"] == hashlib.sha256(data).hexdigest()
        assert ":" not in deb.name  # the file name carries no epoch
        control = subprocess.run(
            ["dpkg-deb", "--field", str(deb), "Package", "Version"],
            capture_output=True,
            text=True,
            check=True,
        )
        assert control.stdout == f"Package: {stanza['Package']}\nVersion: {stanza['Version']}\n"


@pytest.mark.parametrize("path", [CUDA, CTK])
def test_release_hashes_match(repo, path):
    release = (repo / path / "Release").read_text()
    assert (
        gzip.decompress((repo / path / "Packages.gz").read_bytes()) == (repo / path / "Packages").read_bytes()
    )
    sha256 = release.split("SHA256:\n", 1)[1].splitlines()
    listed = {line.split()[2]: (line.split()[0], int(line.split()[1])) for line in sha256}
    assert set(listed) == {"Packages", "Packages.gz"}
    for name, (digest, size) in listed.items():
        data = (repo / path / name).read_bytes()
        assert (digest, size) == (hashlib.sha256(data).hexdigest(), len(data))


def keyring(repo, tmp_path, key_path):
    target = tmp_path / "keyring.gpg"
    subprocess.run(
        ["gpg", "--batch", "--yes", "--dearmor", "--output", str(target), str(repo / key_path)], check=True
    )
    return target


@pytest.mark.parametrize(
    ("path", "key"), [(CUDA, CUDA + "/testkey.pub"), (CTK, "libnvidia-container/gpgkey")]
)
def test_indexes_verify_with_the_published_key(repo, tmp_path, path, key):
    ring = keyring(repo, tmp_path, key)
    inline = subprocess.run(
        ["gpgv", "--keyring", str(ring), str(repo / path / "InRelease")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert inline.returncode == 0, inline.stderr
    detached = subprocess.run(
        ["gpgv", "--keyring", str(ring), str(repo / path / "Release.gpg"), str(repo / path / "Release")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert detached.returncode == 0, detached.stderr
    tampered = tmp_path / "Release"
    tampered.write_text((repo / path / "Release").read_text().replace("Packages.gz", "Packages.xz"))
    bad = subprocess.run(
        ["gpgv", "--keyring", str(ring), str(repo / path / "Release.gpg"), str(tampered)],
        capture_output=True,
        check=False,
    )
    assert bad.returncode != 0


def test_keys_json(repo):
    keys = json.loads((repo / "keys.json").read_text())
    assert keys["cuda"]["url"] == f"/{CUDA}/testkey.pub"
    assert keys["container_toolkit"]["url"] == "/libnvidia-container/gpgkey"
    for entry in keys.values():
        data = (repo / entry["url"].lstrip("/")).read_bytes()
        assert data.startswith(b"-----BEGIN PGP PUBLIC KEY BLOCK-----")
        assert entry["sha256"] == hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize(
    ("pin", "match"), [("590", "590.*"), ("590.44.01", "590.44.01-*"), ("590.48.01", "590.48.01-*")]
)
def test_pinning_package_preferences(unpack, pin, match):
    root = unpack(f"nvidia-driver-pinning-{pin}_{pin}-1_all.deb")
    text = (root / "etc/apt/preferences.d/nvidia-driver-pin").read_text()
    stanzas = [block for block in text.split("\n\n") if "Package:" in block]
    assert len(stanzas) == 2
    driver, fabric = (
        {k: v for k, _, v in (line.partition(": ") for line in s.splitlines() if not line.startswith("#"))}
        for s in stanzas
    )
    assert driver["Package"].split() == [
        "nvidia-open",
        "cuda-drivers",
        "libnvidia-compute",
        "nvidia-dkms-open",
        "nvidia-dkms",
        "nvidia-kernel-common",
        "nvidia-compute-utils",
    ]
    assert fabric["Package"].split() == ["nvidia-fabricmanager", "libnvidia-nscq"]
    assert driver["Pin"] == fabric["Pin"] == f"version {match}"
    assert driver["Pin-Priority"] == fabric["Pin-Priority"] == "1000"


def test_driver_packages_ship_what_the_replay_reads(unpack):
    root = unpack(
        "libnvidia-compute-570_570.133.20-1_amd64.deb",
        "nvidia-fabricmanager-570_570.133.20-1_amd64.deb",
        "nvidia-compute-utils-570_570.133.20-1_amd64.deb",
    )
    lib = root / "usr/lib/x86_64-linux-gnu"
    assert (lib / "libnvidia-ml.so.570.133.20").is_file()
    assert (lib / "libnvidia-ml.so.1").readlink().name == "libnvidia-ml.so.570.133.20"
    unit = (root / "lib/systemd/system/nvidia-fabricmanager.service").read_text()
    assert "ExecStart=/usr/bin/nv-fabricmanager -c /usr/share/nvidia/nvswitch/fabricmanager.cfg" in unit
    assert (root / "usr/share/nvidia/nvswitch/fabricmanager.cfg").is_file()
    assert (
        "ExecStart=/usr/bin/nvidia-persistenced"
        in (root / "lib/systemd/system/nvidia-persistenced.service").read_text()
    )


def test_the_cache_is_reused_and_follows_the_inputs(builder, repo, tmp_path, monkeypatch):
    cache = repo.parent
    stamp = (repo / "keys.json").stat().st_mtime_ns
    assert builder.build(cache) == repo and (repo / "keys.json").stat().st_mtime_ns == stamp
    changed = tmp_path / "packages.yml"
    changed.write_text(builder.PACKAGE_LIST.read_text().replace("2025.10.1-1", "2025.10.2-1"))
    monkeypatch.setattr(builder, "PACKAGE_LIST", changed)
    rebuilt = builder.build(cache)
    assert rebuilt != repo and rebuilt.parent == cache
    assert ("nvlsm", "2025.10.2-1") in by_name_version(rebuilt, CUDA)
    # One key per cache directory: both builds are signed by it.
    assert (rebuilt / "keys.json").read_text() == (repo / "keys.json").read_text()
    shutil.rmtree(rebuilt)


def test_cli_prints_the_root(repo):
    import sys

    done = subprocess.run(
        [sys.executable, str(REPO_DIR / "build.py"), "--out", str(repo.parent)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, f"{repo}\n")


def test_a_missing_gpg_is_named_with_its_package(builder, monkeypatch, capsys):
    real_which = shutil.which
    monkeypatch.setattr(
        builder.shutil, "which", lambda tool, *a, **k: None if tool == "gpg" else real_which(tool, *a, **k)
    )
    assert builder.main(["--out", "/nonexistent-never-used"]) == 4
    assert capsys.readouterr().err == (
        "error: gpg is not installed: the test repository needs it\n"
        "  fix: install it: apt-get install gnupg\n"
    )


def test_bad_list_entries_are_named(builder):
    spec = {
        "repos": {"cuda": {}},
        "defaults": {"architecture": "amd64"},
        "groups": [{"name": "g", "repo": "nope", "packages": []}],
    }
    with pytest.raises(builder.BuildError, match="repo 'nope' is not in repos"):
        builder.expand(spec)
    twice = {"name": "p", "version": "1", "description": "d"}
    spec["groups"] = [{"name": "g", "repo": "cuda", "packages": [twice, twice]}]
    with pytest.raises(builder.BuildError, match="listed twice"):
        builder.expand(spec)
