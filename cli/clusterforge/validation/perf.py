"""`clusterforge validate --level perf`: benchmarks alone, then in pairs, then verdicts (docs/design.md,
"Multi-node performance validation").

1. Phase local of playbooks/validate_perf.yml on every accelerator node of the run: node results with
   the `perf.*` checks, and each node's rails as it reported them.
2. Rounds of pair tests planned by cfcore.perf_pairing.PairIsolator: a survey, then each suspect
   re-paired with a known-good partner until every fault is placed (or perf_max_rounds).
3. Every node result gets `perf.pairs` from its verdict; the report gets the pairs and verdicts
   (`perf`); workflow.finish does the rest as for any level (outliers, reports, --quarantine, exit 3).
"""

from __future__ import annotations

import time
from typing import Any

from cfcore.catalog import sku_spec
from cfcore.inputs import InputError
from cfcore.perf_expectations import expectations_for
from cfcore.perf_pairing import PairIsolator, PlannedPair
from cfcore.perf_plan import host_info, pair_roles, perf_node

from clusterforge.errors import InvalidInput
from clusterforge.paths import project_root
from clusterforge.validation.inventory import Inventory, load_inventory
from clusterforge.validation.results import utc_now
from clusterforge.validation.runner import run_playbook
from clusterforge.validation.workflow import (
    RUNNER_DIR,
    Output,
    QuarantineOptions,
    accelerator_targets,
    ansible_run_meta,
    finish,
    preflight,
    prepare_out_dir,
    run_node_playbook,
)

PLAYBOOK = "validate_perf.yml"
LEVEL = "perf"
PERF_GROUPS = ("gpu_nvidia", "npu_ascend")
CHECK_PAIRS = "perf.pairs"
# A node verdict -> the status of its perf.pairs check.
VERDICT_STATUS = {
    "healthy": "pass",
    "bad_node": "fail",
    "bad_link": "fail",
    "inconclusive": "warn",
    "could_not_run": "error",
}


def validate_perf_fleet(
    inventory_path,
    output: Output,
    *,
    limit: str | None = None,
    forks: int | None = None,
    quarantine: QuarantineOptions | None = None,
    allow_scripts: bool = False,
    max_rounds: int = 4,
) -> None:
    started, clock = utc_now(), time.monotonic()
    inventory = load_inventory(inventory_path, limit, allow_scripts=allow_scripts)
    targets = accelerator_targets(
        inventory,
        PERF_GROUPS,
        inventory_path,
        limit,
        "perf validation benchmarks accelerator nodes: put them in those groups, or widen --limit",
    )
    node_skus = preflight(inventory)
    prepare_out_dir(output.out_dir)
    runs: list[dict[str, Any]] = []
    base = {"validate_hosts": ":".join(PERF_GROUPS), "validate_block_on_fail": False}
    results, run = run_node_playbook(
        PLAYBOOK,
        inventory,
        targets,
        node_skus,
        LEVEL,
        output,
        output.out_dir / RUNNER_DIR / "local",
        {**base, "perf_phase": "local"},
        limit=limit,
        forks=forks,
    )
    runs.append({"phase": "local", "rc": run.rc, "stdout": str(run.stdout_path)})

    isolator, info = _isolator(inventory, results, max_rounds)
    pairs_done: list[dict[str, Any]] = []
    while True:
        planned = isolator.next_round()
        if not planned:
            break
        round_number = isolator.rounds
        output.stderr.print(f"perf: round {round_number}, {len(planned)} pair(s)", markup=False)
        outcomes = _run_round(inventory, planned, info, output, base, forks, round_number, runs)
        for pair in planned:
            rails = outcomes.get(pair.a) or {}
            isolator.record(pair, {rail: _passed(rails.get(rail)) for rail in pair.rails})
            pairs_done.append(
                {
                    "round": round_number,
                    "a": pair.a,
                    "b": pair.b,
                    "results": {rail: rails.get(rail) or _no_result(rail) for rail in pair.rails},
                }
            )

    verdicts = isolator.node_verdicts()
    links = [_as_dict(link) for link in isolator.link_verdicts()]
    _add_pair_checks(results, verdicts, links, pairs_done)
    perf = {
        "rounds": isolator.rounds,
        "lower_bound_rounds": isolator.lower_bound_rounds(),
        "pairs": pairs_done,
        "verdicts": {host: _as_dict(verdict) for host, verdict in sorted(verdicts.items())},
        "links": links,
    }
    run_meta = ansible_run_meta(inventory_path, limit, LEVEL, started, ansible_runs=runs)
    finish(results, run_meta, clock, output, inventory=inventory, quarantine=quarantine, perf=perf)


def _isolator(inventory: Inventory, results: list[dict[str, Any]], max_rounds: int):
    """The pairing over the nodes that passed alone, with each node's rails as it reported them."""
    nodes, info, excluded = [], {}, {}
    for result in results:
        host = result["host"]
        view = inventory.vars_of(host)
        try:
            sku = sku_spec(str(view.get("node_sku")), view.get("clusterforge_sku_catalog") or None)
            expect = expectations_for(
                str(view.get("node_sku")), sku_spec=sku, overrides=view.get("perf_expectations") or None
            )
        except InputError as err:
            raise InvalidInput(f"host {host}: {err}", "fix node_sku or perf_expectations") from None
        facts = result.get("facts") or {}
        nodes.append(
            perf_node(
                host,
                view,
                sku,
                list(facts.get("perf_rails") or []),
                bool(facts.get("perf_nccl")),
                list(facts.get("perf_npu_nics") or []),
            )
        )
        info[host] = host_info(host, view, sku, expect, bool(view.get("perf_gpudirect", True)))
        if result["status"] == "fail":
            excluded[host] = "bad_node"
        elif result["status"] == "error":
            excluded[host] = "could_not_run"
    return PairIsolator(nodes, excluded, max_rounds=max_rounds), info


def _run_round(inventory, planned: list[PlannedPair], info, output: Output, base, forks, number, runs):
    """One pairs phase; {side-a host: {rail: rail result}}."""
    roles = pair_roles(planned, info)
    collected: dict[str, dict[str, Any]] = {}

    def on_event(event: str, data: dict[str, Any]) -> None:
        res = data.get("res") or {}
        host = data.get("host")
        if event == "runner_on_ok" and isinstance(res, dict) and isinstance(res.get("pair_result"), dict):
            collected[host] = res["pair_result"].get("results") or {}

    run = run_playbook(
        project_root() / "playbooks" / PLAYBOOK,
        inventory.path,
        output.out_dir / RUNNER_DIR / f"pairs-{number}",
        on_event,
        extravars={**base, "perf_phase": "pairs", "perf_pair_roles": roles},
        limit=",".join(sorted(roles)),
        forks=forks,
    )
    runs.append({"phase": f"pairs-{number}", "rc": run.rc, "stdout": str(run.stdout_path)})
    return collected


def _passed(rail_result: dict[str, Any] | None) -> bool | None:
    """A rail result -> the isolator's pass (True), fail (False) or could not run (None)."""
    if not rail_result:
        return None
    status = rail_result.get("status")
    if status in ("pass", "warn"):
        return True
    if status == "fail":
        return False
    return None


def _no_result(rail: str) -> dict[str, Any]:
    return {
        "status": "error",
        "gbps": None,
        "message": f"{rail}: no result (the pair's task failed or never ran)",
    }


def _as_dict(item: Any) -> dict[str, Any]:
    return item if isinstance(item, dict) else item.to_dict()


def _add_pair_checks(results, verdicts, links, pairs_done) -> None:
    """perf.pairs on every node result: its verdict, with the pairs it was in as evidence."""
    by_host: dict[str, list[str]] = {}
    for pair in pairs_done:
        for host, other in ((pair["a"], pair["b"]), (pair["b"], pair["a"])):
            shown = ", ".join(
                f"{rail} {r.get('status')}"
                + (f" {r['gbps']:.1f}" if isinstance(r.get("gbps"), int | float) else "")
                for rail, r in pair["results"].items()
            )
            by_host.setdefault(host, []).append(f"round {pair['round']} with {other}: {shown}")
    for result in results:
        host = result["host"]
        verdict = _as_dict(verdicts.get(host)) if host in verdicts else None
        if verdict is None:
            continue
        name = verdict.get("verdict")
        if host not in by_host and name in ("bad_node", "could_not_run"):
            # Failed alone: not paired; its own perf.* checks say why.
            check = {
                "id": CHECK_PAIRS,
                "status": "skip",
                "message": f"not paired: {name.replace('_', ' ')} in the single-node tests",
                "evidence": {},
                "remedy": "",
            }
        else:
            status = VERDICT_STATUS.get(name, "error")
            path_faults = [
                link for link in links if link.get("verdict") == "bad_path" and host in (link["a"], link["b"])
            ]
            if status == "pass" and path_faults:
                status = "warn"
            check = {
                "id": CHECK_PAIRS,
                "status": status,
                "message": _verdict_message(name, verdict, path_faults),
                "evidence": {"pairs": by_host.get(host, []), "verdict": verdict.get("evidence") or []},
                "remedy": _verdict_remedy(name, verdict, path_faults),
            }
        result["checks"].append(check)
        gbps = [
            r.get("gbps")
            for pair in pairs_done
            if host in (pair["a"], pair["b"])
            for rail, r in pair["results"].items()
            if rail != "nccl" and isinstance(r.get("gbps"), int | float)
        ]
        if gbps:
            result["metrics"]["perf.pair_min_gbps"] = min(gbps)
        from cfcore.results import worst

        result["status"] = worst([c["status"] for c in result["checks"]])


def _verdict_message(name: str, verdict: dict[str, Any], path_faults: list[dict[str, Any]]) -> str:
    rails = ", ".join(verdict.get("rails") or [])
    if name == "healthy":
        if path_faults:
            paths = "; ".join(f"{f['a']}<->{f['b']} {f['rail']}" for f in path_faults)
            return f"healthy, but a path between healthy nodes failed: {paths}"
        return "every pair test passed, alone or with a known-good partner"
    if name == "bad_link":
        return f"bad link on rail(s) {rails}: failed with known-good partners, the node's other rails pass"
    if name == "bad_node":
        return f"bad node: failed with known-good partners on {rails or 'every rail'}"
    if name == "inconclusive":
        return f"inconclusive: {rails or 'some rails'} failed and no known-good partner settled it"
    return "could not run the pair tests"


def _verdict_remedy(name: str, verdict: dict[str, Any], path_faults: list[dict[str, Any]]) -> str:
    rails = ", ".join(verdict.get("rails") or [])
    if name == "bad_link":
        return (
            f"check {rails}: the cable or transceiver and the switch port (error counters with perfquery / "
            "ibdiagnet), reseat or replace, then rerun with --limit this node"
        )
    if name == "bad_node":
        return "drain the node; check its HCAs, PCIe links and GPUDirect (nvidia_peermem), then rerun alone"
    if name == "inconclusive":
        return "rerun with more healthy nodes of this SKU in --limit so failures can be re-paired"
    if path_faults:
        return "check the switches between the named nodes (leaf uplinks, spine ports) on those rails"
    if name == "could_not_run":
        return "see the pairs' evidence; fix what kept the tests from running and rerun"
    return ""
