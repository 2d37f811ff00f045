"""`clusterforge bundle serve`: the bundle as a plain HTTP repository, and the variables that use it.

Plain HTTP from a bastion is what every air-gapped site can run: apt, dnf, pip
and get_url all speak it, and the files carry their own checksums (the
package indexes, the roles' pinned sha256) so the transport needs no trust.
"""

from __future__ import annotations

import functools
import http.server
import threading
import urllib.parse
from pathlib import Path
from typing import Any

import yaml
from cfcore.bundle import Manifest, bundle_url_for, verify, write_apt_index, write_simple_index

from clusterforge.bundle.build import PYPI_FILES, PYPI_SIMPLE, _entry
from clusterforge.bundle.needs import DEBIAN_FAMILY
from clusterforge.errors import ChecksFailed

# A wheel index variable -> the variable with that pip's environment: pip takes a plain-HTTP
# index only from a host it is told to trust.
PIP_ENVIRONMENT_OF = {"cann_pip_index_url": "cann_pip_environment"}


def prepare(bundle: Path) -> Manifest:
    """Verify the bundle (ChecksFailed naming every bad file) and regenerate its indexes."""
    manifest = Manifest.load(bundle)
    problems = verify(bundle, manifest)
    if problems:
        listed = "\n".join(f"  {p.path}: {p.kind} ({p.detail})" for p in problems[:50])
        more = f"\n  ... and {len(problems) - 50} more" if len(problems) > 50 else ""
        raise ChecksFailed(
            f"the bundle {bundle} has {len(problems)} bad file(s):\n{listed}{more}",
            "rebuild into the same folder (clusterforge bundle build ... --out DIR): it refetches only these",
        )
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


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass  # a fleet's apt requests would flood the terminal; errors reach the clients


def make_server(bundle: Path, bind: str, port: int) -> http.server.ThreadingHTTPServer:
    handler = functools.partial(_QuietHandler, directory=str(bundle))
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
