"""Filters of the fabric topology (docs/design.md, "Fabric topology and topology-aware placement"):
Slurm's topology.conf, Volcano's HyperNodes, the rules `inventory check` applies.

    {{ hostvars | clusterforge.cluster.cf_slurm_topology(
         groups['slurm_workers'], groups, slurm__cluster.names, plugin=slurm_topology_plugin,
         slurm_version=slurm_version, block_sizes=..., cluster_name=..., leaf_downlinks=...,
         leaf_ports=..., spanning_domains=..., root=...) }}
        -> {plugin, slurm_plugin, lines, text}
    {{ groups['k8s_workers'] | clusterforge.cluster.cf_volcano_hypernodes(hostvars, volcano_version,
                                                                          root=...) }}
        -> [HyperNode documents] ([] before Volcano 1.12 or without a topology)
    {{ hostvars | clusterforge.cluster.cf_topology_findings(groups, leaf_downlinks=..., ...) }}
        -> [{rule, severity, variable, message, fix, host, hosts}]

Each reads the hosts' leaf, spine, nvlink_domain, rack and topology_ports_per_host from hostvars
once (run_once on the controller). cf_slurm_topology and cf_volcano_hypernodes first apply the
rules of cfcore/topology.py to every host of the inventory and fail with their words.
"""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore import k8s_labels
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore import topology as tp
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.inputs import InputError

_HOST_KEYS = ("rack", *tp.HOST_VARIABLES, "topology_ports_per_host")


def _fail(err: InputError) -> AnsibleFilterError:
    return AnsibleFilterError(f"{err.message} (fix: {err.fix})" if err.fix else err.message)


def _plain(value: Any) -> Any:
    """Ansible's lazy containers -> plain dicts and lists (what cfcore expects)."""
    if isinstance(value, dict) or hasattr(value, "items"):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _host_vars(hostvars: Any, host: str) -> dict[str, Any]:
    hv = hostvars[host]
    return {key: _plain(hv.get(key)) for key in _HOST_KEYS}


def _entries(hostvars: Any, groups: Any) -> list[dict[str, Any]]:
    """host_entry of every host of the inventory (groups['all'])."""
    groups = _plain(groups or {})
    member_of: dict[str, list[str]] = {}
    for group, hosts in groups.items():
        for host in hosts or []:
            member_of.setdefault(host, []).append(group)
    hosts = groups.get("all") or sorted(member_of)
    return [tp.host_entry(h, _host_vars(hostvars, h), member_of.get(h, [])) for h in hosts]


def _settings(leaf_downlinks: Any, leaf_ports: Any, spanning_domains: Any, root: Any) -> dict[str, Any]:
    return tp.settings_of(
        {
            "topology_leaf_downlinks": _plain(leaf_downlinks),
            "topology_leaf_ports": _plain(leaf_ports),
            "topology_spanning_domains": _plain(spanning_domains),
            "topology_root_name": _plain(root),
        }
    )


def cf_topology_findings(
    hostvars: Any,
    groups: Any,
    leaf_downlinks: Any = None,
    leaf_ports: Any = None,
    spanning_domains: Any = None,
    root: Any = None,
) -> list[dict[str, Any]]:
    findings = tp.check(
        _entries(hostvars, groups), _settings(leaf_downlinks, leaf_ports, spanning_domains, root)
    )
    return [{k: v for k, v in f.items() if k != "value"} for f in findings]


def cf_slurm_topology(
    hostvars: Any,
    workers: Any,
    groups: Any,
    names: Any = None,
    plugin: Any = "auto",
    slurm_version: Any = None,
    block_sizes: Any = None,
    cluster_name: Any = None,
    leaf_downlinks: Any = None,
    leaf_ports: Any = None,
    spanning_domains: Any = None,
    root: Any = None,
) -> dict[str, Any]:
    """topology.conf of the slurm_workers (`names`: host -> Slurm node name, cf_slurm_cluster's)."""
    settings = _settings(leaf_downlinks, leaf_ports, spanning_domains, root)
    names = _plain(names or {})
    try:
        tp.require_valid(_entries(hostvars, groups), settings)
        entries = []
        for host in list(workers or []):
            values = _host_vars(hostvars, host)
            entries.append(
                {
                    "host": host,
                    "name": names.get(host) or str(host).split(".")[0],
                    **{key: values.get(key) or None for key in tp.HOST_VARIABLES},
                }
            )
        return tp.slurm_topology(
            entries,
            str(plugin or "auto"),
            None if slurm_version in (None, "") else str(slurm_version),
            _plain(block_sizes),
            settings["root"],
            cluster_name,
        )
    except InputError as err:
        raise _fail(err) from None


def cf_volcano_hypernodes(
    hosts: Any, hostvars: Any, volcano_version: Any, root: Any = None
) -> list[dict[str, Any]]:
    """HyperNodes of the given hosts (k8s_workers) by their Kubernetes node names."""
    try:
        entries = []
        for host in list(hosts or []):
            hv = hostvars[host]
            values = _host_vars(hostvars, host)
            entries.append(
                {
                    "node": k8s_labels.node_name(host, hv.get("k8s_node_name")),
                    **{key: values.get(key) or None for key in tp.HOST_VARIABLES},
                }
            )
        return tp.hypernodes(entries, volcano_version, _settings(None, None, None, root)["root"])
    except InputError as err:
        raise _fail(err) from None


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "cf_topology_findings": cf_topology_findings,
            "cf_slurm_topology": cf_slurm_topology,
            "cf_volcano_hypernodes": cf_volcano_hypernodes,
        }
