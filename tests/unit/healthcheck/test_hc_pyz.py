"""cfcore.pyz (roles/node_healthcheck/files/build_pyz.py): byte-identical builds, and the installed
program run from it by python3, as slurmd runs it (no arguments but --params/--dry-run here)."""

from __future__ import annotations

import ast
import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from cfcore.expected import build_expected

REPO = Path(__file__).resolve().parents[3]
ROLE = REPO / "roles" / "node_healthcheck"
CFCORE = REPO / "plugins" / "module_utils" / "cfcore"
BUILD = ROLE / "files" / "build_pyz.py"
# The node's python3 (outside the venv, where cfcore is installed in development mode).
PYTHON = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable


def build(source: Path, dest: Path) -> dict:
    done = subprocess.run(
        [sys.executable, str(BUILD), str(source), str(dest)], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)


def test_two_builds_are_byte_identical_whatever_the_mtimes(tmp_path):
    first = build(CFCORE, tmp_path / "a" / "cfcore.pyz")
    assert first["changed"] is True
    # A copy of the sources with other mtimes (and a stray __pycache__) packs to the same bytes.
    copy = tmp_path / "src" / "cfcore"
    shutil.copytree(CFCORE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    for path in copy.rglob("*"):
        os.utime(path, (1_700_000_000, 1_700_000_000))
    (copy / "__pycache__").mkdir(exist_ok=True)
    (copy / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"junk")
    second = build(copy, tmp_path / "b" / "cfcore.pyz")
    assert first["sha256"] == second["sha256"]
    assert (tmp_path / "a" / "cfcore.pyz").read_bytes() == (tmp_path / "b" / "cfcore.pyz").read_bytes()
    assert hashlib.sha256((tmp_path / "a" / "cfcore.pyz").read_bytes()).hexdigest() == first["sha256"]
    again = build(CFCORE, tmp_path / "a" / "cfcore.pyz")
    assert again["changed"] is False and again["sha256"] == first["sha256"]


def test_the_zip_holds_sorted_python_and_data_only(tmp_path):
    build(CFCORE, tmp_path / "cfcore.pyz")
    with zipfile.ZipFile(tmp_path / "cfcore.pyz") as archive:
        infos = archive.infolist()
    names = [i.filename for i in infos]
    assert names == sorted(names)
    assert "cfcore/healthcheck.py" in names and "cfcore/scheduler_drain.py" in names
    assert "cfcore/data/skus.yml" in names and "cfcore/parsers/__init__.py" in names
    assert all(n.endswith(".py") or n.startswith("cfcore/data/") for n in names)
    assert not any("__pycache__" in n for n in names)
    assert {i.date_time for i in infos} == {(1980, 1, 1, 0, 0, 0)}


def test_a_folder_that_is_not_cfcore_is_refused(tmp_path):
    done = subprocess.run(
        [sys.executable, str(BUILD), str(tmp_path), str(tmp_path / "x.pyz")], capture_output=True, text=True
    )
    assert done.returncode != 0 and "is not cfcore (missing __init__.py" in done.stderr
    assert not (tmp_path / "x.pyz").exists()


@pytest.mark.slow
def test_the_program_runs_from_the_zip_and_prints_a_decision(tmp_path, watchdog):
    """The launcher as the role installs it, run by python3 in isolated mode from the built zip only:
    the real quick validation on this machine (a CPU node), scheduler slurm with a stand-in scontrol."""
    pyz = tmp_path / "lib" / "cfcore.pyz"
    build(CFCORE, pyz)
    template = (ROLE / "templates" / "clusterforge-healthcheck.j2").read_text()
    launcher = tmp_path / "clusterforge-healthcheck"
    launcher.write_text(
        template.replace("{{ node_healthcheck_python }}", PYTHON)
        .replace("{{ ansible_managed }}", "test")
        .replace("{{ node_healthcheck_pyz }}", str(pyz))
        .replace("{{ node_healthcheck_params_file }}", "params")
        .replace("{{ node_healthcheck_result_dir }}", "results")
    )
    assert "{{" not in launcher.read_text()
    launcher.chmod(0o755)
    params = tmp_path / "healthcheck.json"
    expected = build_expected(
        "gpu-01", {"node_sku": "cpu-generic", "validate_skip_checks": ["node.time_sync"]}
    )
    params.write_text(
        json.dumps({"expected": expected, "level": "quick", "scheduler": "slurm", "node_name": "gpu-01"})
    )
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "scontrol").write_text(
        "#!/bin/sh\n"
        "[ \"$1\" = show ] && echo 'NodeName=gpu-01 State=IDLE+DRAIN Reason=clusterforge-health: x [r@t]'\n"
    )
    (bin_dir / "scontrol").chmod(0o755)
    # cwd and PYTHONPATH away from the checkout: only the zip can provide cfcore.
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "PYTHONPATH": str(REPO / "nonexistent")}
    done = subprocess.run(
        [str(launcher), "--params", str(params), "--dry-run"],
        capture_output=True,
        text=True,
        timeout=90,
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode in (0, 1), done.stderr
    printed = done.stdout
    decision = json.loads(printed[: printed.rindex("}") + 1])
    assert decision["action"] in ("resume", "drain", "none")
    assert decision["node_state"]["reason"] == "clusterforge-health: x"
    assert decision["dry_run"] is True
    assert printed.strip().splitlines()[-1].startswith("clusterforge-healthcheck: ")
    imported = subprocess.run(
        [
            PYTHON,
            "-I",
            "-c",
            f"import sys; sys.path.insert(0, {str(pyz)!r}); import cfcore.healthcheck as h; "
            "print(h.__file__)",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=True,
    )
    assert imported.stdout.strip() == f"{pyz}/cfcore/healthcheck.py"


@pytest.mark.parametrize(
    "name", ["healthcheck.py", "scheduler_drain.py", "quarantine_rules.py", "validation_metrics.py"]
)
def test_node_side_code_parses_as_python_3_8(name):
    ast.parse((CFCORE / name).read_text(), feature_version=(3, 8))
    ast.parse(BUILD.read_text(), feature_version=(3, 8))
