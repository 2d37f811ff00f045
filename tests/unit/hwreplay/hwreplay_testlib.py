"""What the hardware replay tool's tests share: where the tool is, the profiles and the commands to render.

A uniquely named module (not conftest) so `import` finds this one in a full test run.
"""

from __future__ import annotations

import sys
from pathlib import Path

HWREPLAY_DIR = Path(__file__).resolve().parents[2] / "hwreplay"
sys.path.insert(0, str(HWREPLAY_DIR))


HEALTHY = (
    "h100-healthy",
    "h200-healthy",
    "b200-healthy",
    "910b-healthy",
    "910c-healthy",
    "ppu-healthy",
    "cpu-none",
    "roce-healthy",
)
FAULTY = {
    "h100-xid79": "h100-healthy",
    "h100-pcie-x8": "h100-healthy",
    "h100-ib-port-down": "h100-healthy",
    "h100-remapped-rows-pending": "h100-healthy",
    "h100-fabricmanager-failed": "h100-healthy",
    "h100-ib-wrong-rate": "h100-healthy",
    "h100-ib-link-layer-eth": "h100-healthy",
    "h100-peermem-missing": "h100-healthy",
    "910b-health-alarm": "910b-healthy",
    "910b-nic-net-health-fail": "910b-healthy",
    "ppu-device-error": "ppu-healthy",
    "roce-pfc-off": "roce-healthy",
    "h100-perf-bad-rail": "h100-healthy",
    "910b-perf-degraded": "910b-healthy",
}
# Faults only perf validation's benchmarks show (replaylib/perf.py): no validator command changes.
PERF_FAULTS = ("h100-perf-bad-rail", "910b-perf-degraded")
# A node degrading run after run (`hwreplay profile set h100-degrading-N`, N = 1..4): each step is a
# patch of the one before, so the steps differ only in the degradation (tests/hwreplay/README.md).
DEGRADING = ("h100-degrading-1", "h100-degrading-2", "h100-degrading-3", "h100-degrading-4")
ALL_PROFILES = HEALTHY + tuple(FAULTY) + DEGRADING
NOW = 1718935388.0  # Fri Jun 21 02:03:08 2024 UTC: pinned so outputs are reproducible
UPTIME = 86400.0


def replay_env(tmp_path) -> dict:
    """A private replay (state, sysfs, tool dir, units) under tmp_path, no host overrides, a pinned clock."""
    return {
        "HWREPLAY_OVERRIDES": str(tmp_path / "no-overrides.json"),
        "HWREPLAY_STATE_DIR": str(tmp_path / "state"),
        "HWREPLAY_SYSROOT": str(tmp_path / "sysroot"),
        "HWREPLAY_BIN_DIR": str(tmp_path / "bin"),
        "HWREPLAY_VENDOR_BIN_DIR": str(tmp_path / "vendor-bin"),
        "HWREPLAY_UNIT_DIR": str(tmp_path / "units"),
        # No NVIDIA packages installed unless a test puts their files here (replaylib/installed.py).
        "HWREPLAY_LIB_DIR": str(tmp_path / "lib"),
        "HWREPLAY_PACKAGE_UNIT_DIRS": str(tmp_path / "pkg-units"),
        "HWREPLAY_FM_STATE": str(tmp_path / "run/fabric.state"),
        # Ascend: installed driver/firmware, the installers' records, hccn_tool's files.
        "HWREPLAY_ASCEND_ROOT": str(tmp_path / "Ascend"),
        "HWREPLAY_PKG_RECORDS": str(tmp_path / "pkgs"),
        "HWREPLAY_HCCN_CONF": str(tmp_path / "etc/hccn.conf"),
        "HWREPLAY_HCCN_LOG": str(tmp_path / "log/hccn_tool.log"),
        "HWREPLAY_SYSTEMD": "0",
        "HWREPLAY_NOW": str(NOW),
        "HWREPLAY_UPTIME": str(UPTIME),
    }


# The --query-gpu form the validator runs (every field the design names, plus two more).
QUERY_GPU_ARGS = [
    "--query-gpu=index,name,uuid,serial,pci.bus_id,driver_version,pcie.link.gen.max,pcie.link.gen.current,"
    "pcie.link.width.max,pcie.link.width.current,persistence_mode,mig.mode.current,ecc.mode.current,"
    "ecc.errors.uncorrected.volatile.total,retired_pages.pending,remapped_rows.pending,temperature.gpu,"
    "power.draw,memory.total,fabric.state",
    "--format=csv",
]
NVIDIA_COMMANDS = [
    ["nvidia-smi"],
    ["nvidia-smi", "-q"],
    ["nvidia-smi", "-q", "-x"],
    ["nvidia-smi", "-L"],
    ["nvidia-smi", *QUERY_GPU_ARGS],
    ["nvidia-smi", "topo", "-m"],
    ["nvidia-smi", "nvlink", "-s"],
]
ASCEND_COMMANDS = (
    [["npu-smi", "info"], ["npu-smi", "info", "-m"]]
    + [
        ["npu-smi", "info", "-t", kind, "-i", str(i)]
        for kind in ("board", "health", "usages")
        for i in range(8)
    ]
    + [["hccn_tool", "-i", str(i), item, "-g"] for item in ("-ip", "-link", "-net_health") for i in range(8)]
)
IB_COMMANDS = [["ibstat"], ["ibstat", "-l"]]
COMMON_COMMANDS = [["lspci"], ["lspci", "-vvv"], ["dmesg"], ["dmesg", "-T"]]


PPU_COMMANDS = [["ppu-smi", "-L"], ["ppu-smi", "-q"], ["ppu-smi", "-q", "-i", "0"]]


def roce_commands(profile: dict) -> list:
    """`mlnx_qos -i IF` (reads only: the tool is stateful) for each RoCE netdev of the profile."""
    netdevs = (profile.get("roce") or {}).get("netdevs") or []
    return [["mlnx_qos", "-i", netdev["name"]] for netdev in netdevs]


def perf_commands(profile: dict) -> list:
    """The single-node benchmarks perf validation runs (docs/design.md), as they run on this hardware."""
    commands = []
    gpus = len((profile.get("nvidia") or {}).get("gpus") or [])
    if gpus:
        commands.append(["all_reduce_perf", "-b", "8", "-e", "8G", "-f", "2", "-g", str(gpus)])
        commands.append(["nvbandwidth", "-t", "host_to_device_memcpy_ce", "device_to_host_memcpy_ce"])
    npus = len((profile.get("ascend") or {}).get("npus") or [])
    if npus:
        test = ["all_reduce_test", "-b", "8K", "-e", "1G", "-f", "2", "-p", str(npus)]
        commands.append(["mpirun", "--allow-run-as-root", "-n", str(npus), *test])
    return commands


def commands_for(profile: dict) -> list:
    commands = list(COMMON_COMMANDS)
    if profile.get("nvidia"):
        commands += NVIDIA_COMMANDS
    if profile.get("ascend"):
        commands += ASCEND_COMMANDS
    if profile.get("infiniband"):
        commands += IB_COMMANDS
    if profile.get("ppu"):
        commands += PPU_COMMANDS
    if profile.get("roce"):
        commands += roce_commands(profile)
    return commands
