"""What the node's installed Ascend (and PPU SDK) packages and /etc/hccn.conf say, for the replay to follow.

- Driver version: `Version=` of `<ascend root>/driver/version.info` (the driver
  `.run` writes it) wins over the profile and the host overrides; the firmware's
  `<ascend root>/firmware/version.info` likewise for the firmware version. With
  no driver installed the replay keeps answering from the profile (and the
  `ascend_driver_version` override): a profile stands for a node whose driver is
  already there.
- Compatibility (`npu-smi info -t board`): the test installers
  (tests/ascend_pkgs) record the installed driver in
  `<records>/ascend-driver.json` ({"version", "chip", "compatible_firmware": [...]}).
  With that record: OK when the firmware version reported is in
  compatible_firmware, else NOK; a record naming another chip than the profile's
  `hdk_chip` makes npu-smi fail like a driver that cannot talk to the NPUs. Without a
  record: what the profile says (`"compatible": false` for NOK, default OK).
- NPU NIC settings: `hccn_tool -i N -ip|-gateway|-netdetect -s ...` writes
  `address_N`, `netmask_N`, `gateway_N`, `netdetect_N` into /etc/hccn.conf as the
  real tool keeps it, and logs the call; the `-g` answers take the file first,
  then the overrides, then the profile. `-link` and `-net_health` stay as the
  profile says.

- PPU SDK version (`ppu-smi -q`): the test PPU SDK package records itself in
  `<records>/ppu-sdk.json` ({"version", "prefix"}); its version wins over the profile's.

`fingerprint()` is what the pre-rendered npu-smi, hccn_tool and ppu-smi answers depend on
(the content of those four files); `guard()` is the same in sh for their tables,
which render live when it differs. A live call that finds the answers stale
re-renders them (`refresh_if_stale`), so the next calls are fast again.

Test variables: HWREPLAY_ASCEND_ROOT, HWREPLAY_PKG_RECORDS, HWREPLAY_HCCN_CONF,
HWREPLAY_HCCN_LOG.
"""

from __future__ import annotations

import json
import os
import shlex
import tempfile
import time

from .common import Context

DEFAULTS = {
    "HWREPLAY_ASCEND_ROOT": "/usr/local/Ascend",
    "HWREPLAY_PKG_RECORDS": "/var/lib/hwreplay-pkgs",
    "HWREPLAY_HCCN_CONF": "/etc/hccn.conf",
    "HWREPLAY_HCCN_LOG": "/var/log/hwreplay/hccn_tool.log",
}
DRIVER_RECORD = "ascend-driver.json"
PPU_SDK_RECORD = "ppu-sdk.json"
# The tools whose answers depend on the files below (their tables carry the guard).
GUARDED_TOOLS = ("npu-smi", "hccn_tool", "ppu-smi")
HCCN_KEYS = ("address", "netmask", "gateway", "netdetect")
SEEN_FILE = "ascend-seen.json"  # in the answers set: what its npu-smi/hccn_tool tables were rendered with
REFRESH_LOCK = ".ascend-refresh.lock"
PINS = ("HWREPLAY_PROFILE", "HWREPLAY_NOW", "HWREPLAY_UPTIME")


def setting(ctx: Context, name: str) -> str:
    return ctx.env.get(name) or DEFAULTS[name]


def driver_info_path(ctx: Context) -> str:
    return os.path.join(setting(ctx, "HWREPLAY_ASCEND_ROOT"), "driver", "version.info")


def firmware_info_path(ctx: Context) -> str:
    return os.path.join(setting(ctx, "HWREPLAY_ASCEND_ROOT"), "firmware", "version.info")


def record_path(ctx: Context) -> str:
    return os.path.join(setting(ctx, "HWREPLAY_PKG_RECORDS"), DRIVER_RECORD)


def conf_path(ctx: Context) -> str:
    return setting(ctx, "HWREPLAY_HCCN_CONF")


def watched_files(ctx: Context) -> tuple:
    ppu_record = os.path.join(setting(ctx, "HWREPLAY_PKG_RECORDS"), PPU_SDK_RECORD)
    return (driver_info_path(ctx), firmware_info_path(ctx), record_path(ctx), conf_path(ctx), ppu_record)


def read_text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return None


def version_of(path: str) -> str | None:
    """`Version=` of a version.info file; None when it is missing or has none."""
    for line in (read_text(path) or "").splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() == "Version" and value.strip():
            return value.strip()
    return None


def driver_record(ctx: Context) -> dict | None:
    """The installed driver's record, or None (missing or not a JSON object: as if none)."""
    text = read_text(record_path(ctx))
    if text is None:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


# ------------------------------------------------------------------ /etc/hccn.conf


def read_conf(ctx: Context) -> dict:
    """{device id: {key: value}} of the address_N / netmask_N / gateway_N / netdetect_N lines."""
    devices: dict = {}
    for line in (read_text(conf_path(ctx)) or "").splitlines():
        key, sep, value = line.strip().partition("=")
        name, _, device = key.rpartition("_")
        if sep and name in HCCN_KEYS and device.isdigit() and value.strip():
            devices.setdefault(int(device), {})[name] = value.strip()
    return devices


def write_conf(ctx: Context, device: int, values: dict) -> None:
    """Set `<key>_<device>=<value>` lines, keeping every other line; an atomic rewrite."""
    path = conf_path(ctx)
    lines = (read_text(path) or "").splitlines()
    pending = {f"{key}_{device}": value for key, value in values.items()}
    out = []
    for line in lines:
        key = line.strip().partition("=")[0].strip()
        if key in pending:
            out.append(f"{key}={pending.pop(key)}")
        elif key in {f"{name}_{device}" for name in values} and "=" in line:
            continue  # a repeated key: the one kept above holds the value
        else:
            out.append(line)
    out += [f"{key}={value}" for key, value in pending.items()]
    try:
        mode = os.stat(path).st_mode & 0o7777
    except OSError:
        mode = 0o644
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    handle, tmp = tempfile.mkstemp(prefix=".hccn.conf.", dir=directory)
    try:
        with os.fdopen(handle, "w") as stream:
            stream.write("".join(line + "\n" for line in out))
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def log_call(ctx: Context, args: list, rc: int) -> None:
    """One line per `hccn_tool ... -s` call: when, exit status, arguments (test evidence)."""
    path = setting(ctx, "HWREPLAY_HCCN_LOG")
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    try:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "a") as handle:
            handle.write(f"{stamp} rc={rc} hccn_tool {' '.join(shlex.quote(arg) for arg in args)}\n")
    except OSError:
        pass  # evidence only: a read-only log must not fail the tool


# ------------------------------------------------------------------ the effective hardware


def nic_device_id(npu: dict) -> int:
    """hccn_tool's device id of a chip: its Phy-ID on multi-die NPUs (A3), else the NPU id."""
    return npu["phy_id"] if npu.get("phy_id") is not None else npu["id"]


def ppu_sdk_record(ctx: Context) -> dict | None:
    text = read_text(os.path.join(setting(ctx, "HWREPLAY_PKG_RECORDS"), PPU_SDK_RECORD))
    try:
        record = json.loads(text) if text else None
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def apply(hardware: dict, ctx: Context) -> None:
    """Installed versions, the driver record's compatibility and /etc/hccn.conf over profile and overrides."""
    ppu = hardware.get("ppu")
    record = ppu_sdk_record(ctx) if ppu is not None else None
    if record and record.get("version"):
        ppu["sdk_version"] = str(record["version"])
    ascend = hardware.get("ascend")
    if ascend is None:
        return
    driver = version_of(driver_info_path(ctx))
    if driver:
        ascend["driver_version"] = driver
    firmware = version_of(firmware_info_path(ctx))
    if firmware:
        ascend["firmware_version"] = firmware
    record = driver_record(ctx)
    if record is not None:  # without one, board() asks the (patched) profile's "compatible"
        compatible = [str(version) for version in record.get("compatible_firmware") or []]
        ascend["compatibility"] = "OK" if ascend["firmware_version"] in compatible else "NOK"
        chip = str(record.get("chip") or "")
        if chip and ascend.get("hdk_chip") and chip.lower() != str(ascend["hdk_chip"]).lower():
            ascend["driver_chip_mismatch"] = f"driver package for {chip}, NPUs need {ascend['hdk_chip']}"
    conf = read_conf(ctx)
    for npu in ascend["npus"]:
        values = conf.get(nic_device_id(npu))
        if values:
            npu.setdefault("nic", {}).update(values)


def fingerprint(ctx: Context) -> dict:
    """Path -> content (trailing newlines dropped, as sh's $(cat) does) or None when missing."""
    found = {}
    for path in watched_files(ctx):
        text = read_text(path) if os.path.exists(path) else None
        found[path] = None if text is None else text.rstrip("\n")
    return found


def settings(ctx: Context) -> dict:
    return {name: setting(ctx, name) for name in DEFAULTS if name != "HWREPLAY_HCCN_LOG"}


def same_setting(ctx: Context, name: str) -> str:
    value = shlex.quote(setting(ctx, name))
    if setting(ctx, name) == DEFAULTS[name]:
        return f'[ -z "${name}" ] || [ "${name}" = {value} ] || return 0'
    return f'[ "${name}" = {value} ] || return 0'


def guard(ctx: Context) -> list:
    """sh lines that leave the table unless the watched files hold what they held at rendering."""
    lines = ["# ...and render live once installed Ascend packages or /etc/hccn.conf say otherwise."]
    lines += [same_setting(ctx, name) for name in settings(ctx)]
    for path, content in fingerprint(ctx).items():
        quoted = shlex.quote(path)
        # Missing: live once it appears. Not ASCII (the answers are ASCII files): live while it exists.
        if content is None or not content.isascii():
            lines.append(f"[ -e {quoted} ] && return 0")
        else:
            lines.append(f'[ -f {quoted} ] && [ "$(cat {quoted})" = {shlex.quote(content)} ] || return 0')
    return lines


def seen_text(ctx: Context) -> str:
    return json.dumps({"settings": settings(ctx), "fingerprint": fingerprint(ctx)}, sort_keys=True) + "\n"


def refresh_if_stale(ctx: Context, tool: str, args: list) -> bool:
    """After a live npu-smi/hccn_tool call: re-render the answers when only the watched files changed.

    Only for the recorded profile (no HWREPLAY_PROFILE/NOW/UPTIME pin), when the
    current answers were rendered with these settings, never after a `-s` (more
    may follow), one process at a time; any problem leaves the answers live.
    """
    if tool not in GUARDED_TOOLS or "-s" in args or any(ctx.env.get(pin) for pin in PINS):
        return False
    seen_path = os.path.join(ctx.state_dir, "answers", SEEN_FILE)
    try:
        with open(seen_path) as handle:
            seen = json.load(handle)
    except (OSError, ValueError):
        return False
    if seen.get("settings") != settings(ctx) or seen.get("fingerprint") == fingerprint(ctx):
        return False
    import fcntl  # only on nodes (POSIX); imported here so the module loads anywhere

    from . import control  # control imports profiles, which imports this module

    try:
        with open(os.path.join(ctx.state_dir, REFRESH_LOCK), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # busy: another call is refreshing
            control.refresh_profile(ctx, answers_only=True)
    except Exception:  # a replay problem must not fail the call that already answered
        return False
    return True
