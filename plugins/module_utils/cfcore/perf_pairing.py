"""Pairing and isolation of the multi-node perf tests: who tests with whom, and what a failed test was.

docs/design.md, "Multi-node performance validation", "Pairing and isolation", is the contract. In short:

- A pair test of nodes a and b on rail r tests port (a, r), port (b, r) and the path between them.
  Rails are compute HCAs ("mlx5_0"...), Ascend NPU NICs ("npu0"...) and the pseudo-rail "nccl" (the
  two-node all-reduce); rail i of a is tested with rail i of b.
- Round 1, the survey (`plan_survey`), is a matching inside each group (the SKU): each node in at most
  one pair, partners in different racks where possible. An odd node out waits for round 2.
- A pass makes both ports known-good; a fail makes both suspects. Each later round pairs every node
  with a port still to test (a suspect, an odd node out, a port whose tests could not run) with a
  partner known-good on those rails, on those rails only. A port that fails with a known-good partner
  is bad, one that passes is good; a failed test whose two ports both turn out good was the path.
- `PairIsolator` plans the rounds and keeps the results; `node_verdicts()` and `link_verdicts()` say
  what was found.

Used by `clusterforge validate --level perf` (clusterforge.validation.perf), which runs the rounds,
and by the filters cf_perf_survey and cf_perf_survey_roles, which plan a plain playbook run's survey.
Pure logic, stdlib only, Python 3.8.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .inputs import InputError

NCCL = "nccl"  # the pseudo-rail: the two-node all-reduce
DEFAULT_MAX_ROUNDS = 4

HEALTHY = "healthy"
BAD_NODE = "bad_node"
BAD_LINK = "bad_link"
COULD_NOT_RUN = "could_not_run"
INCONCLUSIVE = "inconclusive"
NODE_VERDICTS = (HEALTHY, BAD_NODE, BAD_LINK, COULD_NOT_RUN, INCONCLUSIVE)
EXCLUDED_VERDICTS = (BAD_NODE, COULD_NOT_RUN)  # what the single-node tests can say of a node

BAD_PORT_A = "bad_port_a"
BAD_PORT_B = "bad_port_b"
BAD_PORTS = "bad_ports"
BAD_PATH = "bad_path"
UNRESOLVED = "unresolved"
LINK_VERDICTS = (BAD_PORT_A, BAD_PORT_B, BAD_PORTS, BAD_PATH, UNRESOLVED)

# The state of a port, (node, rail).
UNTESTED = "untested"  # no result yet: never tested, or every test of it could not run
SUSPECT = "suspect"  # failed, never with a known-good partner
GOOD = "good"  # passed once: a pass needs both ports working
BAD = "bad"  # failed with a known-good partner
TO_TEST = (UNTESTED, SUSPECT)

_NO_RAILS = frozenset()


@dataclass(frozen=True)
class PerfNode:
    name: str
    group: str  # pairing group: the node's SKU; only nodes of one group pair
    rack: str | None  # None: unknown, any other rack counts as another one
    rails: tuple[str, ...]  # what a pair test of this node tests, in the node's order


@dataclass(frozen=True)
class PlannedPair:
    a: str  # the client side (ib_write_bw client, mpirun's launcher)
    b: str  # the server side
    rails: tuple[str, ...]  # the rails this test covers, in a's order

    def to_dict(self) -> dict:
        return {"a": self.a, "b": self.b, "rails": list(self.rails)}


@dataclass(frozen=True)
class NodeVerdict:
    node: str
    verdict: str  # one of NODE_VERDICTS
    rails: tuple[str, ...] = ()  # the bad or unresolved rails, sorted
    evidence: tuple[str, ...] = ()  # short lines for a person, in the order things happened

    def to_dict(self) -> dict:
        return {"verdict": self.verdict, "rails": list(self.rails), "evidence": list(self.evidence)}


@dataclass(frozen=True)
class LinkVerdict:
    a: str
    b: str
    rail: str
    round: int  # the round of the failed test
    verdict: str  # one of LINK_VERDICTS

    def to_dict(self) -> dict:
        return {"a": self.a, "b": self.b, "rail": self.rail, "round": self.round, "verdict": self.verdict}


def nodes_from_dicts(items) -> list:
    """[PerfNode] of `[{name, group, rack, rails}]` (rack may be left out); InputError naming the bad item."""
    if not isinstance(items, (list, tuple)):
        raise InputError(
            f"nodes must be a list of {{name, group, rack, rails}}, got {type(items).__name__}",
            "pass one mapping per node",
        )
    nodes, seen = [], set()
    for index, item in enumerate(items):
        where = f"nodes[{index}]"
        if not isinstance(item, Mapping):
            raise InputError(f"{where} is not a mapping: {item!r}", "write it as {name, group, rack, rails}")
        unknown = sorted(str(key) for key in item if key not in ("name", "group", "rack", "rails"))
        if unknown:
            raise InputError(f"{where} has unknown keys {', '.join(unknown)}", "use name, group, rack, rails")
        name, group, rack, rails = (item.get(key) for key in ("name", "group", "rack", "rails"))
        if not isinstance(name, str) or not name:
            raise InputError(f"{where} has no name: {item!r}", "name the host")
        where = f"{where} ({name})"
        if not isinstance(group, str) or not group:
            raise InputError(f"{where} has no group", "set group to the node's SKU: only like nodes pair")
        if isinstance(rack, bool) or not isinstance(rack, (str, int, type(None))):
            raise InputError(f"{where} has rack {rack!r}", "name the rack, or leave it out")
        if not isinstance(rails, (list, tuple)) or not all(isinstance(r, str) and r for r in rails):
            raise InputError(f"{where} has rails {rails!r}", 'list the rail names, e.g. ["mlx5_0", "nccl"]')
        if len(set(rails)) != len(rails):
            raise InputError(f"{where} names a rail twice: {list(rails)}", "list each rail once")
        if name in seen:
            raise InputError(f"{where} is listed twice", "list each node once")
        seen.add(name)
        nodes.append(PerfNode(name, group, None if rack is None else str(rack), tuple(rails)))
    return nodes


# ---------------------------------------------------------------------- survey ----


def plan_survey(nodes) -> tuple:
    """Round 1: (pairs, odd nodes out). A matching inside each group, partners in different racks.

    Nodes without rails have nothing to test and are left out of both. Deterministic: the same
    nodes in any order give the same pairs.
    """
    pairs, odd = [], []
    for members in _testable_groups(_checked_nodes(nodes)).values():
        group_pairs, group_odd = _survey_group(members)
        pairs.extend(group_pairs)
        odd.extend(group_odd)
    return pairs, sorted(odd)


def _survey_group(members: list) -> tuple:
    """The survey of one group: the nodes by rack, the first half paired with the second.

    Each rack holds consecutive places, so a node and the one half the list further on sit in the same
    rack only when that rack holds more than half the group: then those same-rack pairs cannot be
    avoided by any matching, and every other pair crosses racks.
    """
    ordered = sorted(members, key=lambda node: (_rack_key(node.rack), node.name))
    odd = []
    if len(ordered) % 2:
        # The odd node out comes from the largest rack: what is left has the most pairs across racks.
        sizes = {}
        for node in ordered:
            sizes[node.rack] = sizes.get(node.rack, 0) + 1
        largest = max(sorted(sizes, key=_rack_key), key=sizes.__getitem__)
        out = [node for node in ordered if node.rack == largest][-1]
        ordered.remove(out)
        odd.append(out.name)
    half = len(ordered) // 2
    pairs = []
    for first, second in zip(ordered[:half], ordered[half:]):
        theirs = set(second.rails)
        rails = tuple(rail for rail in first.rails if rail in theirs)
        if rails:
            pairs.append(PlannedPair(first.name, second.name, rails))
        else:  # like nodes share their rails; a group that does not cannot test this pair
            odd.extend((first.name, second.name))
    return pairs, odd


def _rack_key(rack) -> tuple:
    # str(): an inventory may number its racks (rack: 12), a YAML int
    return (rack is None, "" if rack is None else str(rack))


def _checked_nodes(nodes) -> list:
    nodes = list(nodes)
    seen = set()
    for node in nodes:
        if not isinstance(node, PerfNode):
            raise ValueError(f"not a PerfNode: {node!r} (nodes_from_dicts converts mappings)")
        if not isinstance(node.name, str) or not node.name or not isinstance(node.group, str):
            raise ValueError(f"{node!r}: name and group must be text")
        if isinstance(node.rack, bool) or not isinstance(node.rack, (str, int, type(None))):
            raise ValueError(f"{node.name}: rack must be a name or None, got {node.rack!r}")
        if not all(isinstance(rail, str) for rail in node.rails) or len(set(node.rails)) != len(node.rails):
            raise ValueError(f"{node.name}: rails must be distinct names, got {node.rails!r}")
        if node.name in seen:
            raise ValueError(f"node {node.name} is given twice")
        seen.add(node.name)
    return nodes


def _testable_groups(nodes: list) -> dict:
    """{group: [PerfNode]} of the nodes with rails to test, groups sorted."""
    groups = {}
    for node in nodes:
        if node.rails:
            groups.setdefault(node.group, []).append(node)
    return {group: groups[group] for group in sorted(groups)}


# ------------------------------------------------------------------- isolation ----


@dataclass(frozen=True)
class _FailedTest:
    a: str
    b: str
    rail: str
    round: int


class PairIsolator:
    """The rounds of pair tests of one perf validation, and what their results say.

        isolator = PairIsolator(nodes, excluded={"gpu-07": "bad_node"}, max_rounds=4)
        pairs = isolator.next_round()  # round 1: the survey
        while pairs:
            for pair in pairs:
                isolator.record(pair, run_pair_test(pair))  # {rail: True | False | None}
            pairs = isolator.next_round()
        isolator.node_verdicts(), isolator.link_verdicts()

    Rounds after the survey pair each node with ports to test (`a`) with a partner (`b`) that is
    known-good on them: the nodes with the most to test first, each with a partner of another rack
    where one is free, one whose ports are all settled before one that still has tests of its own,
    never one it was tested with on those rails before.
    """

    def __init__(self, nodes, excluded: Mapping | None = None, max_rounds: int = DEFAULT_MAX_ROUNDS):
        nodes = _checked_nodes(nodes)
        self.max_rounds = _checked_max_rounds(max_rounds)
        self._excluded = _checked_excluded(excluded)
        self.rounds = 0
        self._nodes = {node.name: node for node in nodes}
        self._groups = {}  # group -> the names of its nodes to pair, sorted
        for group, members in _testable_groups(nodes).items():
            names = sorted(node.name for node in members if node.name not in self._excluded)
            if names:
                self._groups[group] = names
        paired = [self._nodes[name] for names in self._groups.values() for name in names]
        self._state = {node.name: dict.fromkeys(node.rails, UNTESTED) for node in paired}
        self._survey, odd = plan_survey(paired)
        self._evidence = {node.name: [] for node in paired}
        for name in odd:
            self._evidence[name].append(f"odd node out of the survey of group {self._nodes[name].group}")
        self._history = {node.name: {} for node in paired}  # node -> partner -> rails tested together
        self._errored = set()  # ports with a test that could not run
        self._failed = []  # every failed test, in the order recorded
        self._planned = {}  # (a, b) -> PlannedPair of the current round
        self._recorded = set()
        self._finished = False
        self._bound = None  # lower_bound_rounds(), fixed once the survey's results are in

    # -- rounds --

    def next_round(self) -> list:
        """The pairs of the next round: the survey first. [] when nothing is left to test, for good.

        A pair of the round before that got no record() counts as a test that could not run.
        """
        if self._finished:
            return []
        for key, pair in self._planned.items():
            if key not in self._recorded:
                self._apply(pair, {})
        if self.rounds == 1 and self._bound is None:
            self._bound = self._bound_after_survey()
        if self.rounds == 0:
            pairs = list(self._survey)
        elif self.rounds >= self.max_rounds:
            pairs = []
        else:
            pairs = self._plan_round()
        if not pairs:
            self._finished = True
            self._planned = {}
            return []
        self.rounds += 1
        self._planned = {(pair.a, pair.b): pair for pair in pairs}
        self._recorded = set()
        return list(pairs)

    def record(self, pair: PlannedPair, results: Mapping) -> None:
        """The results of a pair of the current round: rail -> True (pass), False (fail), None (not run).

        A rail left out counts as not run. ValueError for a pair not planned in the current round (or
        recorded already), a rail the pair does not test, or a result that is not True, False or None.
        """
        if not isinstance(pair, PlannedPair) or self._planned.get((pair.a, pair.b)) != pair:
            raise ValueError(f"{pair!r} is not a pair of the current round ({self.rounds})")
        if (pair.a, pair.b) in self._recorded:
            raise ValueError(f"the pair {pair.a} - {pair.b} of round {self.rounds} is recorded already")
        if not isinstance(results, Mapping):
            raise ValueError(f"results of {pair.a} - {pair.b} must map rails to True/False/None")
        unknown = sorted(str(rail) for rail in results if rail not in pair.rails)
        if unknown:
            raise ValueError(
                f"the pair {pair.a} - {pair.b} does not test {', '.join(unknown)}; "
                f"it tests {', '.join(pair.rails)}"
            )
        for rail, result in results.items():
            if result is not None and not isinstance(result, bool):
                raise ValueError(
                    f"result of {rail} for {pair.a} - {pair.b} is {result!r}, not True/False/None"
                )
        self._recorded.add((pair.a, pair.b))
        self._apply(pair, results)

    def _apply(self, pair: PlannedPair, results: Mapping) -> None:
        a, b = pair.a, pair.b
        for node, partner in ((a, b), (b, a)):
            self._history[node].setdefault(partner, set()).update(pair.rails)
        outcomes = {a: {}, b: {}}  # node -> (what, partner known-good, own port known-good) -> rails
        for rail in pair.rails:
            result = results.get(rail)
            before = {a: self._state[a][rail], b: self._state[b][rail]}
            if result is False:
                self._failed.append(_FailedTest(a, b, rail, self.rounds))
            for node, partner in ((a, b), (b, a)):
                own, theirs = before[node], before[partner]
                if result is None:
                    self._errored.add((node, rail))
                    what = "could not run"
                elif result:
                    what = "passed"
                    if own != BAD:
                        self._state[node][rail] = GOOD
                else:
                    what = "failed"
                    if own in TO_TEST:  # with a known-good partner the fault is this port
                        self._state[node][rail] = BAD if theirs == GOOD else SUSPECT
                key = (what, theirs == GOOD, own == GOOD)
                outcomes[node].setdefault(key, []).append(rail)
        for node, partner in ((a, b), (b, a)):
            for (what, partner_good, own_good), rails in outcomes[node].items():
                self._evidence[node].append(
                    _outcome_line(rails, len(pair.rails), what, partner, partner_good, own_good, self.rounds)
                )

    # -- planning a round after the survey --

    def _plan_round(self) -> list:
        pairs = []
        used = set()
        for names in self._groups.values():
            to_test, pools = self._candidates(names)
            for name, needs in to_test:
                if name in used:
                    continue  # a partner this round already: its own tests wait for the next
                found = self._partner_for(name, needs, pools, used)
                if found is not None:
                    partner, rails = found
                    used.update((name, partner))
                    pairs.append(PlannedPair(name, partner, rails))
        return pairs

    def _candidates(self, names: list) -> tuple:
        """(nodes with ports to test, partner pools) of one group.

        The nodes with ports to test come with those ports' rails, most rails first (they need the
        partners good on the most). Pools: [settled nodes, nodes with tests of their own], each
        {rails good -> _RackPool}.
        """
        to_test = []
        pools = [{}, {}]
        signatures = {}  # one frozenset per distinct set of good rails
        for name in names:
            ports = self._state[name]
            needs = tuple(rail for rail, state in ports.items() if state in TO_TEST)
            good = tuple(rail for rail, state in ports.items() if state == GOOD)
            if needs:
                to_test.append((name, needs))
            if good:
                signature = signatures.setdefault(good, frozenset(good))
                pool = pools[1 if needs else 0].setdefault(signature, _RackPool())
                pool.add(self._nodes[name].rack, name)
        to_test.sort(key=lambda item: (-len(item[1]), item[0]))
        ordered = [
            sorted(tier.items(), key=lambda item: (len(item[0]), sorted(item[0])))  # best fit first
            for tier in pools
        ]
        return to_test, ordered

    def _partner_for(self, name: str, needs: tuple, pools: list, used: set):
        """(partner, rails) for a node with ports to test, or None when no partner is free.

        A partner good on every rail to test, else one good on the most of them (the rest wait).
        """
        rack = self._nodes[name].rack
        history = self._history[name]
        wanted = frozenset(needs)

        def fresh(other):  # never a partner it already had for these rails
            return other != name and not (history.get(other, _NO_RAILS) & wanted)

        for tier in pools:
            covering = [pool for good, pool in tier if wanted <= good]
            for same_rack in (False, True):
                for pool in covering:
                    partner = pool.take(fresh, used, rack, same_rack)
                    if partner is not None:
                        return partner, needs
        for tier in pools:
            by_overlap = sorted(
                ((good & wanted, pool) for good, pool in tier if good & wanted),
                key=lambda item: (-len(item[0]), sorted(item[0])),
            )
            for covered, pool in by_overlap:

                def some_fresh(other, covered=covered):
                    return other != name and bool(covered - history.get(other, _NO_RAILS))

                for same_rack in (False, True):
                    partner = pool.take(some_fresh, used, rack, same_rack)
                    if partner is not None:
                        fresh_rails = covered - history.get(partner, _NO_RAILS)
                        return partner, tuple(rail for rail in needs if rail in fresh_rails)
        return None

    # -- bound --

    def lower_bound_rounds(self) -> int:
        """The fewest rounds this isolator can finish in, survey included (0: nothing to pair).

        1 when the survey leaves nothing to test: it found no fault, no node was odd out and every test
        ran. Otherwise, per group, from the state after the survey: S nodes with a port still to test on
        a rail some node of the group is known-good on (the only ports a later round can test: a port
        becomes known-good only by passing with a partner known-good on that rail), P nodes known-good
        on at least one rail, N nodes. Each of the S must be side a of some later pair (a node's ports
        are tested only as side a: side b is tested on rails it is known-good on). In a round the side-a
        nodes need distinct partners, each known-good on some rail (at most P of them), and a pair holds
        two of the N (at most N // 2 pairs). A node tested in a round can partner others from the next
        round on, so P grows by at most the nodes tested. The rounds after the survey are thus at least
        those of: tested = min(S left, P, N // 2); S -= tested; P += tested; until no S is left. The
        bound is 1 plus the most of these over the groups, and at most max_rounds.

        (`1 + ceil(S / known-good nodes)` is no lower bound: the nodes found good in round 2 partner
        others in round 3, and a node with one suspect rail partners others on its good rails.)
        Before the survey's results are in: 1 when the survey has a pair, else 0.
        """
        if self._bound is not None:
            return self._bound
        if self.rounds == 0:
            return 1 if self._survey else 0
        return self._bound_after_survey()

    def _bound_after_survey(self) -> int:
        bound = 1
        for names in self._groups.values():
            good_rails, partners = set(), 0
            for name in names:
                good = [rail for rail, state in self._state[name].items() if state == GOOD]
                good_rails.update(good)
                partners += bool(good)
            left = sum(
                1
                for name in names
                if any(state in TO_TEST and rail in good_rails for rail, state in self._state[name].items())
            )
            rounds, half = 1, len(names) // 2
            while left > 0:
                tested = min(left, partners, half)
                left, partners, rounds = left - tested, partners + tested, rounds + 1
            bound = max(bound, rounds)
        return min(bound, self.max_rounds)

    # -- verdicts --

    def link_verdicts(self) -> list:
        """A LinkVerdict per failed pair test, in the order recorded: what the failure turned out to be."""
        verdicts = []
        for test in self._failed:
            states = (self._state[test.a][test.rail], self._state[test.b][test.rail])
            verdict = {
                (BAD, BAD): BAD_PORTS,
                (BAD, GOOD): BAD_PORT_A,
                (GOOD, BAD): BAD_PORT_B,
                (GOOD, GOOD): BAD_PATH,
            }.get(states, UNRESOLVED)
            verdicts.append(LinkVerdict(test.a, test.b, test.rail, test.round, verdict))
        return verdicts

    def node_verdicts(self) -> dict:
        """{node: NodeVerdict} of every node given (excluded ones too), names sorted."""
        verdicts = {}
        for name, verdict in self._excluded.items():
            why = (
                "a single-node test failed" if verdict == BAD_NODE else "its single-node tests could not run"
            )
            verdicts[name] = NodeVerdict(name, verdict, (), (f"not paired: {why}",))
        for name in self._nodes:
            if name not in self._excluded and name not in self._state:
                verdicts[name] = NodeVerdict(name, COULD_NOT_RUN, (), ("not paired: no rail to pair-test",))
        paths = {}
        for link in self.link_verdicts():
            if link.verdict == BAD_PATH:
                for node, other in ((link.a, link.b), (link.b, link.a)):
                    paths.setdefault(node, []).append(
                        f"{link.rail} path to {other} is bad: failed in round {link.round}, "
                        "both ports passed with known-good partners"
                    )
        good_rails = {  # per group: the rails some node of it is known-good on
            group: {rail for name in names for rail, state in self._state[name].items() if state == GOOD}
            for group, names in self._groups.items()
        }
        for name in self._state:
            verdicts[name] = self._verdict(name, paths.get(name, []), good_rails)
        return dict(sorted(verdicts.items()))

    def _verdict(self, name: str, path_lines: list, good_rails: dict) -> NodeVerdict:
        ports = self._state[name]
        bad = [rail for rail, state in ports.items() if state == BAD]
        unresolved = [rail for rail, state in ports.items() if state in TO_TEST]
        evidence = self._evidence[name] + path_lines
        rails = tuple(sorted(bad + unresolved))
        if bad and (len(bad) == len(ports) or NCCL in bad):
            verdict = BAD_NODE
        elif bad:
            verdict = BAD_LINK
        elif not unresolved:
            verdict = HEALTHY
        elif all(ports[rail] == UNTESTED and (name, rail) in self._errored for rail in unresolved):
            verdict = COULD_NOT_RUN
            evidence = [*evidence, f"no result for {', '.join(unresolved)}: every test could not run"]
        else:
            verdict = INCONCLUSIVE
        if unresolved and verdict != COULD_NOT_RUN:
            evidence = [*evidence, self._why_unresolved(name, unresolved, good_rails)]
        return NodeVerdict(name, verdict, rails, tuple(evidence))

    def _why_unresolved(self, name: str, rails: list, good_rails: dict) -> str:
        shown = ", ".join(rails)
        if not self._finished:
            return f"{shown} not settled yet (round {self.rounds} of at most {self.max_rounds})"
        group = self._nodes[name].group
        members = self._groups[group]
        if self.rounds >= self.max_rounds:
            rounds = f"{self.rounds} round{'s' if self.rounds != 1 else ''}"
            return f"{shown} still unsettled after {rounds} (max_rounds {self.max_rounds})"
        if len(members) == 1:
            return f"no partner: the only node of group {group} to pair-test"
        if not good_rails[group] & set(rails):
            if len(members) == 2:
                return f"no known-good partner: group {group} has 2 nodes and their only pair failed"
            return f"no known-good partner: no node of group {group} passed a test on {shown}"
        return f"no known-good partner left for {shown} in group {group}: each was tried already"


def _outcome_line(rails, of, what, partner, partner_good, own_good, round_number) -> str:
    if len(rails) == of and of > 3:
        shown = f"all {of} rails"
    elif what == "passed" and len(rails) > 3:  # the rails that did not pass have their own lines
        shown = f"{len(rails)} of {of} rails"
    else:
        shown = ", ".join(rails)
    if what == "failed" and own_good:
        return f"{shown} failed with {partner} (round {round_number}), this port already known-good"
    known = "known-good " if partner_good else ""
    return f"{shown} {what} with {known}{partner} (round {round_number})"


class _RackPool:
    """Candidate partners with the same good rails, by rack; picks take the racks in turn."""

    def __init__(self):
        self._by_rack = {}  # rack -> names, picked from the end
        self._racks = None  # the turn order, fixed at the first pick
        self._next = 0

    def add(self, rack, name: str) -> None:
        self._by_rack.setdefault(rack, []).append(name)

    def take(self, accept, used: set, rack, same_rack: bool):
        """A free, accepted name from a rack other than `rack` (or only from `rack`), or None.

        A rack of None is unknown: any rack counts as another one, and same_rack finds nothing.
        """
        if self._racks is None:
            self._racks = sorted(self._by_rack, key=_rack_key)
            for names in self._by_rack.values():
                names.reverse()  # added in name order: the first name is picked first
        if same_rack:
            return _pick(self._by_rack.get(rack), accept, used) if rack is not None else None
        count, emptied, found = len(self._racks), False, None
        for step in range(count):
            index = (self._next + step) % count
            here = self._racks[index]
            if rack is not None and here == rack:
                continue
            names = self._by_rack[here]
            found = _pick(names, accept, used)
            emptied = emptied or not names
            if found is not None:
                self._next = index + 1  # the next pick starts at the next rack: spread over racks
                break
        if emptied:  # keep the turn short: a pool near its end would walk empty racks for each pick
            self._racks = [here for here in self._racks if self._by_rack[here]]
            self._next = self._next % len(self._racks) if self._racks else 0
        return found


def _pick(names, accept, used: set):
    """The last name of `names` that is free and accepted, removed; names used elsewhere are dropped."""
    if not names:
        return None
    for index in range(len(names) - 1, -1, -1):
        name = names[index]
        if name in used:
            del names[index]
        elif accept(name):
            del names[index]
            return name
    return None


def _checked_max_rounds(max_rounds) -> int:
    if isinstance(max_rounds, bool) or not isinstance(max_rounds, int) or max_rounds < 1:
        raise ValueError(f"max_rounds {max_rounds!r} is not a number of rounds (1 or more)")
    return max_rounds


def _checked_excluded(excluded) -> dict:
    if excluded is None:
        return {}
    if not isinstance(excluded, Mapping):
        raise ValueError(f"excluded must map hosts to {' or '.join(EXCLUDED_VERDICTS)}")
    for host, verdict in excluded.items():
        if verdict not in EXCLUDED_VERDICTS:
            raise ValueError(f"excluded {host}: {verdict!r} is not one of {', '.join(EXCLUDED_VERDICTS)}")
    return dict(excluded)
