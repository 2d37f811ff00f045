"""tools/cf-capture.sh run for real with fake vendor tools: its directory validates like the node would."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

from cfcore.collect import CAPTURE_LAYOUT, CaptureSource
from cfcore.validate import validate_node
from chkdata import CAPTURES, atlas_expected, h100_expected

SCRIPT = Path(__file__).resolve().parents[3] / "tools" / "cf-capture.sh"


def fake(bin_dir: Path, name: str, script: str) -> None:
    path = bin_dir / name
    path.write_text("#!/bin/sh\n" + script + "\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def fake_node(tmp_path: Path, capture: str, tools: dict) -> tuple[Path, Path]:
    """A bin dir of fake tools printing a fixture capture's files, and a root with /proc and /sys."""
    source = CAPTURES / capture
    bin_dir, root = tmp_path / "bin", tmp_path / "root"
    bin_dir.mkdir()
    tools = {"chronyc": "cat @/chronyc-tracking.txt", "df": "cat @/df-P-k-root.txt", **tools}
    for name, body in tools.items():
        fake(bin_dir, name, body.replace("@", str(source)))
    # Tools the host may have must not answer for the fake node.
    for name in (
        "nvidia-smi",
        "npu-smi",
        "hccn_tool",
        "ibstat",
        "lspci",
        "dcgmi",
        "modinfo",
        "journalctl",
        "timedatectl",
    ):
        if name not in tools:
            fake(bin_dir, name, f"echo '{name}: not on this node' >&2; exit 127")
    (root / "etc").mkdir(parents=True)
    shutil.copy(source / "etc-os-release.txt", root / "etc" / "os-release")
    (root / "proc" / "self").mkdir(parents=True)
    shutil.copy(source / "proc-mounts.txt", root / "proc" / "self" / "mounts")
    if (source / "proc-driver-nvidia-version.txt").exists():
        (root / "proc" / "driver" / "nvidia").mkdir(parents=True)
        shutil.copy(
            source / "proc-driver-nvidia-version.txt", root / "proc" / "driver" / "nvidia" / "version"
        )
    if (source / "sys").exists():
        shutil.copytree(source / "sys", root / "sys")
    return bin_dir, root


def capture(tmp_path: Path, bin_dir: Path, root: Path, *args: str) -> Path:
    out = tmp_path / "out"
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "CF_CAPTURE_ROOT": str(root)}
    done = subprocess.run(
        ["bash", str(SCRIPT), "-o", str(out), "--no-tar", "--sku", "test-sku", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return out


def test_gpu_node_capture_validates_like_the_fixture(tmp_path):
    bin_dir, root = fake_node(
        tmp_path,
        "h100-ib-port-down",
        {
            "nvidia-smi": 'case "$*" in "-q -x") cat @/nvidia-smi-q-x.xml;;'
            ' "nvlink -s") cat @/nvidia-smi-nvlink-s.txt;; *) exit 2;; esac',
            "dmesg": "cat @/dmesg.txt",
            "lspci": 'case "$*" in *10de*) cat @/lspci-vvv-10de.txt;; esac',
            "ibstat": "cat @/ibstat.txt",
            "systemctl": "echo active",
        },
    )
    out = capture(tmp_path, bin_dir, root)
    meta = json.loads((out / "meta.json").read_text())
    assert meta["node_sku"] == "test-sku" and meta["level"] == "quick"
    assert (out / "npu-smi-info.txt.err").read_text().startswith("rc: 127\n")
    assert (out / "sys/class/infiniband/mlx5_3/ports/1/state").read_text() == "1: DOWN\n"
    result = validate_node(CaptureSource(str(out)), h100_expected(), "quick")
    failing = {c["id"]: c["message"] for c in result["checks"] if c["status"] not in ("pass", "skip")}
    assert failing == {"ib.port_state": "mlx5_3 port 1: Down / Polling"}


def test_npu_node_capture_validates_and_finds_every_device(tmp_path):
    bin_dir, root = fake_node(
        tmp_path,
        "ascend-910b-npu-alarm",
        {
            "npu-smi": 'case "$*" in "info") cat @/npu-smi-info.txt;;'
            ' "info -t board -i "*) cat @/npu-smi-board-$5.txt;;'
            ' "info -t health -i "*) cat @/npu-smi-health-$5.txt;; *) exit 2;; esac',
            "hccn_tool": 'case "$3" in -net_health) cat @/hccn-$2-net_health.txt;;'
            " -ip) cat @/hccn-$2-ip.txt;; -link) cat @/hccn-$2-link.txt;; esac",
            "dmesg": "true",
        },
    )
    out = capture(tmp_path, bin_dir, root)
    assert sorted(p.name for p in out.glob("npu-smi-board-*.txt")) == [
        f"npu-smi-board-{n}.txt" for n in range(8)
    ]
    assert len(list(out.glob("hccn-*-net_health.txt"))) == 8
    result = validate_node(CaptureSource(str(out)), atlas_expected(), "quick")
    failing = {c["id"] for c in result["checks"] if c["status"] not in ("pass", "skip")}
    assert failing == {"npu.health"}


def test_script_documents_and_writes_the_layout_cfcore_reads():
    text = SCRIPT.read_text()
    for _argv, name in CAPTURE_LAYOUT:
        if name != "nvidia-smi-q.txt":  # accepted from support engineers, never written by the script
            assert name.replace("{n}", "<N>") in text, name


def test_bad_option_is_refused(tmp_path):
    done = subprocess.run(
        ["bash", str(SCRIPT), "--hccn-devices", "0 x"],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 2
    assert "--hccn-devices must list device numbers, got 'x'" in done.stderr
