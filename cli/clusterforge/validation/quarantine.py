"""Take failed nodes out of scheduling: drain in Slurm, taint and label in Kubernetes.

Commands are built here and only here, as argument vectors (no shell): node
names are checked against what Slurm and Kubernetes accept, and text that ends
up in a reason or a taint value is reduced to safe characters, because check
ids and messages travel from nodes (tool output) to the controllers.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from clusterforge.validation.results import bad_checks

SLURM_GROUP = "slurm_controller"
K8S_GROUP = "k8s_control_plane"
# A node is quarantined only in the scheduler(s) it works for (inventory model).
WORKER_GROUPS = {"slurm": "slurm_workers", "kubernetes": "k8s_workers"}
TAINT_KEY = "clusterforge.io/unhealthy"
LABEL_KEY = "clusterforge.io/validation"
# A Slurm NodeName is one name here, never a hostlist expression (node[1-4]) or a
# comma list, so a strange inventory entry can never drain other nodes.
_SLURM_NODE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")
# Kubernetes node names are DNS subdomains (RFC 1123).
_K8S_NODE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.,:-]+")
MAX_REASON_IDS = 4


@dataclass
class Action:
    """One command for one node on one scheduler, and what became of it."""

    scheduler: str  # slurm | kubernetes
    host: str  # inventory host of the failed node
    target: str  # the node's name in the scheduler
    argv: list[str]
    outcome: str = "planned"  # planned | ran | failed | not run | would run
    detail: str = ""

    @property
    def command(self) -> str:
        return shlex.join(self.argv)

    def as_dict(self) -> dict[str, Any]:
        return {
            "scheduler": self.scheduler,
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
    return f"clusterforge: {shown or 'validation'} {when.strftime('%Y-%m-%dT%H:%MZ')}"


def slurm_node_name(host: str, hostvars: dict[str, Any]) -> str:
    return str(hostvars.get("slurm_node_name") or host.split(".")[0])


def k8s_node_name(host: str, hostvars: dict[str, Any]) -> str:
    # The kubelet registers the lower-cased hostname.
    return str(hostvars.get("k8s_node_name") or host.lower())


def slurm_drain(node: str, reason: str) -> list[str]:
    return ["scontrol", "update", f"NodeName={node}", "State=DRAIN", f"Reason={reason}"]


def k8s_taint(node: str, check_id: str) -> list[str]:
    return [
        "kubectl",
        "taint",
        "nodes",
        node,
        f"{TAINT_KEY}={label_value(check_id)}:NoSchedule",
        "--overwrite",
    ]


def k8s_label(node: str) -> list[str]:
    return ["kubectl", "label", "nodes", node, f"{LABEL_KEY}=failed", "--overwrite"]


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
            slurm_name = slurm_node_name(host, hv)
            if _SLURM_NODE.match(slurm_name):
                reason = slurm_reason(ids, when)
                out.actions.append(Action("slurm", host, slurm_name, slurm_drain(slurm_name, reason)))
            else:
                out.notes.append(_bad_name(host, slurm_name, "Slurm", "slurm_node_name"))
        if works_for("kubernetes", host):
            k8s_name = k8s_node_name(host, hv)
            if _K8S_NODE.match(k8s_name):
                first = ids[0] if ids else "validation"
                out.actions.append(Action("kubernetes", host, k8s_name, k8s_taint(k8s_name, first)))
                out.actions.append(Action("kubernetes", host, k8s_name, k8s_label(k8s_name)))
            else:
                out.notes.append(_bad_name(host, k8s_name, "Kubernetes", "k8s_node_name"))
    if left_in_service:
        out.notes.append(
            f"{left_in_service} node(s) with status error (not validated, e.g. unreachable) left in service: "
            "pass --quarantine-on-error to quarantine them too"
        )
    return out


def _bad_name(host: str, name: str, scheduler: str, variable: str) -> str:
    return (
        f"{host}: {name!r} is not a valid {scheduler} node name, so it is not quarantined there: "
        f"set {variable} for the host in the inventory"
    )
