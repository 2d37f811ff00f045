"""Filter `cf_fleet_hca_firmware`: the fleet rule `fleet.hca_firmware` over the run's node results.

    {{ ansible_play_hosts_all | clusterforge.cluster.cf_fleet_hca_firmware(hostvars) }}
    {{ [node_result, ...] | clusterforge.cluster.cf_fleet_hca_firmware }}

With `hostvars`, the input is host names and each host's registered
`validate_outcome.node_result` (playbooks/validate.yml) is read, the host
named by its inventory name; hosts without a result (unreachable, module
failure) are left out. Returns {"findings": [{host, node_sku, check}],
"notes": [...], "lines": [...]} (`lines`: what the playbook prints).
The rule itself is cfcore/fleet.py, shared with `clusterforge validate`.
"""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.fleet import (
    hca_firmware,
    summary_lines,
)


def _result_of(host: str, hostvars: Any, register: str) -> dict[str, Any] | None:
    try:
        outcome = hostvars[host].get(register)
    except (KeyError, AttributeError, TypeError):
        return None
    node_result = outcome.get("node_result") if isinstance(outcome, dict) else None
    if not isinstance(node_result, dict):
        return None
    return {**node_result, "host": host}


def cf_fleet_hca_firmware(
    items: Any, hostvars: Any = None, register: str = "validate_outcome"
) -> dict[str, Any]:
    if not isinstance(items, (list, tuple)):
        raise AnsibleFilterError(
            f"cf_fleet_hca_firmware expects a list of host names or node results, got {type(items).__name__}"
        )
    if hostvars is None:
        results = [item for item in items if isinstance(item, dict)]
    else:
        results = [r for r in (_result_of(str(host), hostvars, register) for host in items) if r]
    report = hca_firmware(results)
    return {**report, "lines": summary_lines(report, len(results))}


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"cf_fleet_hca_firmware": cf_fleet_hca_firmware}
