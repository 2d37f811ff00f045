"""Files checked against the sha256 and size a manifest recorded: one implementation for the
offline bundle (`bundle.json`) and the backup sets (`manifest.json`).

Stdlib only.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import stat
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

CHUNK = 1024 * 1024
HASH_WORKERS = 4
PROBLEM_KINDS = ("missing", "corrupt", "size")


def new_md5():
    # FIPS builds refuse MD5 for security use; APT wants it only as a checksum (Python >= 3.9).
    try:
        return hashlib.md5(usedforsecurity=False)
    except TypeError:
        return hashlib.md5()


def digests(path: str, md5: bool = False) -> tuple[str, str, int]:
    """(sha256, md5 or "", size) of a file, read once in CHUNK pieces."""
    sha = hashlib.sha256()
    other = new_md5() if md5 else None
    size = 0
    with open(path, "rb") as handle:
        while True:
            chunk = handle.read(CHUNK)
            if not chunk:
                break
            sha.update(chunk)
            if other is not None:
                other.update(chunk)
            size += len(chunk)
    return sha.hexdigest(), other.hexdigest() if other is not None else "", size


def sha256_file(path: str) -> str:
    return digests(path)[0]


def parallel_map(function, items: list) -> list:
    """`function` over `items` in a small thread pool (hashlib releases the GIL), results in order."""
    if len(items) < 2:
        return [function(item) for item in items]
    with ThreadPoolExecutor(max_workers=min(HASH_WORKERS, len(items))) as pool:
        return list(pool.map(function, items))


def safe_relpath(relpath: str, where: str = "the bundle") -> str:
    """`relpath` as a normalized POSIX path inside `where`; ValueError when it would leave it."""
    if isinstance(relpath, os.PathLike):
        relpath = os.fspath(relpath)
    # A number is not a path, and a NUL or a newline is in no file name a bundle or a set lists.
    if not isinstance(relpath, str) or any(ord(char) < 32 or char == "\x7f" for char in relpath):
        raise ValueError(f"{relpath!r} is not a path inside {where}")
    text = relpath.replace(os.sep, "/")
    norm = posixpath.normpath(text)
    if not text or text.startswith("/") or norm == "." or norm == ".." or norm.startswith("../"):
        raise ValueError(f"{relpath!r} is not a path inside {where}")
    return norm


@dataclass(frozen=True)
class Problem:
    path: str  # the file's path in the folder checked
    kind: str  # one of PROBLEM_KINDS
    detail: str

    def __str__(self) -> str:
        return f"{self.path}: {self.detail}"


def verify_files(root: str, expected: dict[str, tuple[str, int]], where: str = "the bundle") -> list[Problem]:
    """Each `relpath -> (sha256, size)` exists under `root` with that size and sha256, as a regular
    file reached through no symbolic link (a link would hand out, or restore, a file from anywhere
    else); the problems, sorted by path. Files on disk that `expected` does not list are no problem."""
    problems: list[Problem] = []
    to_hash: list[tuple[str, str]] = []
    real_root = os.path.realpath(root)
    for relpath in sorted(expected):
        sha256, size = expected[relpath]
        path = os.path.join(root, relpath)
        if os.path.lexists(path) and os.path.realpath(path) != os.path.normpath(
            os.path.join(real_root, relpath)
        ):
            problems.append(Problem(relpath, "missing", "is a symbolic link or lies under one"))
            continue
        try:
            info = os.stat(path)
        except FileNotFoundError:
            problems.append(Problem(relpath, "missing", f"not in {where}"))
            continue
        except OSError as err:
            problems.append(Problem(relpath, "missing", f"cannot be read ({err.strerror})"))
            continue
        if not stat.S_ISREG(info.st_mode):
            problems.append(Problem(relpath, "missing", "is not a regular file"))
        elif info.st_size != size:  # cheap, and catches a truncated download without hashing it
            problems.append(Problem(relpath, "size", f"{info.st_size} bytes, the manifest says {size}"))
        else:
            to_hash.append((relpath, sha256))

    def check(item: tuple[str, str]) -> Problem | None:
        relpath, sha256 = item
        try:
            found = sha256_file(os.path.join(root, relpath))
        except OSError as err:
            return Problem(relpath, "missing", f"cannot be read ({err.strerror})")
        if found != sha256:
            return Problem(relpath, "corrupt", f"sha256 {found}, the manifest says {sha256}")
        return None

    problems.extend(found for found in parallel_map(check, to_hash) if found is not None)
    return sorted(problems, key=lambda problem: problem.path)
