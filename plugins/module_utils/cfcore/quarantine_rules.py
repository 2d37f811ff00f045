"""Who may be quarantined, and why: the checks of a quarantine request's entries.

One entry is `{name, reason, scheduler}` (scheduler: slurm or kubernetes).
Names are one node each (never a Slurm hostlist such as node[1-4], a comma
list, an option or shell syntax) and reasons are one printable line: the
quarantine playbook builds the scontrol/kubectl argument vectors from them and
runs nothing else. Used by the playbook's filter (plugins/filter/quarantine.py),
by the CLI's planner (clusterforge.validation.quarantine) and by every argument
vector of cfcore/scheduler_drain.py (the health check on the node, role
scheduler_drain), so all apply the very same rules. Stdlib only.
"""

from __future__ import annotations

import re

SCHEDULERS = ("slurm", "kubernetes")
KEYS = ("name", "reason", "scheduler")
# Slurm: one NodeName, letters, digits, '_', '.', '-', starting with a letter or digit.
_SLURM_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}", re.ASCII)
# Names scontrol takes as keywords, not as one node: NodeName=ALL updates every node of the
# cluster, DEFAULT is slurm.conf's defaults line (compared case-insensitively).
SLURM_RESERVED_NAMES = ("all", "default")
# Kubernetes: a DNS subdomain (RFC 1123), lower case, at most 253 characters.
_K8S_NAME = re.compile(
    r"(?=.{1,253}\Z)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*", re.ASCII
)
# Slurm reason: one line of printable ASCII.
SLURM_REASON_MAX = 200
_SLURM_REASON = re.compile(rf"[ -~]{{1,{SLURM_REASON_MAX}}}", re.ASCII)
# Kubernetes taint value: a label value, alphanumeric at both ends, at most 63 characters.
_K8S_REASON = re.compile(r"[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?", re.ASCII)

NAME_RULES = {
    "slurm": (_SLURM_NAME, "one Slurm node name: letters, digits, '_', '.', '-', at most 63"),
    "kubernetes": (_K8S_NAME, "one Kubernetes node name: a lower-case DNS name (RFC 1123)"),
}
REASON_RULES = {
    "slurm": (_SLURM_REASON, f"one line of printable ASCII, at most {SLURM_REASON_MAX} characters"),
    "kubernetes": (_K8S_REASON, "a taint value: letters, digits, '_', '.', '-', at most 63"),
}


def entry_problem(entry) -> str | None:
    """Why one `{name, reason, scheduler}` entry is refused, or None when it is fine."""
    if not isinstance(entry, dict):
        return f"must be a mapping with {', '.join(KEYS)}, got {type(entry).__name__}"
    keys = sorted(str(key) for key in entry)
    if keys != list(KEYS):
        return f"must have exactly the keys {', '.join(KEYS)}, got {', '.join(keys) or 'none'}"
    scheduler = entry["scheduler"]
    if scheduler not in SCHEDULERS:
        return f"scheduler {scheduler!r} is not one of {', '.join(SCHEDULERS)}"
    return name_problem(entry["name"], scheduler) or reason_problem(entry["reason"], scheduler)


def name_problem(name, scheduler: str) -> str | None:
    """Why `name` is not one node name of `scheduler`, or None (resume and uncordon need no reason)."""
    if scheduler not in SCHEDULERS:
        return f"scheduler {scheduler!r} is not one of {', '.join(SCHEDULERS)}"
    pattern, wanted = NAME_RULES[scheduler]
    if not isinstance(name, str) or not pattern.fullmatch(name):
        return f"name {name!r} is not {wanted}"
    if scheduler == "slurm" and name.lower() in SLURM_RESERVED_NAMES:
        return (
            f"name {name!r} is a Slurm keyword, not a node (`scontrol update NodeName={name}` "
            "would act on every node)"
        )
    return None


def reason_problem(reason, scheduler: str) -> str | None:
    """Why `reason` is not a drain reason (slurm) or taint value (kubernetes), or None."""
    if scheduler not in SCHEDULERS:
        return f"scheduler {scheduler!r} is not one of {', '.join(SCHEDULERS)}"
    pattern, wanted = REASON_RULES[scheduler]
    if not isinstance(reason, str) or not pattern.fullmatch(reason):
        return f"reason {reason!r} is not {wanted}"
    return None
