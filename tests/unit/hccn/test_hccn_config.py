"""hccn_config: only differing devices are written, check mode writes nothing, errors and links reported.

The module runs as Ansible runs it (its own process, arguments on stdin) against a fake hccn_tool that
keeps its state in a JSON file and writes hccn.conf the way hccn_tool -s does.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import module_runner
import pytest

ROOT = Path(__file__).resolve().parents[3]
FAKE = Path(__file__).with_name("fake_hccn_tool.py")


def plan(count=8):
    return [
        {
            "id": d,
            "address": f"10.30.2.{11 + d}",
            "netmask": "255.255.255.0",
            "gateway": "10.30.2.1",
            "netdetect": "10.30.2.1",
        }
        for d in range(count)
    ]


class Node:
    """A tmp dir with the fake tool, its state and hccn.conf."""

    def __init__(self, tmp_path: Path, devices=None, **extra):
        self.dir = tmp_path
        self.state_path = tmp_path / "state.json"
        self.conf = tmp_path / "hccn.conf"
        self.tool = tmp_path / "hccn_tool"
        self.tool.write_text(f'#!/bin/sh\nexec {sys.executable} {FAKE} "$@"\n')
        self.tool.chmod(0o755)
        devices = devices if devices is not None else {str(d): {} for d in range(8)}
        self.state_path.write_text(json.dumps({"conf": str(self.conf), "devices": devices, **extra}))

    @property
    def state(self) -> dict:
        return json.loads(self.state_path.read_text())

    def writes(self) -> list[list[str]]:
        return [call for call in self.state.get("calls", []) if "-s" in call]

    def reset_calls(self) -> None:
        state = self.state
        state["calls"] = []
        self.state_path.write_text(json.dumps(state))

    def run(self, devices, check=False, diff=False, **params) -> dict:
        args = {
            "devices": devices,
            "hccn_tool": str(self.tool),
            "conf": str(self.conf),
            "_ansible_check_mode": check,
            "_ansible_diff": diff,
            **params,
        }
        return module_runner.run_module(
            "hccn_config", args, {**os.environ, "FAKE_HCCN_STATE": str(self.state_path)}
        )


def configured(devices):
    return {str(d["id"]): {k: v for k, v in d.items() if k != "id"} for d in devices}


def test_fresh_node_gets_every_device_then_nothing_changes(tmp_path, watchdog):
    node = Node(tmp_path)
    first = node.run(plan())
    assert first["changed"] is True and "failed" not in first, first
    assert len(node.writes()) == 8 * 3
    assert [d["items"] for d in first["devices"]] == [["ip", "gateway", "netdetect"]] * 8
    assert first["devices"][0]["before"] == {
        "address": None,
        "netmask": None,
        "gateway": None,
        "netdetect": None,
    }
    assert first["devices"][0]["after"]["address"] == "10.30.2.11"
    assert "address_7=10.30.2.18\n" in node.conf.read_text()
    node.reset_calls()
    second = node.run(plan())
    assert second["changed"] is False and second["commands"] == [] and node.writes() == []
    assert {d["link"] for d in second["devices"]} == {"UP"}
    assert {d["net_health"] for d in second["devices"]} == {"Success"}


def test_only_the_device_that_differs_is_written(tmp_path, watchdog):
    node = Node(tmp_path)
    node.run(plan())
    node.reset_calls()
    changed = plan()
    changed[3]["address"] = "10.30.2.44"
    result = node.run(changed, diff=True)
    assert result["changed"] is True
    assert node.writes() == [["-i", "3", "-ip", "-s", "address", "10.30.2.44", "netmask", "255.255.255.0"]]
    assert [d["id"] for d in result["devices"] if d["changed"]] == [3]
    assert result["commands"] == [f"{node.tool} -i 3 -ip -s address 10.30.2.44 netmask 255.255.255.0"]
    [diff] = result["diff"]
    assert "address_3=10.30.2.14" in diff["before"] and "address_3=10.30.2.44" in diff["after"]
    assert "address_3=10.30.2.44\n" in node.conf.read_text()


def test_check_mode_writes_nothing_and_reports_the_diff(tmp_path, watchdog):
    node = Node(tmp_path)
    result = node.run(plan(), check=True, diff=True)
    assert result["changed"] is True
    assert node.writes() == [] and not node.conf.exists()
    assert result["commands"] == [] and len(result["would_run"]) == 24
    assert len(result["diff"]) == 8 and "netdetect_0=10.30.2.1" in result["diff"][0]["after"]
    assert all(d["after"]["address"] == f"10.30.2.{11 + d['id']}" for d in result["devices"])


def test_live_right_but_not_in_conf_is_set_again(tmp_path, watchdog):
    node = Node(tmp_path, devices=configured(plan()))
    result = node.run(plan())
    # hccn_tool records what it sets in hccn.conf: setting again keeps the plan across reboots
    assert result["changed"] is True and len(node.writes()) == 24
    node.reset_calls()
    assert node.run(plan())["changed"] is False and node.writes() == []


def test_tool_error_is_reported_with_the_evidence_and_other_devices_still_done(tmp_path, watchdog):
    node = Node(tmp_path, broken=[5])
    result = node.run(plan())
    assert result["failed"] is True
    [error] = result["errors"]
    assert error["device"] == 5 and error["rc"] == 255 and "device id 5 is invalid" in error["stderr"]
    assert "-i 5 -ip -g" in error["command"] and error["fix"]
    assert "hccn_tool -ip -g failed for device 5" in result["msg"]
    assert {call[1] for call in node.writes()} == {"0", "1", "2", "3", "4", "6", "7"}


def test_a_write_that_does_not_take_fails(tmp_path, watchdog):
    node = Node(tmp_path, sticky=[2])
    result = node.run(plan())
    assert result["failed"] is True
    [error] = result["errors"]
    assert error["device"] == 2
    assert (
        "hccn_tool -s succeeded but address, netmask, gateway, netdetect read back as None"
        in error["message"]
    )


def test_unparseable_output_is_an_error_not_a_value(tmp_path, watchdog):
    node = Node(tmp_path)
    node.tool.write_text("#!/bin/sh\necho 'Usage: hccn_tool ...'\n")
    result = node.run(plan(1))
    assert result["failed"] is True
    assert "hccn_tool reported an error instead of its -ip output" in result["errors"][0]["message"]


def test_link_down_after_a_change_warns_or_fails_with_check_link(tmp_path, watchdog):
    devices = {str(d): {} for d in range(8)}
    devices["6"] = {"link": "DOWN", "net_health": "Init"}
    node = Node(tmp_path, devices=devices)
    result = node.run(plan())
    assert "failed" not in result and result["link_down"] == [6]
    assert "device 6: link DOWN after the change" in json.dumps(result["warnings"])
    assert result["devices"][6]["net_health"] == "Init"
    failed = node.run(plan(), check_link=True)
    assert failed["failed"] is True and failed["changed"] is False
    assert failed["errors"] == [
        {
            "device": 6,
            "message": "device 6: link is not UP (check_link)",
            "fix": failed["errors"][0]["fix"],
        }
    ]
    assert "cable/optic" in failed["fix"]


def test_conf_that_does_not_hold_the_plan_fails(tmp_path, watchdog):
    node = Node(tmp_path)
    state = node.state
    state["conf"] = None  # a tool that keeps no hccn.conf
    node.state_path.write_text(json.dumps(state))
    result = node.run(plan(2))
    assert result["failed"] is True and result["changed"] is True
    assert "does not hold the plan of device 0: address_0 missing" in result["msg"]
    assert "does not exist" in result["msg"]


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"hccn_tool": "/nonexistent/hccn_tool"}, "hccn_tool not found or not executable at /nonexistent"),
        ({"devices": plan(1) + plan(1)}, "a device id is planned twice"),
        ({"devices": [{"id": 0, "address": "10.30.2.11"}]}, "missing required arguments"),
    ],
)
def test_bad_parameters_are_refused(tmp_path, watchdog, params, message):
    node = Node(tmp_path)
    devices = params.pop("devices", plan(1))
    result = node.run(devices, **params)
    assert result["failed"] is True and message in result["msg"]
    assert node.writes() == []
