"""`clusterforge bundle serve`: the bundle as a plain HTTP repository, and the variables that use it.

Plain HTTP from a bastion is what every air-gapped site can run: apt, dnf, pip
and get_url all speak it, and the files carry their own checksums (the
package indexes, the roles' pinned sha256) so the transport needs no trust.
"""

from __future__ import annotations

import functools
import http.server
import os
import stat
import threading
import urllib.parse
from http import HTTPStatus
from pathlib import Path
from typing import Any

import yaml
from cfcore.bundle import (
    BundleError,
    Manifest,
    bundle_url_for,
    forget_indexes,
    refuse_links,
    target_issues,
    verify,
    write_apt_index,
    write_simple_index,
)
from cfcore.inputs import is_template

from clusterforge.bundle.build import PYPI_FILES, PYPI_SIMPLE, _entry
from clusterforge.bundle.needs import DEBIAN_FAMILY
from clusterforge.errors import ChecksFailed

# A wheel index variable -> the variable with that pip's environment: pip takes a plain-HTTP
# index only from a host it is told to trust.
PIP_ENVIRONMENT_OF = {"cann_pip_index_url": "cann_pip_environment"}


def prepare(bundle: Path) -> Manifest:
    """Verify the bundle (ChecksFailed naming every bad file) and regenerate its indexes.

    BundleError (bad input) for a bundle with a symbolic link anywhere (the indexes are written
    into its folders, never through a link) or a target that is not plain (Manifest.load).
    """
    manifest = Manifest.load(bundle)
    refuse_links(str(bundle))
    problems = verify(bundle, manifest)
    if problems:
        listed = "\n".join(f"  {p.path}: {p.kind} ({p.detail})" for p in problems[:50])
        more = f"\n  ... and {len(problems) - 50} more" if len(problems) > 50 else ""
        raise ChecksFailed(
            f"the bundle {bundle} has {len(problems)} bad file(s):\n{listed}{more}",
            "rebuild into the same folder (clusterforge bundle build ... --out DIR): it refetches only these",
        )
    forget_indexes(manifest)
    for target in manifest.targets.values():
        for name in write_apt_index(bundle / target["os_dir"]):
            relpath = f"{target['os_dir']}/{name}"
            manifest.files[relpath] = _entry(bundle / relpath, "index", "generated")
    if (bundle / PYPI_FILES).is_dir():
        for name in write_simple_index(bundle / PYPI_FILES, bundle / PYPI_SIMPLE):
            relpath = f"{PYPI_SIMPLE}/{name}"
            manifest.files[relpath] = _entry(bundle / relpath, "index", "generated")
    manifest.write(bundle)
    return manifest


def bundle_vars(manifest: Manifest, bundle_url: str) -> tuple[dict[str, Any], list[str]]:
    """The inventory variables that point every role at the bundle, and the conflicts left to the operator.

    A URL variable with different values on different OS targets cannot be one
    group_vars/all value: it is left out and named, to be set per group.
    """
    bundle_url = bundle_url.rstrip("/")
    issues = [issue for name, target in manifest.targets.items() for issue in target_issues(name, target)]
    if issues:  # Manifest.load refuses these too: a manifest made otherwise is checked here
        raise BundleError(f"bundle.json: {'; '.join(issues[:10])}", "rebuild the bundle")
    found: dict[str, Any] = {"cf_bundle_url": bundle_url, "base_os_repositories": {}}
    urls: dict[str, set[str]] = {}
    index_vars: set[str] = set()
    for os_release, target in sorted(manifest.targets.items()):
        found["base_os_repositories"][os_release] = [
            os_repository(os_release, f"{bundle_url}/{target['os_dir']}/")
        ]
        for var, url in (target.get("url_vars") or {}).items():
            urls.setdefault(var, set()).add(url)
        index_vars.update(target.get("index_vars") or [])
    conflicts = []
    for var, values in sorted(urls.items()):
        if len(values) > 1:
            conflicts.append(f"{var}: {', '.join(sorted(values))}")
            continue
        found[var] = bundle_url_for(bundle_url, next(iter(values)))
    host = urllib.parse.urlsplit(bundle_url).hostname or ""
    for var in sorted(index_vars):
        found[var] = f"{bundle_url}/{PYPI_SIMPLE}/"
        if bundle_url.startswith("http://") and var in PIP_ENVIRONMENT_OF:
            found[PIP_ENVIRONMENT_OF[var]] = {"PIP_TRUSTED_HOST": host}
    if is_template(found):  # group_vars are templated at every playbook: not one template in them
        raise BundleError(
            f"the bundle variables for {bundle_url} would hold template syntax ({{{{, {{% or {{#)",
            "pass --url as a plain http://HOST:PORT URL, and rebuild the bundle",
        )
    return found, conflicts


def os_repository(os_release: str, url: str) -> str:
    """The bundle's OS repository as role base takes it: an APT source line, or a YUM baseurl."""
    if os_release.split()[0] in DEBIAN_FAMILY:
        return f"deb [trusted=yes] {url} ./"
    return url  # RHEL family: a baseurl (its repodata comes from createrepo_c; untested here)


def render_vars(found: dict[str, Any], bundle: Path) -> str:
    header = (
        f"# Written by `clusterforge bundle serve {bundle}`: every URL the roles download from\n"
        "# points at the bundle (group_vars/all). cf_bundle_url turns on the bring-up's offline\n"
        "# preflight: it fails early on any URL elsewhere and on anything the bundle lacks.\n"
    )
    return header + yaml.safe_dump(found, sort_keys=True, default_flow_style=False)


def servable(root: str, path: str, folder: bool = False) -> bool:
    """Whether the server may answer with `path`: a regular file (or with `folder`, a folder) inside
    `root` (resolved) reached through no symbolic link. A link in the bundle, to a 0600 file or to
    /etc, is never served, whatever was checked when the server started."""
    if os.path.realpath(path) != os.path.normpath(path) or not path.startswith(root.rstrip(os.sep) + os.sep):
        return False
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return False
    return stat.S_ISDIR(mode) if folder else stat.S_ISREG(mode)


class _BundleHandler(http.server.SimpleHTTPRequestHandler):
    """Serves the bundle's regular files (a folder's index.html for its URL), no link, no listing."""

    def log_message(self, format: str, *args: Any) -> None:
        pass  # a fleet's apt requests would flood the terminal; errors reach the clients

    def send_head(self) -> Any:
        path = self.translate_path(self.path)
        folder = os.path.isdir(path)
        if folder and urllib.parse.urlsplit(self.path).path.endswith("/"):
            path, folder = os.path.join(path, "index.html"), False
        if not servable(self.directory, path, folder):
            self.send_error(HTTPStatus.NOT_FOUND, "File not found")
            return None
        return super().send_head()

    def list_directory(self, path: Any) -> Any:
        self.send_error(HTTPStatus.NOT_FOUND, "File not found")
        return None


def make_server(bundle: Path, bind: str, port: int) -> http.server.ThreadingHTTPServer:
    handler = functools.partial(_BundleHandler, directory=os.path.realpath(bundle))
    server = http.server.ThreadingHTTPServer((bind, port), handler)
    server.daemon_threads = True
    return server


def serve_forever(server: http.server.ThreadingHTTPServer, stop: threading.Event | None = None) -> None:
    """Serve until interrupted (or `stop` is set, for tests)."""
    if stop is None:
        server.serve_forever()
        return
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    stop.wait()
    server.shutdown()
