"""`hwreplay profile set|show|list` and the fabric-manager stand-in.

`profile set` makes the node look like the profile's hardware: it records the
profile, pre-renders the answers of the commands node validation runs, installs
a shim for each tool that hardware has (and removes those it lacks, so they are
"not installed"), rewrites the sysfs tree and starts or stops
nvidia-fabricmanager.service. It only changes what differs, and says so, which
makes install.yml idempotent.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

from . import installed as packages
from . import prerender, roce, shims
from .ascend_installed import nic_device_id
from .common import PROGRAM, Context, ReplayError
from .infiniband import PEERMEM_DIR, sysfs_files
from .profiles import active_profile, list_profiles, load_raw, read_overrides, resolve
from .tools import TOOLS, installed, installed_tools, tool_path

FM_UNIT = "nvidia-fabricmanager.service"
FM_UNIT_MARKER = "Installed by hwreplay"
# With the nvidia-fabricmanager package installed: re-render when its service starts or stops.
FM_DROPIN = "nvidia-fabricmanager.service.d/50-hwreplay-refresh.conf"
SYSFS_SUBTREE = "sys/class/infiniband"


def fm_unit_text() -> str:
    return (
        "# Installed by hwreplay (tests only): stands in for NVIDIA Fabric Manager on\n"
        "# replayed NVSwitch systems. Started/stopped by 'hwreplay profile set'.\n"
        "[Unit]\n"
        "Description=NVIDIA fabric manager service (hwreplay stand-in)\n"
        "\n"
        "[Service]\n"
        "Type=notify\n"
        f"ExecStart={PROGRAM} fabricmanager\n"
        "TimeoutStartSec=30\n"
        "\n"
        "[Install]\n"
        "WantedBy=multi-user.target\n"
    )


def fm_dropin_text() -> str:
    return (
        "# Installed by hwreplay (tests only): re-render the replayed answers (the GPUs'\n"
        "# fabric state follows this service) when the packaged fabric manager starts or stops.\n"
        "[Service]\n"
        "# --answers-only: no systemctl from inside this unit's own start or stop.\n"
        "ExecStartPost=-/usr/local/bin/hwreplay profile refresh --answers-only\n"
        "ExecStopPost=-/usr/local/bin/hwreplay profile refresh --answers-only\n"
    )


def write_if_changed(path: str, content: str, mode: int) -> bool:
    try:
        with open(path) as handle:
            if handle.read() == content:
                return False
    except OSError:
        pass
    os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
    tmp = path + ".hwreplay-tmp"
    with open(tmp, "w") as handle:
        handle.write(content)
    os.chmod(tmp, mode)
    os.replace(tmp, path)
    return True


def is_ours(path: str) -> bool:
    """A tool shim, or a link to the program (how tools were installed before the shims)."""
    if os.path.islink(path):
        return os.path.basename(os.readlink(path)) == "hwreplay.py"
    return shims.is_shim(path)


def check_tool_paths_free(ctx: Context, profile: dict) -> None:
    """Refuse (before changing anything) to shadow a real binary that sits where a tool shim goes."""
    for tool in TOOLS:
        path = tool_path(ctx, tool)
        if installed(profile, tool) and os.path.lexists(path) and not is_ours(path):
            raise ReplayError(
                f"{path} exists and is not a hwreplay tool shim; refusing to replace it",
                "remove it, or point HWREPLAY_BIN_DIR elsewhere",
            )


def sync_tool_shims(ctx: Context, profile: dict) -> list:
    """Install a shim for each replayed tool the hardware has (into tools.tool_dir); remove the others."""
    changes = []
    for tool in TOOLS:
        path = tool_path(ctx, tool)
        if installed(profile, tool):
            if os.path.islink(path):
                os.unlink(path)  # a link of an older hwreplay
            if write_if_changed(path, shims.shim_text(tool), 0o755):
                changes.append(f"installed {path}")
        elif is_ours(path):
            os.unlink(path)
            changes.append(f"removed {path} (not on this hardware)")
    return changes


def sync_sysfs(ctx: Context, profile: dict) -> list:
    """Make <sysroot>/sys/class/infiniband (and the RoCE subtrees) hold exactly the profile's files.

    RoCE attributes an admin writes are seeded, not rewritten (replaylib/roce.py)."""
    wanted = sysfs_files(profile)
    wanted.update(roce.fixed_files(profile))
    seeded = roce.seeded_files(profile)
    written = removed = 0
    for rel, content in sorted(wanted.items()):
        written += write_if_changed(os.path.join(ctx.sysroot, rel), content, 0o644)
    written += roce.seed(ctx, profile, seeded, write_if_changed)
    subtrees = (SYSFS_SUBTREE, PEERMEM_DIR, *roce.SUBTREES)
    tops = [os.path.join(ctx.sysroot, subtree) for subtree in subtrees]
    for top in tops:
        for dirpath, _dirnames, filenames in os.walk(top, topdown=False):
            for filename in filenames:
                full = os.path.join(dirpath, filename)
                rel = os.path.relpath(full, ctx.sysroot)
                if rel not in wanted and rel not in seeded:
                    os.unlink(full)
                    removed += 1
            if not os.listdir(dirpath):
                os.rmdir(dirpath)
    if not (written or removed):
        return []
    return [f"sysfs {tops[0]}: wrote {written}, removed {removed} files"]


def systemctl(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(("systemctl", *args), capture_output=True, text=True, check=False)


def is_our_unit(path: str) -> bool:
    try:
        with open(path) as handle:
            return FM_UNIT_MARKER in handle.read(512)
    except OSError:
        return False


def remove_own_fm_unit(ctx: Context, unit_path: str, why: str) -> list:
    if not is_our_unit(unit_path):
        return []  # an administrator's unit or override: not ours to touch
    if ctx.manage_systemd:
        systemctl("disable", "--now", FM_UNIT)
    os.unlink(unit_path)
    if ctx.manage_systemd:
        systemctl("daemon-reload")
    return [f"removed {unit_path} ({why})"]


def sync_fm_dropin(ctx: Context, wanted: bool) -> list:
    path = os.path.join(ctx.unit_dir, FM_DROPIN)
    if wanted:
        changed = write_if_changed(path, fm_dropin_text(), 0o644)
    else:
        changed = os.path.exists(path)
        if changed:
            os.unlink(path)
            if not os.listdir(os.path.dirname(path)):
                os.rmdir(os.path.dirname(path))
    if not changed:
        return []
    if ctx.manage_systemd:
        systemctl("daemon-reload")
    return [f"{'wrote' if wanted else 'removed'} {path}"]


def sync_fabric_manager(ctx: Context, profile: dict) -> list:
    """Unit present and running (or failed, when the profile says so) iff there are NVSwitches.

    When an nvidia-fabricmanager package is installed its own unit is the one:
    hwreplay removes its stand-in unit (never installs it over the package's),
    leaves the service to the roles and only adds a drop-in that re-renders the
    answers when the service starts or stops (the GPUs' fabric state follows it).
    """
    nvidia = profile.get("nvidia") or {}
    unit_path = os.path.join(ctx.unit_dir, FM_UNIT)
    package_unit = packages.fm_package_unit(ctx)
    changes = []
    if package_unit and os.path.exists(unit_path):
        # Stop and remove the stand-in before the drop-in exists: it must never run the refresh.
        why = f"the nvidia-fabricmanager package's {package_unit} is used"
        changes += remove_own_fm_unit(ctx, unit_path, why)
    changes += sync_fm_dropin(ctx, bool(package_unit and nvidia.get("nvswitches")))
    if package_unit:
        return changes
    if not nvidia.get("nvswitches"):
        if not os.path.exists(unit_path):
            return changes
        return changes + remove_own_fm_unit(ctx, unit_path, "no NVSwitch")
    if write_if_changed(unit_path, fm_unit_text(), 0o644):
        changes.append(f"wrote {unit_path}")
        if ctx.manage_systemd:
            systemctl("daemon-reload")
    if not ctx.manage_systemd:
        return changes
    if systemctl("is-enabled", FM_UNIT).stdout.strip() != "enabled":
        systemctl("enable", FM_UNIT)
        changes.append(f"enabled {FM_UNIT}")
    should_run = nvidia.get("fabric_manager", "running") == "running"
    state = systemctl("is-active", FM_UNIT).stdout.strip()
    if (state == "active") != should_run or (not should_run and state != "failed"):
        result = systemctl("restart", FM_UNIT)
        if should_run and result.returncode != 0:
            raise ReplayError(
                f"{FM_UNIT} did not start: {result.stderr.strip()}",
                f"see 'journalctl -u {FM_UNIT}'",
            )
        changes.append(f"{'started' if should_run else 'failed (as the profile says)'} {FM_UNIT}")
    return changes


def check_overrides_fit(ctx: Context, profile: dict) -> None:
    """NIC plan entries must name NPUs the hardware has (the real hccn_tool would refuse)."""
    ascend = profile.get("ascend")
    if not ascend:
        return
    ids = {nic_device_id(npu) for npu in ascend["npus"]}  # hccn_tool device ids (A3: Phy-IDs)
    for device in read_overrides(ctx).get("hccn_devices") or []:
        if device["id"] not in ids:
            raise ReplayError(
                f"{ctx.overrides_path}: hccn_devices has id {device['id']} but profile "
                f"{profile['profile']['name']} has NPUs {sorted(ids)}",
                "fix the host's hccn_devices plan",
            )


def set_profile(ctx: Context, name: str, answers_only: bool = False) -> tuple:
    """Switch the node to profile `name`; returns (previous name or None, list of changes).

    `answers_only`: re-render the answers and nothing else (no shims, sysfs or units):
    what the fabric manager's drop-in runs from inside that unit's start and stop.
    """
    profile = resolve(ctx, name)
    check_overrides_fit(ctx, profile)
    check_tool_paths_free(ctx, profile)
    answers = prerender.render_answers(ctx, profile)
    state_path = os.path.join(ctx.state_dir, "profile")
    previous = None
    if os.path.exists(state_path):
        with open(state_path) as handle:
            previous = handle.read().strip() or None
    changes = []
    try:
        if write_if_changed(state_path, name + "\n", 0o644):
            changes.append(f"profile {previous or '(none)'} -> {name}")
        # Answers before shims: a new shim finds its answers in place.
        changes += shims.sync_answers(ctx, answers, bool(profile.get("nvidia")))
        if answers_only:
            return previous, changes
        changes += sync_tool_shims(ctx, profile)
        changes += sync_sysfs(ctx, profile)
        changes += sync_fabric_manager(ctx, profile)
    except PermissionError as exc:
        raise ReplayError(f"permission denied: {exc.filename}", "run 'hwreplay profile set' as root") from exc
    return previous, changes


def refresh_profile(ctx: Context, answers_only: bool = False) -> tuple:
    """`profile set` of the recorded profile (after package changes); (None, []) when none is recorded."""
    path = os.path.join(ctx.state_dir, "profile")
    try:
        with open(path) as handle:
            name = handle.read().strip()
    except OSError:
        return None, []
    if not name:
        return None, []
    return set_profile(ctx, name, answers_only)


def show_profile(ctx: Context) -> str:
    profile = active_profile(ctx)
    meta = profile["profile"]
    lines = ["profile: " + meta["name"]]
    if meta["base"]:
        lines.append(f"base: {meta['base']}")
        lines.append(f"fault: {meta['fault']}")
    lines.append("description: " + meta["description"])
    if profile.get("nvidia"):
        nvidia = profile["nvidia"]
        switches = nvidia.get("nvswitches", [])
        fabric = nvidia.get("fabric_manager", "n/a") if switches else "n/a"
        if switches and packages.fm_package_unit(ctx):
            fabric = f"package ({packages.fm_state(ctx)})"
        lines.append(
            f"nvidia: {len(nvidia['gpus'])} GPUs, driver {nvidia['driver_version']}, "
            f"CUDA {nvidia['cuda_version']}, "
            f"{len(switches)} NVSwitches, fabric manager {fabric}"
        )
    if profile.get("ascend"):
        ascend = profile["ascend"]
        lines.append(
            f"ascend: {len({npu['id'] for npu in ascend['npus']})} NPUs ({len(ascend['npus'])} chips), "
            f"driver {ascend['driver_version']}, "
            f"firmware {ascend['firmware_version']}"
        )
    if profile.get("ppu"):
        ppu = profile["ppu"]
        lines.append(
            f"ppu: {len(ppu['ppus'])} PPUs, driver {ppu['driver_version']}, SDK {ppu['sdk_version']}"
        )
    if profile.get("infiniband"):
        lines.append("infiniband: " + ", ".join(hca["name"] for hca in profile["infiniband"]["hcas"]))
    lines.append("tools: " + ", ".join(installed_tools(profile)))
    overrides = read_overrides(ctx)
    lines.append(f"overrides ({ctx.overrides_path}): {', '.join(sorted(overrides)) or 'none'}")
    lines.append("sysfs root: " + ctx.sysroot)
    return "\n".join(lines) + "\n"


def list_profiles_text(ctx: Context) -> str:
    rows = []
    for name in list_profiles(ctx):
        raw = load_raw(ctx, name)
        detail = raw.get("fault") or raw.get("description", "")
        rows.append((name, raw.get("base", "-"), detail))
    rows.insert(0, ("NAME", "BASE", "FAULT / DESCRIPTION"))
    width = max(len(row[0]) for row in rows)
    base_width = max(len(row[1]) for row in rows)
    return "".join(f"{name:<{width}}  {base:<{base_width}}  {detail}\n" for name, base, detail in rows)


def sd_notify(message: str) -> None:
    address = os.environ.get("NOTIFY_SOCKET")
    if not address:
        return
    if address.startswith("@"):
        address = "\0" + address[1:]
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.connect(address)
        sock.sendall(message.encode())


def fm_log(level: str, message: str) -> None:
    stamp = time.strftime("%b %d %Y %H:%M:%S")
    print(f"[{stamp}] [{level}] [tid {os.getpid()}] {message}", flush=True)


def fabricmanager(ctx: Context) -> int:
    """Long-running stand-in for nv-fabricmanager: up when the profile's fabric is healthy."""
    profile = active_profile(ctx)
    nvidia = profile.get("nvidia") or {}
    fm_log("INFO", f"Fabric Manager version {nvidia.get('driver_version', 'unknown')} is starting")
    if not nvidia.get("nvswitches"):
        fm_log("ERROR", "no NVSwitch devices found on this system; fabric manager cannot run")
        return 1
    if nvidia.get("fabric_manager", "running") != "running":
        fm_log(
            "ERROR",
            "failed to initialize the NVSwitch fabric (replayed failure of profile "
            f"{profile['profile']['name']})",
        )
        return 1
    fm_log("INFO", "Successfully configured all the available NVSwitches to route GPU NVLink traffic.")
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
    sd_notify("READY=1")
    while True:
        signal.pause()
