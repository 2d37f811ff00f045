"""Filters over the SKU catalog, for roles that act on what a node's SKU must have.

    {{ node_sku | clusterforge.cluster.cf_sku_spec(clusterforge_sku_catalog | default({})) }}

returns the SKU's spec (the built-in catalog merged with the site's
overrides, checked with the one schema of cfcore/catalog.py): e.g. a driver
role reads `accelerator.kernel_module_flavour` and `accelerator.interconnect`.
An unknown SKU or a malformed override fails the task with the catalog's
message (the known SKUs, the key and the fix).
"""

from __future__ import annotations

import json
from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore import catalog
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.inputs import InputError

_merged: dict[str, dict[str, Any]] = {}  # one merged catalog per override set, per controller process


def cf_sku_spec(node_sku: Any, overrides: Any = None) -> dict[str, Any]:
    if not isinstance(node_sku, str) or not node_sku:
        raise AnsibleFilterError(f"cf_sku_spec: node_sku must be a SKU name, got {node_sku!r}")
    key = json.dumps(overrides or {}, sort_keys=True, default=str)
    try:
        if key not in _merged:
            _merged[key] = catalog.load_catalog(overrides or None)
        known = _merged[key]
        if node_sku not in known:
            raise InputError(catalog.unknown_sku_message(node_sku, known), catalog.unknown_sku_fix(known))
    except InputError as err:
        raise AnsibleFilterError(f"node_sku: {err.message} (fix: {err.fix})") from None
    return known[node_sku]


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"cf_sku_spec": cf_sku_spec}
