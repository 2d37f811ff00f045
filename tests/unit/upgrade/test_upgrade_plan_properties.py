"""Properties of the rolling-upgrade planner (cfcore/upgrade_plan.py) over generated fleets.

Each generated fleet has hosts in racks, leaf switches and NVLink domains, in
zero to three partitions, with installed versions (the target, an older one,
unknown) and limits. The limits a batch must keep are recomputed here from
the settings, not read back from the plan.
"""

from __future__ import annotations

import json
import random
from collections import Counter

from cfcore.upgrade_plan import Candidate, Limit, Plan, make_plan
from hypothesis import given, settings
from hypothesis import strategies as st

TARGET = "570.133.20"
PARTITIONS = ("slurm:a", "slurm:b", "k8s:training")
# No example database: nothing written into the checkout.
EXAMPLES = settings(max_examples=80, deadline=None, database=None)


def limits(low: int):
    """A Limit: a count from `low` to 6, or a percent from `low` to 100."""
    return st.one_of(
        st.integers(low, 6).map(Limit),
        st.integers(max(low, 0), 100).map(lambda p: Limit(p, percent=True)),
    )


@st.composite
def hosts(draw) -> tuple[list[Candidate], dict[str, str | None]]:
    count = draw(st.integers(1, 40))
    racks = draw(st.integers(1, 6))
    found, installed = [], {}
    for i in range(count):
        rack = draw(st.integers(0, racks - 1))
        domains = [("rack", f"r{rack}")]
        if draw(st.booleans()):
            domains.append(("leaf_switch", f"leaf{rack // 2}"))
        if draw(st.booleans()):
            domains.append(("nvlink_domain", f"nv{rack}-{i % 2}"))
        partitions = tuple(sorted(draw(st.sets(st.sampled_from(PARTITIONS), max_size=2)))) or ("unscheduled",)
        host = f"n{i:02d}"
        found.append(Candidate(host, partitions, tuple(domains)))
        installed[host] = draw(st.sampled_from([TARGET, "560.35.03", None]))
    return found, installed


@st.composite
def settings_of(draw) -> dict:
    floor_override = draw(st.one_of(st.none(), st.tuples(st.sampled_from(PARTITIONS), limits(0))))
    max_override = draw(st.one_of(st.none(), st.tuples(st.sampled_from(PARTITIONS), limits(1))))
    return {
        "canary": draw(st.integers(0, 3)),
        "max_unavailable": draw(limits(1)),
        "floor": draw(st.one_of(st.just(Limit(0)), limits(0))),
        "domain_share": draw(limits(1)),
        "partition_floor": dict([floor_override]) if floor_override else {},
        "partition_max_unavailable": dict([max_override]) if max_override else {},
    }


def plan_of(found, installed, options) -> Plan:
    """make_plan, the overrides kept to partitions the fleet has (others are refused: tested by hand)."""
    present = {p for c in found for p in c.partitions}
    options = {
        **options,
        "partition_floor": {p: v for p, v in options["partition_floor"].items() if p in present},
        "partition_max_unavailable": {
            p: v for p, v in options["partition_max_unavailable"].items() if p in present
        },
    }
    return make_plan(found, installed, TARGET, **options), options


def allowances(found, options) -> tuple[dict, dict]:
    """Per partition and per domain: the most hosts down in one batch, from the settings."""
    sizes = Counter(p for c in found for p in c.partitions)
    domain_sizes = Counter(d for c in found for d in c.domains)
    per_partition = {}
    for name, size in sizes.items():
        most = options["partition_max_unavailable"].get(name, options["max_unavailable"]).of(size)
        kept = options["partition_floor"].get(name, options["floor"]).kept_of(size)
        per_partition[name] = max(0, min(most, size - kept))
    return per_partition, {d: options["domain_share"].of(n) for d, n in domain_sizes.items()}


def breaks_a_limit(hosts, by_host, per_partition, per_domain) -> bool:
    down_p = Counter(p for h in hosts for p in by_host[h].partitions)
    down_d = Counter(d for h in hosts for d in by_host[h].domains)
    return any(n > per_partition[p] for p, n in down_p.items()) or any(
        n > per_domain[d] for d, n in down_d.items()
    )


@EXAMPLES
@given(hosts(), settings_of())
def test_every_eligible_host_is_in_exactly_one_batch(fleet, options):
    found, installed = fleet
    plan, options = plan_of(found, installed, options)
    planned = plan.hosts()
    current = {h for h, v in installed.items() if v == TARGET}
    assert len(planned) == len(set(planned))
    assert set(plan.current) == current
    assert not current & set(planned)
    assert not set(plan.blocked) & set(planned)
    assert set(planned) | current | set(plan.blocked) == {c.host for c in found}


@EXAMPLES
@given(hosts(), settings_of())
def test_a_host_is_blocked_exactly_when_one_of_its_partitions_may_lose_none(fleet, options):
    found, installed = fleet
    plan, options = plan_of(found, installed, options)
    per_partition, _ = allowances(found, options)
    for cand in found:
        if installed[cand.host] == TARGET:
            continue
        stuck = [p for p in cand.partitions if per_partition[p] == 0]
        assert (cand.host in plan.blocked) == bool(stuck)
        for name in stuck:
            assert f"partition {name}" in plan.blocked[cand.host]


@EXAMPLES
@given(hosts(), settings_of())
def test_no_batch_exceeds_a_partition_limit_floor_or_domain_share(fleet, options):
    found, installed = fleet
    plan, options = plan_of(found, installed, options)
    per_partition, per_domain = allowances(found, options)
    by_host = {c.host: c for c in found}
    for batch in plan.batches:
        assert batch.hosts
        assert not breaks_a_limit(batch.hosts, by_host, per_partition, per_domain)


@EXAMPLES
@given(hosts(), settings_of())
def test_batches_fill_up_no_later_host_would_fit_an_earlier_batch(fleet, options):
    found, installed = fleet
    plan, options = plan_of(found, installed, options)
    per_partition, per_domain = allowances(found, options)
    by_host = {c.host: c for c in found}
    for k, batch in enumerate(plan.batches):
        if batch.canary and len(batch.hosts) == options["canary"]:
            continue  # a full canary batch takes no more, by design
        for later in plan.batches[k + 1 :]:
            for host in later.hosts:
                assert breaks_a_limit((*batch.hosts, host), by_host, per_partition, per_domain), (
                    f"{host} of batch {later.index} would fit batch {batch.index}"
                )


@EXAMPLES
@given(hosts(), settings_of())
def test_the_canary_batch_comes_first_with_canary_hosts(fleet, options):
    found, installed = fleet
    plan, options = plan_of(found, installed, options)
    canary = options["canary"]
    planned = len(plan.hosts())
    assert [b.index for b in plan.batches] == list(range(1, len(plan.batches) + 1))
    assert not any(b.canary for b in plan.batches[1:])
    if not planned:
        assert plan.batches == ()
        return
    first = plan.batches[0]
    assert first.canary == (canary > 0)
    if canary:
        assert len(first.hosts) <= canary
        # Fewer only where the limits allow no more together (the fill-up property shows it).
        per_partition, per_domain = allowances(found, options)
        if len(first.hosts) < min(canary, planned):
            by_host = {c.host: c for c in found}
            others = [h for h in plan.hosts() if h not in first.hosts]
            assert all(breaks_a_limit((*first.hosts, h), by_host, per_partition, per_domain) for h in others)


@EXAMPLES
@given(hosts(), settings_of(), st.randoms(use_true_random=False))
def test_the_plan_depends_on_the_fleet_not_on_the_order_it_came_in(fleet, options, rng: random.Random):
    found, installed = fleet
    plan, options = plan_of(found, installed, options)
    shuffled = list(found)
    rng.shuffle(shuffled)
    reordered = dict(sorted(installed.items(), key=lambda _item: rng.random()))
    assert make_plan(shuffled, reordered, TARGET, **options) == plan
    assert make_plan(found, installed, TARGET, **options) == plan


@EXAMPLES
@given(hosts(), settings_of())
def test_no_plan_beats_the_lower_bound_and_the_json_round_trip_is_exact(fleet, options):
    found, installed = fleet
    plan, _ = plan_of(found, installed, options)
    assert len(plan.batches) >= plan.lower_bound
    assert (plan.lower_bound == 0) == (not plan.hosts())
    assert Plan.from_dict(json.loads(json.dumps(plan.to_dict()))) == plan
