"""Why a node needs a reboot: one rule, used by the module base_reboot_state (role base) and
its unit tests (tests/unit/base/test_reboot_state.py).

The reasons, each in words an operator acts on:
- Debian/Ubuntu: /var/run/reboot-required exists (its .pkgs file names the packages);
- RHEL family: `needs-restarting -r` exits 1 (core libraries or the kernel changed since boot);
- nouveau is loaded while the role blacklists it (the blacklist takes effect at the next boot);
- a reason the role recorded itself (an initramfs rebuilt for the blacklist), valid only in the
  boot it was recorded in.

Stdlib only: runs inside an Ansible module on the node.
"""

from __future__ import annotations

import json


def reboot_reasons(
    os_flag=False,
    os_packages_text="",
    needs_restarting_rc=None,
    nouveau_loaded=False,
    blacklist_nouveau=False,
    marker_text="",
    boot_id="",
) -> list[str]:
    """The reasons this node needs a reboot, in a fixed order; empty when it needs none."""
    reasons = []
    if os_flag:
        packages = sorted(set(str(os_packages_text or "").split()))
        reasons.append(f"the OS asks for a reboot (packages: {', '.join(packages) or 'not listed'})")
    if needs_restarting_rc == 1:
        reasons.append("needs-restarting -r: core libraries or the kernel were updated since boot")
    if blacklist_nouveau and nouveau_loaded:
        reasons.append("nouveau is loaded; it stays blacklisted from the next boot on")
    marker = _marker(marker_text)
    if marker.get("reason") and str(marker.get("boot_id", "")).strip() == str(boot_id).strip() and boot_id:
        reasons.append(str(marker["reason"]))
    return reasons


def _marker(text) -> dict:
    """The role's own record ({"boot_id": ..., "reason": ...}); anything else counts as none."""
    try:
        data = json.loads(text) if text else {}
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}
