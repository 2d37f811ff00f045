"""Downloads into a bundle: streamed to a temporary file, checked against the pinned sha256, renamed.

A file already in the bundle with the expected sha256 is never fetched again,
so a second build into the same folder downloads only what changed.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from cfcore.checksums import sha256_file

CHUNK = 1 << 20
TIMEOUT_S = 60
ATTEMPTS = 3
PARALLEL = 8  # downloads at once: mirrors throttle more, one stream leaves the link idle


@dataclass(frozen=True)
class Fetch:
    """One file the bundle must hold at `dest`: from `url` (or a local `copy_from`), sha256 pinned or not."""

    url: str
    dest: Path
    sha256: str = ""
    copy_from: Path | None = None


@dataclass(frozen=True)
class Fetched:
    fetch: Fetch
    sha256: str = ""
    size: int = 0
    reused: bool = False
    error: str = ""


def fetch_all(fetches: list[Fetch], parallel: int = PARALLEL) -> list[Fetched]:
    """Every fetch, `parallel` at a time; a failure is a result with `error`, never an exception."""
    if not fetches:
        return []
    with ThreadPoolExecutor(max_workers=parallel) as pool:
        return list(pool.map(fetch_one, fetches))


def fetch_one(fetch: Fetch) -> Fetched:
    if fetch.sha256 and fetch.dest.is_file() and sha256_file(fetch.dest) == fetch.sha256:
        return Fetched(fetch, fetch.sha256, fetch.dest.stat().st_size, reused=True)
    fetch.dest.parent.mkdir(parents=True, exist_ok=True)
    last = ""
    for _ in range(ATTEMPTS):
        try:
            digest, size = _transfer(fetch)
        except (OSError, urllib.error.URLError, ValueError) as err:
            last = str(getattr(err, "reason", None) or err)
            if isinstance(err, urllib.error.HTTPError) and err.code in (403, 404, 410):
                break  # will not change on a retry
            continue
        if fetch.sha256 and digest != fetch.sha256:
            fetch.dest.unlink(missing_ok=True)
            return Fetched(fetch, error=f"sha256 {digest} differs from the pinned {fetch.sha256}")
        return Fetched(fetch, digest, size)
    return Fetched(fetch, error=last or "failed")


def _transfer(fetch: Fetch) -> tuple[str, int]:
    digest = hashlib.sha256()
    size = 0
    fd, tmp = tempfile.mkstemp(prefix=".part-", dir=fetch.dest.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            source = (
                fetch.copy_from.open("rb")
                if fetch.copy_from
                else urllib.request.urlopen(fetch.url, timeout=TIMEOUT_S)
            )
            with source:
                while chunk := source.read(CHUNK):
                    digest.update(chunk)
                    size += len(chunk)
                    out.write(chunk)
        os.chmod(tmp, 0o644)
        os.replace(tmp, fetch.dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return digest.hexdigest(), size


def reachable(url: str) -> bool:
    """Whether `url` answers at all (any HTTP status counts: the server is there)."""
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=10):
            return True
    except urllib.error.HTTPError:
        return True
    except (OSError, urllib.error.URLError, ValueError):
        return False
