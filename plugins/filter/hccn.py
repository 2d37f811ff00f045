"""Filter of the Ascend pre-check: the NPU NIC plan rules of `inventory check`, on one host.

    {{ hccn_devices | clusterforge.cluster.cf_hccn_findings(node_sku, clusterforge_sku_catalog | default({}),
                                                           fabric_npu_network | default(none)) }}

Returns the findings of cfcore.hccn_plan (the one implementation, so a role
fails with the words `inventory check` uses): [{rule, severity, variable,
message, fix}]. A SKU without NPU NICs (npu_nics null) has no plan to check: an
empty plan is then fine, a non-empty one is an error (it would be written to
NICs the SKU does not have). A playbook or role asserts that no finding has
severity error before any `hccn_tool -s` runs.
"""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore import catalog, hccn_plan
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.inputs import InputError


def cf_hccn_findings(
    hccn_devices: Any, node_sku: Any, catalog_overrides: Any = None, fabric_npu_network: Any = None
) -> list[dict[str, Any]]:
    try:
        sku = catalog.sku_spec(str(node_sku), catalog_overrides or None)
    except InputError as err:
        raise AnsibleFilterError(f"node_sku: {err.message} (fix: {err.fix})") from None
    nics = sku.get("npu_nics")
    if not nics:
        if hccn_devices in (None, "", []):
            return []
        return [
            _public(
                hccn_plan.finding(
                    "hccn.no_npu_nics",
                    "hccn_devices",
                    f"the SKU {node_sku!r} has no NPU NICs (npu_nics is null) but hccn_devices plans "
                    f"{len(hccn_devices) if isinstance(hccn_devices, list) else 'some'} device(s)",
                    "remove hccn_devices from this host, or correct node_sku",
                )
            )
        ]
    network = None if fabric_npu_network in (None, "") else fabric_npu_network
    return [_public(found) for found in hccn_plan.plan_findings(hccn_devices, nics, str(node_sku), network)]


def _public(found: dict[str, Any]) -> dict[str, Any]:
    """The finding without the raw value (the CLI uses it to locate the problem in a file)."""
    return {key: value for key, value in found.items() if key != "value"}


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"cf_hccn_findings": cf_hccn_findings}
