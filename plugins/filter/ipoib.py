"""Filter `cf_ipoib_plan`: a host's IPoIB plan (fabric_ipoib_interfaces), checked and with defaults.

    {{ fabric_ipoib_interfaces | clusterforge.cluster.cf_ipoib_plan }}
    -> [{name, address, prefix, mtu, parent, pkey, mode}]

The ib_fabric role renders these; node_validate's `ib.ipoib` checks the same
normalized plan (cfcore/ipoib.py, one implementation). A bad entry fails the
task with the entry, the field and the fix.
"""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.inputs import InputError
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.ipoib import (
    VARIABLE,
    normalize_interfaces,
)


def cf_ipoib_plan(plan: Any, variable: str = VARIABLE) -> list[dict[str, Any]]:
    """The normalized IPoIB plan; AnsibleFilterError naming `variable[i].field` and the fix."""
    try:
        return normalize_interfaces(plan, variable)
    except InputError as err:
        raise AnsibleFilterError(
            f"error: {err.message}\n  fix: {err.fix}" if err.fix else err.message
        ) from None


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"cf_ipoib_plan": cf_ipoib_plan}
