"""Filters of roles k8s_device_plugins and volcano: node labels from facts, the Volcano inputs.

    {{ groups['k8s_workers'] | clusterforge.cluster.cf_k8s_worker_labels(hostvars) }}
    {{ node_labels_entry | clusterforge.cluster.cf_k8s_label_argv(kubectl_path) }}
    {{ worker_labels | clusterforge.cluster.cf_k8s_label_plan(kubectl_path) }}
    {{ worker_labels | clusterforge.cluster.cf_k8s_plugin_targets }}
    {{ volcano_queues | clusterforge.cluster.cf_volcano_queues }}
    {{ volcano_scheduler_tiers | clusterforge.cluster.cf_volcano_tiers(volcano_version) }}
    {{ volcano_scheduler_actions | clusterforge.cluster.cf_volcano_actions }}

The rules live once in plugins/module_utils/cfcore/k8s_labels.py (Ascend's in ascend_labels.py);
input errors become task failures that name the variable and the fix.
"""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore import k8s_labels as kl
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.inputs import InputError


def _fail(err: InputError) -> AnsibleFilterError:
    return AnsibleFilterError(f"{err.message} (fix: {err.fix})" if err.fix else err.message)


def _hcas(hvars: dict) -> Any:
    """The host's HCAs (hca_facts' shape): rdma_hcas (role rdma) or clusterforge_hcas (the play's
    hca_facts), else the rdma role's local fact, else the accelerator fact's `hcas`."""
    for name in ("rdma_hcas", "clusterforge_hcas"):
        if hvars.get(name) is not None:
            return hvars.get(name)
    local = ((hvars.get("ansible_local") or {}).get("clusterforge_rdma") or {}).get("hcas")
    if local is not None:
        return local
    return (hvars.get("clusterforge_accelerators") or {}).get("hcas")


def cf_k8s_worker_labels(hosts: Any, hostvars: Any) -> list[dict[str, Any]]:
    """[{node, host, labels}] for the given hosts (k8s_workers), from each one's facts in hostvars."""
    workers = []
    for host in list(hosts or []):
        hvars = hostvars.get(host, {})
        facts = hvars.get("ansible_facts") or {}
        workers.append(
            {
                "host": host,
                "node_name": hvars.get("k8s_node_name"),
                "accelerators": hvars.get("clusterforge_accelerators"),
                "architecture": facts.get("architecture") or hvars.get("ansible_architecture"),
                "hcas": _hcas(hvars),
                # The fabric topology of the inventory: topology.clusterforge.io/* labels.
                "topology": {key: hvars.get(key) for key in ("rack", "leaf", "spine", "nvlink_domain")},
            }
        )
    try:
        return kl.cluster_labels(workers)
    except InputError as err:
        raise _fail(err) from None


def cf_k8s_label_argv(entry: Any, kubectl: str = "kubectl") -> list[str]:
    if not isinstance(entry, dict) or "node" not in entry:
        raise AnsibleFilterError("cf_k8s_label_argv expects an entry {node, labels} of cf_k8s_worker_labels")
    return kl.label_argv(entry["node"], entry.get("labels") or {}, kubectl)


def cf_k8s_label_plan(entries: Any, kubectl: str = "kubectl") -> list[dict[str, Any]]:
    """Each entry of cf_k8s_worker_labels with its `kubectl label` argv ([] where no label applies)."""
    return [
        dict(entry, argv=kl.label_argv(entry["node"], entry.get("labels") or {}, kubectl))
        for entry in entries
    ]


def cf_k8s_plugin_targets(entries: Any) -> dict[str, Any]:
    return kl.plugin_targets(entries)


def cf_volcano_queues(queues: Any) -> list[dict[str, Any]]:
    try:
        return kl.volcano_queues(queues)
    except InputError as err:
        raise _fail(err) from None


def cf_volcano_tiers(tiers: Any, version: Any) -> list[dict[str, Any]]:
    try:
        return kl.volcano_tiers(tiers, version)
    except InputError as err:
        raise _fail(err) from None


def cf_volcano_actions(actions: Any) -> str:
    try:
        return kl.volcano_actions(actions)
    except InputError as err:
        raise _fail(err) from None


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "cf_k8s_worker_labels": cf_k8s_worker_labels,
            "cf_k8s_label_argv": cf_k8s_label_argv,
            "cf_k8s_label_plan": cf_k8s_label_plan,
            "cf_k8s_plugin_targets": cf_k8s_plugin_targets,
            "cf_volcano_queues": cf_volcano_queues,
            "cf_volcano_tiers": cf_volcano_tiers,
            "cf_volcano_actions": cf_volcano_actions,
        }
