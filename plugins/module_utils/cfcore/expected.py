"""Check and normalise what a node is expected to be (`expected` of validate_node).

    {"node_sku": "hgx-h100-8gpu", "sku": {...catalog spec...}, "bom": {...},
     "required_mounts": ["/mnt/jfs"], "hccn_devices": [{id, address, netmask, ...}],
     "sysfs_root": "/", "skip_checks": ["gpu.mig"]}

Bad input raises InvalidExpectation naming the variable and the fix; nothing
runs on a node against an expectation that makes no sense.
"""

from __future__ import annotations

from .checks import CHECK_IDS

VENDORS = ("nvidia", "huawei", "alibaba")
LINK_LAYERS = ("infiniband", "ethernet")
FLAVOURS = ("proprietary", "open", "any")
SKU_FIX = "fix the SKU in cli/clusterforge/data/skus.yml or the inventory's clusterforge_sku_catalog"


class InvalidExpectation(ValueError):
    """The expected state of a node is malformed; the message says where and how to fix it."""


def _positive_int(value, where: str, allow_zero: bool = False) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, str)) or not str(value).strip().isdigit():
        raise InvalidExpectation(f"{where} must be a whole number, got {value!r}: {SKU_FIX}")
    number = int(value)
    if number == 0 and not allow_zero:
        raise InvalidExpectation(f"{where} must be at least 1, got 0: {SKU_FIX}")
    return number


def _number(value, where: str) -> float:
    try:
        if isinstance(value, bool):
            raise TypeError
        return float(value)
    except (TypeError, ValueError):
        raise InvalidExpectation(f"{where} must be a number, got {value!r}: {SKU_FIX}") from None


def _accelerator(spec, sku: str) -> dict | None:
    if spec is None:
        return None
    where = f"sku.accelerator of SKU {sku}"
    if not isinstance(spec, dict):
        raise InvalidExpectation(f"{where} must be a mapping or null, got {type(spec).__name__}: {SKU_FIX}")
    accel = dict(spec)
    vendor = str(accel.get("vendor") or "").lower()
    if vendor not in VENDORS:
        raise InvalidExpectation(
            f"{where}.vendor is {accel.get('vendor')!r}, not one of {', '.join(VENDORS)}: {SKU_FIX}"
        )
    accel["vendor"] = vendor
    if not str(accel.get("model") or "").strip():
        raise InvalidExpectation(f"{where}.model is missing: {SKU_FIX}")
    accel["count"] = _positive_int(accel.get("count"), f"{where}.count")
    for key in ("pcie_gen", "pcie_width", "nvlink_links_per_device"):
        if accel.get(key) is not None:
            accel[key] = _positive_int(accel[key], f"{where}.{key}", allow_zero=True)
    flavour = str(accel.get("kernel_module_flavour") or "any").lower()
    if flavour not in FLAVOURS:
        raise InvalidExpectation(
            f"{where}.kernel_module_flavour is {flavour!r}, not one of {', '.join(FLAVOURS)}: {SKU_FIX}"
        )
    accel["kernel_module_flavour"] = flavour
    mig = str(accel.get("mig_mode") or "disabled").lower()
    if mig not in ("disabled", "enabled"):
        raise InvalidExpectation(f"{where}.mig_mode is {mig!r}, not disabled or enabled: {SKU_FIX}")
    accel["mig_mode"] = mig
    if accel.get("min_driver") is not None:
        accel["min_driver"] = str(accel["min_driver"])
    return accel


def _hca(spec, sku: str) -> dict | None:
    if spec is None:
        return None
    where = f"sku.hca of SKU {sku}"
    if not isinstance(spec, dict):
        raise InvalidExpectation(f"{where} must be a mapping or null, got {type(spec).__name__}: {SKU_FIX}")
    hca = dict(spec)
    hca["count"] = _positive_int(hca.get("count"), f"{where}.count")
    if hca.get("rate_gbps") is not None:
        hca["rate_gbps"] = _number(hca["rate_gbps"], f"{where}.rate_gbps")
    layer = hca.get("link_layer")
    if layer is not None and str(layer).lower() not in LINK_LAYERS:
        raise InvalidExpectation(f"{where}.link_layer is {layer!r}, not InfiniBand or Ethernet: {SKU_FIX}")
    for key, what in (
        ("devices", "CA name patterns such as mlx5_[0-7]"),
        ("ca_types", "CA types such as MT4129"),
    ):
        value = hca.get(key)
        if value is not None and (not isinstance(value, list) or not all(isinstance(v, str) for v in value)):
            raise InvalidExpectation(f"{where}.{key} must be a list of {what}: {SKU_FIX}")
    return hca


def _hccn_devices(plan, sku: str) -> list[dict]:
    fix = (
        "fix the host's hccn_devices in the inventory "
        "(one {id, address, netmask, gateway, netdetect} per NPU NIC)"
    )
    if plan is None:
        return []
    if not isinstance(plan, list):
        raise InvalidExpectation(f"hccn_devices must be a list, got {type(plan).__name__}: {fix}")
    entries = []
    seen = set()
    for index, entry in enumerate(plan):
        if not isinstance(entry, dict):
            raise InvalidExpectation(f"hccn_devices[{index}] must be a mapping: {fix}")
        for key in ("id", "address", "netmask"):
            if entry.get(key) in (None, ""):
                raise InvalidExpectation(f"hccn_devices[{index}] lacks {key!r}: {fix}")
        device = entry["id"]
        if isinstance(device, bool) or not str(device).isdigit():
            raise InvalidExpectation(
                f"hccn_devices[{index}].id must be a device number, got {device!r}: {fix}"
            )
        if int(device) in seen:
            raise InvalidExpectation(f"hccn_devices[{index}].id {device} appears twice: {fix}")
        seen.add(int(device))
        entries.append({**entry, "id": int(device)})
    return entries


def normalize(expected: dict) -> dict:
    if not isinstance(expected, dict):
        raise InvalidExpectation("expected must be a mapping with node_sku, sku, bom, ...")
    node_sku = str(expected.get("node_sku") or "").strip()
    if not node_sku:
        raise InvalidExpectation("node_sku is missing: set node_sku for the host in the inventory")
    sku = expected.get("sku")
    if not isinstance(sku, dict):
        raise InvalidExpectation(f"sku (the catalog spec of {node_sku}) must be a mapping: {SKU_FIX}")
    bom = expected.get("bom") or {}
    if not isinstance(bom, dict):
        raise InvalidExpectation(
            "bom must be a mapping of the version variables (group_vars/all/versions.yml)"
        )
    mounts = expected.get("required_mounts") or []
    if not isinstance(mounts, list) or not all(isinstance(m, str) and m.startswith("/") for m in mounts):
        raise InvalidExpectation(
            f"required_mounts must be a list of absolute paths, got {mounts!r}: "
            "fix validate_required_mounts in group_vars/all/storage.yml"
        )
    skip = expected.get("skip_checks") or []
    if not isinstance(skip, list):
        raise InvalidExpectation(f"skip_checks must be a list of check ids, got {skip!r}")
    unknown = [c for c in skip if c not in CHECK_IDS]
    if unknown:
        raise InvalidExpectation(
            f"skip_checks names unknown check ids {', '.join(map(str, unknown))}; "
            f"known: {', '.join(CHECK_IDS)}"
        )
    npu_nics = sku.get("npu_nics")
    if npu_nics is not None and not isinstance(npu_nics, dict):
        raise InvalidExpectation(f"sku.npu_nics of SKU {node_sku} must be a mapping or null: {SKU_FIX}")
    return {
        "node_sku": node_sku,
        "sku": sku,
        "accelerator": _accelerator(sku.get("accelerator"), node_sku),
        "hca": _hca(sku.get("hca"), node_sku),
        "npu_nics": npu_nics,
        "bom": {k: str(v) for k, v in bom.items() if v is not None},
        "required_mounts": list(mounts),
        "hccn_devices": _hccn_devices(expected.get("hccn_devices"), node_sku),
        "sysfs_root": str(expected.get("sysfs_root") or "/"),
        "skip_checks": list(skip),
    }
