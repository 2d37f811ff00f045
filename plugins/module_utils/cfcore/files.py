"""Read input files safely: regular files only, size-capped, optionally confined to a folder.

Captures, BOM files and inventories come from other people (a support tarball,
a pull request). A FIFO would hang a reader forever, a link to /dev/zero would
eat all memory, and a symlink out of a capture would copy any local file into
a report. Every reader of such input goes through `read_text` (`read_json` for
JSON, depth-bounded too): the CLI's run ledger, bundle and backup manifests.

Files others read while they change (a bundle served to nodes, a metrics file
a scraper reads) are written with `write_atomic`.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile


class UnsafeFile(ValueError):
    """The path is not a regular file within its limits; the message names it and why."""


def confined(path: str, root: str | None = None) -> str:
    """`path` resolved (links followed); UnsafeFile when that leaves `root`."""
    resolved = os.path.realpath(path)
    if root is not None:
        base = os.path.realpath(root)
        if resolved != base and not resolved.startswith(base.rstrip(os.sep) + os.sep):
            raise UnsafeFile(f"{path} points outside {root} (to {resolved}); refusing to read it")
    return resolved


def kind_of(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a directory"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def check_regular(path: str, root: str | None = None) -> str:
    """The resolved path of a regular file (inside `root` when given), else UnsafeFile."""
    resolved = confined(path, root)
    try:
        mode = os.stat(resolved).st_mode
    except OSError as err:
        raise UnsafeFile(f"{path}: {err.strerror}") from None
    if not stat.S_ISREG(mode):
        raise UnsafeFile(f"{path} is {kind_of(mode)}, not a regular file; refusing to read it")
    return resolved


def read_bytes(path: str, max_bytes: int, root: str | None = None) -> bytes:
    """The content of a regular file of at most `max_bytes`; UnsafeFile otherwise.

    Opened non-blocking and checked again on the open descriptor, so a file
    swapped for a FIFO between the checks cannot hang the reader.
    """
    return _read_regular(path, max_bytes, root, whole=True)


def read_end(path: str, max_bytes: int, root: str | None = None, tail: bool = False) -> bytes:
    """The first (or, with `tail`, the last) `max_bytes` of a regular file of any size: a digest
    over an inventory, the tail of a log. UnsafeFile when it is not a regular file."""
    return _read_regular(path, max_bytes, root, whole=False, tail=tail)


def _read_regular(path: str, max_bytes: int, root: str | None, whole: bool, tail: bool = False) -> bytes:
    resolved = check_regular(path, root)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(resolved, flags)
    except OSError as err:
        raise UnsafeFile(f"{path}: {err.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise UnsafeFile(f"{path} is {kind_of(info.st_mode)}, not a regular file; refusing to read it")
        if not whole:
            if tail and info.st_size > max_bytes:
                handle.seek(info.st_size - max_bytes)
            return handle.read(max_bytes)
        if info.st_size > max_bytes:
            raise UnsafeFile(f"{path} is {info.st_size} bytes, over the limit of {max_bytes} bytes")
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise UnsafeFile(f"{path} is over the limit of {max_bytes} bytes")
    return data


def read_text(path: str, max_bytes: int, root: str | None = None, errors: str = "replace") -> str:
    """`read_bytes` decoded as UTF-8 (undecodable bytes replaced unless errors='strict')."""
    return read_bytes(path, max_bytes, root).decode("utf-8", errors)


MAX_JSON_DEPTH = 64  # nesting of a JSON file the CLI reads; its own records nest a few levels


def read_json(path: str, max_bytes: int, root: str | None = None, max_depth: int = MAX_JSON_DEPTH):
    """A JSON file read with `read_bytes` (a regular file, at most `max_bytes`, inside `root`),
    nested at most `max_depth` deep; UnsafeFile for a file that is not such a file, ValueError for
    one that is not JSON (UTF-8, within the depth)."""
    return parse_json(read_bytes(path, max_bytes, root), max_depth)


def parse_json(data: bytes | str, max_depth: int = MAX_JSON_DEPTH):
    """JSON text already bounded in size (a file's or an HTTP body's), nested at most `max_depth`
    deep; ValueError (UnicodeDecodeError included) for anything else."""
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    try:
        value = json.loads(text)
    except RecursionError:
        raise ValueError(f"nested deeper than {max_depth} levels") from None
    if json_depth(value, max_depth) > max_depth:
        raise ValueError(f"nested deeper than {max_depth} levels")
    return value


def json_depth(data, limit: int) -> int:
    """How deep `data` nests (a scalar: 0), counted without recursion up to `limit` + 1."""
    deepest, todo = 0, [(data, 0)]
    while todo:
        node, depth = todo.pop()
        if isinstance(node, dict):
            children = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        deepest = max(deepest, depth + 1)
        if deepest > limit:
            return deepest
        todo.extend((child, depth + 1) for child in children)
    return deepest


def write_atomic(path: str, data: bytes, mode: int = 0o644) -> None:
    """Write `path` so that no reader and no crash ever sees half a file: a temporary file in the
    same folder, fsync, rename over the old one, then the folder synced (best effort: not every
    filesystem allows it)."""
    folder = os.path.dirname(path) or "."
    handle, temporary = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fchmod(out.fileno(), mode)
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
