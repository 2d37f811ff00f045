"""Filters of perf validation (role perf, playbooks/validate_perf.yml).

    {{ node_sku | clusterforge.cluster.cf_perf_expectations(sku_spec, perf_expectations) }}
      -> {figure: {typical, floor, warn, source}, ...}   the SKU's expected figures (site overrides merged)
    {{ ansible_play_hosts | clusterforge.cluster.cf_perf_survey_roles(hostvars) }}
      -> {host: {side: a|b, peer, rails, ...}}   the survey as each host's work (perf_pair_roles)

    {{ perf_nodes | clusterforge.cluster.cf_perf_survey }}
      perf_nodes: [{name, group, rack, rails: [mlx5_0, ..., nccl]}]   (rack may be left out)
      -> [{a: gpu-r1-n01, b: gpu-r2-n01, rails: [mlx5_0, ..., nccl]}]

A matching inside each group (the SKU), partners in different racks where possible, as
cfcore/perf_pairing.py's plan_survey plans it for the CLI. An odd node out is left out: a plain
run only surveys; `clusterforge validate --level perf` re-pairs it and the suspects.
"""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore import perf_pairing, perf_plan
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.catalog import sku_spec
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.inputs import InputError
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.perf_expectations import (
    expectations_for,
)


def cf_perf_survey(nodes: Any) -> list[dict[str, Any]]:
    try:
        pairs, _odd = perf_pairing.plan_survey(perf_pairing.nodes_from_dicts(nodes))
    except InputError as err:
        raise AnsibleFilterError(f"cf_perf_survey: {err}") from None
    return [pair.to_dict() for pair in pairs]


def cf_perf_expectations(node_sku: Any, sku: Any = None, overrides: Any = None) -> dict[str, Any]:
    try:
        return expectations_for(str(node_sku), sku_spec=sku or None, overrides=overrides or None)
    except InputError as err:
        raise AnsibleFilterError(f"perf_expectations: {err}") from None


def cf_perf_survey_roles(hosts: Any, hostvars: Any) -> dict[str, Any]:
    if not isinstance(hosts, list):
        raise AnsibleFilterError(
            f"cf_perf_survey_roles wants the list of play hosts, got {type(hosts).__name__}"
        )
    nodes, info = [], {}
    for host in hosts:
        view = hostvars[host]
        try:
            sku = sku_spec(str(view.get("node_sku")), view.get("clusterforge_sku_catalog") or None)
            expect = expectations_for(
                str(view.get("node_sku")), sku_spec=sku, overrides=view.get("perf_expectations") or None
            )
        except InputError as err:
            raise AnsibleFilterError(f"{host}: {err}") from None
        accel = sku.get("accelerator") or {}
        npu_nics = (
            [d["id"] for d in view.get("hccn_devices") or []] if accel.get("vendor") == "huawei" else []
        )
        rails = perf_plan.planned_rails(sku, view)
        nodes.append(perf_plan.perf_node(host, view, sku, rails, accel.get("vendor") == "nvidia", npu_nics))
        info[host] = perf_plan.host_info(host, view, sku, expect, bool(view.get("perf_gpudirect", True)))
    pairs, _odd = perf_pairing.plan_survey(nodes)
    return perf_plan.pair_roles(pairs, info)


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "cf_perf_survey": cf_perf_survey,
            "cf_perf_expectations": cf_perf_expectations,
            "cf_perf_survey_roles": cf_perf_survey_roles,
        }
