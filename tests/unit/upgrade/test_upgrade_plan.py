"""The rolling-upgrade planner (cfcore/upgrade_plan.py) on hand-made fleets: limits, rounding, batches."""

from __future__ import annotations

import json

import pytest
from cfcore.inputs import InputError
from cfcore.upgrade_plan import COMPONENTS, Candidate, Limit, Plan, candidates, make_plan

TARGET = "570.133.20"
OLD = "560.35.03"


def fleet(count: int, partition: str = "slurm:h100", per_rack: int = 0) -> list[Candidate]:
    """`count` hosts in one partition; with per_rack, in racks of that many hosts."""
    return [
        Candidate(f"n{i:02d}", (partition,), (("rack", f"r{i // per_rack}"),) if per_rack else ())
        for i in range(count)
    ]


def old(found: list[Candidate]) -> dict[str, str | None]:
    return {c.host: OLD for c in found}


def batch_hosts(plan: Plan) -> list[list[str]]:
    return [list(b.hosts) for b in plan.batches]


# ---------------------------------------------------------------------- limits ----


@pytest.mark.parametrize(
    ("text", "limit"),
    [("3", Limit(3)), ("10%", Limit(10, True)), (" 25 % ", Limit(25, True)), (0, Limit(0)), (7, Limit(7))],
)
def test_a_limit_is_a_count_or_a_percent(text, limit):
    assert Limit.parse(text) == limit
    assert Limit.parse(limit) is limit


@pytest.mark.parametrize("text", ["", "-1", "1.5", "10%%", "ten", "%", "101%", None, True, [3]])
def test_a_bad_limit_names_the_value_and_the_forms(text):
    with pytest.raises(InputError) as err:
        Limit.parse(text, "max_unavailable")
    assert err.value.message.startswith(f"max_unavailable {text!r}")
    assert "3" in str(err.value) and "%" in str(err.value)


def test_a_percent_lets_at_most_its_share_go_rounded_down_but_at_least_one():
    ten = Limit(10, True)
    assert [ten.of(n) for n in (0, 1, 5, 9, 10, 19, 20, 25)] == [0, 1, 1, 1, 1, 1, 2, 2]
    assert Limit(50, True).of(3) == 1
    assert Limit(100, True).of(7) == 7
    assert Limit(0, True).of(10) == 0
    assert Limit(3).of(2) == 2  # a count is capped at the group
    assert Limit(0).of(5) == 0


def test_a_floor_keeps_its_share_in_service_rounded_up():
    assert Limit(75, True).kept_of(10) == 8  # 7.5 -> 8
    assert Limit(90, True).kept_of(10) == 9
    assert Limit(90, True).kept_of(11) == 10  # 9.9 -> 10
    assert Limit(0, True).kept_of(10) == 0
    assert Limit(4).kept_of(3) == 4  # more than the group: none may go


# ------------------------------------------------------------------ candidates ----


def test_candidates_take_partitions_from_slurm_and_kubernetes_and_domains_from_host_variables():
    groups = {
        "gpu_nvidia": ["g1", "g2", "g3", "g4"],
        "slurm_workers": ["g1", "g2"],
        "k8s_workers": ["g2", "g3"],
        "big": ["g1", "g2", "g3", "g4"],
    }
    hostvars = {
        "g1": {"rack": "r1", "leaf_switch": "l1", "nvlink_domain": "nv1"},
        "g2": {"rack": "r1", "volcano_queue": "training"},
        "g3": {"rack": 7, "leaf_switch": ""},
        "g4": {},
    }
    partitions = [{"name": "h100", "nodes_group": "gpu_nvidia"}, {"name": "all", "nodes_group": "big"}]
    found = candidates(groups["gpu_nvidia"], hostvars, groups, partitions)
    all_three = (("rack", "r1"), ("leaf_switch", "l1"), ("nvlink_domain", "nv1"))
    assert found == [
        Candidate("g1", ("slurm:all", "slurm:h100"), all_three),
        Candidate("g2", ("k8s:training", "slurm:all", "slurm:h100"), (("rack", "r1"),)),
        Candidate("g3", ("k8s:default",), (("rack", "7"),)),  # not a slurm worker: no Slurm partition
        Candidate("g4", ("unscheduled",), ()),
    ]


def test_a_slurm_partition_without_a_group_is_refused():
    with pytest.raises(InputError, match=r"slurm_partitions\[0\] has no name or nodes_group"):
        candidates(["g1"], {}, {}, [{"name": "h100"}])


# ------------------------------------------------------------------------ plans ----


def test_a_small_fleet_gets_its_known_batches():
    # 4 Slurm hosts and 2 unscheduled ones in 2 racks of 3: 10% lets 1 per partition go, 50% of a rack 1.
    found = [
        Candidate("g01", ("slurm:h100",), (("rack", "r1"),)),
        Candidate("g02", ("slurm:h100",), (("rack", "r1"),)),
        Candidate("g03", ("slurm:h100",), (("rack", "r1"),)),
        Candidate("g04", ("slurm:h100",), (("rack", "r2"),)),
        Candidate("g05", ("unscheduled",), (("rack", "r2"),)),
        Candidate("g06", ("unscheduled",), (("rack", "r2"),)),
    ]
    installed = {**old(found), "g02": TARGET, "g03": None}
    plan = make_plan(found, installed, TARGET)
    # The bottleneck, rack r2 (3 hosts to go, 1 at a time), is served from the canary on.
    assert batch_hosts(plan) == [["g04"], ["g01", "g05"], ["g03", "g06"]]
    assert [b.canary for b in plan.batches] == [True, False, False]
    assert plan.current == ("g02",)
    assert plan.blocked == {}
    assert plan.lower_bound == 3
    assert plan.hosts() == ["g04", "g01", "g05", "g03", "g06"]
    assert plan.batches[1].partitions == ("slurm:h100", "unscheduled")
    assert plan.batches[1].domains == {"rack": 2}
    assert plan.partitions == {
        "slurm:h100": {"hosts": 4, "per_batch": 1},
        "unscheduled": {"hosts": 2, "per_batch": 1},
    }


def test_percent_rounding_sets_the_batch_size():
    found = fleet(25)
    plan = make_plan(found, old(found), TARGET, canary=0)  # 10% of 25: 2
    assert [len(b.hosts) for b in plan.batches] == [2] * 12 + [1]
    assert plan.lower_bound == 13
    plan = make_plan(found, old(found), TARGET, canary=0, max_unavailable="3%")  # 0.75: still 1
    assert len(plan.batches) == 25


def test_a_floor_limits_the_batch_and_the_canary_counts_in_the_lower_bound():
    found = fleet(10)
    # 75% of 10 keeps 8 in service: 2 may go; max_unavailable 50% would allow 5.
    plan = make_plan(found, old(found), TARGET, max_unavailable="50%", floor="75%", canary=1)
    assert [len(b.hosts) for b in plan.batches] == [1, 2, 2, 2, 2, 1]
    assert plan.lower_bound == 1 + 5  # the canary, then 9 hosts at 2 a batch


def test_a_current_host_still_serves_so_the_floor_counts_it():
    found = fleet(4)
    installed = {**old(found), "n00": TARGET}
    plan = make_plan(found, installed, TARGET, max_unavailable="4", floor="2", canary=0)
    assert batch_hosts(plan) == [["n01", "n02"], ["n03"]]


def test_a_domain_share_lets_at_least_one_host_of_a_domain_go():
    found = fleet(12, per_rack=3)  # 4 racks of 3
    plan = make_plan(found, old(found), TARGET, canary=0, max_unavailable="100%", domain_share="10%")
    assert [len(b.hosts) for b in plan.batches] == [4, 4, 4]  # one per rack each time
    assert all(b.domains == {"rack": 4} for b in plan.batches)


def test_hosts_a_floor_never_lets_go_are_blocked_with_the_reason_and_the_fix():
    found = [*fleet(3), Candidate("k1", ("k8s:training",), ())]
    plan = make_plan(found, old(found), TARGET, partition_floor={"slurm:h100": "100%"})
    assert batch_hosts(plan) == [["k1"]]
    assert set(plan.blocked) == {"n00", "n01", "n02"}
    reason = plan.blocked["n00"]
    assert "partition slurm:h100" in reason and "floor 100%" in reason and "keeps 3 of its 3" in reason
    assert "lower the floor of slurm:h100" in reason
    plan = make_plan(found, old(found), TARGET, partition_max_unavailable={"slurm:h100": "0"})
    assert "max_unavailable 0" in plan.blocked["n00"]


def test_unknown_versions_are_planned_and_versions_compare_without_case():
    found = [Candidate("a1", ("unscheduled",), ()), Candidate("a2", ("unscheduled",), ())]
    plan = make_plan(found, {"a1": None, "a2": "24.1.RC2"}, "24.1.rc2", component="ascend-driver")
    assert plan.hosts() == ["a1"]
    assert plan.current == ("a2",)
    assert make_plan(found, {}, "24.1.rc2").hosts() == ["a1", "a2"]  # absent: unknown too


def test_no_canary_and_a_canary_larger_than_the_fleet():
    found = fleet(10)
    assert not make_plan(found, old(found), TARGET, canary=0).batches[0].canary
    plan = make_plan(found[:2], old(found), TARGET, canary=5, max_unavailable="100%")
    assert batch_hosts(plan) == [["n00", "n01"]]
    assert plan.lower_bound == 1


def test_nothing_to_do_is_an_empty_plan():
    found = fleet(3)
    plan = make_plan(found, dict.fromkeys((c.host for c in found), TARGET), TARGET)
    assert plan.batches == () and plan.lower_bound == 0 and len(plan.current) == 3


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"component": "bios"}, "unknown component 'bios'"),
        ({"target": " "}, "target version ' ' is empty"),
        ({"target": None}, "target version None"),
        ({"canary": -1}, "canary -1 is not a number of hosts"),
        ({"max_unavailable": "0"}, "max_unavailable 0 lets no host go down"),
        ({"domain_share": "0%"}, "domain_share 0% lets no host go down"),
        ({"floor": "-5"}, "floor '-5' is not a limit"),
        ({"partition_floor": {"slurm:a100": "50%"}}, "partition_floor: no host of this plan is in partition"),
        ({"partition_max_unavailable": ["slurm:h100"]}, "partition_max_unavailable must map partition names"),
    ],
)
def test_bad_settings_are_refused_with_the_fix(kwargs, message):
    found = fleet(3)
    with pytest.raises(InputError) as err:
        make_plan(found, old(found), kwargs.pop("target", TARGET), **kwargs)
    assert message in err.value.message
    assert err.value.fix


def test_a_host_twice_is_refused():
    with pytest.raises(InputError, match="host n00 is a candidate twice"):
        make_plan(fleet(1) + fleet(1), {}, TARGET)


def test_every_component_names_its_group_and_bom_variable():
    assert {name: (c.group, c.variable) for name, c in COMPONENTS.items()} == {
        "nvidia-driver": ("gpu_nvidia", "nvidia_driver_version"),
        "ascend-driver": ("npu_ascend", "ascend_driver_version"),
        "ascend-firmware": ("npu_ascend", "ascend_firmware_version"),
        "cann": ("npu_ascend", "cann_version"),
    }


# -------------------------------------------------------------------- plan.json ----


def test_the_plan_survives_a_json_round_trip():
    found = fleet(12, per_rack=4)
    plan = make_plan(
        found,
        {**old(found), "n03": TARGET},
        TARGET,
        canary=2,
        floor="50%",
        partition_max_unavailable={"slurm:h100": "3"},
    )
    data = json.loads(json.dumps(plan.to_dict()))
    assert Plan.from_dict(data) == plan
    assert data["limits"] == {
        "canary": 2,
        "max_unavailable": "10%",
        "partition_max_unavailable": {"slurm:h100": "3"},
        "floor": "50%",
        "partition_floor": {},
        "domain_share": "50%",
    }
    assert data["batches"][0] == {
        "index": 1,
        "canary": True,
        "hosts": ["n00", "n04"],
        "partitions": ["slurm:h100"],
        "domains": {"rack": 2},
    }


@pytest.mark.parametrize(
    "data", [{}, {"component": "x", "target": "1", "batches": [{"hosts": []}]}, [], None]
)
def test_what_is_not_a_plan_is_refused(data):
    with pytest.raises(InputError, match="not an upgrade plan"):
        Plan.from_dict(data)
