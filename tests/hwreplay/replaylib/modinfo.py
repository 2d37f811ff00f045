"""Replayed `modinfo` for the NVIDIA kernel modules; any other module goes to the real modinfo.

cfcore tells the kernel-module flavour from `modinfo -F license nvidia` when
/proc/driver/nvidia/version is unreadable (always, in a container): "Dual
MIT/GPL" for the open modules, "NVIDIA" for the proprietary ones. The flavour
is the profile's `nvidia.kernel_module_flavour` (default proprietary; B200
needs open), the version the replayed driver's.
"""

from __future__ import annotations

import os
import shutil
import subprocess

from .common import Context, ToolResult, fail

MODULES = {
    "nvidia": "NVIDIA driver",
    "nvidia_uvm": "NVIDIA Unified Memory",
    "nvidia_drm": "NVIDIA DRM/KMS",
    "nvidia_modeset": "NVIDIA mode setting",
}
LICENSES = {"open": "Dual MIT/GPL", "proprietary": "NVIDIA"}
SYSTEM_DIRS = ("/usr/sbin", "/sbin", "/usr/bin", "/bin")


def fields(profile: dict, module: str) -> list:
    nvidia = profile["nvidia"]
    flavour = nvidia.get("kernel_module_flavour", "proprietary")
    release = os.uname().release
    return [
        ("filename", f"/lib/modules/{release}/updates/dkms/{module}.ko"),
        ("version", nvidia["driver_version"]),
        ("license", LICENSES[flavour]),
        ("description", MODULES[module]),
        ("depends", "" if module == "nvidia" else "nvidia"),
        ("name", module),
    ]


def real_modinfo(ctx: Context, args: list) -> ToolResult:
    """Hand a module hwreplay does not replay to the system's modinfo (never to this shim)."""
    search = [d for d in os.environ.get("PATH", "").split(os.pathsep) if d and d != ctx.bin_dir]
    path = shutil.which("modinfo", path=os.pathsep.join([*search, *SYSTEM_DIRS]))
    if path is None or os.path.dirname(path) == ctx.bin_dir:
        names = [arg for arg in args if not arg.startswith("-")]
        return fail(1, f"modinfo: ERROR: Module {names[-1] if names else ''} not found.")
    done = subprocess.run([path, *args], capture_output=True, text=True, check=False)
    return ToolResult(rc=done.returncode, stdout=done.stdout, stderr=done.stderr)


def modinfo(profile: dict, args: list, ctx: Context) -> ToolResult:
    field = None
    rest = list(args)
    if len(rest) >= 2 and rest[0] in ("-F", "--field"):
        field, rest = rest[1], rest[2:]
    elif rest and rest[0].startswith("--field="):
        field, rest = rest[0].split("=", 1)[1], rest[1:]
    module = rest[0].replace("-", "_") if len(rest) == 1 else None
    if module not in MODULES:
        return real_modinfo(ctx, args)
    table = fields(profile, module)
    if field is not None:
        return ToolResult(stdout="".join(f"{value}\n" for key, value in table if key == field))
    return ToolResult(stdout="".join(f"{key + ':':<16}{value}\n" for key, value in table))
