"""The SKU catalog: what each node type must have, and its one schema.

The built-in catalog is `data/skus.yml` beside this file; a site adds SKUs or
overrides keys of built-in ones with the inventory variable
`clusterforge_sku_catalog` (same shape, merged per SKU key by key, nested
mappings included). Every merged entry is validated against the schema of
docs/design.md, so a typo in an override is reported instead of silently
ignored.

Used on the controller (the validate playbook's filter, `inventory check`,
the CLI) and, for `validate_catalog` alone, on nodes by `node_validate`:
stdlib only, except PyYAML, imported only when the built-in file is loaded
(Ansible's controller always has it).
"""

from __future__ import annotations

import copy
import difflib
import os
import re
from functools import lru_cache
from typing import Any

from .inputs import InputError, SchemaError

OVERRIDE_VARIABLE = "clusterforge_sku_catalog"
BUILTIN_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "skus.yml")

# The inventory group whose roles set up each accelerator vendor.
VENDOR_GROUPS = {"nvidia": "gpu_nvidia", "huawei": "npu_ascend", "alibaba": "npu_ppu"}

SUBNET_RULES = ("single-subnet", "four-subnet-pairs", "die-pairs-split")
INTERCONNECTS = ("nvswitch", "nvlink", "hccs", "pcie")
MODULE_FLAVOURS = ("proprietary", "open", "any")
LINK_LAYERS = ("InfiniBand", "Ethernet")
MIG_MODES = ("disabled", "enabled")

_NVIDIA_BRANCH = re.compile(r"[0-9]{3}")
_ASCEND_VERSION = re.compile(r"[0-9]+\.[0-9]+\.([Rr][Cc][0-9]+|[0-9]+)(\.[0-9]+)*")


class CatalogError(SchemaError):
    """The catalog (built-in or merged with a site's overrides) breaks the schema.

    `issues` lists (key path, what is wrong), e.g.
    ("hgx-h100-8gpu.accelerator.count", "must be a positive integer, got 'eight'").
    """

    WHAT = "SKU catalog"
    SECTION = "SKU catalog"


@lru_cache(maxsize=None)
def builtin_text() -> str:
    with open(BUILTIN_PATH, encoding="utf-8") as handle:
        return handle.read()


@lru_cache(maxsize=None)
def _builtin() -> dict[str, Any]:
    import yaml  # controller side only

    data = yaml.safe_load(builtin_text())
    issues = validate_catalog(data)
    if issues:
        raise CatalogError(issues, "built-in plugins/module_utils/cfcore/data/skus.yml")
    return data


def load_catalog(overrides: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """The built-in catalog merged with a site's `clusterforge_sku_catalog`.

    Returns a fresh copy: callers may modify it. Raises CatalogError (exit 2)
    when the overrides are malformed or make an entry break the schema.
    """
    catalog = copy.deepcopy(_builtin())
    if not overrides:
        return catalog
    if not isinstance(overrides, dict):
        raise CatalogError(
            [(OVERRIDE_VARIABLE, f"must be a mapping of SKU name to spec, got {_kind(overrides)}")],
            f"inventory variable {OVERRIDE_VARIABLE}",
        )
    issues: list[tuple[str, str]] = []
    for name, override in overrides.items():
        if not isinstance(override, dict):
            issues.append(
                (str(name), f"must be a mapping (the SKU spec or keys to override), got {_kind(override)}")
            )
            continue
        catalog[str(name)] = _merge(catalog.get(str(name), {}), override)
    issues += validate_catalog({name: catalog[str(name)] for name in overrides if str(name) in catalog})
    if issues:
        raise CatalogError(issues, f"inventory variable {OVERRIDE_VARIABLE}")
    return catalog


def sku_spec(name: str, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """The spec of one SKU; InputError naming the known SKUs when unknown."""
    catalog = load_catalog(overrides)
    if name in catalog:
        return catalog[name]
    raise InputError(unknown_sku_message(name, catalog), unknown_sku_fix(catalog))


def unknown_sku_message(name: Any, catalog: dict[str, Any]) -> str:
    text = f"unknown SKU {name!r}"
    close = difflib.get_close_matches(str(name), list(catalog), n=1)
    if close:
        text += f" (did you mean {close[0]!r}?)"
    return text


def unknown_sku_fix(catalog: dict[str, Any]) -> str:
    return (
        f"use one of: {', '.join(sorted(catalog))}; or add the SKU to {OVERRIDE_VARIABLE} "
        "(group_vars/all/skus.yml)"
    )


def _merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Key-by-key merge: nested mappings merge, anything else (null included) replaces."""
    merged = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def _kind(value: Any) -> str:
    """Type and value for messages; Ansible wraps loaded values in tagged subclasses of the plain types."""
    plain = next((t for t in (bool, int, float, str, list, dict) if isinstance(value, t)), type(value))
    return f"{'null' if value is None else plain.__name__} {value!r}"


# --- schema -----------------------------------------------------------------


def validate_catalog(catalog: Any) -> list[tuple[str, str]]:
    """Every schema violation of a catalog as (key path, what is wrong)."""
    if not isinstance(catalog, dict):
        return [("(catalog)", f"must be a mapping of SKU name to spec, got {_kind(catalog)}")]
    issues: list[tuple[str, str]] = []
    for name, spec in catalog.items():
        issues += _validate_spec(str(name), spec)
    return issues


def _validate_spec(name: str, spec: Any) -> list[tuple[str, str]]:
    if not isinstance(spec, dict):
        return [(name, f"must be a mapping, got {_kind(spec)}")]
    issues = _keys(name, spec, required={"description", "accelerator", "hca", "npu_nics"}, optional=set())
    if "description" in spec and not (isinstance(spec["description"], str) and spec["description"].strip()):
        issues.append((f"{name}.description", "must be a non-empty string"))
    accelerator = spec.get("accelerator")
    if accelerator is not None:
        issues += _validate_accelerator(f"{name}.accelerator", accelerator)
    if spec.get("hca") is not None:
        issues += _validate_hca(f"{name}.hca", spec["hca"])
    nics = spec.get("npu_nics")
    if nics is not None:
        issues += _validate_npu_nics(f"{name}.npu_nics", nics)
    vendor = accelerator.get("vendor") if isinstance(accelerator, dict) else None
    if vendor == "huawei" and nics is None:
        issues.append(
            (f"{name}.npu_nics", "Ascend SKUs need their NPU NIC spec {count, rate_gbps, subnet_rule}")
        )
    if nics is not None and vendor != "huawei":
        issues.append((f"{name}.npu_nics", "only Ascend (vendor huawei) SKUs have NPU NICs; set it to null"))
    return issues


def _validate_accelerator(path: str, acc: Any) -> list[tuple[str, str]]:
    if not isinstance(acc, dict):
        return [(path, f"must be a mapping or null, got {_kind(acc)}")]
    issues = _keys(
        path,
        acc,
        required={
            "vendor",
            "model",
            "count",
            "memory_gib",
            "interconnect",
            "nvlink_links_per_device",
            "pcie_gen",
            "pcie_width",
            "min_driver",
            "kernel_module_flavour",
        },
        optional={"chips_per_device", "mig_mode"},
    )
    issues += _enum(path, acc, "vendor", tuple(VENDOR_GROUPS))
    if "model" in acc and not (isinstance(acc["model"], str) and acc["model"].strip()):
        issues.append(
            (f"{path}.model", f'must be a non-empty string (quote numbers: "910"), got {_kind(acc["model"])}')
        )
    issues += _positive_int(path, acc, "count")
    issues += _positive_int(path, acc, "chips_per_device")
    if "memory_gib" in acc and (not _is_number(acc["memory_gib"]) or acc["memory_gib"] <= 0):
        issues.append((f"{path}.memory_gib", f"must be a positive number, got {_kind(acc['memory_gib'])}"))
    issues += _enum(path, acc, "interconnect", INTERCONNECTS)
    links = acc.get("nvlink_links_per_device")
    if links is not None and (not _is_int(links) or links <= 0):
        issues.append(
            (f"{path}.nvlink_links_per_device", f"must be a positive integer or null, got {_kind(links)}")
        )
    if "pcie_gen" in acc and not (_is_int(acc["pcie_gen"]) and 1 <= acc["pcie_gen"] <= 6):
        issues.append((f"{path}.pcie_gen", f"must be an integer 1..6, got {_kind(acc['pcie_gen'])}"))
    width = acc.get("pcie_width")
    if "pcie_width" in acc and (not _is_int(width) or width not in (1, 2, 4, 8, 16)):
        issues.append((f"{path}.pcie_width", f"must be one of 1, 2, 4, 8, 16, got {_kind(width)}"))
    issues += _enum(path, acc, "kernel_module_flavour", MODULE_FLAVOURS)
    issues += _enum(path, acc, "mig_mode", MIG_MODES)
    issues += _min_driver(path, acc)
    return issues


def _min_driver(path: str, acc: dict[str, Any]) -> list[tuple[str, str]]:
    if "min_driver" not in acc:
        return []
    value, vendor = acc["min_driver"], acc.get("vendor")
    if not isinstance(value, str):
        return [(f"{path}.min_driver", f"must be a quoted string, got {_kind(value)}")]
    if vendor == "nvidia" and not _NVIDIA_BRANCH.fullmatch(value):
        return [(f"{path}.min_driver", f'NVIDIA minimum driver is a branch like "550", got {value!r}')]
    if vendor == "huawei" and not _ASCEND_VERSION.fullmatch(value):
        return [(f"{path}.min_driver", f'Ascend minimum driver is a version like "24.1.rc2", got {value!r}')]
    return []


def _validate_hca(path: str, hca: Any) -> list[tuple[str, str]]:
    if not isinstance(hca, dict):
        return [(path, f"must be a mapping or null, got {_kind(hca)}")]
    # ca_types/devices pick the compute HCAs out of a node's RDMA devices (docs/design.md).
    issues = _keys(path, hca, required={"count", "rate_gbps", "link_layer"}, optional={"ca_types", "devices"})
    issues += _string_list(path, hca, "ca_types")
    issues += _string_list(path, hca, "devices")
    issues += _positive_int(path, hca, "count")
    issues += _positive_int(path, hca, "rate_gbps")
    issues += _enum(path, hca, "link_layer", LINK_LAYERS)
    return issues


def _validate_npu_nics(path: str, nics: Any) -> list[tuple[str, str]]:
    if not isinstance(nics, dict):
        return [(path, f"must be a mapping or null, got {_kind(nics)}")]
    issues = _keys(path, nics, required={"count", "rate_gbps", "subnet_rule"}, optional=set())
    issues += _positive_int(path, nics, "count")
    issues += _positive_int(path, nics, "rate_gbps")
    issues += _enum(path, nics, "subnet_rule", SUBNET_RULES)
    count = nics.get("count")
    if nics.get("subnet_rule") == "four-subnet-pairs" and _is_int(count) and count != 8:
        issues.append(
            (f"{path}.count", f"the four-subnet-pairs rule pairs devices i and i+4 of 8, got {count}")
        )
    if nics.get("subnet_rule") == "die-pairs-split" and _is_int(count) and count % 2:
        issues.append((f"{path}.count", f"the die-pairs-split rule needs an even NIC count, got {count}"))
    return issues


def _keys(path: str, spec: dict[str, Any], required: set[str], optional: set[str]) -> list[tuple[str, str]]:
    issues = [(f"{path}.{key}", "is missing") for key in sorted(required - spec.keys())]
    for key in sorted(set(map(str, spec)) - required - optional):
        close = difflib.get_close_matches(key, sorted(required | optional), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        issues.append((f"{path}.{key}", f"unknown key{hint}"))
    return issues


def _enum(path: str, spec: dict[str, Any], key: str, allowed: tuple[str, ...]) -> list[tuple[str, str]]:
    if key in spec and spec[key] not in allowed:
        return [(f"{path}.{key}", f"must be one of {', '.join(allowed)}, got {_kind(spec[key])}")]
    return []


def _string_list(path: str, spec: dict[str, Any], key: str) -> list[tuple[str, str]]:
    value = spec.get(key)
    if key in spec and not (
        isinstance(value, list) and value and all(isinstance(v, str) and v for v in value)
    ):
        return [(f"{path}.{key}", f"must be a non-empty list of strings, got {_kind(value)}")]
    return []


def _positive_int(path: str, spec: dict[str, Any], key: str) -> list[tuple[str, str]]:
    if key in spec and (not _is_int(spec[key]) or spec[key] <= 0):
        return [(f"{path}.{key}", f"must be a positive integer, got {_kind(spec[key])}")]
    return []


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
