#!/usr/bin/python
"""Documentation of action clusterforge.cluster.signed_repository (the code: plugins/action/)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: signed_repository
short_description: A package repository trusted through one pinned key, in one task (apt or dnf)
description:
  - Runs on the controller and calls Ansible's own modules on the node. Downloads the repository's
    signing key to O(keyring) with C(get_url), which checks O(key_sha256) before it replaces the file
    (a key that is not the pinned one never lands on the node).
  - Removes the files in O(remove) (another source of the same repository with another key makes apt
    refuse both, "Conflicting values set for option Signed-By").
  - apt, adds the source with C(signed-by=) O(keyring) only (C(apt_repository)), and refreshes the
    index when the key, the source or a removed file changed, or when a flat repository's index is
    missing from apt's lists (a run that added the source but could not fetch it is retried).
  - dnf, imports the key into the RPM database where O(import_key) is set (C(rpm_key)) and writes
    the repository with C(gpgkey) that file (C(yum_repository)). Untested here (the test nodes run Debian 12).
  - In check mode nothing is written; C(pending) says that a key or source would change, so the roles
    after this one cannot yet see the repository's packages.
options:
  name:
    description: The repository's id (apt's sources.list.d file name, dnf's repository name).
    type: str
    required: true
  url:
    description: The repository's base URL (a site mirror where there is one).
    type: str
    required: true
  suite:
    description: apt's suite; C(/) for a flat repository (NVIDIA's).
    type: str
    default: /
  components:
    description: apt's components (none for a flat repository).
    type: list
    elements: str
    default: []
  key_url:
    description: Where the signing key is downloaded from.
    type: str
    required: true
  key_sha256:
    description: The key's sha256, bare or as C(sha256:<hex>), pinned by the site.
    type: str
    required: true
  keyring:
    description: Where the key is written on the node.
    type: path
    required: true
  remove:
    description: Files that would conflict with this source, removed.
    type: list
    elements: path
    default: []
  description:
    description: dnf's repository description (defaults to O(name)).
    type: str
    default: ""
  gpgcheck:
    description: dnf checks each package's signature.
    type: bool
    default: true
  repo_gpgcheck:
    description: dnf checks the repository metadata's signature.
    type: bool
    default: false
  import_key:
    description: dnf, import the key into the RPM database.
    type: bool
    default: false
  manager:
    description: C(auto) picks apt or dnf by the node's OS family.
    type: str
    choices: [auto, apt, dnf]
    default: auto
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
- name: The CUDA repository, signed by the pinned key only
  clusterforge.cluster.signed_repository:
    name: nvidia-cuda
    url: https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/
    key_url: https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/3bf863cc.pub
    key_sha256: "sha256:<64 hex digits>"
    keyring: /etc/apt/keyrings/nvidia-cuda.asc
    remove: [/etc/apt/sources.list.d/cuda-debian12-x86_64.list]
  register: cuda_repository
"""

RETURN = r"""
pending:
  description: Check mode, and the key or the source would change (the repository is not on the node yet).
  type: bool
  returned: always
steps:
  description: Each module run, with whether it changed the node.
  type: list
  elements: dict
  returned: always
"""
