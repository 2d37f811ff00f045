"""The filter cf_perf_survey (plugins/filter/perf.py), loaded as Ansible loads it: the survey of a plain
playbook run, and the bad input it refuses."""

from __future__ import annotations

import importlib

import pytest
from ansible.errors import AnsibleFilterError
from ansible.plugins.loader import filter_loader, init_plugin_loader
from cfcore.perf_pairing import PerfNode, plan_survey
from clusterforge.ansible_env import ensure_collection_link

init_plugin_loader([str(ensure_collection_link().parents[2])])
perf = importlib.import_module("ansible_collections.clusterforge.cluster.plugins.filter.perf")
cf_perf_survey = perf.FilterModule().filters()["cf_perf_survey"]

NODES = [
    {
        "name": f"gpu-r{rack}-n{slot}",
        "group": "h100",
        "rack": f"r{rack}",
        "rails": ["mlx5_0", "mlx5_1", "nccl"],
    }
    for rack in (1, 2)
    for slot in (1, 2)
] + [{"name": "gpu-r3-n1", "group": "h100", "rails": ["mlx5_0", "mlx5_1", "nccl"]}]


def test_the_filter_is_the_collection_s():
    assert filter_loader.get("clusterforge.cluster.cf_perf_survey").j2_function is perf.cf_perf_survey


def test_the_survey_is_plan_survey_s_pairs_the_odd_node_left_out():
    pairs = cf_perf_survey(NODES)
    nodes = [PerfNode(n["name"], n["group"], n.get("rack"), tuple(n["rails"])) for n in NODES]
    expected, odd = plan_survey(nodes)
    assert pairs == [{"a": p.a, "b": p.b, "rails": list(p.rails)} for p in expected]
    assert len(pairs) == 2 and len(odd) == 1
    assert all(pair["a"][:6] != pair["b"][:6] for pair in pairs)  # across racks
    assert cf_perf_survey([]) == []


@pytest.mark.parametrize(
    ("nodes", "words"),
    [
        ({"name": "gpu-r1-n1"}, "nodes must be a list"),
        ([NODES[0], "gpu-r1-n2"], "nodes[1] is not a mapping: 'gpu-r1-n2'"),
        ([{**NODES[0], "sku": "h100"}], "nodes[0] has unknown keys sku"),
        ([{"group": "h100", "rails": []}], "nodes[0] has no name"),
        ([NODES[0], {**NODES[1], "rails": "mlx5_0"}], "nodes[1] (gpu-r1-n2) has rails 'mlx5_0'"),
        ([NODES[0], NODES[0]], "nodes[1] (gpu-r1-n1) is listed twice"),
    ],
)
def test_bad_input_names_the_bad_item(nodes, words):
    with pytest.raises(AnsibleFilterError) as err:
        cf_perf_survey(nodes)
    assert "cf_perf_survey: " in str(err.value) and words in str(err.value)
