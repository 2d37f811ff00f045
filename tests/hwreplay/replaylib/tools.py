"""The replayed commands, which hardware each needs, and running one of them."""

from __future__ import annotations

from . import ascend, infiniband, kernel, modinfo, nvidia_smi, pci
from .common import Context, ToolResult
from .profiles import active_profile

# Command -> (profile section that must exist for it to be installed, renderer).
TOOLS = {
    "nvidia-smi": ("nvidia", lambda profile, args, ctx: nvidia_smi.run(profile, args, ctx.now)),
    "npu-smi": ("ascend", lambda profile, args, ctx: ascend.npu_smi(profile, args)),
    "hccn_tool": ("ascend", lambda profile, args, ctx: ascend.hccn_tool(profile, args)),
    "ibstat": ("infiniband", lambda profile, args, ctx: infiniband.ibstat(profile, args)),
    "lspci": (None, lambda profile, args, ctx: pci.lspci(profile, args)),
    "dmesg": (None, lambda profile, args, ctx: kernel.dmesg(profile, args, ctx)),
    "modinfo": ("nvidia", lambda profile, args, ctx: modinfo.modinfo(profile, args, ctx)),
}
RC_NOT_INSTALLED = 127  # what a shell returns for a command it cannot find


def installed(profile: dict, tool: str) -> bool:
    section = TOOLS[tool][0]
    return section is None or bool(profile.get(section))


def installed_tools(profile: dict) -> list:
    return [tool for tool in TOOLS if installed(profile, tool)]


def run_tool(ctx: Context, tool: str, args: list, profile: dict | None = None) -> ToolResult:
    """Run replayed `tool args...` against `profile` (default: the active one)."""
    if profile is None:
        profile = active_profile(ctx)
    if not installed(profile, tool):
        return ToolResult(rc=RC_NOT_INSTALLED, stderr=f"{tool}: command not found\n")
    return TOOLS[tool][1](profile, list(args), ctx)
