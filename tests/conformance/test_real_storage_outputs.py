"""The storage parsers against the shared real outputs (/work/shared/real-outputs/storage).

Each `juicefs-status_*` and `ceph-*` file is read as published (a '# source:' header,
a shell prompt line, documentation elisions): complete JSON/text outputs must parse to
their stated health and sessions; PARTIAL excerpts without the tool's JSON must be refused
with ParseError, never misread. Skipped, saying so, when the folder does not exist.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from cfcore.parsers import ParseError
from cfcore.parsers.storage import parse_ceph_health, parse_juicefs_status

REPO = Path(__file__).resolve().parents[2]
ROOT = Path(os.environ.get("CLUSTERFORGE_REAL_OUTPUTS", REPO.parent / "shared" / "real-outputs")) / "storage"
if not ROOT.is_dir():
    pytest.skip(
        f"no real storage outputs at {ROOT} (set CLUSTERFORGE_REAL_OUTPUTS to the folder)",
        allow_module_level=True,
    )

_STATUS_IN_NAME = re.compile(r"HEALTH_(OK|WARN|ERR)")
_PROMPT = re.compile(r"^(?:\$ |# |\[ceph: [^\]]*\]# )")


def _body(path: Path) -> str:
    """The output without the prompt lines of the published capture (the tool never prints them)."""
    lines = path.read_text().splitlines()
    if lines and lines[0].startswith("# source:"):
        lines[0] = ""
    return "\n".join("" if _PROMPT.match(line) else line for line in lines) + "\n"


CEPH = sorted(ROOT.glob("ceph-*"))
JUICEFS = sorted(ROOT.glob("juicefs-status_*"))


@pytest.mark.parametrize("path", CEPH, ids=[p.name for p in CEPH])
def test_ceph_health_real(path):
    health = parse_ceph_health(_body(path))
    want = _STATUS_IN_NAME.search(path.name)
    if want:
        assert health["status"] == f"HEALTH_{want.group(1)}"
    if health["status"] == "HEALTH_OK":
        assert health["checks"] == {}
    else:
        assert health["checks"], "a HEALTH_WARN/ERR output names what is wrong"
        assert all(entry["summary"] for entry in health["checks"].values())


@pytest.mark.parametrize("path", JUICEFS, ids=[p.name for p in JUICEFS])
def test_juicefs_status_real(path):
    text = _body(path)
    header = path.read_text().splitlines()[0]
    if "{" not in text or ("PARTIAL" in header and "..." in text):
        with pytest.raises(ParseError):
            parse_juicefs_status(text)
        return
    status = parse_juicefs_status(text)
    assert status["setting"]["Name"]
    assert status["sessions"], "the published outputs list sessions"
    for session in status["sessions"]:
        assert session["hostname"] and session["mountpoint"].startswith("/")
        assert session["expire"] or session["heartbeat"]


def test_every_storage_file_is_read():
    names = {p.name for p in CEPH + JUICEFS}
    assert names, f"{ROOT} holds no ceph-* or juicefs-status_* files"
