"""The OS family rule of every role (plugins/module_utils/cfcore/os_family.py).

ansible.builtin.include_vars: "{{ ansible_facts | clusterforge.cluster.cf_os_family_vars('base') }}"
that: ansible_facts.os_family | clusterforge.cluster.cf_os_family_supported
"""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore import os_family


def cf_os_family_vars(facts: Any, role: str) -> str:
    try:
        return os_family.vars_file(facts, role)
    except ValueError as exc:
        raise AnsibleFilterError(str(exc)) from None


def cf_os_family_supported(family: Any) -> bool:
    return os_family.supported(family)


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"cf_os_family_vars": cf_os_family_vars, "cf_os_family_supported": cf_os_family_supported}
