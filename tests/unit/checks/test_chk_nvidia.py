"""gpu.* check logic on parsed dicts: a healthy H100 node passes, each fault fails with its device."""

from __future__ import annotations

import copy

from cfcore.checks import nvidia
from cfcore.outputs import Output
from chkdata import H100_SKU, failed_output, gpu, smi

ACCEL = H100_SKU["accelerator"]
BOM = {"nvidia_driver_version": "535.183.01", "cuda_version": "12.2"}


def accel(**changes) -> dict:
    spec = copy.deepcopy(ACCEL)
    spec.update(changes)
    return spec


def with_gpu(index: int, **changes) -> Output:
    gpus = [gpu(i) for i in range(8)]
    gpus[index] = gpu(index, **changes)
    return smi(gpus)


def test_healthy_node_passes_every_smi_check():
    healthy = smi()
    assert nvidia.gpu_tool(healthy)["status"] == "pass"
    assert nvidia.gpu_count(healthy, ACCEL)["status"] == "pass"
    assert nvidia.gpu_model(healthy, ACCEL)["status"] == "pass"
    assert nvidia.gpu_driver_version(healthy, ACCEL, BOM)["status"] == "pass"
    assert nvidia.gpu_pcie_link(healthy, ACCEL)["status"] == "pass"
    assert nvidia.gpu_persistence_mode(healthy)["status"] == "pass"
    assert nvidia.gpu_ecc(healthy)["status"] == "pass"
    assert nvidia.gpu_remapped_rows(healthy)["status"] == "pass"
    assert nvidia.gpu_mig(healthy, ACCEL)["status"] == "pass"


def test_missing_nvidia_smi_is_error_never_pass():
    missing = failed_output("nvidia-smi -q -x", "not_found", "nvidia-smi not found on PATH")
    tool = nvidia.gpu_tool(missing)
    assert tool["status"] == "error"
    assert "nvidia-smi not found on PATH" in tool["message"]
    assert "install nvidia-smi" in tool["remedy"]
    for check in (nvidia.gpu_count(missing, ACCEL), nvidia.gpu_ecc(missing), nvidia.gpu_mig(missing, ACCEL)):
        assert check["status"] == "error"
        assert "see gpu.tool" in check["message"]


def test_driver_that_cannot_be_reached_fails_the_tool_check():
    broken = failed_output(
        "nvidia-smi -q -x",
        "failed",
        "nvidia-smi -q -x exited 9: NVIDIA-SMI has failed",
        text="NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
        "Make sure that the latest NVIDIA driver is installed and running.\n",
    )
    result = nvidia.gpu_tool(broken)
    assert result["status"] == "fail"
    assert "couldn't communicate with the NVIDIA driver" in result["evidence"]["lines"][0]


def test_unreachable_gpu_reported_by_nvidia_smi_fails_the_tool_check():
    data = smi([gpu(i) for i in range(7)])
    data.data["tool_messages"] = ["Unable to determine the device handle for GPU0000:88:00.0: Unknown Error"]
    result = nvidia.gpu_tool(data)
    assert result["status"] == "fail"
    assert "0000:88:00.0" in result["message"]


def test_missing_gpu_is_named_from_lspci():
    present = smi([gpu(i) for i in range(7)])
    devices = [
        {"bus_id": g["pci_bus_id"], "vendor_id": "10de", "device_id": "2330"} for g in present.data["gpus"]
    ]
    devices.append({"bus_id": "0000:88:00.0", "vendor_id": "10de", "device_id": "2330"})
    devices.append({"bus_id": "0000:05:00.0", "vendor_id": "10de", "device_id": "22a3"})  # an NVSwitch
    lspci = Output.from_data("lspci -vvv -nn -D -d 10de:", {"devices": devices})
    result = nvidia.gpu_count(present, ACCEL, lspci)
    assert result["status"] == "fail"
    assert "only 7 of 8" in result["message"]
    assert "0000:88:00.0" in result["message"] and "0000:05:00.0" not in result["message"]


def test_more_gpus_than_the_sku_points_at_the_inventory():
    result = nvidia.gpu_count(smi([gpu(i) for i in range(8)]), accel(count=4))
    assert result["status"] == "fail"
    assert "node_sku" in result["remedy"]


def test_wrong_model_names_the_gpu():
    result = nvidia.gpu_model(with_gpu(2, name="NVIDIA A100-SXM4-80GB"), ACCEL)
    assert result["status"] == "fail"
    assert "GPU 2" in result["message"] and "A100" in result["message"]


def test_driver_version_must_equal_the_bom_and_reach_the_branch():
    assert nvidia.gpu_driver_version(smi(driver="535.161.08"), ACCEL, BOM)["status"] == "fail"
    old = nvidia.gpu_driver_version(smi(driver="470.82.01"), ACCEL, {})
    assert old["status"] == "fail" and "minimum branch 525" in old["message"]
    cuda = nvidia.gpu_driver_version(smi(cuda="12.0"), ACCEL, BOM)
    assert cuda["status"] == "fail" and "CUDA 12.0" in cuda["message"]
    no_bom = nvidia.gpu_driver_version(smi(), ACCEL, {})
    assert no_bom["status"] == "warn"


def test_kernel_module_flavour():
    proprietary = Output(
        "/proc/driver/nvidia/version",
        "ok",
        text="NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.86.15  Thu Jan 23 2025\n",
    )
    open_modules = Output(
        "/proc/driver/nvidia/version",
        "ok",
        text="NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release Build\n",
    )
    assert (
        nvidia.gpu_kernel_modules(open_modules, None, accel(kernel_module_flavour="open"))["status"] == "pass"
    )
    wrong = nvidia.gpu_kernel_modules(proprietary, None, accel(kernel_module_flavour="open"))
    assert wrong["status"] == "fail" and "proprietary" in wrong["message"]
    licence = Output("modinfo -F license nvidia", "ok", text="Dual MIT/GPL\n")
    unread = Output(
        "/proc/driver/nvidia/version", "not_found", error="/proc/driver/nvidia/version does not exist"
    )
    assert nvidia.gpu_kernel_modules(unread, licence, accel(kernel_module_flavour="open"))["status"] == "pass"
    none = Output("modinfo -F license nvidia", "failed", error="modinfo: ERROR: Module nvidia not found.")
    assert nvidia.gpu_kernel_modules(unread, none, accel(kernel_module_flavour="any"))["status"] == "skip"
    assert nvidia.gpu_kernel_modules(unread, none, accel(kernel_module_flavour="open"))["status"] == "error"


def test_pcie_width_x8_fails_and_idle_gen_does_not():
    narrow = nvidia.gpu_pcie_link(with_gpu(3, pcie_width_current=8), ACCEL)
    assert narrow["status"] == "fail"
    assert "GPU 3" in narrow["message"] and "x8" in narrow["message"]
    # GPUs drop to Gen1 when idle to save power: the link's maximum decides.
    assert nvidia.gpu_pcie_link(with_gpu(3, pcie_gen_current=1), ACCEL)["status"] == "pass"
    slot = nvidia.gpu_pcie_link(with_gpu(1, pcie_gen_max=4, pcie_gen_current=4), ACCEL)
    assert slot["status"] == "fail" and "Gen4" in slot["message"]


def test_pcie_cross_check_with_lspci():
    healthy = smi()
    bus = healthy.data["gpus"][6]["pci_bus_id"]
    lspci = Output.from_data(
        "lspci -vvv -nn -D -d 10de:",
        {"devices": [{"bus_id": bus, "link_cap_width": 16, "link_sta_width": 4, "device_id": "2330"}]},
    )
    result = nvidia.gpu_pcie_link(healthy, ACCEL, lspci)
    assert result["status"] == "fail"
    assert "GPU 6" in result["message"] and "lspci" in result["message"]


def nvlink(down=None, slow=None) -> Output:
    gpus = []
    for index in range(8):
        links = []
        for link in range(18):
            if link in (down or {}).get(index, ()):
                links.append({"link": link, "state": "inactive", "speed_gbps": None})
            else:
                speed = 13.281 if link in (slow or {}).get(index, ()) else 26.562
                links.append({"link": link, "state": "active", "speed_gbps": speed})
        gpus.append({"index": index, "links": links})
    return Output.from_data("nvidia-smi nvlink -s", {"gpus": gpus})


def test_nvlink_down_and_slow_links():
    assert nvidia.gpu_nvlink(nvlink(), smi(), ACCEL)["status"] == "pass"
    down = nvidia.gpu_nvlink(nvlink(down={2: (4, 5)}), smi(), ACCEL)
    assert down["status"] == "fail"
    assert "GPU 2: 16 of 18 NVLinks active (down: 4, 5)" in down["message"]
    slow = nvidia.gpu_nvlink(nvlink(slow={6: (0,)}), smi(), ACCEL)
    assert slow["status"] == "fail" and "GPU 6" in slow["message"]
    all_inactive = Output.from_data("nvidia-smi nvlink -s", {"gpus": [{"index": 0, "links": []}]})
    result = nvidia.gpu_nvlink(all_inactive, smi([gpu(0)]), ACCEL)
    assert result["status"] == "fail" and "0 of 18" in result["message"]
    assert nvidia.gpu_nvlink(None, smi(), accel(nvlink_links_per_device=None))["status"] == "skip"


def test_fabric_manager():
    active = Output("systemctl is-active nvidia-fabricmanager", "ok", text="active\n")
    assert nvidia.gpu_fabric_manager(active, ACCEL, smi())["status"] == "pass"
    inactive = Output("systemctl is-active nvidia-fabricmanager", "failed", text="failed\n", rc=3)
    result = nvidia.gpu_fabric_manager(inactive, ACCEL, smi())
    assert result["status"] == "fail" and "failed" in result["message"]
    assert "restart nvidia-fabricmanager" in result["remedy"]
    unregistered = nvidia.gpu_fabric_manager(
        active, ACCEL, with_gpu(4, fabric_state="In Progress", fabric_status="N/A")
    )
    assert unregistered["status"] == "fail" and "GPU 4" in unregistered["message"]
    no_systemctl = failed_output(
        "systemctl is-active nvidia-fabricmanager", "not_found", "systemctl not found"
    )
    assert nvidia.gpu_fabric_manager(no_systemctl, ACCEL, smi())["status"] == "error"
    assert nvidia.gpu_fabric_manager(None, accel(interconnect="pcie"), smi())["status"] == "skip"


def test_persistence_mode_and_mig():
    assert nvidia.gpu_persistence_mode(with_gpu(1, persistence_mode="Disabled"))["status"] == "fail"
    mig_on = nvidia.gpu_mig(with_gpu(0, mig_mode="Enabled"), ACCEL)
    assert mig_on["status"] == "fail" and "-mig 0" in mig_on["remedy"]
    assert nvidia.gpu_mig(smi([gpu(0, mig_mode=None)]), ACCEL)["status"] == "pass"  # no MIG support
    assert nvidia.gpu_mig(smi(), accel(mig_mode="enabled"))["status"] == "fail"


def test_ecc_retired_pages_and_remapped_rows():
    ecc = nvidia.gpu_ecc(with_gpu(5, ecc_uncorrected_volatile=3))
    assert ecc["status"] == "fail" and "GPU 5" in ecc["message"] and "3 uncorrected" in ecc["message"]
    assert nvidia.gpu_ecc(with_gpu(2, ecc_mode="Disabled"))["status"] == "fail"
    assert nvidia.gpu_retired_pages(smi())["status"] == "skip"  # Hopper remaps rows instead
    retired = nvidia.gpu_retired_pages(smi([gpu(i, retired_pages_pending=(i == 1)) for i in range(8)]))
    assert retired["status"] == "fail" and "GPU 1" in retired["message"]
    pending = nvidia.gpu_remapped_rows(with_gpu(5, remapped_rows_pending=True))
    assert pending["status"] == "fail" and "reset" in pending["remedy"]
    failure = nvidia.gpu_remapped_rows(with_gpu(5, remapped_rows_failure=True))
    assert failure["status"] == "fail" and "RMA" in failure["remedy"]


def xid_log(*events, text="") -> Output:
    return Output.from_data("dmesg", {"events": list(events)}, text=text)


def test_xid_79_fails_with_the_kernel_line_as_evidence():
    line = (
        "[48213.554911] NVRM: Xid (PCI:0000:48:00): 79, pid='<unknown>', name=<unknown>, "
        "GPU has fallen off the bus."
    )
    log = xid_log(
        {"pci_bus_id": "0000:48:00.0", "xid": 79, "message": "GPU has fallen off the bus.", "line": 2},
        text="[    1.0] boot\n" + line + "\n",
    )
    result = nvidia.gpu_xid(log, smi())
    assert result["status"] == "fail"
    assert "Xid 79" in result["message"] and "GPU 3 (0000:48:00.0)" in result["message"]
    assert result["evidence"]["lines"] == [line]
    assert "docs.nvidia.com" in result["evidence"]["source"]


def test_application_xids_warn_and_unknown_xids_warn():
    app = nvidia.gpu_xid(
        xid_log({"pci_bus_id": "0000:18:00.0", "xid": 13, "message": "Graphics Exception"}), smi()
    )
    assert app["status"] == "warn"
    unknown = nvidia.gpu_xid(xid_log({"pci_bus_id": "0000:18:00.0", "xid": 999, "message": "?"}), smi())
    assert unknown["status"] == "warn" and "Xid catalog" in unknown["remedy"]
    assert nvidia.gpu_xid(xid_log(), smi())["status"] == "pass"
    mixed = nvidia.gpu_xid(
        xid_log(
            {"pci_bus_id": "0000:18:00.0", "xid": 13, "message": "x"},
            {"pci_bus_id": "0000:28:00.0", "xid": 94, "message": "Contained ECC error"},
            {"pci_bus_id": "0000:28:00.0", "xid": 94, "message": "Contained ECC error"},
        ),
        smi(),
    )
    assert mixed["status"] == "fail"
    assert (
        "Xid 94" in mixed["message"] and "(2 times)" in mixed["message"] and "Xid 13" not in mixed["message"]
    )


def test_unreadable_kernel_log_is_an_error_with_the_fix():
    denied = failed_output(
        "dmesg", "failed", "dmesg exited 1: dmesg: read kernel buffer failed: Operation not permitted"
    )
    result = nvidia.gpu_xid(denied, smi())
    assert result["status"] == "error"
    assert "become" in result["remedy"]


def test_metrics_summarise_the_node():
    gpus = [gpu(i, temperature_c=30 + i, pcie_width_current=8 if i == 2 else 16) for i in range(8)]
    found = nvidia.metrics(
        smi(gpus), nvlink(down={1: (0,)}), xid_log({"pci_bus_id": "0000:18:00.0", "xid": 79})
    )
    assert found["gpu.count"] == 8
    assert found["gpu.pcie_width_min"] == 8
    assert found["gpu.temperature_max_c"] == 37
    assert found["gpu.nvlink_active_links_min"] == 17
    assert found["gpu.xid_fatal_count"] == 1


def test_metrics_for_the_trend_sum_correctable_ecc_and_pcie_replays():
    gpus = [gpu(i, ecc_corrected_volatile=i, pcie_replays=100 if i == 5 else 0) for i in range(8)]
    found = nvidia.metrics(smi(gpus))
    assert found["gpu.ecc_corrected_volatile_total"] == 28
    assert found["gpu.pcie_replay_total"] == 100


def test_figures_no_gpu_reports_are_absent_not_zero():
    found = nvidia.metrics(smi([gpu(i, ecc_corrected_volatile=None, pcie_replays=None) for i in range(8)]))
    assert "gpu.ecc_corrected_volatile_total" not in found and "gpu.pcie_replay_total" not in found
