"""Pack the collection's cfcore into one deterministic zip the node imports from (zipimport).

    python3 build_pyz.py SOURCE_DIR DEST_FILE

SOURCE_DIR is plugins/module_utils/cfcore; the zip holds `cfcore/**/*.py` and
`cfcore/data/*.yml`, sorted, each with the same timestamp (1980-01-01), mode
0644 and no compression, so the same code always gives the same bytes
(whatever the files' mtimes, the zlib version or the order of the directory
listing) and copying it to the nodes is idempotent. DEST_FILE is replaced
atomically and only when its bytes differ. Prints one JSON line: {"path",
"sha256", "files", "changed"}. Runs on the controller (role node_healthcheck,
run_once, delegate_to localhost). Stdlib only.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import sys
import tempfile
import zipfile

EPOCH = (1980, 1, 1, 0, 0, 0)
PACKAGE = "cfcore"
REQUIRED = ("__init__.py", "healthcheck.py", "validate.py", "scheduler_drain.py")


def members(source: str) -> list:
    """(archive name, file path) of every *.py and data/*.yml under source, sorted by name."""
    found = []
    for folder, dirs, files in os.walk(source):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
        relative = os.path.relpath(folder, source)
        for name in files:
            inside = name if relative == "." else f"{relative}/{name}".replace(os.sep, "/")
            if name.endswith(".py") or (relative == "data" and name.endswith(".yml")):
                found.append((f"{PACKAGE}/{inside}", os.path.join(folder, name)))
    return sorted(found)


def build(source: str) -> tuple:
    """The zip's bytes and its member count."""
    missing = [name for name in REQUIRED if not os.path.isfile(os.path.join(source, name))]
    if missing:
        raise SystemExit(f"build_pyz: {source} is not cfcore (missing {', '.join(missing)})")
    buffer = io.BytesIO()
    entries = members(source)
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for name, path in entries:
            info = zipfile.ZipInfo(name, date_time=EPOCH)
            info.external_attr = 0o100644 << 16
            info.create_system = 3  # unix, whatever the controller
            with open(path, "rb") as handle:
                archive.writestr(info, handle.read())
    return buffer.getvalue(), len(entries)


def write_if_changed(dest: str, data: bytes) -> bool:
    try:
        with open(dest, "rb") as handle:
            if handle.read() == data:
                return False
    except FileNotFoundError:
        pass
    folder = os.path.dirname(os.path.abspath(dest))
    os.makedirs(folder, mode=0o700, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=".cfcore-", suffix=".pyz", dir=folder)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.chmod(temporary, 0o644)
        os.replace(temporary, dest)
    except BaseException:
        os.unlink(temporary)
        raise
    return True


def main(argv: list | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: build_pyz.py SOURCE_DIR DEST_FILE", file=sys.stderr)
        return 2
    source, dest = args
    data, count = build(source)
    changed = write_if_changed(dest, data)
    digest = hashlib.sha256(data).hexdigest()
    print(json.dumps({"path": os.path.abspath(dest), "sha256": digest, "files": count, "changed": changed}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
