"""npu.* check logic on parsed npu-smi / hccn_tool dicts."""

from __future__ import annotations

import copy

from cfcore.checks import ascend
from cfcore.outputs import Output
from chkdata import ATLAS_SKU, HCCN_PLAN, failed_output

ACCEL = ATLAS_SKU["accelerator"]
NICS = ATLAS_SKU["npu_nics"]
BOM = {"ascend_driver_version": "24.1.rc2"}


def chip(npu, health="OK", name="910B3", chip_id=0):
    return {
        "npu_id": npu,
        "chip_id": chip_id,
        "name": name,
        "health": health,
        "power_w": 96.5,
        "temperature_c": 40 + npu,
        "hbm_total_mb": 65536,
        "bus_id": f"0000:{npu + 1:02x}:00.0",
    }


def info(chips=None, version="24.1.rc2") -> Output:
    return Output.from_data(
        "npu-smi info", {"version": version, "npus": chips or [chip(n) for n in range(8)]}
    )


def board(npu, compat="OK", firmware="7.5.0.1.129"):
    data = {
        "npu_id": npu,
        "software_version": "24.1.rc2",
        "firmware_version": firmware,
        "compatibility": compat,
    }
    return Output.from_data(f"npu-smi info -t board -i {npu}", data)


def per_device(make) -> dict:
    return {n: make(n) for n in range(8)}


def test_healthy_node_passes():
    healthy = info()
    assert ascend.npu_tool(healthy)["status"] == "pass"
    assert ascend.npu_count(healthy, ACCEL)["status"] == "pass"
    assert ascend.npu_model(healthy, ACCEL)["status"] == "pass"
    assert ascend.npu_health(healthy)["status"] == "pass"
    assert ascend.npu_driver_version(healthy, ACCEL, BOM)["status"] == "pass"
    assert ascend.npu_firmware_compat(per_device(board), list(range(8)))["status"] == "pass"


def test_health_levels():
    chips = [chip(n) for n in range(8)]
    chips[3] = chip(3, health="Alarm")
    detail = Output.from_data(
        "npu-smi info -t health -i 3",
        {"health": "Alarm"},
        text="\tHealth Status                  : Alarm\n\tError Code                     : 80E18005\n",
    )
    alarm = ascend.npu_health(info(chips), {3: detail})
    assert alarm["status"] == "fail" and "NPU 3" in alarm["message"]
    assert "Error Code                     : 80E18005" in alarm["evidence"]["lines"]
    chips[3] = chip(3, health="Warning")
    assert ascend.npu_health(info(chips))["status"] == "warn"
    chips[3] = chip(3, health="Critical")
    assert ascend.npu_health(info(chips))["status"] == "fail"


def test_count_counts_npus_not_chips():
    a3 = [chip(n // 2, chip_id=n % 2, name="Ascend910") for n in range(16)]
    accel = {**ACCEL, "model": "Ascend910", "count": 8}
    result = ascend.npu_count(info(a3), accel)
    assert result["status"] == "pass" and "16 chips" in result["message"]
    assert ascend.npu_count(info([chip(n) for n in range(7)]), ACCEL)["status"] == "fail"


def test_driver_version_against_bom_and_minimum():
    assert ascend.npu_driver_version(info(version="23.0.rc3"), ACCEL, BOM)["status"] == "fail"
    old = ascend.npu_driver_version(info(version="22.0.4"), ACCEL, {})
    assert old["status"] == "fail" and "min_driver" in old["message"]
    assert ascend.npu_driver_version(info(version="24.1.RC2"), ACCEL, BOM)["status"] == "pass"


def test_firmware_incompatibility_names_the_npu():
    boards = per_device(board)
    boards[6] = board(6, compat="Not compatible", firmware="6.4.12.1.241")
    result = ascend.npu_firmware_compat(boards, list(range(8)))
    assert result["status"] == "fail" and "NPU 6" in result["message"] and "6.4.12.1.241" in result["message"]
    boards[6] = failed_output(
        "npu-smi info -t board -i 6", "not_captured", "npu-smi-board-6.txt is not in the capture"
    )
    assert ascend.npu_firmware_compat(boards, list(range(8)))["status"] == "error"


def test_nic_link_net_health_and_ip():
    links = {
        n: Output.from_data(f"hccn_tool -i {n} -link -g", {"link_status": "UP"}, "link status: UP")
        for n in range(8)
    }
    assert ascend.npu_nic_link(links, NICS)["status"] == "pass"
    links[2] = Output.from_data("hccn_tool -i 2 -link -g", {"link_status": "DOWN"}, "link status: DOWN")
    down = ascend.npu_nic_link(links, NICS)
    assert down["status"] == "fail" and "NPU NIC 2: link DOWN" in down["message"]

    health = {
        n: Output.from_data(f"hccn_tool -i {n} -net_health -g", {"net_health": "Success"}) for n in range(8)
    }
    assert ascend.npu_nic_net_health(health, NICS)["status"] == "pass"
    health[5] = Output.from_data(
        "hccn_tool -i 5 -net_health -g",
        {"net_health": "Receive timeout"},
        "net health status: Receive timeout",
    )
    bad = ascend.npu_nic_net_health(health, NICS)
    assert bad["status"] == "fail" and "NPU NIC 5" in bad["message"]
    assert bad["evidence"]["lines"] == ["net health status: Receive timeout"]

    addresses = {
        e["id"]: Output.from_data(
            f"hccn_tool -i {e['id']} -ip -g", {"address": e["address"], "netmask": e["netmask"]}
        )
        for e in HCCN_PLAN
    }
    assert ascend.npu_nic_ip(addresses, HCCN_PLAN, NICS)["status"] == "pass"
    addresses[1] = Output.from_data(
        "hccn_tool -i 1 -ip -g", {"address": "10.20.0.99", "netmask": "255.255.255.0"}
    )
    wrong = ascend.npu_nic_ip(addresses, HCCN_PLAN, NICS)
    assert wrong["status"] == "fail" and "-ip -s address 10.20.0.11 netmask 255.255.255.0" in wrong["remedy"]
    assert ascend.npu_nic_ip(addresses, [], NICS)["status"] == "error"
    assert ascend.npu_nic_ip(addresses, HCCN_PLAN, None)["status"] == "skip"


def test_npu_smi_missing_or_broken():
    missing = failed_output("npu-smi info", "not_found", "npu-smi not found on PATH")
    assert ascend.npu_tool(missing)["status"] == "error"
    assert ascend.npu_health(missing)["status"] == "error"
    broken = failed_output("npu-smi info", "failed", "npu-smi info exited 255: dcmi module initialize failed")
    assert ascend.npu_tool(broken)["status"] == "fail"


def test_metrics():
    chips = [chip(n) for n in range(8)]
    chips[2] = chip(2, health="Alarm")
    found = ascend.metrics(info(copy.deepcopy(chips)))
    assert (
        found["npu.count"] == 8
        and found["npu.temperature_max_c"] == 47
        and found["npu.health_not_ok_count"] == 1
    )
