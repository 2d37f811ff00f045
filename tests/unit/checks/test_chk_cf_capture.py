"""tools/cf-capture.sh run for real with fake vendor tools: its directory validates like the node would."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from cfcore.collect import CAPTURE_LAYOUT, CaptureSource
from cfcore.expected import build_expected
from cfcore.validate import validate_node
from chkdata import CAPTURES, atlas_expected, h100_expected

REPO = Path(__file__).resolve().parents[3]
SCRIPT = REPO / "tools" / "cf-capture.sh"
HWREPLAY = REPO / "tests" / "hwreplay"
ROCE_NETDEVS = [
    "enp24s0np0",
    "enp64s0np0",
    "enp79s0np0",
    "enp94s0np0",
    "enp154s0np0",
    "enp192s0np0",
    "enp206s0np0",
    "enp220s0np0",
]


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
        "ip",
        "mlnx_qos",
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
    if (source / "proc-modules.txt").exists():
        shutil.copy(source / "proc-modules.txt", root / "proc" / "modules")
    if (source / "sys").exists():
        shutil.copytree(source / "sys", root / "sys")
    return bin_dir, root


def replay_node(tmp_path: Path, profile: str) -> tuple[Path, Path]:
    """A fake node replaying hwreplay PROFILE: its tools render it, its root holds the profile's sysfs."""
    sys.path.insert(0, str(HWREPLAY))
    from replaylib import control
    from replaylib.common import Context
    from replaylib.profiles import resolve
    from replaylib.tools import TOOLS

    env = {
        "HWREPLAY_OVERRIDES": str(tmp_path / "no-overrides.json"),
        "HWREPLAY_STATE_DIR": str(tmp_path / "state"),
        "HWREPLAY_SYSROOT": str(tmp_path / "root"),
    }
    render = " ".join(f"{k}={v}" for k, v in {**env, "HWREPLAY_PROFILE": profile}.items())
    program = f"{sys.executable} {HWREPLAY / 'hwreplay.py'}"
    bin_dir, root = fake_node(tmp_path, "h100-healthy", {"systemctl": "echo active"})
    for tool in TOOLS:  # written after fake_node: its "@" stands for the fixture folder
        fake(bin_dir, tool, f'{render} exec {program} render {tool} "$@"')
    shutil.rmtree(root / "sys")  # the profile's tree instead of the fixture's
    ctx = Context(env=dict(env))
    control.sync_sysfs(ctx, resolve(ctx, profile))
    return bin_dir, root


def roce_expected(**plan) -> dict:
    hostvars = {
        "node_sku": "hgx-h100-8gpu-roce",
        "nvidia_driver_version": "535.183.01",  # the replayed driver
        "fabric_roce_interfaces": ROCE_NETDEVS,
    }
    return build_expected("node", {**hostvars, **{f"fabric_roce_{k}": v for k, v in plan.items()}})


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


def test_capture_writes_the_new_node_files(tmp_path):
    bin_dir, root = fake_node(tmp_path, "h100-healthy", {"ip": "echo '[]'", "dmesg": "true"})
    out = capture(tmp_path, bin_dir, root)
    assert (out / "proc-modules.txt").read_text() == (
        CAPTURES / "h100-healthy" / "proc-modules.txt"
    ).read_text()
    assert (out / "ip-j-addr-show.json").read_text() == "[]\n"
    assert not list(out.glob("mlnx_qos-*"))  # no --roce-interfaces: no RoCE files


@pytest.mark.parametrize(
    "profile, failing",
    [("roce-healthy", set()), ("roce-pfc-off", {"roce.qos"})],
)
def test_roce_capture_validates_the_plan_like_the_node(tmp_path, profile, failing):
    bin_dir, root = replay_node(tmp_path, profile)
    out = capture(tmp_path, bin_dir, root, "--roce-interfaces", " ".join(ROCE_NETDEVS))
    assert sorted(p.name for p in out.glob("mlnx_qos-*.txt")) == sorted(
        f"mlnx_qos-{name}.txt" for name in ROCE_NETDEVS
    )
    net = out / "sys/class/net/enp24s0np0"
    assert (net / "mtu").read_text() == "9000\n"
    assert (net / "ecn/roce_np/enable/3").read_text() == "1\n"
    assert (net / "ecn/roce_np/cnp_dscp").read_text() == "48\n"
    assert [p.name for p in (net / "device/infiniband").iterdir()] == ["mlx5_0"]
    assert not list((net / "device/infiniband/mlx5_0").iterdir())  # the IB device's name only
    ib = out / "sys/class/infiniband/mlx5_0"
    assert (ib / "tc/1/traffic_class").read_text() == "Global tclass=104\n"
    assert (ib / "ports/1/gid_attrs/types/3").read_text() == "RoCE v2\n"
    assert (ib / "ports/1/gids/3").read_text() == "0000:0000:0000:0000:0000:ffff:0a28:000b\n"
    tos = out / "sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos"
    assert tos.read_text() == "104\n"
    result = validate_node(CaptureSource(str(out)), roce_expected(), "quick")
    checks = {c["id"]: c for c in result["checks"]}
    assert {i for i, c in checks.items() if c["status"] not in ("pass", "skip")} == failing
    assert checks["roce.qos"]["status"] == ("fail" if failing else "pass")
    assert checks["gpu.peermem"]["status"] == "pass"
    if failing:
        message = checks["roce.qos"]["message"]
        assert "enp24s0np0: pfc planned 0,0,0,1,0,0,0,0, found 0,0,0,0,0,0,0,0" in message
        assert message.count("pfc planned") == len(ROCE_NETDEVS)
        assert any("mlnx_qos-enp24s0np0.txt" in str(e) for e in checks["roce.qos"]["evidence"].values())


def test_roce_interface_that_is_no_netdev_name_is_refused(tmp_path):
    done = subprocess.run(
        ["bash", str(SCRIPT), "--roce-interfaces", "enp24s0np0 ../etc"],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 2
    assert "--roce-interfaces must list netdev names, got '../etc'" in done.stderr


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
