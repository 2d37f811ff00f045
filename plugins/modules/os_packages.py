#!/usr/bin/python
"""Documentation of action clusterforge.cluster.os_packages (the code: plugins/action/os_packages.py)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: os_packages
short_description: Refresh apt's index where stale and install a role's packages, in one task
description:
  - Runs on the controller and calls the node's package manager's own module. On apt it first
    refreshes the package index when it is older than O(cache_valid_time), in check mode too (the
    index is a cache; without it a fresh node's check run cannot tell what it would install), with
    O(refresh_retries) retries. Then it installs O(name) in one transaction (C(ansible.builtin.apt)
    or C(ansible.builtin.dnf), check mode passed on).
  - In check mode, when the install would change the node, the result has C(pending=true), and
    O(pending_effects) becomes a warning that names what the role cannot preview before the packages.
  - Replaces the index refresh, the per-family install tasks and the check-mode note of a role.
    Packages pinned at a version and held are the job of M(clusterforge.cluster.pinned_packages).
options:
  name:
    description: The packages, installed together.
    type: list
    elements: str
    required: true
  refresh:
    description: Refresh apt's index first where it is stale (apt only; dnf expires its metadata itself).
    type: bool
    default: true
  cache_valid_time:
    description: Seconds an apt index stays fresh; 0 refreshes it (after a repository changed).
    type: int
    default: 3600
  refresh_retries:
    description: Retries of a failed index refresh (parallel apt runs on fresh nodes now and then fail once).
    type: int
    default: 2
  install_recommends:
    description: apt installs the packages' Recommends too.
    type: bool
    default: false
  pending_effects:
    description: The warning's text, what the role cannot preview in check mode before the packages.
    type: str
    default: ""
  manager:
    description: C(auto) picks apt or dnf by the node's OS family (C(ansible_facts.os_family)).
    type: str
    choices: [auto, apt, dnf]
    default: auto
attributes:
  action:
    support: full
  check_mode:
    support: full
    details: The index is refreshed; the install is only previewed.
  diff_mode:
    support: none
  platform:
    platforms: posix
author:
  - ClusterForge
"""

EXAMPLES = r"""
- name: Install munge and the Slurm packages of this host's part
  clusterforge.cluster.os_packages:
    name: [munge, slurm-client, slurmd]
    pending_effects: the munge key, the configuration and the services are previewed after a real run
  register: slurm__packages
"""

RETURN = r"""
pending:
  description: Check mode, and the install would change the node.
  type: bool
  returned: always
refreshed:
  description: apt's index was refreshed in this call.
  type: bool
  returned: always
"""
