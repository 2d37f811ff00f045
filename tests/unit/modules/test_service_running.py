"""Module service_running and its rule (cfcore/systemd.py start_decision), against a fake systemctl
that keeps a unit's state in a JSON file and records each call."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from cfcore import systemd
from cfcore.inputs import InputError
from module_runner import run_module

FAKE_SYSTEMCTL = r"""#!/usr/bin/env python3
import json, sys
state_file = "{state}"
state = json.load(open(state_file))
state["calls"].append(sys.argv[1:])
verb, unit = sys.argv[1], sys.argv[-1]
code = 0
if verb == "show":
    if state["installed"]:
        print(f"LoadState=loaded\nUnitFileState={{state['file']}}\nActiveState={{state['active']}}")
    else:
        print("LoadState=not-found\nUnitFileState=\nActiveState=inactive")
elif verb == "enable":
    state["file"] = "enabled"
elif verb == "start":
    state["active"] = state["on_start"]
    code = 0 if state["on_start"] == "active" else 1
elif verb == "is-active":
    code = 0 if state["active"] == "active" else 3
json.dump(state, open(state_file, "w"))
sys.exit(code)
"""


@pytest.fixture
def unit(tmp_path):
    """Set the fake unit's state; returns a runner of the module and a reader of the state."""
    state_file = tmp_path / "state.json"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "systemctl"
    fake.write_text(FAKE_SYSTEMCTL.format(state=state_file))
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)

    def setup(installed=True, file="disabled", active="inactive", on_start="active"):
        state = {"installed": installed, "file": file, "active": active, "on_start": on_start, "calls": []}
        state_file.write_text(json.dumps(state))

    def run(**args):
        env = {**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin"}
        return run_module("service_running", {"name": "demo", "settle_s": 1, **args}, env=env)

    def state():
        return json.loads(state_file.read_text())

    return setup, run, state


def test_start_decision_follows_the_policy():
    assert systemd.start_decision("always", "inactive") == (True, "")
    assert systemd.start_decision("always", "failed") == (True, "")
    assert systemd.start_decision("unless_failed", "inactive") == (True, "")
    assert systemd.start_decision("unless_failed", "failed")[0] is False
    assert systemd.start_decision("never", "inactive")[0] is False
    assert systemd.start_decision("never", "failed", device_present=True) == (True, "")
    assert systemd.start_decision("always", "active") == (False, "it is running")
    with pytest.raises(InputError):
        systemd.start_decision("sometimes", "inactive")


def test_enables_starts_and_reads_back(unit):
    setup, run, state = unit
    setup()
    result = run()
    assert result["changed"] is True and result["started"] is True and result["active"] is True
    verbs = [call[0] for call in state()["calls"]]
    assert verbs[:3] == ["show", "enable", "start"] and "is-active" in verbs
    assert state()["file"] == "enabled" and state()["active"] == "active"


def test_a_running_enabled_unit_is_left_alone(unit):
    setup, run, state = unit
    setup(file="enabled", active="active")
    result = run()
    assert result["changed"] is False and result["active"] is True
    assert [call[0] for call in state()["calls"]] == ["show"]


def test_check_mode_changes_nothing(unit):
    setup, run, state = unit
    setup()
    result = run(_ansible_check_mode=True)
    assert result["changed"] is True and result["started"] is True and result["active"] is False
    assert [call[0] for call in state()["calls"]] == ["show"]


def test_a_missing_unit_fails_unless_not_required(unit):
    setup, run, _ = unit
    setup(installed=False)
    failed = run()
    assert failed["failed"] is True and "demo.service is not installed. Fix:" in failed["msg"]
    assert run(required=False)["present"] is False
    checked = run(_ansible_check_mode=True)
    assert "failed" not in checked and "not installed yet" in str(checked["warnings"])


def test_a_daemon_that_does_not_stay_up_fails_or_is_reported(unit):
    setup, run, _ = unit
    setup(on_start="failed")
    failed = run()
    assert failed["failed"] is True and "does not stay up" in failed["msg"]
    assert "Fix: read the unit's journal (journalctl -u demo.service)" in failed["msg"]
    setup(on_start="failed")
    tolerated = run(must_run=False)
    assert "failed" not in tolerated and tolerated["active"] is False
    assert "does not stay up" in tolerated["not_started"]


def test_a_failed_daemon_is_not_restarted_every_run_unless_its_device_appears(unit, tmp_path):
    setup, run, _ = unit
    setup(file="enabled", active="failed")
    result = run(start="unless_failed", must_run=False)
    assert result["changed"] is False and result["started"] is False
    assert "failed here already" in result["not_started"]
    device = Path(tmp_path / "nvidiactl")
    device.write_text("")
    started = run(start="unless_failed", start_when_exists=[str(device)])
    assert started["started"] is True and started["active"] is True
