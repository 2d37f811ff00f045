"""The filter cf_upgrade_plan (plugins/filter/upgrade.py), loaded as Ansible loads it."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from ansible.plugins.loader import filter_loader, init_plugin_loader
from cfcore.upgrade_plan import Candidate, make_plan
from clusterforge.ansible_env import ensure_collection_link

init_plugin_loader([str(ensure_collection_link().parents[2])])

TARGET = "570.133.20"
GROUPS = {
    "gpu_nvidia": ["g1", "g2", "g3", "g4"],
    "npu_ascend": ["a1"],
    "slurm_controller": ["c1"],
    "slurm_workers": ["g1", "g2"],
    "k8s_workers": ["g3", "a1"],
}
HOSTVARS = {
    "c1": {"slurm_partitions": [{"name": "h100", "nodes_group": "gpu_nvidia"}]},
    "g1": {"rack": "r1"},
    "g2": {"rack": "r1"},
    "g3": {"rack": "r2", "volcano_queue": "training"},
    "g4": {"rack": "r2"},
    "a1": {"rack": "r3"},
}
INSTALLED = {"g1": "560.35.03", "g2": "560.35.03", "g3": TARGET, "g4": None}


def cf_upgrade_plan():
    return filter_loader.get("clusterforge.cluster.cf_upgrade_plan").j2_function


def test_the_filter_plans_the_component_group_as_the_planner_does():
    every_host = list(HOSTVARS)
    plan = cf_upgrade_plan()(every_host, HOSTVARS, GROUPS, INSTALLED, TARGET, "nvidia-driver", canary="0")
    expected = make_plan(
        [
            Candidate("g1", ("slurm:h100",), (("rack", "r1"),)),
            Candidate("g2", ("slurm:h100",), (("rack", "r1"),)),
            Candidate("g3", ("k8s:training",), (("rack", "r2"),)),
            Candidate("g4", ("unscheduled",), (("rack", "r2"),)),
        ],
        INSTALLED,
        TARGET,
        canary=0,
    )
    assert plan == expected.to_dict()
    assert [b["hosts"] for b in plan["batches"]] == [["g1", "g4"], ["g2"]]
    assert plan["current"] == ["g3"]


def test_limits_come_as_text_and_partition_overrides_as_a_mapping():
    plan = cf_upgrade_plan()(
        ["g1", "g2", "g4"],  # a subset of the group: only those are planned
        HOSTVARS,
        GROUPS,
        INSTALLED,
        TARGET,
        partition_floor={"slurm:h100": "100%"},
        domain_share="1",
    )
    assert plan["blocked"].keys() == {"g1", "g2"}
    assert [b["hosts"] for b in plan["batches"]] == [["g4"]]
    assert plan["limits"]["partition_floor"] == {"slurm:h100": "100%"}


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((TARGET, "bios"), {}, "cf_upgrade_plan: unknown component 'bios'"),
        ((TARGET,), {"max_unavailable": "lots"}, "cf_upgrade_plan: max_unavailable 'lots' is not a limit"),
        (("",), {}, "cf_upgrade_plan: target version '' is empty"),
        ((TARGET,), {"partition_floor": {"slurm:x": "1"}}, "no host of this plan is in partition 'slurm:x'"),
    ],
)
def test_bad_input_is_a_filter_error_with_the_fix(args, kwargs, message):
    with pytest.raises(AnsibleFilterError, match="fix: ") as err:
        cf_upgrade_plan()(list(HOSTVARS), HOSTVARS, GROUPS, INSTALLED, *args, **kwargs)
    assert message in str(err.value)


def test_installed_must_be_a_mapping():
    with pytest.raises(AnsibleFilterError, match=r"installed a \{host: version\} mapping"):
        cf_upgrade_plan()(list(HOSTVARS), HOSTVARS, GROUPS, ["g1"], TARGET)
