"""The drain interface of both schedulers: argument vectors (no shell), and Slurm's node state.

One implementation, used by the health check on the node (cfcore/healthcheck.py),
by role scheduler_drain and playbooks/quarantine.yml (through the filters of
plugins/filter/quarantine.py) and by the CLI's quarantine plan
(clusterforge.validation.quarantine) for the commands it shows.

Slurm:       scontrol update NodeName=N State=DRAIN Reason=R | State=RESUME;
             scontrol show node -o N, parsed by `parse_slurm_node`.
Kubernetes:  kubectl cordon | uncordon N; kubectl drain N --ignore-daemonsets
             --delete-emptydir-data --timeout=<s>s (evictions, so PodDisruptionBudgets
             hold: never --disable-eviction); the quarantine taint and label.

Every name and reason is checked by cfcore/quarantine_rules.py before an
argument vector is built: a bad one raises ValueError naming the value and the
rule. Stdlib only, Python 3.8-safe (it runs on nodes).
"""

from __future__ import annotations

import re
from typing import Any

from .quarantine_rules import name_problem, reason_problem

TAINT_KEY = "clusterforge.io/unhealthy"
LABEL_KEY = "clusterforge.io/validation"
MAX_TIMEOUT_S = 86400

# Actions of role scheduler_drain; `cf_drain_argv` also builds the quarantine's taint and label.
ACTIONS = ("drain", "resume")
KINDS = {
    "slurm": ("drain", "resume", "show"),
    "kubernetes": ("cordon", "drain", "uncordon", "taint", "label"),
}


def _name(name: Any, scheduler: str) -> str:
    problem = name_problem(name, scheduler)
    if problem:
        raise ValueError(f"{scheduler} node refused: {problem}")
    return name


def _reason(reason: Any, scheduler: str) -> str:
    problem = reason_problem(reason, scheduler)
    if problem:
        raise ValueError(f"{scheduler} drain reason refused: {problem}")
    return reason


def _timeout(timeout_s: Any) -> int:
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, int) or not 1 <= timeout_s <= MAX_TIMEOUT_S:
        raise ValueError(
            f"timeout_s must be a whole number of seconds, 1 to {MAX_TIMEOUT_S}, got {timeout_s!r}"
        )
    return timeout_s


# ------------------------------------------------------------------- Slurm ----


def slurm_drain(node: str, reason: str) -> list:
    return [
        "scontrol",
        "update",
        f"NodeName={_name(node, 'slurm')}",
        "State=DRAIN",
        f"Reason={_reason(reason, 'slurm')}",
    ]


def slurm_resume(node: str) -> list:
    return ["scontrol", "update", f"NodeName={_name(node, 'slurm')}", "State=RESUME"]


def slurm_show(node: str) -> list:
    return ["scontrol", "show", "node", "-o", _name(node, "slurm")]


# -------------------------------------------------------------- Kubernetes ----


def k8s_cordon(node: str) -> list:
    return ["kubectl", "cordon", _name(node, "kubernetes")]


def k8s_drain(node: str, timeout_s: int = 600) -> list:
    """Evicts (PodDisruptionBudgets hold); kubectl drain cordons first and gives up after timeout_s."""
    return [
        "kubectl",
        "drain",
        _name(node, "kubernetes"),
        "--ignore-daemonsets",
        "--delete-emptydir-data",
        f"--timeout={_timeout(timeout_s)}s",
    ]


def k8s_uncordon(node: str) -> list:
    return ["kubectl", "uncordon", _name(node, "kubernetes")]


def k8s_taint(node: str, value: str) -> list:
    """The quarantine taint; `value` is a label value (the first bad check id)."""
    return [
        "kubectl",
        "taint",
        "nodes",
        _name(node, "kubernetes"),
        f"{TAINT_KEY}={_reason(value, 'kubernetes')}:NoSchedule",
        "--overwrite",
    ]


def k8s_label(node: str) -> list:
    return ["kubectl", "label", "nodes", _name(node, "kubernetes"), f"{LABEL_KEY}=failed", "--overwrite"]


def argv(scheduler: str, kind: str, name: str, reason: str | None = None, timeout_s: int = 600) -> list:
    """One command by scheduler and kind (KINDS), e.g. argv('slurm', 'drain', 'gpu-01', 'r')."""
    if scheduler not in KINDS:
        raise ValueError(f"scheduler {scheduler!r} is not one of {', '.join(KINDS)}")
    if kind not in KINDS[scheduler]:
        raise ValueError(f"{scheduler}: kind {kind!r} is not one of {', '.join(KINDS[scheduler])}")
    if scheduler == "slurm":
        if kind == "drain":
            return slurm_drain(name, reason)  # type: ignore[arg-type]
        return slurm_resume(name) if kind == "resume" else slurm_show(name)
    builders = {
        "cordon": lambda: k8s_cordon(name),
        "drain": lambda: k8s_drain(name, timeout_s),
        "uncordon": lambda: k8s_uncordon(name),
        "taint": lambda: k8s_taint(name, reason),  # type: ignore[arg-type]
        "label": lambda: k8s_label(name),
    }
    return builders[kind]()


def plan(nodes: Any, action: str, timeout_s: int = 600) -> list:
    """Role scheduler_drain's commands: one `{name, scheduler, reason, argv}` per entry of `nodes`.

    `action` drain: Slurm drain with the entry's reason, Kubernetes `kubectl drain`;
    resume: Slurm resume, Kubernetes uncordon (no reason needed). Every entry is
    checked before any is built: the first bad one raises ValueError with its index.
    """
    if action not in ACTIONS:
        raise ValueError(f"scheduler_drain_action must be one of {', '.join(ACTIONS)}, got {action!r}")
    _timeout(timeout_s)
    if not isinstance(nodes, list):
        raise ValueError(
            f"scheduler_drain_nodes must be a list of {{name, scheduler, reason}}, got {type(nodes).__name__}"
        )
    out = []
    for index, entry in enumerate(nodes):
        where = f"scheduler_drain_nodes[{index}]"
        if not isinstance(entry, dict):
            raise ValueError(
                f"{where} must be a mapping {{name, scheduler, reason}}, got {type(entry).__name__}"
            )
        unknown = sorted(str(key) for key in entry if key not in ("name", "scheduler", "reason"))
        if unknown:
            raise ValueError(f"{where} has unknown keys {', '.join(unknown)}: only name, scheduler, reason")
        scheduler, name, reason = entry.get("scheduler"), entry.get("name"), entry.get("reason")
        try:
            if scheduler not in KINDS:
                raise ValueError(f"scheduler {scheduler!r} is not one of {', '.join(KINDS)}")
            if action == "drain" and scheduler == "slurm":
                command = slurm_drain(name, reason)
            elif action == "drain":
                command = k8s_drain(name, timeout_s)
            else:
                command = slurm_resume(name) if scheduler == "slurm" else k8s_uncordon(name)
        except ValueError as err:
            raise ValueError(f"{where}: {err}") from None
        out.append({"name": name, "scheduler": scheduler, "reason": reason, "argv": command})
    return out


# -------------------------------------------- scontrol show node -o, parsed ----

# A key of `scontrol show node` output: at the start or after white space, CamelCase or with
# '_' (MCS_label), then '='. Values such as CfgTRES=cpu=2,mem=1M hold '=' but never ' Key='.
_KEY = re.compile(r"(?:^|(?<=\s))([A-Z][A-Za-z0-9_]*)=")
# The reason's suffix: ` [user@2026-12-01T10:05:00]` (a user name, a time; either may be odd).
_REASON = re.compile(r"Reason=(?P<text>.*?)\s*\[(?P<user>[^\]@\s]*)@(?P<time>[^\]\s]*)\](?=\s|$)")
# Flags and the one-character suffixes sinfo and older scontrol append (IDLE*, DOWN~, MIXED#).
_STATE_SUFFIX = "*~#!%$@^-"
BUSY = ("ALLOCATED", "MIXED", "COMPLETING")


class SlurmParseError(ValueError):
    """Text that is not `scontrol show node -o` output."""


def parse_slurm_node(text: Any) -> dict:
    """One node's `scontrol show node -o NAME` line as {name, state, flags, drain, drained, draining,
    down, reason, reason_user, reason_time, fields}.

    `state` is the base state (IDLE, MIXED, ALLOCATED, DOWN, ...), `flags` the rest of
    State= (DRAIN, NOT_RESPONDING, ...). drain: the node takes no new jobs; drained: drain
    and no job left (the base state is not ALLOCATED, MIXED or COMPLETING); draining:
    drain with jobs still running. reason: Reason= without its `[user@time]` suffix
    (None when there is none). Raises SlurmParseError on anything else than one node.
    """
    if not isinstance(text, str):
        raise SlurmParseError(f"scontrol show node output must be text, got {type(text).__name__}")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        raise SlurmParseError("scontrol show node printed nothing (is the node known to slurmctld?)")
    if not lines[0].startswith("NodeName="):
        raise SlurmParseError(f"not scontrol show node output (no NodeName= first): {lines[0][:120]!r}")
    # Without -o scontrol prints one node over several indented lines; -o prints one line per node.
    count = sum(line.startswith("NodeName=") for line in lines)
    if count > 1:
        raise SlurmParseError(f"scontrol show node printed {count} nodes, expected one")
    line = " ".join(lines)
    reason = user = when = None
    found = _REASON.search(line)
    if found and (found.start() == 0 or line[found.start() - 1].isspace()):
        reason, user, when = found.group("text"), found.group("user"), found.group("time")
        line = line[: found.start()] + " " + line[found.end() :]
    fields = _fields(line)
    if reason is None and "Reason" in fields:
        reason = fields["Reason"]  # no [user@time] suffix: up to the next key
    if reason in ("", "(null)", "none", "None"):
        reason = None
    if "State" not in fields or not fields["State"]:
        raise SlurmParseError(f"scontrol show node output without State= for {fields.get('NodeName')!r}")
    parts = [p.rstrip(_STATE_SUFFIX) for p in fields["State"].upper().split("+") if p.rstrip(_STATE_SUFFIX)]
    if not parts or not all(re.fullmatch(r"[A-Z_]+", p) for p in parts):
        raise SlurmParseError(f"State={fields['State']!r} is not a Slurm node state")
    base, flags = parts[0], tuple(parts[1:])
    drain = base in ("DRAIN", "DRAINED", "DRAINING") or "DRAIN" in flags
    if base == "DRAINING":
        busy = True
    elif base == "DRAINED":
        busy = False
    else:
        busy = base in BUSY or "COMPLETING" in flags
    return {
        "name": fields["NodeName"],
        "state": base,
        "flags": list(flags),
        "drain": drain,
        "drained": drain and not busy,
        "draining": drain and busy,
        "down": base == "DOWN" or "DOWN" in flags,
        "reason": reason,
        "reason_user": user,
        "reason_time": when,
        "fields": fields,
    }


def _fields(line: str) -> dict:
    keys = list(_KEY.finditer(line))
    fields = {}
    for number, key in enumerate(keys):
        end = keys[number + 1].start() if number + 1 < len(keys) else len(line)
        fields[key.group(1)] = line[key.end() : end].strip()
    return fields
