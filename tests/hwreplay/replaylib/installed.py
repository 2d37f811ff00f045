"""What the node's installed NVIDIA packages say, for the replay to follow.

- Driver version: the installed `libnvidia-ml.so.<version>` (NVIDIA's
  libnvidia-compute* ship it in HWREPLAY_LIB_DIR, default
  /usr/lib/x86_64-linux-gnu; Debian's libnvidia-ml1 in its nvidia/<flavour>/
  folder, behind alternatives) wins over the
  profile and the host overrides, so a validation after an install sees what the
  role installed. Several (mid-upgrade): the one libnvidia-ml.so.1 points to,
  else the highest.
- Fabric manager: when an nvidia-fabricmanager package is installed (its unit
  in HWREPLAY_PACKAGE_UNIT_DIRS, default /lib/systemd/system and
  /usr/lib/systemd/system), GPUs on NVSwitch profiles are "Completed" only while
  its nv-fabricmanager runs: the process named on the first line of its state
  file (HWREPLAY_FM_STATE, default /run/nvidia-fabricmanager/fabric.state)
  exists. Otherwise "In Progress". Without the package nothing changes.

`fingerprint()` is what the pre-rendered answers depend on; the shims compute
the same in sh (shims.installed_guard) and render live when it differs.
"""

from __future__ import annotations

import glob
import os

from .common import Context

# NVIDIA's packages, then Debian's (nvidia/current/...): the shims glob in the same order.
NVML_GLOBS = ("libnvidia-ml.so.[0-9]*.[0-9]*", "nvidia/*/libnvidia-ml.so.[0-9]*.[0-9]*")
NVML_LINK = "libnvidia-ml.so.1"
FM_UNIT = "nvidia-fabricmanager.service"
FM_STOPPED = {"state": "In Progress", "status": "N/A"}


def nvml_libraries(ctx: Context) -> list:
    return [path for pattern in NVML_GLOBS for path in sorted(glob.glob(os.path.join(ctx.lib_dir, pattern)))]


def version_key(version: str) -> tuple:
    return tuple(int(part) if part.isdigit() else 0 for part in version.split("."))


def driver_version(ctx: Context) -> str | None:
    """The installed NVML's version, or None when no libnvidia-ml.so.<version> is installed."""
    libraries = nvml_libraries(ctx)
    if not libraries:
        return None
    prefix = len("libnvidia-ml.so.")
    versions = [os.path.basename(path)[prefix:] for path in libraries]
    link = os.path.join(ctx.lib_dir, NVML_LINK)
    if os.path.islink(link):  # through Debian's alternatives too
        target = os.path.basename(os.path.realpath(link))[prefix:]
        if target in versions:
            return target
    return max(versions, key=version_key)


def fm_package_unit(ctx: Context) -> str | None:
    """The unit file of an installed nvidia-fabricmanager package, or None."""
    for directory in ctx.package_unit_dirs:
        path = os.path.join(directory, FM_UNIT)
        if os.path.exists(path):
            return path
    return None


def fm_running(ctx: Context) -> bool:
    """Whether the process the fabric manager's state file names is alive (as the shims test it)."""
    try:
        with open(ctx.fm_state) as handle:
            pid = handle.readline().strip()
    except OSError:
        return False
    return pid.isdigit() and os.path.isdir(f"/proc/{pid}")


def fm_state(ctx: Context) -> str:
    """'none' (no package), 'running' or 'stopped'."""
    if fm_package_unit(ctx) is None:
        return "none"
    return "running" if fm_running(ctx) else "stopped"


def fingerprint(ctx: Context) -> dict:
    """What the answers were rendered with: the NVML libraries (space-joined) and the fabric manager state."""
    return {"nvml": "".join(" " + path for path in nvml_libraries(ctx)), "fm": fm_state(ctx)}


def apply_driver(hardware: dict, ctx: Context, cuda_of_branch: dict) -> None:
    nvidia = hardware.get("nvidia")
    version = driver_version(ctx) if nvidia is not None else None
    if version:
        nvidia["driver_version"] = version
        nvidia["cuda_version"] = cuda_of_branch.get(version.split(".")[0], nvidia["cuda_version"])


def apply_fabric(hardware: dict, ctx: Context) -> None:
    """GPUs not registered with the fabric while an installed fabric manager is not running."""
    nvidia = hardware.get("nvidia")
    if not nvidia or not nvidia.get("nvswitches") or fm_state(ctx) != "stopped":
        return
    for gpu in nvidia["gpus"]:
        gpu["fabric"] = dict(FM_STOPPED)
