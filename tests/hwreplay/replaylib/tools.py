"""The replayed commands, which hardware each needs, and running one of them."""

from __future__ import annotations

import os

from . import ascend, infiniband, kernel, modinfo, mpi, nvidia_smi, pci, perf, perftest, ppu, roce
from .common import Context, ToolResult
from .profiles import active_profile

# Command -> (profile section(s) one of which must exist for it to be installed, renderer).
TOOLS = {
    "nvidia-smi": ("nvidia", lambda profile, args, ctx: nvidia_smi.run(profile, args, ctx.now)),
    "npu-smi": ("ascend", lambda profile, args, ctx: ascend.npu_smi(profile, args)),
    "hccn_tool": ("ascend", lambda profile, args, ctx: ascend.hccn_tool(profile, args, ctx)),
    "ibstat": ("infiniband", lambda profile, args, ctx: infiniband.ibstat(profile, args)),
    "lspci": (None, lambda profile, args, ctx: pci.lspci(profile, args)),
    "dmesg": (None, lambda profile, args, ctx: kernel.dmesg(profile, args, ctx)),
    "modinfo": ("nvidia", lambda profile, args, ctx: modinfo.modinfo(profile, args, ctx)),
    "ppu-smi": ("ppu", lambda profile, args, ctx: ppu.ppu_smi(profile, args, ctx.now)),
    # Stateful (writes persist in the state dir): never pre-rendered, see replaylib/roce.py.
    "mlnx_qos": ("roce", lambda profile, args, ctx: roce.mlnx_qos(profile, args, ctx)),
    # Perf validation's benchmarks (perf.py, perftest.py, mpi.py): live only, never pre-rendered.
    "all_reduce_perf": ("nvidia", perf.all_reduce_perf),
    "nvbandwidth": ("nvidia", perf.nvbandwidth),
    "ib_write_bw": ("infiniband", perftest.ib_write_bw),
    "all_reduce_test": ("ascend", perf.all_reduce_test),
    "mpirun": (("nvidia", "ascend"), mpi.mpirun),
}
# Tools a vendor SDK brings, which are not on PATH until a role installs that SDK: their shims go
# to VENDOR_BIN_DIR (HWREPLAY_VENDOR_BIN_DIR), where the test SDK package's stand-in execs them.
VENDOR_TOOLS = ("ppu-smi",)
VENDOR_BIN_DIR = "/opt/hwreplay/bin"
RC_NOT_INSTALLED = 127  # what a shell returns for a command it cannot find


def tool_dir(ctx: Context, tool: str) -> str:
    """Where `profile set` puts the shim of `tool`: the bin dir, or the vendor bin dir for SDK tools."""
    if tool in VENDOR_TOOLS:
        return ctx.env.get("HWREPLAY_VENDOR_BIN_DIR") or VENDOR_BIN_DIR
    return ctx.bin_dir


def tool_path(ctx: Context, tool: str) -> str:
    return os.path.join(tool_dir(ctx, tool), tool)


def installed(profile: dict, tool: str) -> bool:
    sections = TOOLS[tool][0]
    if sections is None:
        return True
    return any(profile.get(section) for section in ((sections,) if isinstance(sections, str) else sections))


def installed_tools(profile: dict) -> list:
    return [tool for tool in TOOLS if installed(profile, tool)]


def run_tool(ctx: Context, tool: str, args: list, profile: dict | None = None) -> ToolResult:
    """Run replayed `tool args...` against `profile` (default: the active one)."""
    if profile is None:
        profile = active_profile(ctx)
    if not installed(profile, tool):
        return ToolResult(rc=RC_NOT_INSTALLED, stderr=f"{tool}: command not found\n")
    return TOOLS[tool][1](profile, list(args), ctx)
