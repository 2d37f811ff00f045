"""The OS families ClusterForge's roles support, and the vars file a role loads for a node's family.

Every role keeps its package names and paths per family in `vars/<family>.yml` and loads them with

    ansible.builtin.include_vars: "{{ ansible_facts | clusterforge.cluster.cf_os_family_vars('base') }}"

which is the role's check of the family too: one task, not an assert and then the load, on every
host of every role (issue 33). `playbooks/preflight.yml` checks every node with the same rule first.

    vars_file({"os_family": "Debian"}, "base")  -> "Debian.yml"
    vars_file({"os_family": "Suse", "distribution": "SLES"}, "base")
      -> ValueError: role base supports the Debian (Debian, Ubuntu) and RedHat (RHEL, Rocky, Alma)
         OS families; this node runs SLES (Suse family). Fix: ...

Stdlib only, Python 3.8: used by filters.
"""

from __future__ import annotations

from typing import Any

# Ansible's os_family values with a task path in every role (apt and dnf).
SUPPORTED = ("Debian", "RedHat")

_NAMES = "the Debian (Debian, Ubuntu) and RedHat (RHEL, Rocky, Alma) OS families"


def supported(os_family: Any) -> bool:
    return isinstance(os_family, str) and os_family in SUPPORTED


def vars_file(facts: Any, role: str) -> str:
    """`<family>.yml` for a node's facts; ValueError (with the fix) for a family no role supports."""
    facts = facts if isinstance(facts, dict) else {}
    family = facts.get("os_family")
    if supported(family):
        return f"{family}.yml"
    distribution = facts.get("distribution") or "an unknown OS"
    raise ValueError(
        f"role {role} supports {_NAMES}; this node runs {distribution} ({family or 'no'} family). "
        "Fix: reinstall the node with a supported OS, or leave it out of the run "
        "(--limit '!NODE'); `clusterforge bringup` checks every node's family first (preflight)."
    )


# The package manager of each supported family (the collection's package actions).
PACKAGE_MANAGERS = {"Debian": "apt", "RedHat": "dnf"}


def package_manager(requested: str, facts: Any, what: str) -> str:
    """`requested` unless it is "auto", else the node's family's manager; ValueError with the fix."""
    if requested != "auto":
        return requested
    try:
        return PACKAGE_MANAGERS[vars_file(facts, what)[: -len(".yml")]]
    except ValueError as exc:
        raise ValueError(str(exc).replace(f"role {what} supports", f"{what} supports", 1)) from None
