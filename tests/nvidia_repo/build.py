#!/usr/bin/env python3
"""Build ClusterForge's test NVIDIA APT repositories (tests only).

    python3 tests/nvidia_repo/build.py [--out CACHE_DIR]    -> prints the repository root

From packages.yml (the declarative package list) it builds real .deb files with
dpkg-deb, two flat repositories (Packages, Packages.gz, Release with SHA256
sums, InRelease and Release.gpg) signed with a test key, the armored public
keys and keys.json (their URL paths and sha256), laid out as NVIDIA serves them:

    <root>/compute/cuda/repos/debian12/x86_64/     the CUDA repository + testkey.pub
    <root>/libnvidia-container/stable/deb/amd64/   the container toolkit repository
    <root>/libnvidia-container/gpgkey
    <root>/keys.json

The root is <cache>/nvidia-repo-<hash>, <cache> being --out, else
$CF_NVIDIA_REPO_CACHE, else ~/.cache/clusterforge; <hash> covers packages.yml,
this file, standins/ and the key, so the repository is rebuilt only when one of
them changes. The test key (ed25519, no passphrase) is generated once per cache
directory (<cache>/nvidia-repo-testkey/) in a temporary GNUPGHOME and reused.
Needs Python 3.10+, PyYAML, dpkg-deb (package dpkg) and gpg (package gnupg).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import fcntl
import gzip
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
PACKAGE_LIST = HERE / "packages.yml"
STANDINS = HERE / "standins"
FORMAT = "1"  # bump when the layout changes without any input file changing
KEY_UID = "ClusterForge test repository <nvidia-test-repo@clusterforge.invalid>"
# Release's Date: fixed (reproducible) and in the past (apt refuses "not valid yet").
RELEASE_DATE = "Wed, 01 Jan 2025 00:00:00 UTC"
SOURCE_DATE_EPOCH = "1735689600"
DESCRIPTION_BODY = (
    " ClusterForge test stand-in: NVIDIA's package name, version and dependency\n"
    " structure for the roles' tests; it contains no NVIDIA software."
)
CONTROL_RELATIONS = (
    ("Depends", "depends"),
    ("Conflicts", "conflicts"),
    ("Replaces", "replaces"),
    ("Provides", "provides"),
)


class BuildError(Exception):
    """Something the user can fix: printed as 'error: ...' and '  fix: ...'."""

    def __init__(self, message: str, fix: str) -> None:
        super().__init__(message)
        self.message, self.fix = message, fix


# ------------------------------------------------------------------ the list


def fill(value, variables: dict):
    """`value` with {name} replaced by the matrix variables (other braces are left alone)."""
    if isinstance(value, str):
        return re.sub(r"\{(\w+)\}", lambda m: str(variables.get(m.group(1), m.group(0))), value)
    if isinstance(value, list):
        return [fill(item, variables) for item in value]
    if isinstance(value, dict):
        return {fill(key, variables): fill(item, variables) for key, item in value.items()}
    return value


def load_list(path: Path | None = None) -> dict:
    path = path or PACKAGE_LIST
    with open(path) as handle:
        spec = yaml.safe_load(handle)
    for key in ("repos", "defaults", "groups"):
        if key not in spec:
            raise BuildError(f"{path}: no top-level '{key}'", f"add '{key}:' (see the header of {path.name})")
    return spec


def expand(spec: dict) -> list:
    """Every package of the list, matrices expanded, defaults applied, cross-matrix conflicts added."""
    packages = []
    for group in spec["groups"]:
        if group.get("repo") not in spec["repos"]:
            raise BuildError(
                f"group {group.get('name')!r}: repo {group.get('repo')!r} is not in repos",
                "use one of: " + ", ".join(spec["repos"]),
            )
        matrix = group.get("matrix") or [{}]
        expanded = [[fill(template, variables) for template in group["packages"]] for variables in matrix]
        for entries in expanded:
            for column, entry in enumerate(entries):
                package = {**spec["defaults"], **entry, "repo": group["repo"]}
                for key in ("depends", "conflicts", "replaces", "provides"):
                    package[key] = list(package.get(key) or [])
                if group.get("exclusive_across_matrix"):
                    others = sorted({e[column]["name"] for e in expanded} - {entry["name"]})
                    package["conflicts"] += others
                    package["replaces"] += others
                packages.append(package)
    seen = set()
    for package in packages:
        for key in ("name", "version", "description"):
            if not package.get(key):
                raise BuildError(
                    f"a package of {PACKAGE_LIST.name} has no {key}: {package}", f"give it a {key}"
                )
        ident = (package["name"], package["version"], package["architecture"])
        if ident in seen:
            raise BuildError(f"package {ident} is listed twice", "remove the duplicate from packages.yml")
        seen.add(ident)
    return packages


def deb_name(package: dict) -> str:
    version = package["version"].split(":", 1)[-1]  # the file name carries no epoch
    return f"{package['name']}_{version}_{package['architecture']}.deb"


# --------------------------------------------------------------------- tools


def require_tools() -> None:
    for tool, apt_package in (("dpkg-deb", "dpkg"), ("gpg", "gnupg")):
        if shutil.which(tool) is None:
            raise BuildError(
                f"{tool} is not installed: the test repository needs it",
                f"install it: apt-get install {apt_package}",
            )


def run(argv: list, **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run(argv, capture_output=True, text=True, check=False, **kwargs)
    if done.returncode != 0:
        raise BuildError(
            f"{' '.join(argv[:4])} ... failed ({done.returncode}): {done.stderr.strip()[-800:]}",
            "see the message above",
        )
    return done


@contextlib.contextmanager
def gnupg_home():
    """A temporary GNUPGHOME (short path: gpg-agent's socket must fit), its agent stopped afterwards."""
    home = tempfile.mkdtemp(prefix="cf-gpg-", dir="/tmp" if os.path.isdir("/tmp") else None)
    os.chmod(home, 0o700)
    try:
        yield home
    finally:
        subprocess.run(["gpgconf", "--homedir", home, "--kill", "all"], capture_output=True, check=False)
        shutil.rmtree(home, ignore_errors=True)


def gpg(home: str, *args: str, **kwargs) -> subprocess.CompletedProcess:
    return run(
        [
            "gpg",
            "--batch",
            "--quiet",
            "--homedir",
            home,
            "--pinentry-mode",
            "loopback",
            "--passphrase",
            "",
            *args,
        ],
        **kwargs,
    )


def ensure_key(cache: Path) -> dict:
    """The cache directory's test key: {fingerprint, public (armored), secret (path)}; made once."""
    key_dir = cache / "nvidia-repo-testkey"
    if not (key_dir / "fingerprint").is_file():
        cache.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".testkey-", dir=cache))
        try:
            with gnupg_home() as home:
                gpg(home, "--quick-gen-key", KEY_UID, "ed25519", "sign", "never")
                listing = gpg(home, "--with-colons", "--list-secret-keys").stdout
                fingerprint = next(
                    line.split(":")[9] for line in listing.splitlines() if line.startswith("fpr:")
                )
                (staging / "public.asc").write_text(gpg(home, "--armor", "--export", fingerprint).stdout)
                (staging / "secret.asc").write_text(
                    gpg(home, "--armor", "--export-secret-keys", fingerprint).stdout
                )
                os.chmod(staging / "secret.asc", 0o600)
                (staging / "fingerprint").write_text(fingerprint + "\n")
            with contextlib.suppress(OSError):  # another build made it first: use that one
                staging.rename(key_dir)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return {
        "fingerprint": (key_dir / "fingerprint").read_text().strip(),
        "public": (key_dir / "public.asc").read_text(),
        "secret": key_dir / "secret.asc",
    }


# ------------------------------------------------------------------ packages


def control_text(package: dict, installed_kib: int) -> str:
    fields = [
        ("Package", package["name"]),
        ("Version", package["version"]),
        ("Architecture", package["architecture"]),
        ("Maintainer", package["maintainer"]),
        ("Installed-Size", str(installed_kib)),
    ]
    fields += [(field, ", ".join(package[key])) for field, key in CONTROL_RELATIONS if package[key]]
    fields += [("Section", package["section"]), ("Priority", package["priority"])]
    lines = [f"{name}: {value}" for name, value in fields]
    lines.append(f"Description: {package['description']}\n{DESCRIPTION_BODY}")
    return "\n".join(lines) + "\n"


def standin_text(name: str, substitute: dict) -> str:
    path = STANDINS / name
    if not path.is_file():
        raise BuildError(f"stand-in {name} is not in {STANDINS}", "add it or fix the package's files entry")
    text = path.read_text()
    # Stand-ins import the shared daemon helpers while in the checkout; a package carries one
    # self-contained file, so that import line becomes the helpers' text.
    text = re.sub(
        r"^from daemon_lib import .*$",
        lambda _match: (STANDINS / "daemon_lib.py").read_text().rstrip("\n"),
        text,
        flags=re.MULTILINE,
    )
    for key, value in substitute.items():
        text = text.replace(f"@{key}@", str(value))
    left = sorted(set(re.findall(r"@[A-Z_]+@", text)))
    if left:
        raise BuildError(
            f"stand-in {name}: {', '.join(left)} not substituted", "add them to the package's substitute"
        )
    return text


def stage(package: dict, root: Path) -> int:
    """Write the package's tree under root; returns its installed size in KiB."""
    size = 0
    conffiles = []
    for path, entry in sorted((package.get("files") or {}).items()):
        target = root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        if "symlink" in entry:
            os.symlink(entry["symlink"], target)
            continue
        if "standin" in entry:
            text = standin_text(entry["standin"], package.get("substitute") or {})
        else:
            text = entry["content"]
        target.write_text(text)
        os.chmod(target, int(str(entry.get("mode", "0644")), 8))
        size += len(text.encode())
        if entry.get("conffile"):
            conffiles.append(path)
    debian = root / "DEBIAN"
    debian.mkdir()
    kib = max(1, (size + 1023) // 1024)
    (debian / "control").write_text(control_text(package, kib))
    if conffiles:
        (debian / "conffiles").write_text("".join(f"{path}\n" for path in conffiles))
    for script in ("postinst", "postrm"):
        if package.get(script):
            (debian / script).write_text(
                "#!/bin/sh\n# Maintainer scripts of the test stand-ins only write files.\nset -e\n"
                + package[script]
            )
            os.chmod(debian / script, 0o755)
    for dirpath, dirnames, _filenames in os.walk(root):
        for name in dirnames:
            os.chmod(os.path.join(dirpath, name), 0o755)
    return kib


def build_deb(package: dict, out_dir: Path, work: Path) -> Path:
    tree = work / f"{package['name']}_{package['version'].replace(':', '_')}"
    tree.mkdir()
    stage(package, tree)
    target = out_dir / deb_name(package)
    env = dict(os.environ, SOURCE_DATE_EPOCH=SOURCE_DATE_EPOCH)
    run(["dpkg-deb", "--root-owner-group", "-Zgzip", "-z1", "--build", str(tree), str(target)], env=env)
    return target


def digests(data: bytes) -> dict:
    return {name: hashlib.new(name, data).hexdigest() for name in ("md5", "sha1", "sha256")}


def packages_stanza(package: dict, deb: Path) -> str:
    data = deb.read_bytes()
    control = run(["dpkg-deb", "--field", str(deb)]).stdout.rstrip("\n")
    sums = digests(data)
    return (
        f"{control}\nFilename: ./{deb.name}\nSize: {len(data)}\n"
        f"MD5sum: {sums['md5']}\nSHA1: {sums['sha1']}\nSHA256: {sums['sha256']}\n"
    )


def release_text(repo: dict, files: dict) -> str:
    lines = [
        f"Origin: {repo['origin']}",
        f"Label: {repo['label']}",
        f"Architectures: {repo['architectures']}",
        f"Date: {RELEASE_DATE}",
    ]
    for title, algorithm in (("MD5Sum", "md5"), ("SHA1", "sha1"), ("SHA256", "sha256")):
        lines.append(f"{title}:")
        for name, data in sorted(files.items()):
            lines.append(f" {hashlib.new(algorithm, data).hexdigest()} {len(data):>8} {name}")
    return "\n".join(lines) + "\n"


def write_index(repo: dict, repo_dir: Path, stanzas: list, key: dict, home: str) -> None:
    packages = "\n".join(stanzas).encode()
    packages_gz = gzip.compress(packages, compresslevel=9, mtime=0)
    (repo_dir / "Packages").write_bytes(packages)
    (repo_dir / "Packages.gz").write_bytes(packages_gz)
    release = repo_dir / "Release"
    release.write_text(release_text(repo, {"Packages": packages, "Packages.gz": packages_gz}))
    sign = ["--digest-algo", "SHA256", "--local-user", key["fingerprint"]]
    gpg(home, *sign, "--clearsign", "--output", str(repo_dir / "InRelease"), str(release))
    gpg(home, *sign, "--armor", "--detach-sign", "--output", str(repo_dir / "Release.gpg"), str(release))


# --------------------------------------------------------------- the build


def input_hash(key: dict) -> str:
    digest = hashlib.sha256(FORMAT.encode())
    inputs = [PACKAGE_LIST, Path(__file__).resolve(), *sorted(STANDINS.iterdir())]
    for path in inputs:
        if path.is_file():
            digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    digest.update(key["fingerprint"].encode())
    return digest.hexdigest()[:16]


def build_into(root: Path, spec: dict, packages: list, key: dict) -> None:
    work = root / ".work"
    work.mkdir(parents=True)
    repo_dirs = {name: root / repo["path"] for name, repo in spec["repos"].items()}
    for directory in repo_dirs.values():
        directory.mkdir(parents=True, exist_ok=True)
    with concurrent.futures.ThreadPoolExecutor(max_workers=min(8, (os.cpu_count() or 2) * 2)) as pool:
        debs = list(pool.map(lambda p: build_deb(p, repo_dirs[p["repo"]], work), packages))
    shutil.rmtree(work)
    stanzas: dict = {name: [] for name in spec["repos"]}
    for package, deb in sorted(
        zip(packages, debs, strict=True), key=lambda pair: (pair[0]["name"], pair[0]["version"])
    ):
        stanzas[package["repo"]].append(packages_stanza(package, deb))
    keys = {}
    with gnupg_home() as home:
        gpg(home, "--import", str(key["secret"]))
        for name, repo in spec["repos"].items():
            write_index(repo, repo_dirs[name], stanzas[name], key, home)
            key_path = root / repo["key"]
            key_path.parent.mkdir(parents=True, exist_ok=True)
            key_path.write_text(key["public"])
            keys[name] = {
                "url": "/" + repo["key"],
                "sha256": hashlib.sha256(key_path.read_bytes()).hexdigest(),
            }
    (root / "keys.json").write_text(json.dumps(keys, indent=2, sort_keys=True) + "\n")


def default_cache() -> Path:
    configured = os.environ.get("CF_NVIDIA_REPO_CACHE")
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "clusterforge"


def build(cache: Path | None = None) -> Path:
    """The repository root for the current inputs, built when it is not in the cache yet."""
    require_tools()
    cache = (cache or default_cache()).expanduser().resolve()
    cache.mkdir(parents=True, exist_ok=True)
    spec = load_list()
    packages = expand(spec)
    with open(cache / ".nvidia-repo.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two builds at once: the second waits and reuses
        key = ensure_key(cache)
        root = cache / f"nvidia-repo-{input_hash(key)}"
        if (root / "keys.json").is_file():
            return root
        staging = Path(tempfile.mkdtemp(prefix=f".{root.name}-", dir=cache))
        try:
            build_into(staging, spec, packages, key)
            os.chmod(staging, 0o755)
            staging.rename(root)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return root


def main(argv: list | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Build (or reuse) the test NVIDIA APT repositories; prints their root."
    )
    parser.add_argument(
        "--out", type=Path, help="cache directory (default $CF_NVIDIA_REPO_CACHE or ~/.cache/clusterforge)"
    )
    args = parser.parse_args(argv)
    try:
        print(build(args.out))
    except BuildError as exc:
        print(f"error: {exc.message}\n  fix: {exc.fix}", file=sys.stderr)
        return 4 if "not installed" in exc.message else 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
