"""Filter of the roles' pre-check: the BOM rules of `inventory check`, on one host.

    {{ bom_values | clusterforge.cluster.cf_bom_findings(node_sku, clusterforge_sku_catalog | default({})) }}

`bom_values` maps the BOM variables (versions.yml: nvidia_driver_version,
cuda_version, ...; nvidia_kernel_module_flavour) to the host's values, as
Ansible resolved them. Returns the findings of cfcore.bom (the one
implementation, so a role fails with the words `inventory check` uses):
[{rule, variable, message, fix, severity, source, of_value}]. A playbook
asserts that none has severity error before any role changes a package.
"""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore import bom, catalog
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.inputs import InputError


def cf_bom_findings(values: Any, node_sku: Any, overrides: Any = None) -> list[dict[str, Any]]:
    if not isinstance(values, dict):
        raise AnsibleFilterError(
            f"cf_bom_findings expects a mapping of BOM variables, got {type(values).__name__}"
        )
    try:
        sku = catalog.sku_spec(str(node_sku), overrides or None)
    except InputError as err:
        raise AnsibleFilterError(f"node_sku: {err.message} (fix: {err.fix})") from None
    plain = {name: value for name, value in values.items() if value not in (None, "")}
    return bom.bom_findings(plain.get, str(node_sku), sku, bom.load_rules())


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"cf_bom_findings": cf_bom_findings}
