"""Filters of playbooks/bundle_needs.yml and the roles' tasks/bundle.yml: a bring-up's needs, nodes untouched.

    {{ os_release | clusterforge.cluster.cf_os_facts(arch='x86_64', kernel=none) }}
      -> {os_family, distribution, distribution_release, distribution_major_version,
          distribution_version, architecture, kernel ("unknown" unless given), system}
    {{ names | clusterforge.cluster.cf_bundle_items('os_package', 'base', kernel=ansible_facts.kernel) }}
      -> [{kind: os_package, name: chrony, role: base}, ...]   (a kernel-named package of an
         unknown kernel: name linux-headers-<kernel> and `unknown`, the why)
    {{ requirements | clusterforge.cluster.cf_bundle_items('wheel', 'cann', index_url_var='...') }}
    {{ plan.files | clusterforge.cluster.cf_bundle_mirror_files(url, 'ascend_package_url', 'cann') }}
      -> [{kind: file, url: <ascend_package_url>/<name>, url_var, sha256, role}, ...]

The rules live once in plugins/module_utils/cfcore/os_facts.py (its parsing of os_release is
cfcore/expected.py's); these filters only turn their errors, which name the value, the supported
OSes and the fix, into task failures.
"""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore import os_facts
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.inputs import InputError


def cf_os_facts(os_release: Any, arch: Any = "x86_64", kernel: Any = None) -> dict[str, str]:
    try:
        return os_facts.os_facts(os_release, arch=arch, kernel=kernel)
    except InputError as err:
        raise AnsibleFilterError(str(err)) from None


def cf_bundle_items(
    values: Any, kind: str, role: str, kernel: Any = None, **fields: Any
) -> list[dict[str, Any]]:
    try:
        return os_facts.need_items(values, kind, role, kernel=kernel, **fields)
    except InputError as err:
        raise AnsibleFilterError(str(err)) from None


def cf_bundle_mirror_files(files: Any, base_url: Any, url_var: str, role: str) -> list[dict[str, Any]]:
    try:
        return os_facts.mirror_file_items(files, base_url, url_var, role)
    except InputError as err:
        raise AnsibleFilterError(str(err)) from None


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "cf_os_facts": cf_os_facts,
            "cf_bundle_items": cf_bundle_items,
            "cf_bundle_mirror_files": cf_bundle_mirror_files,
        }
