"""lspci -vvv: LnkCap / LnkSta per device."""

from __future__ import annotations

import pytest
from cfcore.parsers import ParseError, parse


def _by_bus(facts):
    return {device["bus_id"]: device for device in facts["devices"]}


def test_healthy_h100_and_cx7_links(load):
    facts = parse("lspci", load("pci/lspci_vvv_h100_cx7.txt"))
    devices = _by_bus(facts)
    assert len(devices) == 10
    gpu = devices["0000:18:00.0"]
    assert {key: gpu[key] for key in ("vendor_id", "device_id", "class", "numa_node", "kernel_driver")} == {
        "vendor_id": "10de",
        "device_id": "2330",
        "class": "3D controller",
        "numa_node": 0,
        "kernel_driver": "nvidia",
    }
    assert (gpu["link_cap_speed_gts"], gpu["link_cap_width"]) == (32.0, 16)
    assert (gpu["link_sta_speed_gts"], gpu["link_sta_width"]) == (32.0, 16)
    assert gpu["downgraded"] is False
    assert gpu["link_sta_marks"] == ["speed ok", "width ok"]
    nic = devices["0000:19:00.0"]
    assert (nic["vendor_id"], nic["device_id"]) == ("15b3", None)  # named device: -nn needed for its id
    assert nic["description"] == "Mellanox Technologies MT2910 Family [ConnectX-7]"
    assert nic["downgraded"] is False
    assert devices["0000:00:00.0"]["downgraded"] is None  # no PCIe link
    assert [device["bus_id"] for device in facts["devices"] if device["downgraded"]] == []
    assert facts["warnings"] == []


def test_x8_gpu_and_gen4_gpu_are_downgraded(load):
    devices = _by_bus(parse("lspci", load("pci/lspci_vvv_nn_D_h100_degraded.txt")))
    narrow = devices["0000:18:00.0"]
    assert (narrow["vendor_id"], narrow["device_id"], narrow["class"]) == ("10de", "2330", "3D controller")
    assert narrow["description"] == "NVIDIA Corporation GH100 [H100 SXM5 80GB]"
    assert (narrow["link_cap_width"], narrow["link_sta_width"], narrow["downgraded"]) == (16, 8, True)
    assert narrow["link_sta_marks"] == ["speed ok", "width downgraded"]
    slow = devices["0000:9b:00.0"]
    assert (slow["link_cap_speed_gts"], slow["link_sta_speed_gts"], slow["downgraded"]) == (32.0, 16.0, True)
    assert devices["0000:19:00.0"]["downgraded"] is False
    assert devices["0000:19:00.0"]["device_id"] == "1021"


def test_without_root_the_links_are_unknown_and_a_warning_says_so(load):
    facts = parse("lspci", load("pci/lspci_vvv_not_root.txt"))
    gpu = _by_bus(facts)["0000:18:00.0"]
    assert gpu["capabilities_readable"] is False
    assert gpu["link_cap_width"] is None and gpu["downgraded"] is None
    assert len(facts["warnings"]) == 1 and "run it as root" in facts["warnings"][0]


def test_link_down_reads_speed_unknown_and_width_zero():
    text = (
        "0000:18:00.0 3D controller: NVIDIA Corporation Device 2330 (rev a1)\n"
        "\tCapabilities: [60] Express (v2) Endpoint, MSI 00\n"
        "\t\tLnkCap:\tPort #0, Speed 32GT/s, Width x16, ASPM not supported\n"
        "\t\tLnkSta:\tSpeed unknown (downgraded), Width x0 (downgraded)\n"
    )
    device = parse("lspci", text)["devices"][0]
    assert (device["link_sta_speed_gts"], device["link_sta_width"], device["downgraded"]) == (None, 0, True)


def test_old_lspci_without_ok_marks():
    text = (
        "3b:00.0 3D controller: NVIDIA Corporation GV100GL [Tesla V100 SXM2 32GB] (rev a1)\n"
        "\t\tLnkCap:\tPort #0, Speed 8GT/s, Width x16, ASPM not supported, Exit Latency L0s <1us, L1 <4us\n"
        "\t\tLnkSta:\tSpeed 2.5GT/s, Width x16, TrErr- Train- SlotClk+ DLActive- BWMgmt- ABWMgmt-\n"
    )
    device = parse("lspci", text)["devices"][0]
    assert (device["link_sta_speed_gts"], device["downgraded"], device["link_sta_marks"]) == (2.5, True, [])


def test_plain_lspci_and_other_output_are_refused(load):
    with pytest.raises(ParseError, match="no device has detail lines"):
        parse("lspci", "18:00.0 3D controller: NVIDIA Corporation Device 2330 (rev a1)\n")
    with pytest.raises(ParseError, match="not lspci -vvv output") as caught:
        parse("lspci", load("ib/ibstat_h100_all_active.txt"))
    assert caught.value.line == 1
