"""Filter of role exporters: the expected-mounts metrics of a host.

    {{ validate_expected.required_mounts | clusterforge.cluster.cf_expected_mounts_metrics }}
        -> the content of <monitoring_textfile_dir>/clusterforge_expected_mounts.prom:
           clusterforge_expected_mount{mountpoint="/mnt/jfs",fstype="fuse.juicefs"} 1 per mount
           (fstype "any" for a plain path), HELP/TYPE lines, sorted; "" when the host needs none.

The rule lives once in plugins/module_utils/cfcore/validation_metrics.py (`expected_mounts`),
which checks the mounts as node.mounts does (cfcore.expected); this filter adapts it to Ansible.
"""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.inputs import InputError
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.validation_metrics import (
    expected_mounts,
)


def _plain(value: Any) -> Any:
    """Ansible's lazy containers -> plain dicts and lists (what cfcore expects)."""
    if isinstance(value, dict) or hasattr(value, "items"):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def cf_expected_mounts_metrics(required_mounts: Any) -> str:
    """`clusterforge_expected_mount` lines of `validate_expected.required_mounts`."""
    try:
        return expected_mounts(_plain(required_mounts))
    except InputError as err:
        raise AnsibleFilterError(
            f"cf_expected_mounts_metrics: {err.message} (fix: {err.fix})" if err.fix else err.message
        ) from None


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"cf_expected_mounts_metrics": cf_expected_mounts_metrics}
