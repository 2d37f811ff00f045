"""Filters of roles rdma and ib_fabric: the RDMA install plan and the OpenSM settings.

    {{ rdma_install_method | clusterforge.cluster.cf_rdma_plan(os_family=..., doca_version=..., ...) }}
    {{ ib_fabric_opensm_partitions | clusterforge.cluster.cf_opensm_partitions }}   -> partitions.conf lines
    {{ ib_fabric_opensm_guids | clusterforge.cluster.cf_opensm_guids }}             -> port GUIDs ([]: all)

The rules live once in plugins/module_utils/cfcore/rdma_packages.py and cfcore/opensm.py; these
filters only adapt them to Ansible and turn their errors (which name the variable and the fix)
into task failures.
"""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore import opensm
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore import rdma_packages as rdma


def cf_rdma_plan(method: Any, **settings: Any) -> dict[str, Any]:
    try:
        return rdma.install_plan(method, **settings)
    except rdma.PlanError as err:
        raise AnsibleFilterError(str(err)) from None


def cf_opensm_partitions(partitions: Any) -> list[str]:
    try:
        return opensm.partitions_lines(partitions)
    except opensm.OpensmError as err:
        raise AnsibleFilterError(str(err)) from None


def cf_opensm_guids(guids: Any) -> list[str]:
    try:
        return opensm.port_guids(guids)
    except opensm.OpensmError as err:
        raise AnsibleFilterError(str(err)) from None


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "cf_rdma_plan": cf_rdma_plan,
            "cf_opensm_partitions": cf_opensm_partitions,
            "cf_opensm_guids": cf_opensm_guids,
        }
