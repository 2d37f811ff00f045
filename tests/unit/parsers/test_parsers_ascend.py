"""npu-smi info (table), npu-smi info -t board / -t health."""

from __future__ import annotations

import pytest
from cfcore.parsers import ParseError, parse

CHIP_KEYS = ["npu_id", "chip_id", "name", "health", "power_w", "temperature_c", "hbm_used_mb", "hbm_total_mb",
             "aicore_pct", "bus_id"]  # fmt: skip


def test_910b_node_healthy(load):
    facts = parse("npu-smi-info", load("ascend/npu_smi_info_910b_x8.txt"))
    assert facts["version"] == "24.1.rc2"
    assert (facts["npu_count"], facts["chip_count"]) == (8, 8)
    npus = facts["npus"]
    assert [chip["npu_id"] for chip in npus] == list(range(8))
    assert {chip["chip_id"] for chip in npus} == {0}
    first = npus[0]
    assert {key: first[key] for key in CHIP_KEYS} == {
        "npu_id": 0,
        "chip_id": 0,
        "name": "910B3",
        "health": "OK",
        "power_w": 93.1,
        "temperature_c": 44,
        "hbm_used_mb": 33868,
        "hbm_total_mb": 65536,
        "aicore_pct": 0,
        "bus_id": "0000:c1:00.0",
    }
    assert {chip["health"] for chip in npus} == {"OK"}
    assert facts["processes"] == [
        {"npu_id": 0, "chip_id": 0, "pid": 418822, "name": "python3.10", "memory_mb": 30474}
    ]


def test_910b_alarm_and_warning_are_per_npu(load):
    npus = parse("npu-smi-info", load("ascend/npu_smi_info_910b_x8_alarm.txt"))["npus"]
    assert {chip["npu_id"]: chip["health"] for chip in npus if chip["health"] != "OK"} == {
        3: "Alarm",
        6: "Warning",
    }


def test_a3_lists_sixteen_chips_with_phy_ids(load):
    facts = parse("npu-smi-info", load("ascend/npu_smi_info_a3_x16.txt"))
    assert (facts["npu_count"], facts["chip_count"]) == (8, 16)
    npus = facts["npus"]
    assert [(chip["npu_id"], chip["chip_id"]) for chip in npus] == [(n // 2, n % 2) for n in range(16)]
    assert [chip["phy_id"] for chip in npus] == list(range(16))
    assert npus[0]["power_w"] == 171.4
    assert npus[1]["power_w"] is None  # the second die prints '-'
    assert len({chip["bus_id"] for chip in npus}) == 16


def test_310p_card_with_two_chip_rows_under_one_npu_row(load):
    npus = parse("npu-smi-info", load("ascend/npu_smi_info_310p_duo.txt"))["npus"]
    assert [(chip["npu_id"], chip["chip_id"], chip["device_id"]) for chip in npus] == [
        (1, 0, 0), (1, 1, 1), (2, 0, 2), (2, 1, 3)
    ]  # fmt: skip
    assert npus[1]["name"] == "310P3"
    assert npus[1]["power_w"] is None  # 'NA'
    assert (npus[1]["memory_used_mb"], npus[1]["memory_total_mb"]) == (1468, 43693)
    assert npus[0]["hbm_total_mb"] is None  # no HBM column on 310P
    assert npus[0]["bus_id"] == npus[1]["bus_id"] == "0000:01:00.0"


def test_910a_on_old_npu_smi_without_hugepages_or_hbm(load):
    facts = parse("npu-smi-info", load("ascend/npu_smi_info_910a_v20.txt"))
    assert facts["version"] == "20.2.0"
    assert facts["chip_count"] == 8
    chip = facts["npus"][0]
    assert (chip["name"], chip["power_w"], chip["temperature_c"]) == ("910A", 67.2, 35)
    assert (chip["memory_used_mb"], chip["memory_total_mb"]) == (2621, 15307)
    assert chip["hbm_total_mb"] is None and chip["hugepages_total"] is None


def test_truncated_table_is_refused(load):
    with pytest.raises(ParseError, match="truncated npu-smi info output") as caught:
        parse("npu-smi-info", load("ascend/npu_smi_info_truncated.txt"))
    assert caught.value.line == 13


def test_dcmi_failure_says_npu_smi_could_not_talk_to_the_driver(load):
    for kind in ("npu-smi-info", "npu-smi-board", "npu-smi-health"):
        with pytest.raises(ParseError, match="could not talk to the Ascend driver") as caught:
            parse(kind, load("ascend/npu_smi_dcmi_failure.txt"))
        assert caught.value.line == 2
        assert "davinci" in caught.value.fix


def test_board_of_an_npu(load):
    board = parse("npu-smi-board", load("ascend/npu_smi_board_910b.txt"))
    assert board["npu_id"] == 0
    assert board["software_version"] == "24.1.rc2"
    assert board["firmware_version"] == "7.5.0.1.129"
    assert board["compatibility"] == "OK"
    assert board["bus_id"] == "0000:c1:00.0"
    assert (board["pci_vendor_id"], board["pci_device_id"]) == ("19e5", "d802")
    assert board["chip_count"] == 1
    assert board["fields"]["class_id"] == "NA"


def test_board_of_a_chip(load):
    board = parse("npu-smi-board", load("ascend/npu_smi_board_910b_chip.txt"))
    assert (board["npu_id"], board["chip_id"], board["chip_name"]) == (0, 0, "910B3")
    assert board["software_version"] is None
    assert board["fields"]["vdie_id"].startswith("6F1A2C03")


def test_board_refuses_health_output(load):
    with pytest.raises(ParseError, match="not npu-smi info -t board output"):
        parse("npu-smi-board", load("ascend/npu_smi_health_ok.txt"))


def test_health_ok(load):
    health = parse("npu-smi-health", load("ascend/npu_smi_health_ok.txt"))
    assert (health["npu_id"], health["chip_id"], health["health"], health["error_codes"]) == (3, 0, "OK", [])
    assert health["chips"] == [{"chip_id": 0, "health": "OK", "error_codes": [], "error_information": None}]


def test_health_alarm_with_error_codes(load):
    health = parse("npu-smi-health", load("ascend/npu_smi_health_alarm.txt"))
    assert health["health"] == "Alarm"
    assert health["error_codes"] == ["80E18005", "80CB8009"]
    assert "Heartbeat" in health["chips"][0]["error_information"]


def test_health_of_one_chip_without_npu_id(load):
    health = parse("npu-smi-health", load("ascend/npu_smi_health_chip_warning.txt"))
    assert (health["npu_id"], health["health"], health["error_codes"]) == (None, "Warning", ["80E01801"])


def test_health_of_several_chips_takes_the_worst():
    text = (
        "\tNPU ID                         : 0\n\tChip Count                     : 2\n\n"
        "\tChip ID                        : 0\n\tHealth Status                  : OK\n"
        "\tError Code                     : NA\n\tError Information              : NA\n\n"
        "\tChip ID                        : 1\n\tHealth Status                  : Critical\n"
        "\tError Code                     : 80C98000\n\tError Information              : NA\n"
    )
    health = parse("npu-smi-health", text)
    assert health["health"] == "Critical"
    assert [(chip["chip_id"], chip["health"]) for chip in health["chips"]] == [(0, "OK"), (1, "Critical")]
    assert health["chip_id"] is None


def test_npu_smi_table_refuses_other_output(load):
    with pytest.raises(ParseError, match=r"no 'NPU Name \| Health' table header"):
        parse("npu-smi-info", load("ascend/npu_smi_board_910b.txt"))
    with pytest.raises(ParseError, match="no 'Health Status' line"):
        parse("npu-smi-health", load("ascend/npu_smi_info_910b_x8.txt"))
