"""cfcore.validation_metrics: write (atomic textfile), expected_mounts, filter cf_expected_mounts_metrics."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError
from ansible.plugins.loader import filter_loader, init_plugin_loader
from cfcore import validation_metrics
from cfcore.expected import InvalidExpectation
from cfcore.validation_metrics import METRIC_NAMES, expected_mounts, render, write
from clusterforge.ansible_env import ensure_collection_link
from patience import HANG_S
from test_vmetrics_render import NODE_RESULT, parse

init_plugin_loader([str(ensure_collection_link().parents[2])])
cf_expected_mounts_metrics = filter_loader.get("clusterforge.cluster.cf_expected_mounts_metrics").j2_function

ROOT = Path(__file__).resolve().parents[3]
PROMTOOL = shutil.which("promtool") or next(
    (
        str(p)
        for p in (ROOT / ".venv" / "bin" / "promtool", Path("/work/main/.venv/bin/promtool"))
        if p.is_file()
    ),
    None,
)


def test_write_replaces_the_level_file_atomically_with_mode_0644(tmp_path):
    path = write(str(tmp_path), NODE_RESULT)
    assert path == str(tmp_path / "clusterforge_validation_quick.prom")
    assert Path(path).read_text() == render(NODE_RESULT)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o644
    again = write(str(tmp_path), {**NODE_RESULT, "status": "pass"})
    assert again == path
    assert 'clusterforge_validation_status{status="pass",level="quick"} 1' in Path(path).read_text()
    assert sorted(os.listdir(tmp_path)) == ["clusterforge_validation_quick.prom"]  # no temporary left


def test_a_full_run_does_not_erase_the_quick_file(tmp_path):
    write(str(tmp_path), NODE_RESULT)
    full = write(str(tmp_path), {**NODE_RESULT, "level": "full"})
    assert full.endswith("clusterforge_validation_full.prom")
    assert sorted(os.listdir(tmp_path)) == [
        "clusterforge_validation_full.prom",
        "clusterforge_validation_quick.prom",
    ]


def test_a_missing_or_unset_directory_writes_nothing(tmp_path):
    assert write(str(tmp_path / "absent"), NODE_RESULT) is None
    assert write(None, NODE_RESULT) is None
    assert not (tmp_path / "absent").exists()


def test_a_failed_write_leaves_no_temporary_and_keeps_the_old_file(tmp_path, monkeypatch):
    path = write(str(tmp_path), NODE_RESULT)
    before = Path(path).read_text()

    def broken(_src, _dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(validation_metrics.os, "replace", broken)
    with pytest.raises(OSError, match="No space left"):
        write(str(tmp_path), {**NODE_RESULT, "status": "pass"})
    assert sorted(os.listdir(tmp_path)) == ["clusterforge_validation_quick.prom"]
    assert Path(path).read_text() == before


def test_an_unknown_level_is_refused_before_anything_is_written(tmp_path):
    with pytest.raises(ValueError, match="level must be one of quick, full"):
        write(str(tmp_path), {**NODE_RESULT, "level": "../../etc/x"})
    assert os.listdir(tmp_path) == []


REQUIRED = [
    "/mnt/scratch/",
    {"path": "/mnt/jfs", "fstype": "fuse.juicefs", "writable": True, "unit": "juicefs-jfs.service"},
    {"path": "/mnt/cephfs", "fstype": "ceph", "writable": True},
    {"path": "/data", "writable": False},
]
EXPECTED_MOUNTS = """\
# HELP clusterforge_expected_mount 1 for each mount point the node must have (fstype any: presence only).
# TYPE clusterforge_expected_mount gauge
clusterforge_expected_mount{mountpoint="/data",fstype="any"} 1
clusterforge_expected_mount{mountpoint="/mnt/cephfs",fstype="ceph"} 1
clusterforge_expected_mount{mountpoint="/mnt/jfs",fstype="fuse.juicefs"} 1
clusterforge_expected_mount{mountpoint="/mnt/scratch",fstype="any"} 1
"""


def test_expected_mounts_one_line_per_mount_sorted_fstype_any_for_a_plain_path():
    assert expected_mounts(REQUIRED) == EXPECTED_MOUNTS
    assert {name for name, _, _ in parse(EXPECTED_MOUNTS)} == {"clusterforge_expected_mount"}
    assert "clusterforge_expected_mount" in METRIC_NAMES
    assert expected_mounts([]) == "" and expected_mounts(None) == ""


def test_expected_mounts_refuses_what_node_mounts_refuses():
    with pytest.raises(InvalidExpectation, match="validate_required_mounts"):
        expected_mounts(["mnt/relative"])
    with pytest.raises(InvalidExpectation, match="unknown keys options"):
        expected_mounts([{"path": "/mnt/x", "options": "ro"}])


def test_the_filter_adapts_expected_mounts_and_names_the_variable_on_errors():
    assert cf_expected_mounts_metrics(REQUIRED) == EXPECTED_MOUNTS
    with pytest.raises(AnsibleFilterError, match=r"validate_required_mounts.*fix:"):
        cf_expected_mounts_metrics("/mnt/jfs")


@pytest.mark.skipif(PROMTOOL is None, reason="promtool is not on PATH nor in .venv/bin (Debian: prometheus)")
@pytest.mark.parametrize("text", [render(NODE_RESULT), expected_mounts(REQUIRED)], ids=["result", "mounts"])
def test_promtool_check_metrics_accepts_the_output(text):
    done = subprocess.run(
        [PROMTOOL, "check", "metrics"],
        input=text,
        capture_output=True,
        text=True,
        timeout=HANG_S,
        check=False,
    )
    # promtool lints too (exit 3 on lint problems only); a parse error is exit 1.
    assert done.returncode == 0, done.stdout + done.stderr
