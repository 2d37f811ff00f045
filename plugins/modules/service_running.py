#!/usr/bin/python
"""Ansible module: a systemd unit enabled, started where it can run, and read back (ClusterForge)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: service_running
short_description: Enable a systemd unit, start it where it can run, and prove it stays up, in one call
description:
  - Reads the unit's load, enablement and active state (C(systemctl show)), enables it, starts it
    when the start policy says so, and then polls C(systemctl is-active) for up to O(settle_s)
    seconds, because a daemon that starts and exits is not running.
  - When the unit does not stay up, the result carries the last lines of its journal. With
    O(must_run=true) that fails the task; with O(must_run=false) (a container without the
    hardware the daemon drives) the task succeeds and C(not_started) says why.
  - The rule deciding whether to start is C(start_decision) in C(cfcore/systemd.py).
  - Replaces the list-unit-files, stat, is-failed, systemd_service and is-active tasks a role would
    otherwise run for one daemon.
options:
  name:
    description: The unit; C(.service) is added when the name has no unit suffix.
    type: str
    required: true
  required:
    description:
      - The unit file must exist (its package installed it). A missing unit fails the task, except in
        check mode, where the package may not be installed yet (a warning says so).
      - When false, a missing unit is reported as C(present=false) and nothing else is done.
    type: bool
    default: true
  start:
    description:
      - C(always), start it when it is not running; C(unless_failed), the same, except that a unit in
        the failed state is not started again on every run; C(never), only enable it.
    type: str
    choices: [always, unless_failed, never]
    default: always
  start_when_exists:
    description: Paths (device nodes) any of which, when present, proves the daemon can run here and
      starts it whatever O(start) says.
    type: list
    elements: path
    default: []
  must_run:
    description: A unit that does not stay up after its start fails the task. When false, C(not_started)
      says so.
    type: bool
    default: true
  fix:
    description: What the operator should do when the unit does not stay up; ends the failure message.
    type: str
    default: read the unit's journal (journalctl -u UNIT) and fix what it names
  settle_s:
    description: How long, in seconds, a started unit may take to report active.
    type: int
    default: 10
attributes:
  check_mode:
    support: full
    details: Reports what it would enable and start; starts nothing and reads nothing back.
  diff_mode:
    support: none
  platform:
    platforms: posix
author:
  - ClusterForge
"""

EXAMPLES = r"""
- name: Enable nvidia-persistenced, start it where it can run, and read back that it stays up
  clusterforge.cluster.service_running:
    name: nvidia-persistenced
    start: unless_failed
    start_when_exists: [/dev/nvidiactl]
    must_run: false
"""

RETURN = r"""
present:
  description: The unit file exists.
  type: bool
  returned: always
enabled:
  description: The unit is enabled now (would be, in check mode).
  type: bool
  returned: always
active:
  description: The unit is running at the end of the call.
  type: bool
  returned: always
started:
  description: This call started it (would start it, in check mode).
  type: bool
  returned: always
not_started:
  description: Why it was not started; empty when it runs or was started.
  type: str
  returned: always
journal:
  description: The last lines of the unit's journal when it does not stay up after its start.
  type: list
  elements: str
  returned: always
"""

import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore import systemd

UNIT_SUFFIXES = (".service", ".timer", ".socket", ".mount", ".path", ".target")
POLL_S = 1
DEFAULT_FIX = "read the unit's journal (journalctl -u UNIT) and fix what it names"


def _show(module, systemctl, unit):
    properties = "--property=LoadState,UnitFileState,ActiveState"
    rc, out, err = module.run_command([systemctl, "show", unit, properties])
    if rc != 0:
        module.fail_json(msg=f"systemctl show {unit} failed (rc {rc}): {err.strip()[-300:]}")
    props = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    return props.get("LoadState", ""), props.get("UnitFileState", ""), props.get("ActiveState", "")


def _is_active(module, systemctl, unit):
    rc, _, _ = module.run_command([systemctl, "is-active", "--quiet", unit])
    return rc == 0


def _settled(module, systemctl, unit, settle_s):
    """Active within settle_s, and still active a poll later (a daemon that exits at once is not)."""
    deadline = time.monotonic() + max(settle_s, 0)
    while True:
        time.sleep(POLL_S)
        if _is_active(module, systemctl, unit):
            time.sleep(POLL_S)
            if _is_active(module, systemctl, unit):
                return True
        if time.monotonic() >= deadline:
            return False


def _journal(module, unit):
    journalctl = module.get_bin_path("journalctl")
    if journalctl is None:
        return []
    _, out, _ = module.run_command([journalctl, "-u", unit, "-n", "20", "--no-pager", "-o", "cat"])
    return out.splitlines()[-20:]


def main():
    module = AnsibleModule(
        argument_spec={
            "name": {"type": "str", "required": True},
            "required": {"type": "bool", "default": True},
            "start": {"type": "str", "choices": list(systemd.START_POLICIES), "default": "always"},
            "start_when_exists": {"type": "list", "elements": "path", "default": []},
            "must_run": {"type": "bool", "default": True},
            "settle_s": {"type": "int", "default": 10},
            "fix": {"type": "str", "default": DEFAULT_FIX},
        },
        supports_check_mode=True,
    )
    params = module.params
    unit = params["name"] if params["name"].endswith(UNIT_SUFFIXES) else params["name"] + ".service"
    systemctl = module.get_bin_path("systemctl", required=True)
    result = {"changed": False, "present": False, "enabled": False, "active": False, "started": False}
    result.update(not_started="", journal=[])

    load_state, file_state, active_state = _show(module, systemctl, unit)
    if load_state != "loaded":
        result["not_started"] = f"{unit} is not installed"
        if params["required"] and not module.check_mode:
            module.fail_json(msg=f"{unit} is not installed. Fix: install the package that ships it", **result)
        if params["required"]:
            module.warn(f"check mode: {unit} is not installed yet; a real run enables and starts it")
        module.exit_json(**result)
    result["present"] = True

    if file_state not in ("enabled", "enabled-runtime", "static", "alias", "indirect", "generated"):
        result["changed"] = True
        if not module.check_mode:
            rc, _, err = module.run_command([systemctl, "enable", unit])
            if rc != 0:
                said = err.strip()[-300:]
                module.fail_json(msg=f"systemctl enable {unit} failed (rc {rc}): {said}", **result)
    result["enabled"] = True

    device_present = any(os.path.exists(path) for path in params["start_when_exists"])
    start, why_not = systemd.start_decision(params["start"], active_state, device_present)
    result["active"] = active_state == "active"
    result["not_started"] = "" if result["active"] else why_not
    if not start:
        module.exit_json(**result)
    result["changed"] = result["started"] = True
    if module.check_mode:
        module.exit_json(**result)

    rc, _, err = module.run_command([systemctl, "start", unit])
    result["active"] = rc == 0 and _settled(module, systemctl, unit, params["settle_s"])
    if result["active"]:
        module.exit_json(**result)
    result["journal"] = _journal(module, unit)
    said = err.strip()[-300:] or (result["journal"][-1] if result["journal"] else "no journal")
    result["not_started"] = f"{unit} does not stay up after its start: {said}"
    if params["must_run"]:
        fix = params["fix"].replace("UNIT", unit)
        module.fail_json(msg=f"{result['not_started']}. Fix: {fix}", **result)
    module.exit_json(msg=result["not_started"], **result)


if __name__ == "__main__":
    main()
