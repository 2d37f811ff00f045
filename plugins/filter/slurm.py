"""Filters of role slurm: the cluster's node lines, partitions, GRES, restart rule and munge key.

    {{ hostvars | clusterforge.cluster.cf_slurm_cluster(groups['slurm_workers'], groups, slurm_partitions,
                                                       reserve_mib=..., previous_conf=...) }}
    {{ slurm_partitions | clusterforge.cluster.cf_slurm_partition_members(groups['slurm_workers'], groups) }}
    {{ old_slurm_conf | clusterforge.cluster.cf_slurm_restart_reasons(new_slurm_conf) }}   -> [] = reconfigure
    {{ controller_conf | clusterforge.cluster.cf_slurm_unlisted_workers(groups['slurm_workers'], hostvars) }}
    {{ slurm_munge_key | clusterforge.cluster.cf_slurm_munge_key }}     -> the key file's content
    {{ slurm_munge_key | clusterforge.cluster.cf_slurm_munge_key_problem }}  -> "" or what is wrong
    {{ slurm__probe.versions | clusterforge.cluster.cf_slurm_version_problems(slurm_version) }}  -> [] = match

The rules live once in plugins/module_utils/cfcore/slurm_conf.py; these filters adapt them to
Ansible (host variables in, task failures that name the variable and the fix out).
"""

from __future__ import annotations

import json
from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore import catalog
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore import slurm_conf as sc
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.inputs import InputError

_catalogs: dict[str, dict[str, Any]] = {}  # merged catalog per override set, per controller process


def _fail(err: InputError) -> AnsibleFilterError:
    return AnsibleFilterError(f"{err.message} (fix: {err.fix})" if err.fix else err.message)


def _sku(host: str, name: Any, overrides: Any) -> dict[str, Any] | None:
    if not name:
        return None
    key = json.dumps(overrides or {}, sort_keys=True, default=str)
    if key not in _catalogs:
        _catalogs[key] = catalog.load_catalog(overrides or None)
    known = _catalogs[key]
    if name not in known:
        raise InputError(
            f"{host}: node_sku {catalog.unknown_sku_message(name, known)}", catalog.unknown_sku_fix(known)
        )
    return known[name]


def _plain(value: Any) -> Any:
    """Ansible's lazy containers -> plain dicts and lists (what cfcore expects)."""
    if isinstance(value, dict) or hasattr(value, "items"):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def worker_entries(hostvars: Any, workers: Any) -> list[dict[str, Any]]:
    """One build_cluster entry per slurm_workers host, from what the role's probes left in hostvars."""
    entries = []
    for host in list(workers or []):
        hv = hostvars[host]
        probe = _plain(hv.get("slurm__probe") or {})
        facts = _plain(hv.get("ansible_facts") or {})
        entries.append(
            {
                "host": host,
                "name": hv.get("slurm_node_name") or str(host).split(".")[0],
                "address": hv.get("slurm_node_address") or None,
                "probe": probe.get("hardware"),
                "accelerators": facts.get("clusterforge_accelerators") or {},
                "sku": _sku(host, hv.get("node_sku"), _plain(hv.get("clusterforge_sku_catalog") or {})),
                "nvml": bool(probe.get("nvml_plugin") and probe.get("nvml_library")),
            }
        )
    return entries


def controller_entries(hostvars: Any, controllers: Any) -> list[dict[str, Any]]:
    """The slurm_controller hosts: the host name slurmctld will compare (probed, else slurm_node_name,
    else the inventory name up to the first dot) and slurm_node_address."""
    entries = []
    for host in list(controllers or []):
        hv = hostvars[host]
        probe = _plain(hv.get("slurm__probe") or {})
        name = probe.get("hostname") or hv.get("slurm_node_name") or str(host).split(".")[0]
        entries.append({"host": host, "name": name, "address": hv.get("slurm_node_address") or None})
    return entries


def cf_slurm_cluster(
    hostvars: Any,
    workers: Any,
    groups: Any,
    partitions: Any = None,
    reserve_mib: Any = sc.DEFAULT_MEMORY_RESERVE_MIB,
    previous_conf: Any = "",
    controllers: Any = None,
) -> dict[str, Any]:
    try:
        return sc.build_cluster(
            worker_entries(hostvars, workers),
            _plain(partitions),
            _plain(groups),
            int(reserve_mib),
            str(previous_conf or ""),
            controller_entries(hostvars, controllers) if controllers is not None else None,
        )
    except InputError as err:
        raise _fail(err) from None


def cf_slurm_unlisted_workers(conf_text: Any, workers: Any, hostvars: Any) -> list[str]:
    """The slurm_workers hosts without a NodeName line in conf_text (the controller's slurm.conf)."""
    named = [
        {"host": host, "name": hostvars[host].get("slurm_node_name") or str(host).split(".")[0]}
        for host in list(workers or [])
    ]
    return sc.unlisted_workers(named, str(conf_text or ""))


def cf_slurm_partition_members(partitions: Any, workers: Any, groups: Any) -> dict[str, list[str]]:
    try:
        return sc.partition_members(_plain(partitions), list(workers or []), _plain(groups))
    except InputError as err:
        raise _fail(err) from None


def cf_slurm_restart_reasons(old_text: Any, new_text: Any) -> list[str]:
    return sc.restart_reasons(str(old_text or ""), str(new_text or ""))


def cf_slurm_munge_key(value: Any) -> str:
    """The key's bytes as text for ansible.builtin.copy's content (bytes kept by surrogateescape,
    as Ansible's own b64decode returns them)."""
    try:
        return sc.munge_key_bytes(value).decode("utf-8", "surrogateescape")
    except InputError as err:
        raise _fail(err) from None


def cf_slurm_munge_key_problem(value: Any) -> str:
    return sc.munge_key_problem(value)


def cf_slurm_version_problems(versions: Any, planned: Any, allow_missing: Any = False) -> list[str]:
    """["slurmd 23.02.1", "slurmctld (not installed)"]: the daemons whose version is not slurm_version."""
    try:
        return sc.version_problems(_plain(versions or {}), planned, bool(allow_missing))
    except InputError as err:
        raise _fail(err) from None


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "cf_slurm_cluster": cf_slurm_cluster,
            "cf_slurm_partition_members": cf_slurm_partition_members,
            "cf_slurm_unlisted_workers": cf_slurm_unlisted_workers,
            "cf_slurm_restart_reasons": cf_slurm_restart_reasons,
            "cf_slurm_munge_key": cf_slurm_munge_key,
            "cf_slurm_munge_key_problem": cf_slurm_munge_key_problem,
            "cf_slurm_version_problems": cf_slurm_version_problems,
        }
