"""Filters of playbooks/validate.yml.

cf_validation_expected: a host's `node_validate` parameters (the SKU spec from
the catalog with the site's overrides, the BOM, required mounts, the NPU NIC
plan, sysfs root, checks to skip) from its variables. The CLI's pre-flight and
`--from-capture` use the same function (clusterforge.validation.expected), so
the playbook and the CLI can never disagree on what a node should look like.
"""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError

try:
    from clusterforge.errors import ClusterForgeError
    from clusterforge.validation.expected import SkuResolver, build_expected
except ImportError as err:  # Ansible runs from a Python without ClusterForge installed
    _IMPORT_ERROR: ImportError | None = err
else:
    _IMPORT_ERROR = None

_resolver = None  # one per controller process: the catalog is merged once per override set


def cf_validation_expected(inputs: dict[str, Any], host: str) -> dict[str, Any]:
    """node_validate parameters (all but `level`) of `host` from a mapping of its variables."""
    global _resolver
    if _IMPORT_ERROR is not None:
        raise AnsibleFilterError(
            f"cf_validation_expected needs the clusterforge package in Ansible's Python: {_IMPORT_ERROR}; "
            "run ansible-playbook from the ClusterForge venv (.venv/bin/ansible-playbook)"
        )
    if not isinstance(inputs, dict):
        raise AnsibleFilterError(
            f"cf_validation_expected expects a mapping of variables, got {type(inputs).__name__}"
        )
    if _resolver is None:
        _resolver = SkuResolver()
    try:
        return build_expected(host, dict(inputs), _resolver)
    except ClusterForgeError as err:
        raise AnsibleFilterError(err.render()) from None


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"cf_validation_expected": cf_validation_expected}
