"""`clusterforge bundle build`: gather everything a bring-up of the inventory downloads into one folder.

Per target OS a throwaway build node of that OS (a container) refreshes its
package index against the OS repositories and the vendor repositories of the
needs, and apt itself resolves each needed package's dependency closure
(apt_resolve.py); the controller then downloads what the bundle does not hold
yet with that sha256. URL downloads and vendor repositories are kept at their
URL's path under mirror/, wheels come from `pip download` on the build node.
docs/design.md, "Air-gapped installs", has the layout and bundle.json.
"""

from __future__ import annotations

import json
import re
import shlex
import time
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

import yaml
from cfcore.bundle import (
    BundleError,
    FileEntry,
    Manifest,
    mirror_relpath,
    write_apt_index,
    write_simple_index,
)

from clusterforge.bundle.fetch import Fetch, Fetched, fetch_all, reachable
from clusterforge.bundle.needs import TargetNeeds, compute_needs, need_id
from clusterforge.errors import EnvironmentNotReady, InvalidInput
from clusterforge.lab.model import DEFAULT_IMAGE
from clusterforge.lab.podman import Podman
from clusterforge.paths import project_root

# The build node of each OS: the node image is Debian 12; other OSes come from --build-image.
DEFAULT_BUILD_IMAGES = {"debian 12": DEFAULT_IMAGE}
RESOLVER = Path(__file__).with_name("apt_resolve.py")
VENDOR_URL = "file:/vendor/"  # the vendor folder, as the build node's apt sees it
PYPI_FILES = "pypi/files"
PYPI_SIMPLE = "pypi/simple"
APT_UPDATE_TIMEOUT_S = 600
PIP_TIMEOUT_S = 900
# Index files of a vendor APT repository worth mirroring (its Release lists them with their sha256).
_INDEX_NAME = re.compile(r"(^|/)(Packages|Release|Sources|Contents-[^/]+)(\.(gz|xz|bz2|lzma|zst))?$")


@dataclass
class BuildOptions:
    out: Path
    vendor: Path | None = None
    limit: str | None = None
    build_images: dict[str, str] = field(default_factory=dict)  # os_release -> image
    extravars: dict[str, Any] = field(default_factory=dict)


@dataclass
class BuildResult:
    manifest: Manifest
    fetched: int = 0
    refreshed: int = 0
    reused: int = 0
    failed: int = 0
    seconds: float = 0.0

    @property
    def complete(self) -> bool:
        return not self.manifest.missing


def build(
    inventory: Any, options: BuildOptions, note: Callable[[str], None] = lambda _t: None
) -> BuildResult:
    started = time.monotonic()
    out = options.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    vendor = _vendor_dir(options.vendor)
    images = {**DEFAULT_BUILD_IMAGES, **options.build_images}
    needs = compute_needs(inventory, extravars=options.extravars)
    note(f"needs of {len(needs.hosts)} host(s) on {', '.join(sorted(needs.targets))} computed")
    manifest = _manifest(out, inventory)
    earlier = manifest.targets  # a rebuild adds to what the bundle held: both versions stay usable
    manifest.missing = []
    plan = _Plan(out, vendor, inventory)
    for target in needs.targets.values():
        if not target.apt:
            raise InvalidInput(
                f"offline bundles are built for Debian and Ubuntu targets only; {target.os_release!r} "
                f"(hosts {', '.join(target.hosts[:5])}) would need dnf's resolution and YUM metadata",
                "build those hosts' bundle with your RHEL tooling (dnf download --resolve, createrepo_c), "
                "and this one with --limit for the Debian-family hosts",
            )
        if target.os_release not in images:
            raise InvalidInput(
                f"no build node for {target.os_release!r} (hosts {', '.join(target.hosts[:5])})",
                f'pass --build-image "{target.os_release}=IMAGE" (an image of that OS with python3-apt)',
            )
        note(f"{target.os_release}: resolving {len(target.packages)} package(s) on a build node")
        plan.resolve_target(target, images[target.os_release], inventory)
    for target in needs.targets.values():
        plan.add_files(target)
        plan.add_images(target)
    results = fetch_all(plan.fetches)
    result = BuildResult(manifest)
    for fetched in results:
        _record(manifest, plan, fetched, result)
    for target in needs.targets.values():
        entry = plan.targets[target.os_release]
        for path in write_apt_index(out / target.os_dir):
            _index(manifest, out, f"{target.os_dir}/{path}")
        manifest.targets[target.os_release] = _merged(earlier.get(target.os_release), entry)
    for path in write_simple_index(out / PYPI_FILES, out / PYPI_SIMPLE):
        _index(manifest, out, f"{PYPI_SIMPLE}/{path}")
    for wheel in sorted((out / PYPI_FILES).glob("*")):
        manifest.files[f"{PYPI_FILES}/{wheel.name}"] = _entry(wheel, "wheel", "pip download")
    manifest.missing = plan.missing + [m for m in result_missing(results)]
    manifest.needs = {host: sorted({need_id(i) for i in e["needs"]}) for host, e in needs.hosts.items()}
    now = _now()
    manifest.updated = now
    result.seconds = round(time.monotonic() - started, 1)
    manifest.builds.append(
        {
            "at": now,
            "fetched": result.fetched,
            "refreshed": result.refreshed,
            "reused": result.reused,
            "failed": result.failed,
            "seconds": result.seconds,
        }
    )
    manifest.write(out)
    return result


def url_var_value(inventory: Any, hosts: list[str], var: str, role: Any, need_url: str) -> str:
    """The value of the URL variable a need was built from: what `bundle serve` rewrites.

    A base URL (ascend_package_url, nvidia_cuda_repo_base_url) differs from the
    need's URL (the file or repository under it): the inventory's value, else
    the role's plain default; a variable that is the URL itself falls back to it.
    """
    for host in hosts:
        value = inventory.vars_of(host).get(var) if host in inventory.hostvars else None
        if isinstance(value, str) and value and "{{" not in value:
            return value
    defaults = project_root() / "roles" / str(role) / "defaults" / "main.yml"
    try:
        value = (yaml.safe_load(defaults.read_text()) or {}).get(var)
    except (OSError, yaml.YAMLError, AttributeError):
        value = None
    if isinstance(value, str) and value and "{{" not in value and need_url.startswith(value.rstrip("/")):
        return value
    return need_url


def _merged(earlier: dict[str, Any] | None, entry: dict[str, Any]) -> dict[str, Any]:
    """A target's record after a rebuild: this build's needs over the earlier ones (none dropped)."""
    if not earlier:
        return entry
    merged = dict(entry)
    for key in ("packages", "repos", "files", "url_vars"):
        merged[key] = {**(earlier.get(key) or {}), **(entry.get(key) or {})}
    for key in ("wheels", "index_vars", "hosts"):
        merged[key] = sorted(set(earlier.get(key) or []) | set(entry.get(key) or []))
    return merged


def result_missing(results: list[Fetched]) -> Iterator[dict[str, Any]]:
    for fetched in results:
        if fetched.error:
            yield {"kind": "download", "name": fetched.fetch.url, "target": "", "why": fetched.error}


class _Plan:
    """What the build fetches, and the manifest entries of each target, gathered before any download."""

    def __init__(self, out: Path, vendor: Path | None, inventory: Any) -> None:
        self.out, self.vendor, self.inventory = out, vendor, inventory
        self.fetches: list[Fetch] = []
        self.kinds: dict[Path, tuple[str, str]] = {}  # dest -> (kind, source)
        self.targets: dict[str, dict[str, Any]] = {}
        self.missing: list[dict[str, Any]] = []
        self.repos: list[_Repo] = []  # vendor APT repositories of every target
        self._vendor_by_name = _index_by_name(vendor) if vendor else {}

    def want(self, fetch: Fetch, kind: str, source: str) -> None:
        if fetch.dest in self.kinds:
            return
        self.kinds[fetch.dest] = (kind, source)
        self.fetches.append(fetch)

    # -- OS packages and vendor repositories, resolved on a build node of the target OS ----------
    def resolve_target(self, target: TargetNeeds, image: str, inventory: Any) -> None:
        entry = self.targets.setdefault(
            target.os_release,
            {
                "arch": target.arch,
                "os_dir": target.os_dir,
                "hosts": sorted(target.hosts),
                "packages": {},
                "repos": {},
                "files": {},
                "wheels": [],
                "url_vars": {},
            },
        )
        repos = [_Repo.of(item, target.arch, self.vendor) for item in target.apt_repos.values()]
        for repo in repos:
            if not repo.available:
                self.missing.append(
                    {
                        "kind": "apt_repo",
                        "name": repo.url,
                        "target": target.os_release,
                        "why": f"unreachable ({repo.url_var}), and not in --vendor at its URL's path",
                    }
                )
        repos = [repo for repo in repos if repo.available]
        self.repos += repos
        with build_node(image, self.out, self.vendor) as node:
            node.configure_repos(repos)
            resolved = node.resolve(sorted(target.packages), target.arch) if target.packages else {}
            if target.wheels:
                node.pip_download(target, inventory, self.missing)
        for spec, why in sorted((resolved.get("unknown") or {}).items()):
            self.missing.append({"kind": "os_package", "name": spec, "target": target.os_release, "why": why})
        files = resolved.get("files") or {}
        for spec, keys in sorted((resolved.get("packages") or {}).items()):
            entry["packages"][spec] = sorted(self._package_dest(target, files[k]) for k in keys if k in files)
        for key in sorted(files):
            info = files[key]
            dest = self.out / self._package_dest(target, info)
            copy_from = self._vendor_file(info["uri"])
            self.want(Fetch(info["uri"], dest, info.get("sha256", ""), copy_from), "deb", info["uri"])
        for repo in repos:
            entry["repos"][repo.url] = mirror_relpath(repo.url)
            entry["url_vars"][repo.url_var] = url_var_value(
                inventory, target.hosts, repo.url_var, repo.role, repo.url
            )
            for fetch in repo.metadata_fetches(self.out):
                self.want(fetch, "repo-meta", repo.url)
            if repo.key_url:
                self.want(Fetch(repo.key_url, self.out / mirror_relpath(repo.key_url)), "file", repo.key_url)
        entry["wheels"] = sorted(target.wheels)
        entry["index_vars"] = sorted(
            {str(i["index_url_var"]) for i in target.wheels.values() if i.get("index_url_var")}
        )

    def _package_dest(self, target: TargetNeeds, info: dict[str, Any]) -> str:
        """A vendor repository's package keeps its URL path (its own index names it); the OS's go flat."""
        uri = info["uri"]
        for repo in self.repos:
            if repo.serves(uri):
                return repo.dest_of(uri)
        return f"{target.os_dir}/{PurePosixPath(urllib.parse.unquote(urllib.parse.urlsplit(uri).path)).name}"

    def _vendor_file(self, uri: str) -> Path | None:
        if self.vendor and uri.startswith(VENDOR_URL):
            return self.vendor / urllib.parse.unquote(uri[len(VENDOR_URL) :])
        return None

    # -- URL downloads and images ------------------------------------------------------------------
    def add_files(self, target: TargetNeeds) -> None:
        entry = self.targets[target.os_release]
        for url, item in sorted(target.files.items()):
            try:
                relpath = mirror_relpath(url)
            except ValueError as err:
                self.missing.append(
                    {"kind": "file", "name": url, "target": target.os_release, "why": str(err)}
                )
                continue
            sha256 = str(item.get("sha256") or "").removeprefix("sha256:")
            name = PurePosixPath(urllib.parse.urlsplit(url).path).name
            copy_from = self._vendor_by_name.get((name, sha256)) if sha256 else None
            self.want(Fetch(url, self.out / relpath, sha256, copy_from), "file", url)
            entry["files"][url] = relpath
            if item.get("url_var"):
                var = str(item["url_var"])
                entry["url_vars"][var] = url_var_value(
                    self.inventory, target.hosts, var, item.get("role"), url
                )
        for item in target.unknown:
            self.missing.append(
                {
                    "kind": item.get("kind"),
                    "name": item.get("name") or item.get("url"),
                    "target": target.os_release,
                    "why": f"{item['unknown']} (host {item['host']})",
                }
            )

    def add_images(self, target: TargetNeeds) -> None:
        for ref in sorted(target.images):
            self.missing.append(
                {
                    "kind": "image",
                    "name": ref,
                    "target": target.os_release,
                    "why": "container images are not fetched: copy it into the site registry (skopeo copy)",
                }
            )


@dataclass
class _Repo:
    """A vendor APT repository of the needs: where the build node reads it, what the bundle keeps."""

    url: str
    url_var: str
    suite: str
    components: list[str]
    arch: str
    key_url: str
    role: str
    source_url: str  # what the build node's source line names: the URL, or file:/vendor/... when offline
    vendor: Path | None = None

    @classmethod
    def of(cls, item: dict[str, Any], arch: str, vendor: Path | None) -> _Repo:
        url = str(item["url"]).rstrip("/") + "/"
        suite = str(item.get("suite") or "/")
        components = [str(c) for c in item.get("components") or []]
        repo = cls(
            url,
            str(item.get("url_var", "")),
            suite,
            components,
            arch,
            str(item.get("key_url") or ""),
            str(item.get("role")),
            url,
            vendor,
        )
        if not reachable(repo.release_url(url)):
            local = vendor / mirror_relpath(url).removeprefix("mirror/") if vendor else None
            if local is not None and local.is_dir():
                repo.source_url = VENDOR_URL + mirror_relpath(url).removeprefix("mirror/") + "/"
            else:
                repo.source_url = ""  # neither reachable nor in --vendor: its packages end up missing
        return repo

    @property
    def available(self) -> bool:
        return bool(self.source_url)

    @property
    def flat(self) -> bool:
        return self.suite in ("", "/", "./")

    def source_line(self) -> str:
        if self.flat:
            return f"deb [trusted=yes] {self.source_url} {self.suite if self.suite != '' else '/'}"
        return f"deb [trusted=yes] {self.source_url} {self.suite} {' '.join(self.components)}"

    def release_url(self, base: str) -> str:
        return base + ("" if self.flat else f"dists/{self.suite}/") + "Release"

    def serves(self, uri: str) -> bool:
        return uri.startswith(self.url) or uri.startswith(self.source_url)

    def dest_of(self, uri: str) -> str:
        for base in (self.url, self.source_url):
            if uri.startswith(base):
                rest = urllib.parse.unquote(uri[len(base) :])
                return mirror_relpath(self.url) + "/" + rest
        raise ValueError(uri)

    def metadata_fetches(self, out: Path) -> list[Fetch]:
        """The repository's Release files and the package indexes its Release lists for this arch."""
        base = self.source_url
        prefix = "" if self.flat else f"dists/{self.suite}/"
        release = self._read(base + prefix + "Release")
        if release is None:
            return []
        names = ["Release", "InRelease", "Release.gpg"]
        listed = _release_sha256(release)
        by_hash = re.search(r"^Acquire-By-Hash:\s*yes", release, re.M | re.I) is not None
        fetches = []
        for name in names:
            fetches.append(self._fetch(out, prefix + name, ""))
        for name, sha256 in sorted(listed.items()):
            if not _INDEX_NAME.search(name) or not self._for_arch(name):
                continue
            fetches.append(self._fetch(out, prefix + name, sha256))
            if by_hash:
                hashed = str(PurePosixPath(prefix + name).parent / "by-hash" / "SHA256" / sha256)
                fetches.append(self._fetch(out, hashed, sha256))
        return fetches

    def _for_arch(self, name: str) -> bool:
        parts = name.split("/")
        binary = [p for p in parts if p.startswith("binary-")]
        return not binary or binary[0] in (f"binary-{self.arch}", "binary-all")

    def _fetch(self, out: Path, relative: str, sha256: str) -> Fetch:
        dest = out / (mirror_relpath(self.url) + "/" + relative)
        if self.source_url.startswith(VENDOR_URL):
            return Fetch(self.url + relative, dest, sha256, self._local(self.source_url + relative))
        return Fetch(self.url + relative, dest, sha256)

    def _local(self, url: str) -> Path | None:
        """The vendor folder's file behind a file:/vendor/ URL of the build node."""
        if not url.startswith(VENDOR_URL) or self.vendor is None:
            return None
        return self.vendor / urllib.parse.unquote(url[len(VENDOR_URL) :])

    def _read(self, url: str) -> str | None:
        if url.startswith("file:"):
            path = self._local(url)
            return path.read_text(errors="replace") if path and path.is_file() else None
        try:
            with urllib.request.urlopen(url, timeout=30) as answer:
                return answer.read().decode(errors="replace")
        except (OSError, ValueError):
            return None


def _release_sha256(release: str) -> dict[str, str]:
    """name -> sha256 from a Release file's SHA256 section."""
    listed: dict[str, str] = {}
    section = False
    for line in release.splitlines():
        if not line.startswith(" "):
            section = line.strip() == "SHA256:"
            continue
        if section:
            fields = line.split()
            if len(fields) == 3:
                listed[fields[2]] = fields[0]
    return listed


class _BuildNode:
    def __init__(self, podman: Podman, name: str) -> None:
        self.podman, self.name = podman, name

    def sh(self, script: str, timeout: float = 300, input: str | None = None) -> str:
        result = self.podman.exec(self.name, ["sh", "-c", script], input=input, timeout=timeout)
        if not result.ok:
            raise EnvironmentNotReady(
                f"the bundle's build node failed: `{script}`: {result.last_error_line()}",
                "check that this machine reaches the OS mirror and the vendor repositories of the inventory",
            )
        return result.stdout

    def configure_repos(self, repos: list[_Repo]) -> None:
        lines = "".join(repo.source_line() + "\n" for repo in repos)
        self.sh(f"printf %s {shlex.quote(lines)} > /etc/apt/sources.list.d/cf-bundle-vendor.list")
        # A source apt cannot fetch is an error, not a warning (apt-get update exits 0 on those):
        # otherwise its packages would be reported as not existing.
        self.sh("apt-get update -q -o APT::Update::Error-Mode=any", timeout=APT_UPDATE_TIMEOUT_S)

    def resolve(self, specs: list[str], arch: str) -> dict[str, Any]:
        answer = self.sh("python3 /cf/apt_resolve.py", input=json.dumps({"specs": specs, "arch": arch}))
        return json.loads(answer)

    def pip_download(self, target: TargetNeeds, inventory: Any, missing: list[dict[str, Any]]) -> None:
        """`pip download` of the wheels (and their dependencies) for the target's own Python."""
        self.sh(
            "command -v pip3 >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-pip"
        )
        by_index: dict[str, list[str]] = {}
        for requirement, item in sorted(target.wheels.items()):
            by_index.setdefault(_index_url(item, target, inventory), []).append(requirement)
        for index, requirements in sorted(by_index.items()):
            argv = [
                "python3",
                "-m",
                "pip",
                "download",
                "--disable-pip-version-check",
                "--only-binary=:all:",
                "--dest",
                "/bundle/" + PYPI_FILES,
            ]
            if index:
                argv += ["--index-url", index]
                host = urllib.parse.urlsplit(index).hostname
                if index.startswith("http://") and host:
                    argv += ["--trusted-host", host]
            result = self.podman.exec(self.name, argv + requirements, timeout=PIP_TIMEOUT_S)
            if not result.ok:
                for requirement in requirements:
                    missing.append(
                        {
                            "kind": "wheel",
                            "name": requirement,
                            "target": target.os_release,
                            "why": f"pip download failed: {result.last_error_line()}",
                        }
                    )


def _index_url(item: dict[str, Any], target: TargetNeeds, inventory: Any) -> str:
    if item.get("index_url"):
        return str(item["index_url"])
    var = item.get("index_url_var")
    if not var:
        return ""
    for host in target.hosts:
        value = inventory.vars_of(host).get(var) if host in inventory.hostvars else None
        if value:
            return str(value)
    return ""


@contextmanager
def build_node(image: str, out: Path, vendor: Path | None) -> Iterator[_BuildNode]:
    """A throwaway container of `image` with the bundle's pip folder, the vendor folder and the resolver."""
    podman = Podman(containers_conf=project_root() / "images" / "node" / "containers.conf")
    name = f"cf-bundle-build-{uuid.uuid4().hex[:8]}"
    (out / PYPI_FILES).mkdir(parents=True, exist_ok=True)
    volumes = ["-v", f"{RESOLVER.parent}:/cf:ro", "-v", f"{out / PYPI_FILES}:/bundle/{PYPI_FILES}"]
    if vendor:
        volumes += ["-v", f"{vendor}:/vendor:ro"]
    if podman.image_labels(image) is None:
        raise EnvironmentNotReady(
            f"the build node's image {image} is not in podman's local storage",
            "build it (scripts/build-node-image.sh for the node image) or pass --build-image OS=IMAGE",
        )
    # The host's network: the build node reaches exactly what this machine's reachability check
    # (_Repo.of) reached. On a network of its own it may not reach a mirror or a vendor repository
    # on another container network or behind host routes, and apt would drop that repository's
    # packages with only a warning.
    podman._check(
        "run", "--detach", "--rm", "--network", "host", "--name", name, "--entrypoint", "sleep",
        *volumes, image, "infinity",
    )  # fmt: skip
    try:
        yield _BuildNode(podman, name)
    finally:
        podman._call("rm", "--force", "--time", "0", name)


def _vendor_dir(vendor: Path | None) -> Path | None:
    if vendor is None:
        return None
    if not vendor.is_dir():
        raise InvalidInput(
            f"--vendor {vendor} is not a directory", "pass the folder of the site's vendor packages"
        )
    return vendor.resolve()


def _index_by_name(vendor: Path) -> dict[tuple[str, str], Path]:
    """(file name, sha256) -> path of every file in the vendor folder: a URL download found there by name."""
    from cfcore.checksums import sha256_file

    found: dict[tuple[str, str], Path] = {}
    for path in vendor.rglob("*"):
        if path.is_file():
            found[(path.name, sha256_file(path))] = path
    return found


def _manifest(out: Path, inventory: Any) -> Manifest:
    try:
        manifest = Manifest.load(out)
    except BundleError:
        if (out / "bundle.json").exists():
            raise
        manifest = Manifest(created=_now())
    manifest.inventory = {"path": str(inventory.path)}
    return manifest


def _record(manifest: Manifest, plan: _Plan, fetched: Fetched, result: BuildResult) -> None:
    if fetched.error:
        result.failed += 1
        return
    if fetched.reused:
        result.reused += 1
    elif not fetched.fetch.sha256:
        result.refreshed += 1  # unpinned (a vendor repository's Release, a key): fetched every build
    else:
        result.fetched += 1
    kind, source = plan.kinds[fetched.fetch.dest]
    relpath = fetched.fetch.dest.relative_to(plan.out).as_posix()
    manifest.files[relpath] = FileEntry(fetched.sha256, fetched.size, kind, source)


def _index(manifest: Manifest, out: Path, relpath: str) -> None:
    manifest.files[relpath] = _entry(out / relpath, "index", "generated")


def _entry(path: Path, kind: str, source: str) -> FileEntry:
    from cfcore.checksums import sha256_file

    return FileEntry(sha256_file(path), path.stat().st_size, kind, source)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
