"""Take failed nodes out of scheduling: drain in Slurm, taint and label in Kubernetes.

The plan is a list of commands, one per node, scheduler and kind, as argument
vectors (no shell). playbooks/quarantine.yml is given only each node's name and
reason (`request`) and builds the same commands itself; the argv here is what
the report shows and what an operator runs by hand where no controller is in
the inventory. Names and reasons are checked with the playbook's own rules
(cfcore/quarantine_rules.py), because check ids and messages travel from
nodes (tool output) to the controllers: a name the playbook would refuse is a
note here, never a command.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from cfcore import quarantine_rules, scheduler_drain

from clusterforge.validation.results import bad_checks

SLURM_GROUP = "slurm_controller"
K8S_GROUP = "k8s_control_plane"
# A node is quarantined only in the scheduler(s) it works for (inventory model).
WORKER_GROUPS = {"slurm": "slurm_workers", "kubernetes": "k8s_workers"}
TAINT_KEY = scheduler_drain.TAINT_KEY
LABEL_KEY = scheduler_drain.LABEL_KEY
_UNSAFE = re.compile(r"[^A-Za-z0-9_.,:-]+")
MAX_REASON_IDS = 4


@dataclass
class Action:
    """One command for one node on one scheduler, and what became of it."""

    scheduler: str  # slurm | kubernetes
    kind: str  # drain (slurm) | taint | label (kubernetes)
    host: str  # inventory host of the failed node
    target: str  # the node's name in the scheduler
    reason: str  # the drain reason (slurm) or the taint value (kubernetes)
    argv: list[str]
    outcome: str = "planned"  # planned | ran | failed | not run | would run
    detail: str = ""

    @property
    def command(self) -> str:
        return shlex.join(self.argv)

    def as_dict(self) -> dict[str, Any]:
        return {
            "scheduler": self.scheduler,
            "kind": self.kind,
            "host": self.host,
            "target": self.target,
            "command": self.command,
            "argv": self.argv,
            "outcome": self.outcome,
            "detail": self.detail,
        }


@dataclass
class Plan:
    actions: list[Action] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def for_scheduler(self, scheduler: str) -> list[Action]:
        return [a for a in self.actions if a.scheduler == scheduler]

    def request(self, scheduler: str) -> list[dict[str, str]]:
        """The playbook's `quarantine_nodes` entries for `scheduler`: one per node."""
        entries = {
            a.target: {"name": a.target, "reason": a.reason, "scheduler": scheduler}
            for a in self.for_scheduler(scheduler)
        }
        return list(entries.values())


def safe_token(text: str, limit: int = 63) -> str:
    return _UNSAFE.sub("-", text).strip("-.,:")[:limit]


def label_value(text: str) -> str:
    """A valid Kubernetes label/taint value: <= 63 chars, alphanumeric at both ends, [-_.] inside."""
    value = re.sub(r"[^A-Za-z0-9_.-]+", "-", text)[:63]
    return re.sub(r"^[^A-Za-z0-9]+|[^A-Za-z0-9]+$", "", value) or "unknown"


def slurm_reason(check_ids: list[str], when: datetime) -> str:
    ids = [safe_token(i) for i in check_ids if safe_token(i)]
    shown = ",".join(ids[:MAX_REASON_IDS])
    if len(ids) > MAX_REASON_IDS:
        shown += f"+{len(ids) - MAX_REASON_IDS}"
    prefix, suffix = "clusterforge: ", f" {when.strftime('%Y-%m-%dT%H:%MZ')}"
    room = quarantine_rules.SLURM_REASON_MAX - len(prefix) - len(suffix)
    return f"{prefix}{shown[:room].rstrip(',') or 'validation'}{suffix}"


def slurm_node_name(host: str, hostvars: dict[str, Any]) -> str:
    return str(hostvars.get("slurm_node_name") or host.split(".")[0])


def k8s_node_name(host: str, hostvars: dict[str, Any]) -> str:
    # The kubelet registers the lower-cased hostname.
    return str(hostvars.get("k8s_node_name") or host.lower())


# The argument vectors are the drain interface's (cfcore/scheduler_drain.py), the very ones
# playbooks/quarantine.yml builds through its filters: names and reasons are checked there too
# (ValueError), so _add checks them first and turns a refusal into a note.
def slurm_drain(node: str, reason: str) -> list[str]:
    return scheduler_drain.slurm_drain(node, reason)


def k8s_taint(node: str, value: str) -> list[str]:
    """The taint; `value` is a label value (`label_value`), the first bad check id."""
    return scheduler_drain.k8s_taint(node, value)


def k8s_label(node: str) -> list[str]:
    return scheduler_drain.k8s_label(node)


def plan(
    results: list[dict[str, Any]],
    hostvars: dict[str, dict[str, Any]],
    *,
    on_error: bool = False,
    when: datetime | None = None,
    workers: dict[str, set[str]] | None = None,
) -> Plan:
    """The commands that quarantine every failed node (and errored ones with on_error).

    `workers` maps a scheduler (slurm, kubernetes) to the hosts of its worker
    group: a node is drained or tainted only where it works. None plans both
    schedulers for every node (an inventory without scheduler groups).
    """
    when = when or datetime.now(UTC)

    def works_for(scheduler: str, host: str) -> bool:
        return workers is None or host in workers.get(scheduler, set())

    statuses = ("fail", "error") if on_error else ("fail",)
    out = Plan()
    left_in_service = 0
    for result in results:
        host = result["host"]
        if result["status"] not in statuses:
            left_in_service += result["status"] == "error"
            continue
        ids = [c["id"] for c in bad_checks(result, statuses)]
        hv = hostvars.get(host, {})
        if not any(works_for(scheduler, host) for scheduler in WORKER_GROUPS):
            out.notes.append(
                f"{host}: in neither {' nor '.join(WORKER_GROUPS.values())}: no scheduler to take it out of"
            )
            continue
        if works_for("slurm", host):
            name, reason = slurm_node_name(host, hv), slurm_reason(ids, when)
            _add(out, "slurm", host, name, reason, {"drain": lambda n, r: slurm_drain(n, r)})
        if works_for("kubernetes", host):
            name, reason = k8s_node_name(host, hv), label_value(ids[0] if ids else "validation")
            commands = {"taint": lambda n, r: k8s_taint(n, r), "label": lambda n, _r: k8s_label(n)}
            _add(out, "kubernetes", host, name, reason, commands)
    if left_in_service:
        out.notes.append(
            f"{left_in_service} node(s) with status error (not validated, e.g. unreachable) left in service: "
            "pass --quarantine-on-error to quarantine them too"
        )
    return out


_NAME_VARIABLES = {"slurm": ("Slurm", "slurm_node_name"), "kubernetes": ("Kubernetes", "k8s_node_name")}


def _add(
    out: Plan,
    scheduler: str,
    host: str,
    name: str,
    reason: str,
    commands: dict[str, Callable[[str, str], list[str]]],
) -> None:
    """The node's commands for one scheduler, or a note when the playbook would refuse its entry.

    `commands` build each argv from (name, reason) once the entry passed the rules.
    """
    problem = quarantine_rules.entry_problem({"name": name, "reason": reason, "scheduler": scheduler})
    if problem:
        title, variable = _NAME_VARIABLES[scheduler]
        out.notes.append(
            f"{host}: not quarantined in {title}: {problem}; set {variable} for the host in the inventory"
        )
        return
    for kind, build in commands.items():
        out.actions.append(Action(scheduler, kind, host, name, reason, build(name, reason)))
