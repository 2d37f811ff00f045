"""Profiles: JSON descriptions of a node's hardware, faulty ones as patches of a healthy one.

A healthy profile describes the hardware directly (keys `nvidia`, `infiniband`,
`ascend`, `ppu`, `pci_other`, `kernel_log`). A faulty profile is

    {"base": "h100-healthy", "fault": "...", "description": "...", "patch": {...}}

and is its base with the patch applied, so it differs from it only in the fault.
Patch rules (a JSON merge patch, extended for lists):
  - a dict merges into a dict key by key; a null value removes the key;
  - a dict applied to a list addresses elements by index ("2": {...} merges into
    element 2) and "+" appends the given elements;
  - anything else replaces the value.

Host overrides (/etc/hwreplay/overrides.json, written by install.yml from host
vars) apply to the base hardware before the fault patch, so a fault stays visible
whatever the host's plan says. What installed NVIDIA packages say (installed.py:
the driver version of the installed libnvidia-ml, a stopped fabric manager)
applies on top of the overrides.
"""

from __future__ import annotations

import copy
import json
import os

from . import ascend_installed, installed
from .common import Context, ReplayError

META_KEYS = ("description", "base", "fault", "patch")
# Per-device defaults merged into every element of the list beside them.
DEFAULTS_OF = (
    ("nvidia", "gpu_defaults", "gpus"),
    ("infiniband", "hca_defaults", "hcas"),
    ("ascend", "npu_defaults", "npus"),
    ("ppu", "ppu_defaults", "ppus"),
)
# The CUDA version each driver branch reports (nvidia-smi's "CUDA Version").
CUDA_OF_BRANCH = {
    "525": "12.0",
    "530": "12.1",
    "535": "12.2",
    "545": "12.3",
    "550": "12.4",
    "555": "12.5",
    "560": "12.6",
    "565": "12.7",
    "570": "12.8",
    "575": "12.9",
    "580": "13.0",
    "590": "13.1",
}


def list_profiles(ctx: Context) -> list[str]:
    try:
        names = os.listdir(ctx.profile_dir)
    except OSError as exc:
        raise ReplayError(
            f"cannot read the profile directory {ctx.profile_dir}: {exc.strerror}",
            "install the tool with tests/hwreplay/install.yml or set HWREPLAY_PROFILE_DIR",
        ) from exc
    return sorted(name[: -len(".json")] for name in names if name.endswith(".json"))


def load_raw(ctx: Context, name: str) -> dict:
    """One profile file as written, with a clear error naming the file when it is bad."""
    known = list_profiles(ctx)
    if name not in known:
        raise ReplayError(
            f"unknown profile {name!r} (in {ctx.profile_dir})",
            "use one of: " + ", ".join(known),
        )
    path = os.path.join(ctx.profile_dir, name + ".json")
    try:
        with open(path) as handle:
            data = json.load(handle)
    except ValueError as exc:
        raise ReplayError(f"{path} is not valid JSON: {exc}", "fix the JSON syntax") from exc
    if not isinstance(data, dict):
        raise ReplayError(f"{path} must hold a JSON object", "wrap the profile in {...}")
    if "patch" in data and "base" not in data:
        raise ReplayError(f"{path} has a patch but no base", 'add "base": "<healthy profile>"')
    return data


def apply_patch(target, patch, where: str):
    """Apply `patch` to `target` (see the module docstring); returns the new value."""
    if isinstance(patch, dict) and isinstance(target, dict):
        for key, value in patch.items():
            if value is None:
                target.pop(key, None)
            elif key in target and isinstance(value, dict) and isinstance(target[key], (dict, list)):
                target[key] = apply_patch(target[key], value, where + "." + key)
            else:
                target[key] = copy.deepcopy(value)
        return target
    if isinstance(patch, dict) and isinstance(target, list):
        for key, value in patch.items():
            if key == "+":
                if not isinstance(value, list):
                    raise ReplayError(f'{where}."+" must be a list of elements to append')
                target.extend(copy.deepcopy(value))
                continue
            try:
                index = int(key)
                current = target[index]
            except (ValueError, IndexError) as exc:
                raise ReplayError(
                    f"{where}: {key!r} is not an index of this {len(target)}-element list",
                    f'address list elements as "0".."{len(target) - 1}" or append with "+"',
                ) from exc
            target[index] = apply_patch(current, value, f"{where}[{index}]")
        return target
    return copy.deepcopy(patch)


def read_overrides(ctx: Context) -> dict:
    """The host's overrides file, validated; {} when there is none."""
    path = ctx.overrides_path
    if not os.path.exists(path):
        return {}
    try:
        with open(path) as handle:
            data = json.load(handle)
    except (OSError, ValueError) as exc:
        raise ReplayError(f"cannot read {path}: {exc}", "rewrite it with tests/hwreplay/install.yml") from exc
    if not isinstance(data, dict):
        raise ReplayError(f"{path} must hold a JSON object")
    unknown = sorted(
        set(data) - {"nvidia_driver_version", "ascend_driver_version", "hccn_devices", "peer_port"}
    )
    if unknown:
        raise ReplayError(
            f"{path}: unknown keys {', '.join(unknown)}",
            "use nvidia_driver_version, ascend_driver_version, hccn_devices, peer_port",
        )
    if "peer_port" in data and (not isinstance(data["peer_port"], int) or not 0 < data["peer_port"] < 65536):
        raise ReplayError(f"{path}: peer_port must be a TCP port number such as 18600")
    for key in ("nvidia_driver_version", "ascend_driver_version"):
        if key in data and not isinstance(data[key], str):
            raise ReplayError(f'{path}: {key} must be a string such as "535.183.01"')
    for position, device in enumerate(data.get("hccn_devices") or []):
        if not isinstance(device, dict) or not isinstance(device.get("id"), int):
            raise ReplayError(
                f"{path}: hccn_devices[{position}] must be an object with an integer id",
                "write entries as {id, address, netmask, gateway, netdetect}",
            )
    return data


def apply_overrides(hardware: dict, overrides: dict) -> None:
    nvidia = hardware.get("nvidia")
    if nvidia is not None and overrides.get("nvidia_driver_version"):
        version = overrides["nvidia_driver_version"]
        nvidia["driver_version"] = version
        nvidia["cuda_version"] = CUDA_OF_BRANCH.get(version.split(".")[0], nvidia["cuda_version"])
    ascend = hardware.get("ascend")
    if ascend is None:
        return
    if overrides.get("ascend_driver_version"):
        ascend["driver_version"] = overrides["ascend_driver_version"]
    by_id = {ascend_installed.nic_device_id(npu): npu for npu in ascend["npus"]}  # A3: the Phy-ID
    for device in overrides.get("hccn_devices") or []:
        npu = by_id.get(device["id"])
        if npu is None:
            continue  # the real hccn_tool would refuse to configure it; nothing to replay
        nic = npu.setdefault("nic", {})
        for key in ("address", "netmask", "gateway", "netdetect"):
            if device.get(key) is not None:
                nic[key] = str(device[key])


def expand_defaults(hardware: dict) -> None:
    for section, defaults_key, list_key in DEFAULTS_OF:
        block = hardware.get(section)
        if not block:
            continue
        defaults = block.pop(defaults_key, {})
        merged = []
        for element in block.get(list_key, []):
            item = copy.deepcopy(defaults)
            apply_patch(item, element, f"{section}.{list_key}")
            merged.append(item)
        block[list_key] = merged


def resolve(ctx: Context, name: str, overrides: dict | None = None) -> dict:
    """The effective hardware of profile `name`: base, host overrides, then fault patches."""
    chain = []  # (name, raw profile), leaf first
    current = name
    while True:
        if current in [link_name for link_name, _ in chain]:
            raise ReplayError(
                f"profile {name!r}: its bases form a cycle ({' -> '.join(n for n, _ in chain)})",
                "make the chain end at a healthy profile (one without base)",
            )
        raw = load_raw(ctx, current)
        chain.append((current, raw))
        if "base" not in raw:
            break
        current = raw["base"]
    root = chain[-1][1]
    hardware = {key: copy.deepcopy(value) for key, value in root.items() if key not in META_KEYS}
    apply_overrides(hardware, read_overrides(ctx) if overrides is None else overrides)
    installed.apply_driver(hardware, ctx, CUDA_OF_BRANCH)  # the installed NVML wins over both
    ascend_installed.apply(hardware, ctx)  # installed Ascend versions and /etc/hccn.conf, likewise
    for link_name, raw in reversed(chain[:-1]):
        apply_patch(hardware, raw.get("patch", {}), f"{link_name}.json: patch")
    expand_defaults(hardware)
    installed.apply_fabric(hardware, ctx)
    leaf = chain[0][1]
    hardware["profile"] = {
        "name": name,
        "base": leaf.get("base"),
        "fault": leaf.get("fault"),
        "description": leaf.get("description", ""),
    }
    return hardware


def active_profile_name(ctx: Context) -> str:
    """HWREPLAY_PROFILE if set, else the one `hwreplay profile set` recorded."""
    if ctx.env.get("HWREPLAY_PROFILE"):
        return ctx.env["HWREPLAY_PROFILE"]
    path = os.path.join(ctx.state_dir, "profile")
    try:
        with open(path) as handle:
            name = handle.read().strip()
    except OSError as exc:
        raise ReplayError(
            f"no hardware profile selected ({path}: {exc.strerror})",
            "run 'hwreplay profile set NAME' (see 'hwreplay profile list')",
        ) from exc
    if not name:
        raise ReplayError(f"{path} is empty", "run 'hwreplay profile set NAME'")
    return name


def active_profile(ctx: Context) -> dict:
    return resolve(ctx, active_profile_name(ctx))
