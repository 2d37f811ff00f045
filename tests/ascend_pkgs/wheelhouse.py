#!/usr/bin/env python3
"""A PyPI mirror stand-in for lab and Molecule nodes (tests only).

Nodes reach Debian's mirror and nothing else, as on an air-gapped site, so the
cann role's Python packages come from a site mirror: `cann_pip_index_url`.
This downloads the wheels of wheels.txt for the nodes' Python (Debian 12:
CPython 3.11, x86_64) with the controller's pip, and lays them out as a
PEP 503 "simple" index: <out>/simple/<normalized name>/<wheel>. Served by
python's http.server, whose directory listings are the anchor pages pip reads.

    python tests/ascend_pkgs/wheelhouse.py [--out DIR]

Cached by the hash of wheels.txt: prints the index directory (the last line).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REQUIREMENTS = HERE / "wheels.txt"
NODE_PYTHON = ("3.11", "cp", "manylinux2014_x86_64")


def requirements() -> list[str]:
    lines = (line.split("#", 1)[0].strip() for line in REQUIREMENTS.read_text().splitlines())
    return [line for line in lines if line]


def normalized(name: str) -> str:
    """PEP 503: runs of -, _ and . become one -, lower case."""
    return re.sub(r"[-_.]+", "-", name).lower()


def project_of(wheel: str) -> str:
    return normalized(wheel.split("-", 1)[0])


def build(out: Path) -> Path:
    digest = hashlib.sha256(repr((requirements(), NODE_PYTHON)).encode()).hexdigest()[:16]
    index = out / f"pypi-{digest}"
    if (index / "simple").is_dir():
        return index
    version, implementation, platform = NODE_PYTHON
    with tempfile.TemporaryDirectory(dir=out) as tmp:
        argv = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
                "--python-version", version, "--implementation", implementation, "--platform", platform,
                "--dest", tmp, *requirements()]  # fmt: skip
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            sys.exit(f"wheelhouse: pip download failed (rc {done.returncode}): {done.stderr.strip()[-2000:]}")
        staging = Path(tmp) / "index"
        for wheel in sorted(os.listdir(tmp)):
            if wheel.endswith(".whl"):
                target = staging / "simple" / project_of(wheel)
                target.mkdir(parents=True, exist_ok=True)
                shutil.move(os.path.join(tmp, wheel), target / wheel)
        found = {p.name for p in (staging / "simple").iterdir()}
        wanted = {normalized(re.split(r"[<>=!~ ;\[]", line, maxsplit=1)[0]) for line in requirements()}
        if found != wanted:
            sys.exit(f"wheelhouse: expected wheels for {sorted(wanted)}, got {sorted(found)}")
        staging.rename(index)
    return index


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default = Path(os.environ.get("CF_ASCEND_PKGS_CACHE", Path.home() / ".cache" / "clusterforge"))
    parser.add_argument("--out", type=Path, default=default, help=f"cache directory (default {default})")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    print(build(args.out))


if __name__ == "__main__":
    main()
