"""The offline bundle's core (cfcore/bundle.py): URL mapping, manifest, verify, APT and PEP 503 indexes."""

from __future__ import annotations

import gzip
import hashlib
import html
import io
import json
import os
import re
import shutil
import subprocess
import tarfile
from urllib.parse import urljoin

import pytest
from cfcore.bundle import (
    BundleError,
    FileEntry,
    Manifest,
    Problem,
    bundle_url_for,
    closure_files,
    mirror_relpath,
    outside_urls,
    points_into,
    read_deb_control,
    sha256_file,
    verify,
    write_apt_index,
    write_simple_index,
)

BUNDLE = "http://bastion:8080/"
NOW = 1767225600.0  # 2026-01-01 00:00:00 UTC
ENTRY = {"sha256": "0" * 64, "size": 1, "kind": "deb", "source": ""}


# ---------------------------------------------------------------- .deb maker ----


def ar_archive(members: list[tuple[str, bytes]]) -> bytes:
    """An ar archive as dpkg-deb writes it: names padded with spaces, data padded to even length."""
    out = bytearray(b"!<arch>\n")
    for name, data in members:
        header = f"{name:<16}{0:<12}{0:<6}{0:<6}{100644:<8}{len(data):<10}".encode() + b"`\n"
        out += header + data + (b"\n" if len(data) % 2 else b"")
    return bytes(out)


def tar_member(files: dict[str, bytes], compression: str) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=f"w:{compression}") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def control_text(package: str, version: str, arch: str = "amd64") -> str:
    return (
        f"Package: {package}\nVersion: {version}\nArchitecture: {arch}\n"
        "Maintainer: Lab <lab@example.org>\nDepends: libc6 (>= 2.36)\n"
        f"Description: test package {package}\n a second line\n .\n and a third\n"
    )


def make_deb(folder, package: str, version: str, arch: str = "amd64", compression: str = "xz") -> str:
    control = control_text(package, version, arch).encode()
    if compression == "zst":
        plain = tar_member({"./control": control}, "")
        member = ("control.tar.zst", subprocess.run(["zstd", "-c"], input=plain, capture_output=True).stdout)
    else:
        member = (f"control.tar.{compression}", tar_member({"./control": control}, compression))
    data = tar_member({f"./usr/share/doc/{package}/README": b"hello\n"}, "xz")
    path = os.path.join(folder, f"{package}_{version}_{arch}.deb")
    with open(path, "wb") as handle:
        handle.write(ar_archive([("debian-binary", b"2.0\n"), member, ("data.tar.xz", data)]))
    return path


def stanzas(text: str) -> dict[str, dict[str, str]]:
    """Packages text as {package: {field: value}} (continuation lines joined with newlines)."""
    found = {}
    for block in text.strip().split("\n\n"):
        fields: dict[str, str] = {}
        last = ""
        for line in block.splitlines():
            if line.startswith(" "):
                fields[last] += "\n" + line
            else:
                last, value = line.split(":", 1)
                fields[last] = value.strip()
        found[fields["Package"]] = fields
    return found


# ------------------------------------------------------------------- URLs ----


MIRRORED = {
    "http://h:8080/a/b.tgz": "mirror/h:8080/a/b.tgz",
    "https://h/x/": "mirror/h/x",
    "https://Repo.Example.COM/x/y.deb?token=1#frag": "mirror/repo.example.com/x/y.deb",
    "ftp://h/pub//./f%20g.tar": "mirror/h/pub/f g.tar",
    "http://h": "mirror/h",
}
REFUSED = {
    "file:///etc/passwd": "http, https or ftp",
    "/local/path": "http, https or ftp",
    "http:///x": "no host",
    "http://h/a/../../etc": "'..'",
    "http://h/a/%2e%2e/b": "'..'",
    "http://../x": "invalid host",
    "http://h:99999/x": "invalid port",
}


def test_mirror_relpath_keeps_the_origin_and_path_and_refuses_unsafe_urls():
    assert {url: mirror_relpath(url) for url in MIRRORED} == MIRRORED
    for url, words in REFUSED.items():
        with pytest.raises(ValueError, match=words) as raised:
            mirror_relpath(url)
        assert repr(url) in str(raised.value)


def test_bundle_url_for_keeps_a_trailing_slash():
    assert bundle_url_for(BUNDLE, "http://h:8080/a/b.tgz") == "http://bastion:8080/mirror/h:8080/a/b.tgz"
    assert bundle_url_for("http://b/pre", "https://h/debian/") == "http://b/pre/mirror/h/debian/"
    assert bundle_url_for(BUNDLE, "https://h/x/pkg_1.0+dfsg.deb") == f"{BUNDLE}mirror/h/x/pkg_1.0+dfsg.deb"
    assert bundle_url_for(BUNDLE, "https://h/a%20b") == f"{BUNDLE}mirror/h/a%20b"


def test_points_into_compares_origin_and_path_prefix():
    assert points_into(BUNDLE, "http://bastion:8080/mirror/h/x")
    assert points_into("http://b/pre/", "http://B:80/pre")
    assert points_into("http://b/pre", "http://b/pre/os/debian-12-amd64/")
    assert not points_into("http://b/pre", "http://b/prefix/x")
    assert not points_into(BUNDLE, "https://bastion:8080/mirror")
    assert not points_into(BUNDLE, "http://bastion/mirror")
    assert not points_into(BUNDLE, "http://other:8080/")
    assert not points_into(BUNDLE, "not a url")


def test_outside_urls_lists_download_url_variables_pointing_elsewhere():
    """Only the roles' download URL variables: a webhook, a dashboard address or a vaulted
    secret merely named `*_url` is no download (issue 32: the example inventory's Alertmanager
    webhook blocked an offline bring-up and was printed)."""
    host_vars = {
        "n2": {"nvidia_cuda_repo_base_url": "https://developer.download.nvidia.com/x/"},
        "n1": {
            "cf_bundle_url": "http://elsewhere/",
            "cann_pip_index_url": "https://pypi.org/simple/",
            "juicefs_download_url": f"{BUNDLE}mirror/github.com/juicefs.tgz",
            "grafana_package_url": "{{ lookup('env', 'X') }}",
            "slurm_repo_url": "",
            "slurm_repo_key_url": ["http://list/"],
            "rdma_doca_repo_url": "ldaps://ldap/",
            "docs_url": "HTTP://Upper/",
            "vault_alertmanager_chat_url": "https://hooks.example/T000/B000/XXXXSECRET",
            "grafana_root_url": "http://grafana.example:3000/",
            "k8s_crictl_url": "HTTP://Upper/crictl.tgz",
        },
    }
    assert outside_urls(host_vars, BUNDLE) == [
        ("n1", "cann_pip_index_url", "https://pypi.org/simple/"),
        ("n1", "k8s_crictl_url", "HTTP://Upper/crictl.tgz"),
        ("n2", "nvidia_cuda_repo_base_url", "https://developer.download.nvidia.com/x/"),
    ]


def test_closure_files_looks_names_up_bare():
    packages = {"nvlsm": ["os/a.deb", "os/b.deb"], "slurmd": ["os/b.deb", "os/c.deb"], "x=1": ["x"]}
    target = {"arch": "amd64", "packages": packages}
    names = ["nvlsm=2025.10.2-*", "slurmd:amd64", "foo >= 1", "x=1", "bar", "bar"]
    files, unknown = closure_files(target, names)
    assert files == {"os/a.deb", "os/b.deb", "os/c.deb", "x"}
    assert unknown == ["foo >= 1", "bar"]
    assert closure_files({}, ["a"]) == (set(), ["a"])


# ---------------------------------------------------------- manifest, verify ----


def small_bundle(tmp_path) -> tuple[str, Manifest]:
    root = str(tmp_path / "bundle")
    for relpath, data in {"os/d/a.deb": b"a" * 10, "mirror/h/f.tgz": b"tgz", "os/d/Packages": b"x"}.items():
        os.makedirs(os.path.dirname(os.path.join(root, relpath)), exist_ok=True)
        with open(os.path.join(root, relpath), "wb") as handle:
            handle.write(data)
    manifest = Manifest(created="2026-01-01T00:00:00Z", inventory={"path": "inv.yml", "sha256": "0" * 64})
    manifest.add_file(root, "os/d/a.deb", "deb", "apt:debian 12")
    manifest.add_file(root, "mirror/h/f.tgz", "file", "http://h/f.tgz")
    manifest.add_file(root, "os/d/Packages", "index", "generated")
    return root, manifest


def test_manifest_round_trips_through_bundle_json(tmp_path):
    root, manifest = small_bundle(tmp_path)
    manifest.targets = {"debian 12": {"arch": "amd64", "os_dir": "os/d", "packages": {"a": ["os/d/a.deb"]}}}
    manifest.missing = [{"kind": "image", "name": "r/i:1", "target": "debian 12", "why": "no registry"}]
    path = manifest.write(root)
    assert path == os.path.join(root, "bundle.json")
    assert sorted(n for n in os.listdir(root) if n.startswith(".")) == []  # no temp file left
    assert oct(os.stat(path).st_mode & 0o777) == "0o644"
    loaded = Manifest.load(root)
    assert loaded == manifest
    tgz = FileEntry(hashlib.sha256(b"tgz").hexdigest(), 3, "file", "http://h/f.tgz")
    assert loaded.files["mirror/h/f.tgz"] == tgz
    with open(path) as handle:
        assert json.load(handle) == manifest.to_dict()
    assert list(manifest.to_dict()["files"]) == sorted(manifest.files)
    with pytest.raises(ValueError, match="unknown bundle file kind"):
        manifest.add_file(root, "os/d/a.deb", "iso", "")
    with pytest.raises(ValueError, match="not a path inside"):
        manifest.add_file(root, "../a", "file", "")


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (None, "does not exist"),
        (b"{not json", "not valid JSON"),
        (b"\xff\xfe", "not UTF-8"),
        (b"[1]", "JSON list, not an object"),
        (b'{"format": 2}', "format 2"),
        (b'{"created": "x"}', "format None"),
        (b'{"format": 1, "files": []}', "`files` is not a JSON object"),
        (json.dumps({"format": 1, "files": {"a": {**ENTRY, "sha256": "x"}}}).encode(), "no valid sha256"),
        (b'{"format": 1, "files": {"../a": {}}}', "not a path inside"),
        (json.dumps({"format": 1, "files": {"a": {**ENTRY, "kind": "iso"}}}).encode(), "unknown kind 'iso'"),
        (json.dumps({"format": 1, "files": {"a": {**ENTRY, "size": -1}}}).encode(), "no valid size"),
        ("folder", "directory"),
    ],
)
def test_a_bad_manifest_is_a_bundle_error_naming_it(tmp_path, content, words):
    if content == "folder":
        (tmp_path / "bundle.json").mkdir()
    elif content is not None:
        (tmp_path / "bundle.json").write_bytes(content)
    with pytest.raises(BundleError, match=words) as raised:
        Manifest.load(str(tmp_path))
    assert str(tmp_path / "bundle.json") in raised.value.message
    assert raised.value.fix


def test_verify_names_missing_corrupt_and_truncated_files(tmp_path):
    root, manifest = small_bundle(tmp_path)
    assert verify(root, manifest) == []
    (tmp_path / "bundle" / "extra.bin").write_bytes(b"not listed")  # not listed: no problem
    assert verify(root, manifest) == []
    os.unlink(os.path.join(root, "os/d/Packages"))  # an index is checked as any file (issue 32)
    assert [(p.path, p.kind) for p in verify(root, manifest)] == [("os/d/Packages", "missing")]
    manifest.files.pop("os/d/Packages")

    deb = os.path.join(root, "os/d/a.deb")
    with open(deb, "r+b") as handle:  # same size, one byte flipped
        handle.seek(3)
        handle.write(b"b")
    os.unlink(os.path.join(root, "mirror/h/f.tgz"))
    problems = verify(root, manifest)
    assert [(p.path, p.kind) for p in problems] == [("mirror/h/f.tgz", "missing"), ("os/d/a.deb", "corrupt")]
    assert manifest.files["os/d/a.deb"].sha256 in problems[1].detail
    assert str(problems[0]).startswith("mirror/h/f.tgz: ")

    with open(deb, "ab") as handle:
        handle.write(b"more")
    assert verify(root, manifest)[1] == Problem("os/d/a.deb", "size", "14 bytes, the manifest says 10")


def test_verify_hashes_many_files(tmp_path):
    manifest = Manifest()
    for i in range(300):
        (tmp_path / f"f{i:03d}").write_bytes(str(i).encode() * 100)
        manifest.add_file(str(tmp_path), f"f{i:03d}", "file", "test")
    (tmp_path / "f150").write_bytes(b"x" * len(str(150).encode() * 100))
    assert [p.path for p in verify(str(tmp_path), manifest)] == ["f150"]
    assert sha256_file(str(tmp_path / "f001")) == hashlib.sha256(b"1" * 100).hexdigest()


# --------------------------------------------------------------------- APT ----


def test_read_deb_control_of_each_compression(tmp_path, monkeypatch):
    for compression in ("xz", "gz"):
        path = make_deb(str(tmp_path), f"cf-{compression}", "1.0-1", compression=compression)
        assert read_deb_control(path) == control_text(f"cf-{compression}", "1.0-1")
    if not shutil.which("zstd"):
        pytest.skip("zstd is not installed")
    path = make_deb(str(tmp_path), "cf-zst", "1.0-1", compression="zst")
    assert read_deb_control(path) == control_text("cf-zst", "1.0-1")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no zstd command: the error says to install it
    with pytest.raises(BundleError, match="zstd") as raised:
        read_deb_control(path)
    assert path in raised.value.message and "install zstd" in raised.value.fix


def test_read_deb_control_of_a_dpkg_deb_package(tmp_path):
    if not shutil.which("dpkg-deb"):
        pytest.skip("dpkg-deb is not installed")
    root = tmp_path / "pkg"
    (root / "DEBIAN").mkdir(parents=True)
    (root / "DEBIAN" / "control").write_text(control_text("cf-real", "2.0-1"))
    deb = str(tmp_path / "cf-real.deb")
    subprocess.run(["dpkg-deb", "--root-owner-group", "-b", str(root), deb], check=True, capture_output=True)
    fields = stanzas(read_deb_control(deb))["cf-real"]
    assert fields["Version"] == "2.0-1" and fields["Depends"] == "libc6 (>= 2.36)"
    assert fields["Description"] == "test package cf-real\n a second line\n .\n and a third"


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b"PK\x03\x04 a zip", "not an ar archive"),
        (ar_archive([("debian-binary", b"2.0\n"), ("data.tar.xz", b"x")]), "no control.tar member"),
        (ar_archive([("control.tar.gz", b"not gzip")]), "cannot be read"),
        (ar_archive([("control.tar.xz", tar_member({"./md5sums": b""}, "xz"))]), "no control file"),
        (b"!<arch>\ncontrol.tar.gz  0   ", "broken ar member header"),
    ],
)
def test_a_broken_deb_is_a_bundle_error_naming_it(tmp_path, content, words):
    path = tmp_path / "broken_1_amd64.deb"
    path.write_bytes(content)
    with pytest.raises(BundleError, match=words) as raised:
        read_deb_control(str(path))
    assert str(path) in raised.value.message


def test_write_apt_index_of_a_flat_repository(tmp_path):
    repo = str(tmp_path)
    make_deb(repo, "zeta", "1.0-1")
    make_deb(repo, "alpha", "2.0-1", compression="gz")
    make_deb(repo, "common", "1.0", arch="all")
    (tmp_path / "sub").mkdir()
    make_deb(str(tmp_path / "sub"), "nested", "1")  # not recursive
    (tmp_path / "InRelease").write_text("stale signature")

    assert write_apt_index(repo, now=NOW) == ["Packages", "Packages.gz", "Release"]
    packages = (tmp_path / "Packages").read_bytes()
    assert gzip.decompress((tmp_path / "Packages.gz").read_bytes()) == packages
    assert not (tmp_path / "InRelease").exists()
    found = stanzas(packages.decode())
    assert list(found) == ["alpha", "common", "zeta"]
    deb = tmp_path / "alpha_2.0-1_amd64.deb"
    alpha = found["alpha"]
    assert alpha["Filename"] == "alpha_2.0-1_amd64.deb" and alpha["Size"] == str(deb.stat().st_size)
    assert alpha["MD5sum"] == hashlib.md5(deb.read_bytes()).hexdigest()
    assert alpha["SHA256"] == sha256_file(str(deb))
    assert list(alpha)[:5] == ["Package", "Version", "Architecture", "Maintainer", "Depends"]
    assert alpha["Description"].endswith("\n a second line\n .\n and a third")

    release = (tmp_path / "Release").read_text().splitlines()
    assert release[:2] == ["Date: Thu, 01 Jan 2026 00:00:00 GMT", "Architectures: all amd64"]
    gz = (tmp_path / "Packages.gz").read_bytes()
    assert gz[4:8] == b"\0\0\0\0"  # gzip mtime 0: the same packages give the same Release
    assert f" {hashlib.sha256(packages).hexdigest()} {len(packages)} Packages" in release
    assert f" {hashlib.sha256(gz).hexdigest()} {len(gz)} Packages.gz" in release
    assert release.index("SHA256:") > release.index("MD5Sum:")

    before = {n: (tmp_path / n).read_bytes() for n in ("Packages", "Packages.gz", "Release")}
    write_apt_index(repo, now=NOW)
    assert {n: (tmp_path / n).read_bytes() for n in before} == before  # deterministic

    empty = tmp_path / "empty"
    empty.mkdir()
    write_apt_index(str(empty), now=NOW)
    assert (empty / "Packages").read_bytes() == b"" and "Architectures" not in (empty / "Release").read_text()


def test_apt_index_agrees_with_dpkg_scanpackages(tmp_path):
    if not shutil.which("dpkg-scanpackages"):
        pytest.skip("dpkg-scanpackages is not installed")
    make_deb(str(tmp_path), "alpha", "2.0-1")
    make_deb(str(tmp_path), "beta", "1:3.1~rc1-2", arch="all", compression="gz")
    write_apt_index(str(tmp_path), now=NOW)
    scan = ["dpkg-scanpackages", "-m", "."]
    theirs = subprocess.run(scan, cwd=tmp_path, check=True, capture_output=True, text=True).stdout
    ours = stanzas((tmp_path / "Packages").read_text())
    for package, fields in stanzas(theirs).items():
        fields["Filename"] = fields["Filename"].removeprefix("./")
        fields.pop("SHA1")
        assert ours[package] == fields


# -------------------------------------------------------------------- PyPI ----


def links(path) -> list[tuple[str, str]]:
    """(href, text) of each link of an index page, unescaped as a browser (or pip) reads them."""
    text = path.read_text()
    assert text.startswith("<!DOCTYPE html>") and text.rstrip().endswith("</body></html>")
    found = re.findall(r'<a href="([^"]*)">([^<]*)</a>', text)
    return [(html.unescape(href), html.unescape(name)) for href, name in found]


def test_write_simple_index_groups_wheels_by_normalized_project(tmp_path):
    files, simple = tmp_path / "pypi" / "files", tmp_path / "pypi" / "simple"
    files.mkdir(parents=True)
    names = [
        "PyYAML-6.0.1-cp311-cp311-manylinux_2_17_x86_64.whl",
        "pyyaml-6.0.2-cp311-cp311-manylinux_2_17_x86_64.whl",
        "python-dateutil-2.8.2.tar.gz",
        "Foo_Bar.baz-1.0+local-py3-none-any.whl",
    ]
    for name in names:
        (files / name).write_bytes(name.encode())
    (simple / "stale-project").mkdir(parents=True)
    (simple / "stale-project" / "index.html").write_text("old")
    (simple / "not-ours").mkdir()
    (simple / "not-ours" / "data.txt").write_text("kept")

    projects = ["foo-bar-baz", "python-dateutil", "pyyaml"]
    written = write_simple_index(str(files), str(simple))
    assert written == ["index.html"] + [f"{p}/index.html" for p in projects]
    assert not (simple / "stale-project").exists() and (simple / "not-ours" / "data.txt").exists()
    assert links(simple / "index.html") == [(f"{p}/", p) for p in projects]
    page = links(simple / "pyyaml" / "index.html")
    assert [text for _href, text in page] == names[:2]
    base = "http://bastion:8080/pypi/debian-12-amd64/simple/pyyaml/"
    for href, name in page + links(simple / "foo-bar-baz" / "index.html"):
        digest = hashlib.sha256(name.encode()).hexdigest()
        assert urljoin(base, href) == f"http://bastion:8080/pypi/debian-12-amd64/files/{name}#sha256={digest}"


def test_simple_index_escapes_names_and_refuses_strays(tmp_path):
    files = tmp_path / "files"
    files.mkdir()
    (files / "a&b-1.0-py3-none-any.whl").write_bytes(b"x")
    write_simple_index(str(files), str(tmp_path / "simple"))
    assert "a&amp;b-1.0-py3-none-any.whl</a>" in (tmp_path / "simple" / "a&b" / "index.html").read_text()
    (files / "notawheel.whl").write_bytes(b"x")
    with pytest.raises(BundleError, match="not a wheel or sdist") as raised:
        write_simple_index(str(files), str(tmp_path / "simple"))
    assert str(files / "notawheel.whl") in raised.value.message
