"""NVIDIA Xid events in kernel logs, in the driver's old and new line forms."""

from __future__ import annotations

import pytest
from cfcore.parsers import ParseError, parse

EXPECTED_XIDS = [13, 13, 48, 63, 64, 74, 94, 95, 119, 79]


def test_new_form_with_pid_and_process_name(load):
    facts = parse("xid", load("kernel/dmesg_xid_new_form.txt"))
    events = facts["events"]
    assert [event["xid"] for event in events] == EXPECTED_XIDS
    first = events[0]
    assert first == {
        "pci_bus_id": "0000:18:00.0",
        "xid": 13,
        "message": "Graphics SM Warp Exception on (GPC 2, TPC 1, SM 0): Out Of Range Address",
        "description": "Graphics engine exception",
        "pid": 48213,
        "process_name": "python3",
        "timestamp": "812.447291",
        "line": 8,
    }
    lost = events[-1]
    assert (lost["pci_bus_id"], lost["xid"], lost["message"]) == (
        "0000:db:00.0",
        79,
        "GPU has fallen off the bus.",
    )
    assert (lost["pid"], lost["process_name"]) == (None, None)  # pid='<unknown>', name=<unknown>
    nvlink = events[5]
    assert nvlink["message"].startswith("NVLink: fatal error detected on link 5(0x0, 0x0")
    assert facts["counts"] == {
        "13": 2,
        "48": 1,
        "63": 1,
        "64": 1,
        "74": 1,
        "94": 1,
        "95": 1,
        "119": 1,
        "79": 1,
    }


def test_old_form_without_pid(load):
    facts = parse("xid", load("kernel/dmesg_T_xid_old_form.txt"))
    events = facts["events"]
    assert [event["xid"] for event in events] == [13, 48, 63, 64, 74, 94, 95, 119, 79]
    assert all(event["pid"] is None and event["process_name"] is None for event in events)
    assert events[0]["timestamp"] == "Tue Mar  7 08:12:31 2023"
    assert events[0]["message"].startswith("Graphics SM Warp Exception")
    assert events[-1]["pci_bus_id"] == "0000:d8:00.0"
    assert facts["gpu_uuids"] == {"0000:3b:00.0": "GPU-0d7e4b1a-6c25-43f8-91e2-5a8c3f07d6b4"}


def test_journalctl_form(load):
    events = parse("xid", load("kernel/journalctl_k_xid.txt"))["events"]
    assert [(event["xid"], event["pci_bus_id"], event["timestamp"]) for event in events] == [
        (79, "0000:9a:00.0", "Nov 12 09:47:05"),
        (154, "0000:9a:00.0", "Nov 12 09:47:06"),
    ]
    assert events[1]["description"] == "GPU recovery action changed"


def test_healthy_kernel_log_has_no_events(load):
    assert parse("xid", load("kernel/dmesg_healthy.txt")) == {"events": [], "counts": {}, "gpu_uuids": {}}


def test_unknown_xid_number_has_no_description():
    event = parse("xid", "[ 42.000001] NVRM: Xid (PCI:0000:18:00): 999, pid=1, name=x, Something new\n")[
        "events"
    ][0]
    assert (event["xid"], event["description"], event["message"]) == (999, None, "Something new")


def test_dmesg_without_permission_and_non_logs_are_refused(load):
    with pytest.raises(ParseError, match="dmesg could not read the kernel log") as caught:
        parse("xid", load("kernel/dmesg_not_permitted.txt"))
    assert "dmesg_restrict" in caught.value.fix
    with pytest.raises(ParseError, match="no line looks like a kernel log line"):
        parse("xid", load("ascend/npu_smi_info_910b_x8.txt"))
