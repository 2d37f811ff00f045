#!/usr/bin/env python3
"""Pack hwreplay (program, replaylib, profiles) into one tar, byte-identical run to run.

    python3 tests/hwreplay/pack.py OUT_DIR   -> prints the path of OUT_DIR/hwreplay-<digest>.tar

install.yml copies this one file to a node instead of ~25 small ones (each a
round trip), and unpacks it only when its checksum changed. Entries are sorted
and carry fixed owners, modes and times, so unchanged sources give the same bytes
and the copy stays unchanged on the next run.
"""

from __future__ import annotations

import hashlib
import io
import os
import sys
import tarfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
MEMBERS = ("hwreplay.py", "replaylib/*.py", "profiles/*.json")


def bundle_bytes() -> bytes:
    files = sorted({path for pattern in MEMBERS for path in HERE.glob(pattern)})
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for path in files:
            data = path.read_bytes()
            info = tarfile.TarInfo(str(path.relative_to(HERE)))
            info.size = len(data)
            info.mode = 0o755 if path.name == "hwreplay.py" else 0o644
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            info.mtime = 0
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: pack.py OUT_DIR", file=sys.stderr)
        return 2
    out_dir = Path(sys.argv[1])
    out_dir.mkdir(parents=True, exist_ok=True)
    data = bundle_bytes()
    target = out_dir / f"hwreplay-{hashlib.sha256(data).hexdigest()[:16]}.tar"
    if not target.exists():
        # Atomic: a concurrent run never copies a half-written bundle.
        partial = target.with_suffix(f".tmp{os.getpid()}")
        partial.write_bytes(data)
        partial.replace(target)
    print(target)
    return 0


if __name__ == "__main__":
    sys.exit(main())
