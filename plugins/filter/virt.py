"""Where a node runs, from Ansible's facts: a container or a virtual machine.

    {{ ansible_facts.virtualization_type | clusterforge.cluster.cf_is_container(virtualization_role) }}
    {{ ansible_facts.virtualization_type | clusterforge.cluster.cf_is_virtual_machine(virtualization_role) }}

One rule for every role (kernel headers and DKMS only outside containers, firmware never
from a virtual machine): plugins/module_utils/cfcore/virt.py.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore import virt


def cf_is_container(virtualization_type: Any, virtualization_role: Any = "") -> bool:
    return virt.is_container(virtualization_type, virtualization_role)


def cf_is_virtual_machine(virtualization_type: Any, virtualization_role: Any = "") -> bool:
    return virt.is_virtual_machine(virtualization_type, virtualization_role)


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"cf_is_container": cf_is_container, "cf_is_virtual_machine": cf_is_virtual_machine}
