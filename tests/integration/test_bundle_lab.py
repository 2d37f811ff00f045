"""The air-gapped lab (conftest.offline_bundle): the shared lab was brought up from its offline bundle
alone, its nodes cut off from Debian's mirror.

Checked here:
- the nodes' only OS repository is the bundle, and they cannot reach the mirror (nor anything
  beyond the lab network), while the bundle answers: so every package of the bring-up (and of
  the validation the other modules run) came from the bundle;
- every URL variable of the inventory points into the bundle;
- with one package deleted from the served bundle, a bring-up fails in preflight, naming the
  file and the package, and nothing runs;
- `bundle verify` names a corrupted file (same size, one byte changed);
- (test_upgrade_lab.py) a second build into the same folder, with the upgrade's versions, fetches
  only the new files and keeps the earlier ones.

Reads the lab only; the deleted and corrupted files are put back (LAB_ORDER: early, before the
modules that change the nodes).
"""

from __future__ import annotations

import json
import shutil
import socket

import pytest
import yaml
from conftest import LEDGER
from labkit import BIN, BUNDLE, BUNDLE_PORT, HOSTS, INVENTORY, LAB, explain, run, sh

pytestmark = pytest.mark.lab
LAB_ORDER = 6  # after monitoring's reads (5), before the modules that change the nodes
WORKER = f"{LAB}-gpu-01"


def manifest() -> dict:
    return json.loads((BUNDLE / "bundle.json").read_text())


def test_nodes_install_from_the_bundle_alone(lab):
    bundle_url = inventory_var("cf_bundle_url")
    assert bundle_url.endswith(f":{BUNDLE_PORT}"), bundle_url
    mirror = socket.gethostbyname("deb.debian.org")  # this host still reaches it
    for host in HOSTS:
        sources = sh(
            host, "grep -rhv '^#' /etc/apt/sources.list /etc/apt/sources.list.d/ | grep -v '^$' || true"
        )
        lines = [line for line in sources.splitlines() if line.strip()]
        assert lines, f"{host}: no apt source"
        elsewhere = [line for line in lines if bundle_url not in line]
        assert not elsewhere, f"{host}: apt sources outside the bundle: {elsewhere}"
        probe = (  # by address: the nodes' DNS goes through the host too, so a name alone proves nothing
            f"timeout 5 bash -c '</dev/tcp/{mirror}/80' 2>/dev/null && echo mirror-reachable "
            "|| echo cut-off; "
            f"curl -sf -o /dev/null {bundle_url}/bundle.json && echo bundle-answers"
        )
        answer = sh(host, probe)
        assert "cut-off" in answer and "bundle-answers" in answer, f"{host}: {answer}"
    # Packages the bring-up installed came from it: the worker's slurmd is the bundle's version.
    slurmd = sh(WORKER, "dpkg-query -W -f='${Version}' slurmd")
    files = [f for f in manifest()["files"] if f.rsplit("/", 1)[-1].startswith(f"slurmd_{slurmd}_")]
    assert files, f"slurmd {slurmd} is not a file of the bundle"


def test_every_url_points_into_the_bundle(lab):
    proc = run(BIN / "clusterforge", "bundle", "check", "-i", INVENTORY)
    assert proc.returncode == 0, explain(proc)
    assert "every need of" in proc.stdout


def test_a_missing_package_fails_preflight_naming_it(lab):
    built = manifest()["targets"]["debian 12"]["packages"]
    relpath = next(p for p in built["slurmd"] if p.rsplit("/", 1)[-1].startswith("slurmd_"))
    kept = BUNDLE / (relpath + ".kept")
    shutil.move(BUNDLE / relpath, kept)
    runs_before = set(LEDGER.iterdir()) if LEDGER.is_dir() else set()
    try:
        proc = run(
            BIN / "clusterforge",
            "bringup",
            "-i",
            INVENTORY,
            "--limit",
            WORKER,
            "--ledger",
            LEDGER,
            timeout=600,
        )
    finally:
        shutil.move(kept, BUNDLE / relpath)
    assert proc.returncode == 2, explain(proc)
    assert relpath in proc.stderr and "package slurmd" in proc.stderr, explain(proc)
    assert "nothing ran" in proc.stderr, explain(proc)
    assert (set(LEDGER.iterdir()) if LEDGER.is_dir() else set()) == runs_before, "a run was started"


def test_verify_names_a_corrupted_file(lab):
    files = manifest()["files"]
    relpath = min((p for p, f in files.items() if f["kind"] == "deb"), key=lambda p: files[p]["size"])
    path = BUNDLE / relpath
    original = path.read_bytes()
    changed = bytearray(original)
    changed[len(changed) // 2] ^= 0xFF
    path.write_bytes(bytes(changed))
    try:
        proc = run(BIN / "clusterforge", "bundle", "verify", BUNDLE)
    finally:
        path.write_bytes(original)
    assert proc.returncode == 3, explain(proc)
    assert relpath in proc.stdout and "corrupt" in proc.stdout, explain(proc)
    clean = run(BIN / "clusterforge", "bundle", "verify", BUNDLE, "-i", INVENTORY)
    assert clean.returncode == 0, explain(clean)


def inventory_var(name: str) -> str:
    """A variable of the lab's offline inventory (`lab offline` wrote it into bundle.yml)."""
    return str(yaml.safe_load((INVENTORY / "group_vars" / "all" / "bundle.yml").read_text())[name])
