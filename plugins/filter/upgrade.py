"""Filter `cf_upgrade_plan`: the rolling-upgrade plan of a component, as `clusterforge upgrade plan` makes it.

    {{ ansible_play_hosts_all | clusterforge.cluster.cf_upgrade_plan(hostvars, groups,
         upgrade_installed, '570.133.20', 'nvidia-driver', max_unavailable='5%') }}

`hosts`: the hosts to consider; those of the component's inventory group
(gpu_nvidia, npu_ascend) are planned. `installed`: host -> installed version
(null: unknown, still planned). Limits are text, as on the command line:
canary (a number), max_unavailable, floor, domain_share ("3" or "10%"),
partition_max_unavailable and partition_floor ({partition: limit}).
`slurm_partitions` defaults to the inventory's, as the Slurm controller sees it.
Returns the plan as plan.json holds it (`Plan.to_dict()`); the planner is
cfcore/upgrade_plan.py, shared with the CLI.
"""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore import upgrade_plan


def cf_upgrade_plan(
    hosts: Any,
    hostvars: Any,
    groups: Any,
    installed: Any,
    target: Any,
    component: str = upgrade_plan.DEFAULT_COMPONENT,
    canary: Any = 1,
    max_unavailable: Any = str(upgrade_plan.DEFAULT_MAX_UNAVAILABLE),
    partition_max_unavailable: Any = None,
    floor: Any = str(upgrade_plan.DEFAULT_FLOOR),
    partition_floor: Any = None,
    domain_share: Any = str(upgrade_plan.DEFAULT_DOMAIN_SHARE),
    slurm_partitions: Any = None,
) -> dict[str, Any]:
    if not isinstance(hosts, (list, tuple)) or not isinstance(installed, dict):
        raise AnsibleFilterError(
            "cf_upgrade_plan: hosts must be a list of host names and installed a {host: version} mapping, "
            f"got {type(hosts).__name__} and {type(installed).__name__}"
        )
    try:
        group = set(groups.get(upgrade_plan.component_named(component).group) or ())
        if slurm_partitions is None:
            slurm_partitions = upgrade_plan.slurm_partitions_of(hostvars, groups)
        found = upgrade_plan.candidates([h for h in hosts if h in group], hostvars, groups, slurm_partitions)
        plan = upgrade_plan.make_plan(
            found,
            installed,
            target,
            component=component,
            canary=_whole_number(canary),
            max_unavailable=max_unavailable,
            partition_max_unavailable=partition_max_unavailable,
            floor=floor,
            partition_floor=partition_floor,
            domain_share=domain_share,
        )
    except ValueError as err:
        raise AnsibleFilterError(f"cf_upgrade_plan: {err}") from None
    return plan.to_dict()


def _whole_number(value: Any) -> Any:
    # Ansible passes "2" where a variable was templated; make_plan refuses anything but a number.
    return int(value) if isinstance(value, str) and value.strip().isdigit() else value


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"cf_upgrade_plan": cf_upgrade_plan}
