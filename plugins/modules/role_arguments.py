#!/usr/bin/python
"""Documentation of action clusterforge.cluster.role_arguments (the code: plugins/action/)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: role_arguments
short_description: Check the argument specs of several roles of this collection in one task
description:
  - Runs on the controller only; nothing reaches the node. For each role in O(roles), reads its
    C(meta/argument_specs.yml) and checks the host's variables against the entry point's options
    with the validator Ansible's own role validation uses (C(ArgumentSpecValidator)), the variables
    templated as Ansible resolves them.
  - Ansible adds one such task per role ("Validating arguments against arg spec"). A play that runs
    several roles on every host checks them all here, before the first role, and imports each role
    with C(rolespec_validate=false), so each spec is checked once and a host with a bad variable for
    its last role fails before its first role changed anything.
  - Fails with every error, each prefixed by its role.
options:
  roles:
    description:
      - The roles, by name in this collection (C(rdma)) or fully qualified (C(clusterforge.cluster.rdma)).
    type: list
    elements: str
    required: true
  entry_point:
    description: The entry point of the roles' argument specs.
    type: str
    default: main
attributes:
  action:
    support: full
  check_mode:
    support: full
  diff_mode:
    support: none
  platform:
    platforms: posix
author:
  - ClusterForge
"""

EXAMPLES = r"""
- name: Check the variables of the fabric roles
  clusterforge.cluster.role_arguments:
    roles: [rdma, ib_fabric, roce]
"""

RETURN = r"""
argument_errors:
  description: The errors found, by role (empty when every role's variables are valid).
  type: dict
  returned: always
roles:
  description: The roles checked.
  type: list
  elements: str
  returned: always
"""
