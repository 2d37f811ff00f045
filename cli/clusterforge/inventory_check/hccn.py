"""The Ascend NPU NIC plan (`hccn_devices`) of every Ascend host: cfcore.hccn_plan's rules (the one
implementation, shared with the roles' pre-check, filter `cf_hccn_findings`) as inventory problems.

Each problem is located where the offending value was written; the NIC
addresses are returned for the fleet-wide duplicate check.
"""

from __future__ import annotations

from cfcore.hccn_plan import ENTRY_KEYS, NPU_NETWORK_RULE, check_plan

from clusterforge.inventory_check.addresses import AddressUse
from clusterforge.inventory_check.context import UNRESOLVED, Context
from clusterforge.inventory_check.problems import Problem

__all__ = ["ENTRY_KEYS", "check_hccn"]


def check_hccn(ctx: Context) -> tuple[list[Problem], list[AddressUse]]:
    """Problems of every Ascend host's plan, and the NIC addresses (for the fleet-wide duplicate check)."""
    problems: list[Problem] = []
    uses: list[AddressUse] = []
    for view in ctx.views:
        sku = ctx.sku(view)
        nics = (sku or {}).get("npu_nics")
        devices = view.value("hccn_devices")
        if not nics or devices is None or devices is UNRESOLVED:
            continue
        network = view.value("fabric_npu_network")
        findings, interfaces = check_plan(
            devices, nics, view.value("node_sku"), None if network is UNRESOLVED else network
        )
        problems += [
            view.finding_problem(found)
            for found in findings
            # A malformed fabric_npu_network is the address checks' to report.
            if found["rule"] != NPU_NETWORK_RULE
        ]
        uses += [
            AddressUse(str(iface.ip), view, f"hccn_devices[{index}].address", entry.get("address"))
            for index, entry, iface in interfaces.values()
        ]
    return problems, uses
