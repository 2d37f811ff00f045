"""The bring-up's offline preflight: with `cf_bundle_url` set, nothing may come from anywhere else.

Run in-process before any playbook (docs/design.md, "Preflight from a bundle"):
every URL the hosts' roles would download from must point into the bundle, and
every package, file and wheel they need must be served by it, checked by a
HEAD request to the bundle server, so a file deleted from a served bundle is
found too. Problems are listed with the hosts that need each piece.
"""

from __future__ import annotations

import re
import urllib.error
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from cfcore.bundle import MAX_MANIFEST_BYTES, BundleError, Manifest, closure_files, outside_urls, points_into
from cfcore.files import parse_json
from cfcore.redact import mask_url

from clusterforge.bundle.build import PYPI_SIMPLE
from clusterforge.bundle.needs import Needs, compute_needs
from clusterforge.errors import EnvironmentNotReady, InvalidInput

BUNDLE_URL_VAR = "cf_bundle_url"
HEAD_PARALLEL = 16
SHOWN = 40  # problems listed in full; the rest counted


def bundle_url_of(inventory: Any) -> str | None:
    """The targets' cf_bundle_url (None: not an offline bring-up); InvalidInput when targets disagree."""
    urls = {host: str(inventory.vars_of(host).get(BUNDLE_URL_VAR) or "") for host in inventory.targets}
    distinct = sorted(set(urls.values()))
    if distinct == [""]:
        return None
    if len(distinct) > 1:
        example = {value: next(h for h, v in urls.items() if v == value) for value in distinct}
        shown = ", ".join(f"{host}: {mask_url(value) or '(unset)'}" for value, host in example.items())
        raise InvalidInput(
            f"the targets do not agree on {BUNDLE_URL_VAR} ({shown})",
            f"set {BUNDLE_URL_VAR} once for all hosts (group_vars/all), or none for an online bring-up",
        )
    return distinct[0].rstrip("/")


def check_bundle(
    inventory: Any,
    *,
    needs: Needs | None = None,
    note: Callable[[str], None] = lambda _t: None,
) -> list[str]:
    """Problems of an offline bring-up of the inventory's targets ([] when fine or not offline)."""
    bundle_url = bundle_url_of(inventory)
    if bundle_url is None:
        return []
    needs = needs or compute_needs(inventory)
    problems = _outside(inventory, needs, bundle_url)
    manifest = fetch_manifest(bundle_url)
    heads: dict[str, set[str]] = {}  # URL to check -> what needs it
    for os_release, target in sorted(needs.targets.items()):
        built = manifest.targets.get(os_release)
        if built is None:
            problems.append(
                f"the bundle has no packages for {os_release} (hosts {_hosts(target.hosts)}): "
                "rebuild it with this inventory"
            )
            continue
        files, unknown = closure_files(built, sorted(target.packages))
        for spec in unknown:
            problems.append(
                f"package {spec} is not in the bundle (needed by {_hosts(target.packages[spec])})"
            )
        owners = _owners(built, target)
        for relpath in files:
            heads.setdefault(f"{bundle_url}/{relpath}", set()).update(owners.get(relpath, set()))
        for url, item in target.files.items():
            if points_into(bundle_url, url):
                heads.setdefault(url, set()).add(f"file of role {item.get('role')}")
        for requirement in target.wheels:
            project = _project(requirement)
            heads.setdefault(f"{bundle_url}/{PYPI_SIMPLE}/{project}/", set()).add(f"wheel {requirement}")
    note(f"offline preflight: {len(heads)} file(s) of the bundle at {mask_url(bundle_url)} checked")
    for url, owners in sorted(_absent(heads).items()):
        name = url[len(bundle_url) + 1 :] if url.startswith(bundle_url) else mask_url(url)
        problems.append(f"{name} is missing from the bundle ({'; '.join(sorted(owners)[:3])})")
    return problems


def raise_on_problems(problems: list[str], bundle_url: str | None) -> None:
    if not problems:
        return
    listed = "\n".join(f"  - {p}" for p in problems[:SHOWN])
    more = f"\n  ... and {len(problems) - SHOWN} more" if len(problems) > SHOWN else ""
    raise InvalidInput(
        f"offline bring-up from {mask_url(bundle_url)}: {len(problems)} problem(s); nothing ran:\n"
        f"{listed}{more}",
        "rebuild the bundle with this inventory (clusterforge bundle build -i INV --out DIR), serve it again "
        "(clusterforge bundle serve DIR --vars-out ...), and point every URL variable at it",
    )


def fetch_manifest(bundle_url: str) -> Manifest:
    url = f"{bundle_url}/bundle.json"
    try:
        with urllib.request.urlopen(url, timeout=30) as answer:
            body = answer.read(MAX_MANIFEST_BYTES + 1)
    except (OSError, ValueError) as err:
        raise EnvironmentNotReady(
            f"the bundle server does not answer {mask_url(url)}: {getattr(err, 'reason', None) or err}",
            "start it on the bastion (clusterforge bundle serve DIR) and check the nodes' route to it",
        ) from None
    # The server's answer is data from the network: bounded like a file, then checked for shape.
    fix = "point the bundle URL at a `clusterforge bundle serve` of a bundle this ClusterForge built"
    if len(body) > MAX_MANIFEST_BYTES:
        raise InvalidInput(f"{mask_url(url)} answered more than {MAX_MANIFEST_BYTES} bytes", fix)
    try:
        data = parse_json(body)
    except ValueError as err:
        raise InvalidInput(f"{mask_url(url)} answered no bundle manifest: not JSON ({err})", fix) from None
    try:
        return Manifest.from_dict(data, mask_url(url))
    except BundleError as err:
        raise InvalidInput(err.message, err.fix) from None


def _outside(inventory: Any, needs: Needs, bundle_url: str) -> list[str]:
    """URLs the roles would use that point elsewhere than the bundle, with the hosts using them."""
    found: dict[tuple[str, str], list[str]] = {}
    for host, entry in needs.hosts.items():
        for item in entry["needs"]:
            for key in ("url", "key_url"):
                url = str(item.get(key) or "")
                if url and not points_into(bundle_url, url):
                    var = (
                        str(item.get("url_var") or f"(role {item.get('role')})")
                        if key == "url"
                        else "key_url"
                    )
                    found.setdefault((var, url), []).append(host)
    hostvars = {host: dict(inventory.vars_of(host)) for host in inventory.targets}
    for host, var, url in outside_urls(hostvars, bundle_url):
        found.setdefault((var, url), []).append(host)
    return [  # a URL's credentials masked: the message is printed, and may be logged
        f"{var} = {mask_url(url)} points outside the bundle (hosts {_hosts(hosts)})"
        for (var, url), hosts in sorted(found.items())
    ]


def _owners(built: dict[str, Any], target: Any) -> dict[str, set[str]]:
    """Bundle file -> "package SPEC" of the needed specs whose closure holds it."""
    owners: dict[str, set[str]] = {}
    for spec in target.packages:
        for relpath in (built.get("packages") or {}).get(spec, []):
            owners.setdefault(relpath, set()).add(
                f"package {spec}, needed by {_hosts(target.packages[spec])}"
            )
    return owners


def _absent(heads: dict[str, set[str]]) -> dict[str, set[str]]:
    def missing(url: str) -> bool:
        try:
            with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=30):
                return False
        except urllib.error.HTTPError as err:
            return err.code in (404, 410)
        except (OSError, ValueError) as err:
            raise EnvironmentNotReady(
                f"the bundle server stopped answering ({mask_url(url)}: {err})",
                "check it runs: clusterforge bundle serve DIR",
            ) from None

    with ThreadPoolExecutor(max_workers=HEAD_PARALLEL) as pool:
        flags = list(pool.map(missing, heads))
    return {url: heads[url] for url, gone in zip(heads, flags, strict=True) if gone}


def _project(requirement: str) -> str:
    name = re.split(r"[\s\[<>=!~;]", requirement.strip(), maxsplit=1)[0]
    return re.sub(r"[-_.]+", "-", name).lower()


def _hosts(hosts: list[str]) -> str:
    hosts = sorted(set(hosts))
    return ", ".join(hosts[:5]) + (f" +{len(hosts) - 5} more" if len(hosts) > 5 else "")
