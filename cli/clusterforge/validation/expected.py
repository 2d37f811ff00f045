"""What a node should look like: the `node_validate` parameters of one host.

Built from the host's inventory variables (docs/design.md): `node_sku` and the
SKU catalog (with the site's `clusterforge_sku_catalog` overrides), the BOM
variables, `validate_required_mounts`, `hccn_devices`, `sysfs_root`. The
validate playbook (through the `cf_validation_expected` filter), the CLI's
pre-flight and `--from-capture` all use this one function, so they agree.
"""

from __future__ import annotations

import json
from typing import Any

from clusterforge.errors import InvalidInput

BOM_VARIABLES = (
    "nvidia_driver_version",
    "cuda_version",
    "nccl_version",
    "dcgm_version",
    "ascend_driver_version",
    "cann_version",
)
LEVELS = ("quick", "full")
# Required mounts are for the nodes that run jobs: a site lists them once in
# group_vars/all and control or storage nodes are not held to them.
# `validate_mount_groups` changes the groups.
DEFAULT_MOUNT_GROUPS = ("gpu_nvidia", "npu_ascend", "npu_ppu", "slurm_workers", "k8s_workers")
# Every variable build_expected reads (besides `group_names`).
INPUT_VARIABLES = (
    "node_sku",
    "clusterforge_sku_catalog",
    *BOM_VARIABLES,
    "validate_required_mounts",
    "validate_mount_groups",
    "hccn_devices",
    "sysfs_root",
    "validate_sysfs_root",
    "validate_skip_checks",
)


def is_template(value: Any) -> bool:
    """True when a value (or anything inside it) is a Jinja template Ansible would still resolve.

    `ansible-inventory --list` prints variables untemplated; only Ansible can
    resolve those, so the CLI leaves such hosts to the playbook's own checks.
    """
    if isinstance(value, str):
        return "{{" in value or "{%" in value
    if isinstance(value, dict):
        return any(is_template(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(is_template(v) for v in value)
    return False


def inputs_of(hostvars: dict[str, Any]) -> dict[str, Any]:
    """The variables build_expected reads, from all of a host's variables."""
    return {name: hostvars[name] for name in INPUT_VARIABLES if name in hostvars}


class SkuResolver:
    """Looks SKUs up in the catalog; caches one merged catalog per distinct override set."""

    def __init__(self) -> None:
        self._catalogs: dict[str, dict[str, Any]] = {}

    def spec(self, name: str, overrides: dict[str, Any] | None) -> dict[str, Any]:
        from clusterforge import catalog  # imported late: the catalog loads YAML at import time or first use

        key = json.dumps(overrides or {}, sort_keys=True, default=str)
        if key not in self._catalogs:
            self._catalogs[key] = catalog.load_catalog(overrides or None)
        known = self._catalogs[key]
        if name in known:
            return known[name]
        # Let the catalog word the error (it names the known SKUs).
        return catalog.sku_spec(name, overrides or None)


def build_expected(
    host: str, hostvars: dict[str, Any], resolver: SkuResolver | None = None
) -> dict[str, Any]:
    """The node_validate parameters (all but `level`) of `host`, or InvalidInput naming host and variable."""
    resolver = resolver or SkuResolver()
    node_sku = hostvars.get("node_sku")
    if not isinstance(node_sku, str) or not node_sku.strip():
        raise InvalidInput(
            f"host {host}: variable node_sku is {'not set' if node_sku is None else repr(node_sku)}",
            "set node_sku to a SKU of the catalog (`clusterforge inventory` lists them) in the host's "
            "inventory entry or its group_vars",
        )
    overrides = hostvars.get("clusterforge_sku_catalog") or {}
    if not isinstance(overrides, dict):
        raise InvalidInput(
            f"host {host}: variable clusterforge_sku_catalog must be a mapping of SKU name to spec, "
            f"got {type(overrides).__name__}",
            "see docs/design.md (SKU catalog) for its shape; it usually lives in group_vars/all/skus.yml",
        )
    try:
        sku = resolver.spec(node_sku, overrides)
    except InvalidInput as err:
        raise InvalidInput(f"host {host}: variable node_sku: {err.message}", err.fix) from None
    expected = {
        "node_sku": node_sku,
        "sku": sku,
        "bom": _bom(host, hostvars),
        "required_mounts": _mounts(host, hostvars) if _runs_jobs(host, hostvars) else [],
        "hccn_devices": _hccn_devices(host, hostvars),
        "sysfs_root": _sysfs_root(host, hostvars),
        "skip_checks": _string_list(host, hostvars, "validate_skip_checks"),
    }
    _as_the_module_sees_it(host, expected)
    return expected


def _as_the_module_sees_it(host: str, expected: dict[str, Any]) -> None:
    """Run node_validate's own check of its input here, so a bad host stops the run before any node."""
    from cfcore.expected import InvalidExpectation, normalize

    try:
        normalize(expected)
    except InvalidExpectation as err:
        raise InvalidInput(
            f"host {host}: {err}",
            "correct the variable it names in the inventory (or the SKU in clusterforge_sku_catalog)",
        ) from None


def _bom(host: str, hostvars: dict[str, Any]) -> dict[str, str]:
    bom = {}
    for name in BOM_VARIABLES:
        value = hostvars.get(name)
        if value is None or value == "":
            continue
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise InvalidInput(
                f"host {host}: variable {name} must be a version string, got {value!r}",
                f'quote it in group_vars/all/versions.yml, e.g. {name}: "535.183.01"',
            )
        bom[name] = str(value)
    return bom


def _mounts(host: str, hostvars: dict[str, Any]) -> list[str]:
    mounts = _string_list(host, hostvars, "validate_required_mounts")
    relative = [m for m in mounts if not m.startswith("/")]
    if relative:
        raise InvalidInput(
            f"host {host}: variable validate_required_mounts holds relative paths: {', '.join(relative)}",
            "list absolute mount points, e.g. [/mnt/jfs]",
        )
    return mounts


def _runs_jobs(host: str, hostvars: dict[str, Any]) -> bool:
    groups = hostvars.get("validate_mount_groups")
    groups = DEFAULT_MOUNT_GROUPS if groups is None else groups
    if not isinstance(groups, list | tuple):
        raise InvalidInput(
            f"host {host}: variable validate_mount_groups must be a list of group names, got {groups!r}",
            "e.g. validate_mount_groups: [gpu_nvidia, npu_ascend]",
        )
    member_of = hostvars.get("group_names")
    if member_of is None:  # no group information (a capture): the mounts apply
        return True
    return bool(set(member_of) & set(groups))


def _hccn_devices(host: str, hostvars: dict[str, Any]) -> list[dict[str, Any]]:
    devices = hostvars.get("hccn_devices") or []
    if not isinstance(devices, list):
        raise InvalidInput(
            f"host {host}: variable hccn_devices must be a list, got {type(devices).__name__}",
            "one entry per NPU: {id, address, netmask, gateway, netdetect} (docs/design.md)",
        )
    for index, device in enumerate(devices):
        if not isinstance(device, dict) or "id" not in device:
            raise InvalidInput(
                f"host {host}: variable hccn_devices[{index}] has no 'id': {device!r}",
                "each entry needs at least id, address and netmask (docs/design.md)",
            )
    return devices


def _sysfs_root(host: str, hostvars: dict[str, Any]) -> str:
    root = hostvars.get("validate_sysfs_root", hostvars.get("sysfs_root")) or "/"
    if not isinstance(root, str) or not root.startswith("/"):
        raise InvalidInput(
            f"host {host}: variable sysfs_root must be an absolute path, got {root!r}",
            "leave it unset (the node's /) unless the node's sysfs is mounted elsewhere",
        )
    return root


def _string_list(host: str, hostvars: dict[str, Any], name: str) -> list[str]:
    value = hostvars.get(name)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise InvalidInput(
            f"host {host}: variable {name} must be a list of strings, got {value!r}",
            f"write it as a YAML list, e.g. {name}: [/mnt/jfs]"
            if name.endswith("mounts")
            else f"write it as a YAML list, e.g. {name}: [gpu.mig]",
        )
    return list(value)
