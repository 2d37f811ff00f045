#!/usr/bin/python
"""Ansible module of role base: whether the node needs a reboot, and why (read-only)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: base_reboot_state
short_description: Read whether the node needs a reboot, and why, without rebooting it
description:
  - Reads what asks for a reboot and returns the reasons (cfcore/reboot.py), in one call.
  - Debian/Ubuntu, C(/var/run/reboot-required) and the packages in C(/var/run/reboot-required.pkgs);
    RHEL family, C(needs-restarting -r) (exit 1, a reboot is needed); nouveau loaded while
    O(blacklist_nouveau) is set; the reason the role recorded in O(marker), valid only in the boot
    it was recorded in (C(/proc/sys/kernel/random/boot_id)).
  - Changes nothing and never reboots. Recording and reporting the result is the role's job.
options:
  os_family:
    description: The node's OS family (C(ansible_facts.os_family)).
    type: str
    required: true
  blacklist_nouveau:
    description: The role blacklists nouveau, so a loaded nouveau needs a reboot.
    type: bool
    default: false
  marker:
    description: The role's own record of a reboot reason, JSON with C(boot_id) and C(reason).
    type: path
    default: /var/lib/clusterforge/reboot-required.d/initramfs.json
attributes:
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
- name: Read whether the node needs a reboot
  clusterforge.cluster.base_reboot_state:
    os_family: "{{ ansible_facts.os_family }}"
    blacklist_nouveau: true
  register: reboot
"""

RETURN = r"""
required:
  description: The node needs a reboot.
  type: bool
  returned: always
reasons:
  description: Why, one line each; empty when no reboot is needed.
  type: list
  elements: str
  returned: always
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore import reboot

OS_FLAG = "/var/run/reboot-required"
BOOT_ID = "/proc/sys/kernel/random/boot_id"


def _read(path, limit=65536):
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read(limit)
    except OSError:
        return ""


def main():
    module = AnsibleModule(
        argument_spec={
            "os_family": {"type": "str", "required": True},
            "blacklist_nouveau": {"type": "bool", "default": False},
            "marker": {"type": "path", "default": "/var/lib/clusterforge/reboot-required.d/initramfs.json"},
        },
        supports_check_mode=True,
    )
    params = module.params
    needs_restarting_rc = None
    if params["os_family"] == "RedHat":
        tool = module.get_bin_path("needs-restarting")
        if tool is None:
            module.fail_json(msg="needs-restarting is not installed. Fix: install dnf-utils on the node")
        needs_restarting_rc, _, err = module.run_command([tool, "-r"])
        if needs_restarting_rc not in (0, 1):
            said = err.strip()[-300:]
            module.fail_json(msg=f"needs-restarting -r failed (rc {needs_restarting_rc}): {said}")
    reasons = reboot.reboot_reasons(
        os_flag=params["os_family"] == "Debian" and os.path.exists(OS_FLAG),
        os_packages_text=_read(OS_FLAG + ".pkgs"),
        needs_restarting_rc=needs_restarting_rc,
        nouveau_loaded=os.path.isdir("/sys/module/nouveau"),
        blacklist_nouveau=params["blacklist_nouveau"],
        marker_text=_read(params["marker"]),
        boot_id=_read(BOOT_ID).strip(),
    )
    module.exit_json(changed=False, required=bool(reasons), reasons=reasons)


if __name__ == "__main__":
    main()
