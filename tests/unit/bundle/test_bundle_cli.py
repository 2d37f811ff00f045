"""The bundle commands' own logic, without a build node: needs grouping, the served variables, the
offline preflight against a real HTTP server of a bundle folder, verify's exit codes, the lab's
overlay and the vendor repository mirroring (docs/design.md, "Air-gapped installs")."""

from __future__ import annotations

import functools
import hashlib
import http.server
import json
import threading
from pathlib import Path

import pytest
from cfcore.bundle import FileEntry, Manifest
from click.testing import CliRunner
from clusterforge.bundle import check
from clusterforge.bundle.build import _merged, _release_sha256, _Repo, url_var_value
from clusterforge.bundle.fetch import Fetch, fetch_all, fetch_one
from clusterforge.bundle.needs import needs_from_stats, representatives
from clusterforge.bundle.serve import bundle_vars, render_vars
from clusterforge.errors import EnvironmentNotReady, InvalidInput
from clusterforge.lab.offline import BUNDLE_VARS_NAME, overlay
from clusterforge.main import cli

STATS = {
    "gpu-01": {
        "os_release": "debian 12",
        "needs": [
            {"kind": "os_package", "name": "slurmd", "role": "slurm"},
            {
                "kind": "file",
                "url": "http://mirror.example/jfs/juicefs.tgz",
                "url_var": "juicefs_download_url",
                "sha256": "ab" * 32,
                "role": "juicefs",
            },
            {
                "kind": "apt_repo",
                "url": "http://nv.example/cuda/debian12/x86_64/",
                "url_var": "nvidia_cuda_repo_base_url",
                "key_url": "",
                "role": "nvidia_cuda_repo",
            },
        ],
    },
    "npu-01": {
        "os_release": "debian 12",
        "needs": [
            {"kind": "os_package", "name": "slurmd", "role": "slurm"},
            {
                "kind": "wheel",
                "requirement": "numpy==1.26.4",
                "index_url_var": "cann_pip_index_url",
                "role": "cann",
            },
            {
                "kind": "os_package",
                "name": "linux-headers",
                "role": "ascend_driver",
                "unknown": "needs the kernel",
            },
        ],
    },
}


def test_needs_are_grouped_by_target_os():
    needs = needs_from_stats(STATS)
    target = needs.targets["debian 12"]
    assert target.packages == {"slurmd": ["gpu-01", "npu-01"]}
    assert target.os_dir == "os/debian-12-amd64"
    assert list(target.files) == ["http://mirror.example/jfs/juicefs.tgz"]
    assert list(target.wheels) == ["numpy==1.26.4"]
    assert [item["host"] for item in target.unknown] == ["npu-01"]
    assert needs.hosts_needing("os_package:slurmd") == ["gpu-01", "npu-01"]


def test_a_need_of_no_known_kind_is_refused_naming_the_host():
    with pytest.raises(EnvironmentNotReady, match="gpu-01"):
        needs_from_stats({"gpu-01": {"os_release": "debian 12", "needs": [{"kind": "tarball"}]}})


def _target(**extra) -> dict:
    return {"arch": "amd64", "os_dir": "os/debian-12-amd64", "hosts": ["gpu-01"], "packages": {},
            "url_vars": {"juicefs_download_url": "http://mirror.example/jfs/juicefs.tgz",
                         "nvidia_cuda_repo_base_url": "https://nv.example/cuda/"},
            "index_vars": ["cann_pip_index_url"], **extra}  # fmt: skip


def test_served_variables_point_every_url_at_the_bundle():
    manifest = Manifest(targets={"debian 12": _target()})
    found, conflicts = bundle_vars(manifest, "http://10.0.0.1:8089/")
    assert conflicts == []
    assert found["cf_bundle_url"] == "http://10.0.0.1:8089"
    assert found["base_os_repositories"] == {
        "debian 12": ["deb [trusted=yes] http://10.0.0.1:8089/os/debian-12-amd64/ ./"]
    }
    assert found["juicefs_download_url"] == "http://10.0.0.1:8089/mirror/mirror.example/jfs/juicefs.tgz"
    assert found["nvidia_cuda_repo_base_url"] == "http://10.0.0.1:8089/mirror/nv.example/cuda/"
    assert found["cann_pip_index_url"] == "http://10.0.0.1:8089/pypi/simple/"
    assert found["cann_pip_environment"] == {"PIP_TRUSTED_HOST": "10.0.0.1"}
    assert "cf_bundle_url: http://10.0.0.1:8089" in render_vars(found, Path("/b"))


def test_a_url_variable_that_differs_between_targets_is_left_to_the_operator():
    other = _target(
        os_dir="os/ubuntu-22.04-amd64", url_vars={"juicefs_download_url": "http://elsewhere/j.tgz"}
    )
    manifest = Manifest(targets={"debian 12": _target(), "ubuntu 22.04": other})
    found, conflicts = bundle_vars(manifest, "http://b:1")
    assert "juicefs_download_url" not in found
    assert conflicts and conflicts[0].startswith("juicefs_download_url: ")


def test_the_lab_overlay_replaces_standin_urls_and_keeps_their_checksums():
    standins = {
        "juicefs_dist": {"juicefs_download_url": "http://standin/j.tgz", "juicefs_download_sha256": "x"},
        "ascend_pkgs": {"ppu_package_url": "http://standin/ppu", "ppu_packages": {}},  # no PPU need
    }
    offline = {"cf_bundle_url": "http://b:1", "juicefs_download_url": "http://b:1/mirror/standin/j.tgz"}
    merged = overlay(standins, offline)
    assert merged["juicefs_dist"] == {
        "juicefs_download_url": "http://b:1/mirror/standin/j.tgz",
        "juicefs_download_sha256": "x",
    }
    assert merged["ascend_pkgs"] == {"ppu_packages": {}}
    assert merged[BUNDLE_VARS_NAME] == {"cf_bundle_url": "http://b:1"}
    assert overlay(standins, None) is standins


def test_a_rebuild_keeps_the_earlier_versions():
    earlier = _target(packages={"nvidia-driver=570*": ["a.deb"]}, hosts=["gpu-01"])
    entry = _target(packages={"nvidia-driver=590*": ["b.deb"]}, hosts=["gpu-02"])
    merged = _merged(earlier, entry)
    assert merged["packages"] == {"nvidia-driver=570*": ["a.deb"], "nvidia-driver=590*": ["b.deb"]}
    assert merged["hosts"] == ["gpu-01", "gpu-02"]


# ---- a bundle folder served over real HTTP ------------------------------------------------------


@pytest.fixture
def served(tmp_path):
    """A bundle folder with one package and its manifest, served on 127.0.0.1."""
    deb = tmp_path / "os" / "debian-12-amd64" / "slurmd_22.05_amd64.deb"
    deb.parent.mkdir(parents=True)
    deb.write_bytes(b"not really a deb")
    wheel_index = tmp_path / "pypi" / "simple" / "numpy"
    wheel_index.mkdir(parents=True)
    (wheel_index / "index.html").write_text("<html></html>")
    manifest = Manifest(
        targets={"debian 12": _target(packages={"slurmd": ["os/debian-12-amd64/slurmd_22.05_amd64.deb"]})},
        files={"os/debian-12-amd64/slurmd_22.05_amd64.deb": FileEntry(
            hashlib.sha256(deb.read_bytes()).hexdigest(), deb.stat().st_size, "deb", "http://deb.debian.org/x")},
    )  # fmt: skip
    manifest.write(tmp_path)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield tmp_path, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


class _Inventory:
    def __init__(self, hostvars: dict) -> None:
        self.hostvars = hostvars
        self.targets = list(hostvars)

    def vars_of(self, host: str) -> dict:
        return self.hostvars[host]


def _needs(url: str):
    stats = json.loads(json.dumps(STATS))
    stats["gpu-01"]["needs"][1]["url"] = f"{url}/mirror/mirror.example/jfs/juicefs.tgz"
    stats["gpu-01"]["needs"][2]["url"] = f"{url}/mirror/nv.example/cuda/debian12/x86_64/"
    del stats["npu-01"]["needs"][2]  # the unknown need: not part of the preflight
    return needs_from_stats(stats)


def test_preflight_names_a_package_deleted_from_the_served_bundle(served):
    folder, url = served
    inventory = _Inventory({"gpu-01": {"cf_bundle_url": url}, "npu-01": {"cf_bundle_url": url}})
    (folder / "mirror" / "mirror.example" / "jfs").mkdir(parents=True)
    (folder / "mirror" / "mirror.example" / "jfs" / "juicefs.tgz").write_bytes(b"tgz")
    assert check.check_bundle(inventory, needs=_needs(url)) == []
    (folder / "os" / "debian-12-amd64" / "slurmd_22.05_amd64.deb").unlink()
    problems = check.check_bundle(inventory, needs=_needs(url))
    assert len(problems) == 1
    assert "os/debian-12-amd64/slurmd_22.05_amd64.deb is missing" in problems[0]
    assert "package slurmd, needed by gpu-01, npu-01" in problems[0]
    with pytest.raises(InvalidInput, match="nothing ran"):
        check.raise_on_problems(problems, url)


def test_preflight_names_urls_outside_the_bundle(served):
    _folder, url = served
    inventory = _Inventory({"gpu-01": {"cf_bundle_url": url, "slurm_repo_url": "https://repo.example/slurm"},
                            "npu-01": {"cf_bundle_url": url}})  # fmt: skip
    needs = needs_from_stats(STATS)  # the roles' URLs as the inventory has them: not the bundle's
    problems = check.check_bundle(inventory, needs=needs)
    outside = [p for p in problems if "points outside the bundle" in p]
    assert any(p.startswith("juicefs_download_url = http://mirror.example/jfs/juicefs.tgz") for p in outside)
    assert any(p.startswith("slurm_repo_url = https://repo.example/slurm") and "gpu-01" in p for p in outside)


def test_preflight_is_off_without_a_bundle_url_and_refuses_disagreeing_targets():
    assert check.check_bundle(_Inventory({"a": {}, "b": {}})) == []
    with pytest.raises(InvalidInput, match="do not agree on cf_bundle_url"):
        check.bundle_url_of(_Inventory({"a": {"cf_bundle_url": "http://x"}, "b": {}}))


def test_preflight_says_when_the_bundle_server_is_down():
    with pytest.raises(EnvironmentNotReady, match="does not answer"):
        check.fetch_manifest("http://127.0.0.1:9")


def test_verify_names_a_corrupt_file_and_exits_3(served):
    folder, _url = served
    deb = folder / "os" / "debian-12-amd64" / "slurmd_22.05_amd64.deb"
    assert CliRunner().invoke(cli, ["bundle", "verify", str(folder)]).exit_code == 0
    deb.write_bytes(b"not really a DEB")  # same size, other bytes
    result = CliRunner().invoke(cli, ["bundle", "verify", str(folder)], standalone_mode=False)
    assert "os/debian-12-amd64/slurmd_22.05_amd64.deb" in result.output
    assert getattr(result.exception, "exit_code", None) == 3


def test_verify_of_a_folder_without_a_manifest_is_bad_input(tmp_path):
    result = CliRunner().invoke(cli, ["bundle", "verify", str(tmp_path)], standalone_mode=False)
    assert isinstance(result.exception, InvalidInput)
    assert "bundle.json" in str(result.exception)


# ---- vendor repositories -------------------------------------------------------------------------

RELEASE = """Origin: test
Acquire-By-Hash: yes
SHA256:
 {p} 10 Packages
 {g} 20 Packages.gz
 {o} 30 binary-arm64/Packages
"""


def test_a_vendor_repository_is_mirrored_with_its_listed_indexes(served):
    folder, url = served
    repo_dir = folder / "cuda"
    repo_dir.mkdir()
    (repo_dir / "Release").write_text(RELEASE.format(p="1" * 64, g="2" * 64, o="3" * 64))
    item = {"url": f"{url}/cuda", "url_var": "nvidia_cuda_repo_base_url", "key_url": ""}
    repo = _Repo.of(item, "amd64", None)
    assert repo.source_line() == f"deb [trusted=yes] {url}/cuda/ /"
    fetched = {str(f.dest.relative_to(folder)): f.sha256 for f in repo.metadata_fetches(folder)}
    base = f"mirror/127.0.0.1:{url.rsplit(':', 1)[1]}/cuda"
    assert fetched[f"{base}/Packages"] == "1" * 64
    assert fetched[f"{base}/by-hash/SHA256/{'2' * 64}"] == "2" * 64
    assert f"{base}/InRelease" in fetched and f"{base}/binary-arm64/Packages" not in fetched
    assert repo.dest_of(f"{url}/cuda/pool/x_1_amd64.deb") == f"{base}/pool/x_1_amd64.deb"
    assert _release_sha256(RELEASE.format(p="a", g="b", o="c")) == {
        "Packages": "a", "Packages.gz": "b", "binary-arm64/Packages": "c"}  # fmt: skip


def test_a_base_url_variable_keeps_its_own_value_not_the_files_under_it():
    inventory = _Inventory({"npu-01": {"ascend_package_url": "http://standin:8080/pkgs"}})
    file_url = "http://standin:8080/pkgs/Ascend-hdk-910b-npu-driver_25.5.0_linux-x86-64.run"
    assert url_var_value(inventory, ["npu-01"], "ascend_package_url", "ascend_driver", file_url) == (
        "http://standin:8080/pkgs"
    )
    # Not in the inventory: the role's plain default, when the need's URL lies under it.
    repo_url = "https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/"
    value = url_var_value(inventory, ["npu-01"], "nvidia_cuda_repo_base_url", "nvidia_cuda_repo", repo_url)
    assert value == "https://developer.download.nvidia.com/compute/cuda/repos"
    # A variable that is the URL itself (a templated default): the need's URL.
    url = "https://github.com/NVIDIA/nccl-tests/archive/refs/tags/v2.13.11.tar.gz"
    assert url_var_value(inventory, ["npu-01"], "nccl_tests_url", "nccl", url) == url


def test_downloads_are_checked_reused_and_fail_honestly(served, tmp_path):
    folder, url = served
    source = folder / "os" / "debian-12-amd64" / "slurmd_22.05_amd64.deb"
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    dest = tmp_path / "out" / "slurmd.deb"
    first = fetch_one(Fetch(f"{url}/os/debian-12-amd64/slurmd_22.05_amd64.deb", dest, digest))
    assert (first.error, first.reused, first.sha256) == (
        "",
        False,
        digest,
    ) and dest.read_bytes() == source.read_bytes()
    again = fetch_one(Fetch(f"{url}/os/debian-12-amd64/slurmd_22.05_amd64.deb", dest, digest))
    assert again.reused
    wrong = fetch_one(Fetch(f"{url}/os/debian-12-amd64/slurmd_22.05_amd64.deb", tmp_path / "w.deb", "0" * 64))
    assert "differs from the pinned" in wrong.error and not (tmp_path / "w.deb").exists()
    gone = fetch_one(Fetch(f"{url}/nothing-here.deb", tmp_path / "n.deb", ""))
    assert gone.error and not (tmp_path / "n.deb").exists()
    copied = fetch_one(
        Fetch("http://unreachable.invalid/x.deb", tmp_path / "c.deb", digest, copy_from=source)
    )
    assert copied.error == "" and copied.sha256 == digest
    assert [r.error == "" for r in fetch_all([Fetch(f"{url}/bundle.json", tmp_path / "b.json")])] == [True]


def test_a_suite_repository_keeps_its_dists_layout(served):
    folder, url = served
    (folder / "slurm" / "dists" / "bookworm").mkdir(parents=True)
    (folder / "slurm" / "dists" / "bookworm" / "Release").write_text(
        f"SHA256:\n {'4' * 64} 10 main/binary-amd64/Packages.gz\n {'5' * 64} 20 main/binary-arm64/Packages\n"
    )
    item = {"url": f"{url}/slurm", "suite": "bookworm", "components": ["main"], "url_var": "slurm_repo_url"}
    repo = _Repo.of(item, "amd64", None)
    assert repo.source_line() == f"deb [trusted=yes] {url}/slurm/ bookworm main"
    fetched = {str(f.dest.relative_to(folder)) for f in repo.metadata_fetches(folder)}
    base = f"mirror/127.0.0.1:{url.rsplit(':', 1)[1]}/slurm/dists/bookworm"
    assert {f"{base}/Release", f"{base}/main/binary-amd64/Packages.gz"} <= fetched
    assert f"{base}/main/binary-arm64/Packages" not in fetched


def test_an_unreachable_repository_is_marked_unavailable():
    repo = _Repo.of({"url": "http://127.0.0.1:9/nowhere", "url_var": "x"}, "amd64", None)
    assert not repo.available


class _Grouped(_Inventory):
    def __init__(self, hostvars: dict, groups: dict) -> None:
        super().__init__(hostvars)
        self._groups = groups

    def groups_of(self, host: str) -> list[str]:
        return self._groups[host]

    def group_hosts(self, group: str) -> list[str]:
        return [host for host in self.hostvars if group in self._groups[host]]


def test_hosts_alike_but_for_their_identity_share_one_needs_computation():
    sku = {"node_sku": "hgx-h100-8gpu"}
    hostvars = {
        f"gpu-{i:02d}": {**sku, "ansible_host": f"10.0.0.{i}", "rack": f"r{i % 2}"} for i in range(1, 8)
    }
    hostvars["gpu-06"]["nvidia_driver_version"] = "590.48.01"  # a variable that decides: a kind of its own
    hostvars["gpu-07"]["fabric_storage_address"] = "10.1.0.7"  # an address: the same kind
    hostvars["npu-01"] = {"node_sku": "atlas-800t-a2", "ansible_host": "10.0.1.1"}
    groups = {host: ["gpu_nvidia", "slurm_workers"] for host in hostvars}
    groups["npu-01"] = ["npu_ascend"]
    kinds = representatives(_Grouped(hostvars, groups), list(hostvars))
    # The first three of a group are kinds of their own (roles pick hosts by position).
    assert kinds == {
        "gpu-01": ["gpu-01"],
        "gpu-02": ["gpu-02"],
        "gpu-03": ["gpu-03"],
        "gpu-04": ["gpu-04", "gpu-05", "gpu-07"],
        "gpu-06": ["gpu-06"],
        "npu-01": ["npu-01"],
    }


def test_verify_of_an_offline_inventory_finds_files_at_their_bundle_path(served, monkeypatch):
    folder, url = served
    relpath = "mirror/mirror.example/jfs/juicefs.tgz"
    (folder / relpath).parent.mkdir(parents=True)
    (folder / relpath).write_bytes(b"tgz")
    manifest = Manifest.load(folder)
    manifest.files[relpath] = FileEntry(
        hashlib.sha256(b"tgz").hexdigest(), 3, "file", "http://mirror.example/jfs/j"
    )
    manifest.write(folder)
    file_need = {
        "kind": "file",
        "url": f"{url}/{relpath}",
        "url_var": "juicefs_download_url",
        "role": "juicefs",
    }
    package_need = {"kind": "os_package", "name": "slurmd", "role": "slurm"}
    stats = {"gpu-01": {"os_release": "debian 12", "needs": [package_need, file_need]}}
    inventory = _Inventory({"gpu-01": {"cf_bundle_url": url}})
    monkeypatch.setattr("clusterforge.bundle.needs.compute_needs", lambda _inventory: needs_from_stats(stats))
    monkeypatch.setattr("clusterforge.validation.inventory.checked_inventory", lambda *_a, **_k: inventory)
    result = CliRunner().invoke(cli, ["bundle", "verify", str(folder), "-i", "inv"], standalone_mode=False)
    assert result.exception is None, result.output
    assert "every need of inv present" in result.output
    (folder / relpath).unlink()
    manifest.files.pop(relpath)
    manifest.write(folder)
    result = CliRunner().invoke(cli, ["bundle", "verify", str(folder), "-i", "inv"], standalone_mode=False)
    assert f"file {url}/{relpath} is not in the bundle" in result.output
