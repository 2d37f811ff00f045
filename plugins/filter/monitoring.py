"""Filter of role prometheus: the scrape targets of the inventory, one implementation.

    {{ hostvars | clusterforge.cluster.cf_prometheus_targets(groups) }}
      -> {"node": [{"targets": ["10.0.0.1:9100"], "labels": {"node": "gpu-1", "rack": "r1",
                    "node_sku": "hgx-h100-8gpu", "cluster_groups": ",gpu_nvidia,"}}, ...],
          "dcgm": [...], "npu": [...]}

The rules live in plugins/module_utils/cfcore/monitoring_targets.py.
"""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore import monitoring_targets
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.inputs import InputError


def cf_prometheus_targets(hostvars: Any, groups: Any) -> dict[str, list[dict]]:
    """{job: [target group]} for the file-SD files of the jobs node, dcgm and npu."""
    try:
        return monitoring_targets.targets(hostvars, groups)
    except InputError as err:
        raise AnsibleFilterError(str(err)) from None


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"cf_prometheus_targets": cf_prometheus_targets}
