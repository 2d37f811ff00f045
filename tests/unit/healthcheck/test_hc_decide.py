"""decide(): what the health check does in Slurm, for every status and node state (docs/design.md)."""

from __future__ import annotations

import pytest
from cfcore.healthcheck import Action, decide, health_reason
from cfcore.quarantine_rules import entry_problem


def state(flags: str, reason: str | None = None) -> dict:
    """A parse_slurm_node-like state: 'IDLE', 'IDLE+DRAIN', 'MIXED+DRAIN', 'DOWN', ..."""
    base, *rest = flags.split("+")
    drain = "DRAIN" in rest
    busy = base in ("MIXED", "ALLOCATED")
    return {
        "state": base,
        "flags": rest,
        "drain": drain,
        "drained": drain and not busy,
        "draining": drain and busy,
        "down": base == "DOWN",
        "reason": reason,
    }


OURS = "clusterforge-health: gpu.xid"
OURS_OTHER = "clusterforge-health: node.root_fs"
QUARANTINE = "clusterforge: gpu.xid 2026-11-30T12:05Z"
OPERATOR = "RMA ticket 4711"
STATES = {
    "idle": state("IDLE"),
    "mixed": state("MIXED"),
    "drained ours same": state("IDLE+DRAIN", OURS),
    "draining ours same": state("MIXED+DRAIN", OURS),
    "drained ours other ids": state("IDLE+DRAIN", OURS_OTHER),
    "drained by quarantine": state("IDLE+DRAIN", QUARANTINE),
    "drained by operator": state("IDLE+DRAIN", OPERATOR),
    "down not responding": state("DOWN", "Not responding"),
    "down no reason": state("DOWN"),
    "down drained ours": state("DOWN+DRAIN", OURS),
    "unknown": None,
}
# (status, state) -> action; the reason for drains is OURS (failing id gpu.xid).
TABLE = {
    "fail": {
        "idle": "drain",
        "mixed": "drain",
        "drained ours same": "none",
        "draining ours same": "none",
        "drained ours other ids": "drain",  # the reason follows the failing ids
        "drained by quarantine": "none",
        "drained by operator": "none",
        "down not responding": "none",
        "down no reason": "drain",
        "down drained ours": "none",
        "unknown": "drain",
    },
    "pass": {
        "idle": "none",
        "mixed": "none",
        "drained ours same": "resume",
        "draining ours same": "resume",
        "drained ours other ids": "resume",
        "drained by quarantine": "none",
        "drained by operator": "none",
        "down not responding": "none",
        "down no reason": "none",
        "down drained ours": "resume",
        "unknown": "none",
    },
}
TABLE["error"] = TABLE["fail"]
TABLE["warn"] = TABLE["pass"]
TABLE["skip"] = dict.fromkeys(STATES, "none")


@pytest.mark.parametrize("status", sorted(TABLE))
@pytest.mark.parametrize("name", sorted(STATES))
def test_decision_table(status, name):
    decision = decide(status, ["gpu.xid"], STATES[name])
    assert decision.action == TABLE[status][name], (status, name, decision)
    if decision.action == "drain":
        assert decision.reason == OURS


def test_reasons_say_why_nothing_happens():
    assert decide("fail", ["gpu.xid"], STATES["drained by operator"]) == Action(
        "none", f"left alone: taken out by someone else: {OPERATOR}"
    )
    assert decide("fail", ["gpu.xid"], STATES["drained ours same"]) == Action(
        "none", f"already drained: {OURS}"
    )
    assert decide("pass", [], STATES["drained ours same"]) == Action("resume", f"healthy again, was: {OURS}")
    assert decide("pass", [], STATES["drained by quarantine"]).reason.startswith("healthy; left alone")
    assert decide("skip", [], STATES["idle"]).reason == "status skip: nothing judged, node left as it is"


def test_a_quarantine_drain_is_not_ours_although_it_starts_alike():
    assert not QUARANTINE.startswith("clusterforge-health:")
    assert decide("pass", [], state("IDLE+DRAIN", "clusterforge-healthy maintenance")).action == "none"


def test_health_reason_keeps_four_ids_on_one_printable_line():
    assert health_reason(["gpu.xid"]) == "clusterforge-health: gpu.xid"
    assert health_reason(["a.1", "b.2", "c.3", "d.4"]) == "clusterforge-health: a.1,b.2,c.3,d.4"
    assert (
        health_reason(["a.1", "b.2", "c.3", "d.4", "e.5", "f.6"]) == "clusterforge-health: a.1,b.2,c.3,d.4 +2"
    )
    assert health_reason([]) == "clusterforge-health: validation"
    assert health_reason(["gpu xid\n;State=RESUME"]) == "clusterforge-health: gpu-xid-State-RESUME"
    long = health_reason(["x" * 300] * 5)
    assert len(long) <= 200
    assert entry_problem({"name": "n1", "reason": long, "scheduler": "slurm"}) is None
