"""Filters of playbooks/validate.yml.

cf_validation_expected: a host's `node_validate` parameters (the SKU spec from
the catalog with the site's overrides, the BOM, required mounts, the NPU NIC
plan, sysfs root, checks to skip or to run only, the planned OS release, and
the fabric plan: the IPoIB interfaces, the raw fabric_roce_* values,
peermem_required) from its variables.
The CLI's pre-flight and `--from-capture` call the same function
(cfcore.expected.build_expected), so the playbook and the CLI can never
disagree on what a node should look like. Everything it needs is part of the
collection: it runs from AWX or a plain ansible-core install.
"""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.expected import (
    InvalidExpectation,
    SkuResolver,
    build_expected,
)

_resolver = SkuResolver()  # one per controller process: the catalog is merged once per override set


def cf_validation_expected(inputs: dict[str, Any], host: str) -> dict[str, Any]:
    """node_validate parameters (all but `level`) of `host` from a mapping of its variables."""
    if not isinstance(inputs, dict):
        raise AnsibleFilterError(
            f"cf_validation_expected expects a mapping of variables, got {type(inputs).__name__}"
        )
    try:
        return build_expected(host, dict(inputs), _resolver)
    except InvalidExpectation as err:
        raise AnsibleFilterError(
            f"error: {err.message}\n  fix: {err.fix}" if err.fix else err.message
        ) from None


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"cf_validation_expected": cf_validation_expected}
