"""Filter of playbooks/quarantine.yml: the checked request, before any command runs.

    {{ quarantine_nodes | cf_quarantine_nodes('slurm') }}  -> [{name, reason}, ...]

`quarantine_nodes` is a list of `{name, reason, scheduler}` (scheduler: slurm or
kubernetes). Every entry of the whole list is checked at each use, whatever the
scheduler asked for, so the first play that runs refuses a bad request before
any controller runs a command. Names are one node each (never a Slurm hostlist
such as node[1-4], a comma list, an option or shell syntax) and reasons are one
printable line: the playbook builds the scontrol/kubectl argument vectors from
them and runs nothing else.

Plain Python on ansible-core alone (no ClusterForge package): the CLI loads
this very file to plan with the same rules (cli/clusterforge/validation/quarantine.py).
"""

from __future__ import annotations

import re
from typing import Any

from ansible.errors import AnsibleFilterError

SCHEDULERS = ("slurm", "kubernetes")
KEYS = ("name", "reason", "scheduler")
# Slurm: one NodeName, letters, digits, '_', '.', '-', starting with a letter or digit.
_SLURM_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}", re.ASCII)
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


def entry_problem(entry: Any) -> str | None:
    """Why one `{name, reason, scheduler}` entry is refused, or None when it is fine."""
    if not isinstance(entry, dict):
        return f"must be a mapping with {', '.join(KEYS)}, got {type(entry).__name__}"
    keys = sorted(str(key) for key in entry)
    if keys != list(KEYS):
        return f"must have exactly the keys {', '.join(KEYS)}, got {', '.join(keys) or 'none'}"
    scheduler = entry["scheduler"]
    if scheduler not in SCHEDULERS:
        return f"scheduler {scheduler!r} is not one of {', '.join(SCHEDULERS)}"
    for key, rules in (("name", NAME_RULES), ("reason", REASON_RULES)):
        pattern, wanted = rules[scheduler]
        value = entry[key]
        if not isinstance(value, str) or not pattern.fullmatch(value):
            return f"{key} {value!r} is not {wanted}"
    return None


def cf_quarantine_nodes(nodes: Any, scheduler: str) -> list[dict[str, str]]:
    """The `{name, reason}` entries for `scheduler`, once every entry of `nodes` passed the rules."""
    if scheduler not in SCHEDULERS:
        raise AnsibleFilterError(f"cf_quarantine_nodes: scheduler must be one of {', '.join(SCHEDULERS)}")
    if not isinstance(nodes, list):
        raise AnsibleFilterError(
            f"quarantine_nodes must be a list of {{name, reason, scheduler}}, got {type(nodes).__name__}"
        )
    problems = []
    for index, entry in enumerate(nodes):
        problem = entry_problem(entry)
        if problem:
            problems.append(f"quarantine_nodes[{index}]: {problem}")
    if problems:
        raise AnsibleFilterError(
            "quarantine refused, nothing was run: "
            + "; ".join(problems)
            + ". Pass node names and reasons only (clusterforge validate --quarantine builds them)."
        )
    return [{"name": e["name"], "reason": e["reason"]} for e in nodes if e["scheduler"] == scheduler]


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"cf_quarantine_nodes": cf_quarantine_nodes}
