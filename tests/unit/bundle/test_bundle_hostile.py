"""A bundle folder written by someone else (issue 32). `bundle verify` and `bundle serve` refuse
(exit 2, error: and fix:) a target whose os_dir is not `os/<name>` or whose url_vars set a variable
the roles do not name, a URL that is a template, and any symbolic link in the bundle; the server
answers only with the bundle's own regular files; the variables `serve` writes hold no template
(docs/design.md, "Data that reaches Ansible")."""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import re
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from cfcore.bundle import INDEX_VARIABLES, URL_VARIABLES, BundleError, FileEntry, Manifest
from clusterforge.bundle.serve import bundle_vars, make_server, serve_forever
from clusterforge.errors import InvalidInput
from clusterforge.main import main
from patience import HANG_S

ROOT = Path(__file__).resolve().parents[3]
TEMPLATE = "{{ lookup('pipe', 'id -un') }}"
DEB = "os/debian-12-amd64/slurmd_22.05_amd64.deb"


def cli(*args: str) -> int:
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    return exited.value.code


def make_bundle(root: Path, **target) -> Path:
    """A bundle with one file and one target (its keys overridden by `target`)."""
    deb = root / DEB
    deb.parent.mkdir(parents=True)
    deb.write_bytes(b"not really a deb")
    (root / "pypi" / "files").mkdir(parents=True)
    entry = {
        "arch": "amd64",
        "os_dir": "os/debian-12-amd64",
        "hosts": ["gpu-01"],
        "packages": {"slurmd": [DEB]},
        "url_vars": {"juicefs_download_url": "http://mirror.example/jfs/juicefs.tgz"},
        "index_vars": ["cann_pip_index_url"],
        **target,
    }
    digest = hashlib.sha256(deb.read_bytes()).hexdigest()
    Manifest(
        targets={"debian 12": entry},
        files={DEB: FileEntry(digest, deb.stat().st_size, "deb", "http://x/d.deb")},
    ).write(str(root))
    return root


def serve_args(root: Path) -> list[str]:
    return [
        "bundle",
        "serve",
        str(root),
        "--bind",
        "127.0.0.1",
        "--port",
        "1",
        "--url",
        "http://10.0.0.1:8089",
    ]


def refused(capsys, *args: str) -> str:
    assert cli(*args) == 2
    err = capsys.readouterr().err
    assert "error: " in err and "fix: " in err
    return err


@pytest.mark.parametrize(
    "os_dir",
    ["../victim", "/tmp/victim", "os/debian\ndeb [trusted=yes] http://evil.example/ ./", f"os/{TEMPLATE}"],
)
def test_a_target_folder_outside_os_or_not_plain_is_refused_and_nothing_is_written(tmp_path, capsys, os_dir):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "InRelease").write_text("signed")
    root = make_bundle(tmp_path / "bundle", os_dir=os_dir)
    assert "os_dir" in refused(capsys, "bundle", "verify", str(root))
    assert "os_dir" in refused(capsys, *serve_args(root))
    assert sorted(os.listdir(victim)) == ["InRelease"]


@pytest.mark.parametrize(
    ("url_vars", "words"),
    [
        ({"cf_bundle_url": "http://evil.example/"}, "url_vars sets 'cf_bundle_url'"),
        ({"ansible_become_password": "http://x/"}, "url_vars sets 'ansible_become_password'"),
        ({"juicefs_download_url": f"http://x/{TEMPLATE}"}, "template syntax"),
        ({"juicefs_download_url": "http://x/a\nb"}, "line break"),
        ({"juicefs_download_url": "file:///etc/shadow"}, "is not of the form"),
    ],
)
def test_url_vars_set_only_the_roles_url_variables_to_plain_urls(tmp_path, capsys, url_vars, words):
    root = make_bundle(tmp_path / "bundle", url_vars=url_vars)
    assert words in refused(capsys, "bundle", "verify", str(root))
    assert words in refused(capsys, *serve_args(root))


@pytest.mark.parametrize("index_vars", [["cf_bundle_url"], [["cann_pip_index_url"]]])
def test_index_vars_name_only_the_roles_index_variables(tmp_path, capsys, index_vars):
    root = make_bundle(tmp_path / "bundle", index_vars=index_vars)
    assert f"index_vars names {index_vars[0]!r}" in refused(capsys, "bundle", "verify", str(root))


def test_the_url_variables_are_exactly_those_the_roles_name():
    named = set()
    for path in (ROOT / "roles").glob("*/tasks/bundle.yml"):
        named |= set(re.findall(r"'([a-z0-9_]+_url)'", path.read_text()))
    assert named - {"key_url"} == URL_VARIABLES | INDEX_VARIABLES
    assert "cf_bundle_url" not in URL_VARIABLES


def test_served_variables_never_hold_a_template(tmp_path):
    manifest = Manifest(targets={"debian 12": {"os_dir": f"os/{TEMPLATE}"}})
    with pytest.raises(BundleError, match="os_dir"):
        bundle_vars(manifest, "http://b:1")
    with pytest.raises(BundleError, match="template syntax"):
        bundle_vars(Manifest(targets={}), "http://b:1/{{ x }}")


@pytest.mark.parametrize("link", ["mirror/h/secret", "pypi/simple", "os/debian-12-amd64/etc"])
def test_a_symbolic_link_in_the_bundle_is_refused(tmp_path, capsys, link):
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "numpy").mkdir(parents=True)
    (elsewhere / "index.html").write_text("theirs")
    root = make_bundle(tmp_path / "bundle")
    (root / link).parent.mkdir(parents=True, exist_ok=True)
    os.symlink(elsewhere, root / link)
    assert link in refused(capsys, "bundle", "verify", str(root))
    assert link in refused(capsys, *serve_args(root))
    assert (elsewhere / "index.html").read_text() == "theirs" and (elsewhere / "numpy").is_dir()


def _get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=HANG_S) as answer:
            return answer.status
    except urllib.error.HTTPError as err:
        return err.code


def test_the_server_answers_only_with_the_bundle_s_regular_files(tmp_path):
    root = make_bundle(tmp_path / "bundle")
    (root / "pypi" / "simple" / "numpy").mkdir(parents=True)
    (root / "pypi" / "simple" / "numpy" / "index.html").write_text("<html></html>")
    secret = tmp_path / "secret"
    secret.write_text("0600")
    secret.chmod(0o600)
    server = make_server(root, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.server_address[1]}"
    stop = threading.Event()
    thread = threading.Thread(target=serve_forever, args=(server, stop), daemon=True)
    thread.start()
    try:
        # Links made while it serves (after serve's own check): never followed.
        os.symlink(secret, root / "os" / "debian-12-amd64" / "secret")
        os.symlink("/etc", root / "etc")
        (root / "pypi" / "simple" / "other").mkdir()
        os.symlink(secret, root / "pypi" / "simple" / "other" / "index.html")
        assert _get(f"{url}/{DEB}") == 200
        assert _get(f"{url}/pypi/simple/numpy/") == 200
        assert _get(f"{url}/os/debian-12-amd64/secret") == 404
        assert _get(f"{url}/etc/passwd") == 404
        assert _get(f"{url}/etc/") == 404
        assert _get(f"{url}/pypi/simple/other/") == 404
        assert _get(f"{url}/os/") == 404  # no listing
        assert _get(f"{url}/../secret") == 404
    finally:
        stop.set()
        thread.join(timeout=10)
        server.server_close()


def test_the_preflight_refuses_a_served_manifest_that_is_not_plain(tmp_path):
    from clusterforge.bundle.check import fetch_manifest

    root = make_bundle(tmp_path / "bundle", url_vars={"cf_bundle_url": "http://evil.example/"})
    server = make_server(root, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with pytest.raises(InvalidInput, match="url_vars sets 'cf_bundle_url'"):
            fetch_manifest(f"http://127.0.0.1:{server.server_address[1]}")
    finally:
        server.shutdown()
        server.server_close()


def test_verify_reports_a_bad_bundle_as_invalid_input(tmp_path):
    from click.testing import CliRunner
    from clusterforge.main import cli as group

    root = make_bundle(tmp_path / "bundle", os_dir="../x")
    result = CliRunner().invoke(group, ["bundle", "verify", str(root)], standalone_mode=False)
    assert isinstance(result.exception, InvalidInput) and "(fix:" not in result.exception.message


# ------------------------------------------------------------ issue 32 (medium) ----


def test_verify_refuses_a_manifest_that_lists_no_file(tmp_path, capsys):
    """`"files": {}` would verify any folder: refused (exit 2)."""
    root = make_bundle(tmp_path / "b")
    Manifest(targets={}, files={}).write(str(root))
    assert cli("bundle", "verify", str(root)) == 2
    err = capsys.readouterr().err
    assert "bundle.json lists no file" in err and "fix: " in err


def test_verify_checks_the_index_entries_too(tmp_path, capsys):
    root = make_bundle(tmp_path / "b")
    manifest = Manifest.load(str(root))
    packages = root / "os/debian-12-amd64/Packages"
    packages.write_bytes(b"Package: slurmd\n")
    manifest.add_file(str(root), "os/debian-12-amd64/Packages", "index", "generated")
    manifest.write(str(root))
    assert cli("bundle", "verify", str(root)) == 0
    packages.write_bytes(b"Package: slurmdX")  # same size, other bytes: checked as any file
    assert cli("bundle", "verify", str(root)) == 3
    assert "os/debian-12-amd64/Packages: corrupt" in capsys.readouterr().out
    packages.unlink()
    assert cli("bundle", "verify", str(root)) == 3
    assert "os/debian-12-amd64/Packages: missing" in capsys.readouterr().out


def test_an_entry_under_a_linked_folder_is_refused(tmp_path, capsys):
    """`mirror/root -> /`: an entry `mirror/root/etc/hostname` would verify (and serve) a file of
    the bastion: the link is refused (exit 2), and verify_files names it on its own too."""
    from cfcore.checksums import verify_files

    root = make_bundle(tmp_path / "b")
    (root / "mirror").mkdir()
    os.symlink("/", root / "mirror" / "root")
    target = Path("/etc/hostname") if Path("/etc/hostname").is_file() else Path("/etc/passwd")
    relpath = f"mirror/root{target}"
    manifest = Manifest.load(str(root))
    manifest.files[relpath] = FileEntry(
        hashlib.sha256(target.read_bytes()).hexdigest(), target.stat().st_size, "file", "http://x/"
    )
    manifest.write(str(root))
    assert cli("bundle", "verify", str(root)) == 2
    assert "symbolic link(s): mirror/root" in capsys.readouterr().err
    expected = {relpath: (manifest.files[relpath].sha256, manifest.files[relpath].size)}
    [problem] = verify_files(str(root), expected)
    assert (problem.path, problem.kind) == (relpath, "missing") and "symbolic link" in problem.detail


# --------------------------------------------------------------- issue 32 (low) ----


def test_verify_refuses_a_deeply_nested_manifest(tmp_path, capsys):
    root = make_bundle(tmp_path / "bundle")
    (root / "bundle.json").write_text("[" * 100_000 + "]" * 100_000)
    assert "nested deeper than" in refused(capsys, "bundle", "verify", str(root))


@pytest.mark.parametrize("name", [f"{DEB}\x00", "os/debian-12-amd64/x\ny.deb"])
def test_verify_refuses_a_listed_path_that_is_no_file_name(tmp_path, capsys, name):
    root = make_bundle(tmp_path / "bundle")
    path = root / "bundle.json"
    path.write_text(path.read_text().replace(f'"{DEB}"', json.dumps(name)))
    assert "is not a path inside the bundle" in refused(capsys, "bundle", "verify", str(root))


def _answering(body: bytes):
    """A server on 127.0.0.1 that answers every GET with `body`; its URL."""

    class Answer(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"[" * 1000 + b"]" * 1000, "nested deeper than"),
        (b"<html>not found</html>", "answered no bundle manifest"),
        (b'{"format": 1, "files": {}}' + b" " * 5000, "answered more than 4096 bytes"),
    ],
    ids=["nested", "not-json", "oversized"],
)
def test_the_preflight_refuses_a_served_manifest_that_is_no_manifest(monkeypatch, body, message):
    from clusterforge.bundle import check

    monkeypatch.setattr(check, "MAX_MANIFEST_BYTES", 4096)
    server, url = _answering(body)
    try:
        with pytest.raises(InvalidInput, match=message):
            check.fetch_manifest(url)
    finally:
        server.shutdown()
        server.server_close()
