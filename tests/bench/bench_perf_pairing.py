"""Benchmark of the perf pairing and isolation (cfcore/perf_pairing.py): prints figures, asserts nothing.

    .venv/bin/python tests/bench/bench_perf_pairing.py [--nodes 1000 10000] [--per-rack 32] [--repeats 3]

A synthetic GPU fleet of one SKU in racks of --per-rack nodes, each node with 8 compute HCAs
(mlx5_0..7) and the pseudo-rail nccl. Faults are injected with a fixed seed and a pair test is
answered by an oracle (pass iff both ports and the path between them are good). Settings:
typical faults (1% of the nodes with one or two bad ports, 0.3% bad on every port, 0.3% with a bad
all-reduce, bad paths on 0.5% of the survey's pairs of fault-free nodes) and many faults (45% of the
nodes with a bad port). For each: plan_survey (best of --repeats), the slowest round's planning
(next_round), the whole isolation, the rounds used against lower_bound_rounds(), the faults injected
and found, and the verdicts that differ from the injected faults.

Aim: 10,000 nodes with 9 rails each plan a round in well under 1 s.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "plugins" / "module_utils"))

from cfcore.perf_pairing import BAD_LINK, BAD_NODE, HEALTHY, PairIsolator, PerfNode, plan_survey  # noqa: E402

RAILS = (*(f"mlx5_{i}" for i in range(8)), "nccl")
COLUMNS = ("survey ms", "round ms", "all ms", "rounds", "bound", "faults", "found", "wrong")


def fleet(count: int, per_rack: int) -> list[PerfNode]:
    return [
        PerfNode(f"gpu-r{i // per_rack:03d}-n{i % per_rack:02d}", "h100-sxm", f"r{i // per_rack:03d}", RAILS)
        for i in range(count)
    ]


def typical_faults(nodes: list[PerfNode], rng: random.Random) -> tuple[set, set]:
    """(bad ports, bad paths) of the typical setting (module docstring)."""
    count = len(nodes)
    faulty = rng.sample([n.name for n in nodes], count // 100 + 2 * (count * 3 // 1000))
    ports = set()
    for index, name in enumerate(faulty):
        if index < count // 100:
            rails = rng.sample(RAILS[:-1], rng.randint(1, 2))
        else:
            rails = RAILS if index % 2 else ("nccl",)
        ports.update((name, rail) for rail in rails)
    broken = {name for name, _ in ports}
    clean = [frozenset((p.a, p.b)) for p in plan_survey(nodes)[0] if not {p.a, p.b} & broken]
    paths = {(link, rng.choice(RAILS)) for link in rng.sample(clean, count // 200)}
    return ports, paths


def many_faults(nodes: list[PerfNode], rng: random.Random) -> tuple[set, set]:
    return {(n.name, rng.choice(RAILS)) for n in nodes if rng.random() < 0.45}, set()


def expected_verdict(name: str, ports: set) -> tuple[str, tuple]:
    rails = tuple(sorted(rail for node, rail in ports if node == name))
    if not rails:
        return HEALTHY, ()
    return (BAD_NODE if len(rails) == len(RAILS) or "nccl" in rails else BAD_LINK), rails


def isolate(nodes: list[PerfNode], ports: set, paths: set) -> dict:
    """Runs every round against the oracle; the figures of the run."""
    by_node = {}
    for node, rail in ports:
        by_node.setdefault(node, set()).add(rail)

    def oracle(pair) -> dict:
        link = frozenset((pair.a, pair.b))
        bad_a, bad_b = by_node.get(pair.a, ()), by_node.get(pair.b, ())
        return {r: r not in bad_a and r not in bad_b and (link, r) not in paths for r in pair.rails}

    start = time.perf_counter()
    isolator = PairIsolator(nodes)
    slowest, pairs = 0.0, isolator.next_round()
    while pairs:
        for pair in pairs:
            isolator.record(pair, oracle(pair))
        began = time.perf_counter()
        pairs = isolator.next_round()
        slowest = max(slowest, time.perf_counter() - began)
    verdicts = isolator.node_verdicts()
    links = isolator.link_verdicts()
    took = time.perf_counter() - start
    found_paths = {(frozenset((link.a, link.b)), link.rail) for link in links if link.verdict == "bad_path"}
    wrong = [
        name
        for name, verdict in verdicts.items()
        if (verdict.verdict, verdict.rails) != expected_verdict(name, ports)
    ]
    faulty = {name for name, _ in ports}
    blamed = sum(v.verdict in (BAD_NODE, BAD_LINK) for v in verdicts.values())
    return {
        "round": slowest,
        "all": took,
        "rounds": isolator.rounds,
        "bound": isolator.lower_bound_rounds(),
        "faults": f"{len(faulty)}+{len(paths)}p",
        "found": f"{blamed}+{len(found_paths & paths)}p",
        "wrong": len(wrong) + len(found_paths ^ paths),
    }


def best_of(repeats: int, action) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--per-rack", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print("faults: faulty nodes + bad paths (p); found: bad_node/bad_link verdicts + bad_path links (p)")
    print(f"{'setting':<30}" + "".join(f"{column:>11}" for column in COLUMNS))
    for count in args.nodes:
        nodes = fleet(count, args.per_rack)
        survey = best_of(args.repeats, lambda nodes=nodes: plan_survey(nodes))
        for name, inject in (("typical faults", typical_faults), ("many faults", many_faults)):
            ports, paths = inject(nodes, random.Random(count))
            run = isolate(nodes, ports, paths)
            figures = (f"{survey * 1000:.0f}", f"{run['round'] * 1000:.0f}", f"{run['all'] * 1000:.0f}",
                       run["rounds"], run["bound"], run["faults"], run["found"], run["wrong"])  # fmt: skip
            print(f"{f'{count} nodes, {name}':<30}" + "".join(f"{figure!s:>11}" for figure in figures))


if __name__ == "__main__":
    main()
