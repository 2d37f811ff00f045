"""Filters of the lossless-RoCE plan (cfcore/roce.py, the one implementation).

{{ {'interfaces': fabric_roce_interfaces | default(none), 'trust': fabric_roce_trust, ...}
   | clusterforge.cluster.cf_roce_plan }}
    -> the normalized plan ({interfaces, trust, pfc_priority, dscp, cnp_dscp, ecn, mtu, gid_index,
       traffic_class, roce_tos}) or None when no interface is planned; a bad value fails the
       task with the variable's name and the fix.

{{ plan | clusterforge.cluster.cf_roce_commands(iface, ibdev, sysfs_root='/') }}
    -> [argv]: every command that puts IFACE into the plan (what clusterforge-roce-apply runs at
       boot and roce_qos runs for the settings that differ).

"""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore import roce
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.inputs import InputError


def cf_roce_plan(values: Any) -> dict[str, Any] | None:
    try:
        return roce.normalize_plan(values)
    except InputError as err:
        raise AnsibleFilterError(f"{err.message} (fix: {err.fix})") from None


def cf_roce_commands(plan: Any, iface: Any, ibdev: Any, sysfs_root: Any = "/") -> list[list[str]]:
    if not isinstance(plan, dict) or "interfaces" not in plan:
        raise AnsibleFilterError(
            "cf_roce_commands needs the normalized plan (the result of cf_roce_plan), "
            f"got {type(plan).__name__}"
        )
    try:
        return roce.apply_commands(
            plan, str(iface), None if ibdev in (None, "") else str(ibdev), str(sysfs_root)
        )
    except InputError as err:
        raise AnsibleFilterError(f"{err.message} (fix: {err.fix})") from None


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "cf_roce_plan": cf_roce_plan,
            "cf_roce_commands": cf_roce_commands,
        }
