#!/usr/bin/python
"""Documentation of the action clusterforge.cluster.pinned_packages (plugins/action/pinned_packages.py)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: pinned_packages
short_description: Install packages at the versions the BOM names and hold them there, in one task
description:
  - Lists the versions the configured repositories offer (C(apt-cache madison) or
    C(dnf list --showduplicates)) and refuses, before anything changes, a version they lack,
    naming what they offer and the fix.
  - Optionally removes packages first (an older major release that conflicts, plugins of another
    CUDA major), then installs the packages at their versions with C(ansible.builtin.apt) or
    C(ansible.builtin.dnf), moving held packages up or down to the wanted version.
  - Holds them there (C(apt-mark hold); dnf versionlock, after dropping the locks of the versions
    the install replaced).
  - In check mode, when O(repo_pending) says this run adds or changes the repository, a version
    the repository does not list yet is not refused; the result says what the real run does
    (RV(pending)). Nothing is held in check mode before it is installed.
  - Runs on the controller as an action and executes the package manager's modules on the node.
options:
  wanted:
    description: Package name to the version, or fnmatch pattern (C(1:4.2.3-*)), the repository must offer.
    type: dict
    required: true
  specs:
    description:
      - The install specs given to apt or dnf (C(name=version) or C(name-version)).
      - Default the newest listed version that matches each O(wanted) pattern (apt keeps its
        epoch, dnf drops it).
    type: list
    elements: str
  hold:
    description: The packages to hold or lock after the install. Default the names in O(wanted).
    type: list
    elements: str
  remove:
    description: Packages removed (apt purges them) before the install, held or not.
    type: list
    elements: str
    default: []
  repository:
    description: The repository's name in messages.
    type: str
    default: the CUDA repository
  repo_pending:
    description:
      - This run adds or changes the repository, so in check mode it cannot be listed yet.
    type: bool
    default: false
  refusal:
    description: What the refusal starts with (the variable and its value).
    type: str
    required: true
  fix:
    description: The remedy the refusal names.
    type: str
    required: true
  pending_effects:
    description: In check mode before the install, what else the role cannot preview (a warning).
    type: str
    default: ""
  install_recommends:
    description: apt installs recommended packages too.
    type: bool
    default: false
  versionlock_package:
    description: The dnf versionlock plugin's package (dnf only).
    type: str
    default: python3-dnf-plugin-versionlock
  manager:
    description: The package manager; C(auto) from the OS family (Debian apt, RedHat dnf).
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
- name: Install NCCL at the BOM's version and hold it
  clusterforge.cluster.pinned_packages:
    wanted: {libnccl2: 2.26.2-1+cuda12.8, libnccl-dev: 2.26.2-1+cuda12.8}
    specs: [libnccl2=2.26.2-1+cuda12.8, libnccl-dev=2.26.2-1+cuda12.8]
    repo_pending: "{{ nvidia_cuda_repo_pending | default(true) }}"
    refusal: nccl_version 2.26.2 has no build for CUDA 12.8
    fix: set nccl_version to a version the repository lists for +cuda12.8
  register: nccl__install
"""

RETURN = r"""
pending:
  description: Check mode runs ahead of the install (the repository or the packages are not there yet).
  type: bool
  returned: always
repo_missing:
  description: Check mode could not list the repository (it is added by the real run).
  type: bool
  returned: always
steps:
  description: What was run on the node, each with whether it changed something.
  type: list
  elements: dict
  returned: always
msg:
  description: What changed, in one line.
  type: str
  returned: always
"""

if __name__ == "__main__":
    raise SystemExit("pinned_packages runs as an action plugin; use it as a task of a play")
