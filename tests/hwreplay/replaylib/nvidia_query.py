"""`nvidia-smi -q` in text and XML (`-q -x`) from one tree per GPU, as a 535 driver prints it.

Each entry of the tree carries its text label and its XML tag, so the two forms
always say the same thing. An entry whose label is None exists only in the XML
(and the other way round), as in the real tool.
"""

from __future__ import annotations

from xml.sax.saxutils import escape, quoteattr

from .common import ctime

KEY_WIDTH = 42  # "    Product Name                          : " -- the colon sits in column 43
XML_DOCTYPE = '<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">'


class Entry:
    """One line (leaf) or section (with children) of the query tree."""

    def __init__(self, label, tag, value=None, children=None, xml_value=None, text_indent=0):
        self.label = label
        self.tag = tag
        self.value = value
        self.children = children
        self.xml_value = value if xml_value is None else xml_value
        self.text_indent = text_indent  # extra indent of sub-items printed flat in XML


# Short constructor names keep the trees below readable as tables: E = entry (leaf), S = section.
def E(label, tag, value=None, xml_value=None, text_indent=0):
    return Entry(
        label,
        tag,
        str(value),
        xml_value=None if xml_value is None else str(xml_value),
        text_indent=text_indent,
    )


def S(label, tag, *children):
    return Entry(label, tag, children=list(children))


def yes_no(flag) -> str:
    return "Yes" if flag else "No"


def unit(value, suffix: str) -> str:
    return "N/A" if value is None else f"{value} {suffix}"


def watts(value) -> str:
    return "N/A" if value is None else f"{value:.2f} W"


def ecc_counts(counts: dict, with_threshold: bool, threshold: str) -> list:
    rows = [
        E("SRAM Correctable", "sram_correctable", counts["sram_correctable"]),
        E("SRAM Uncorrectable Parity", "sram_uncorrectable_parity", counts["sram_uncorrectable_parity"]),
        E("SRAM Uncorrectable SEC-DED", "sram_uncorrectable_secded", counts["sram_uncorrectable_secded"]),
        E("DRAM Correctable", "dram_correctable", counts["dram_correctable"]),
        E("DRAM Uncorrectable", "dram_uncorrectable", counts["dram_uncorrectable"]),
    ]
    if with_threshold:
        rows.append(E("SRAM Threshold Exceeded", "sram_threshold_exceeded", threshold))
    return rows


def retired_pages(gpu: dict) -> Entry:
    """Hopper has no page retirement (row remapping instead): every field reads N/A."""
    pages = gpu.get("retired_pages")
    single = "N/A" if pages is None else pages["single_bit"]
    double = "N/A" if pages is None else pages["double_bit"]
    pending = "N/A" if pages is None else yes_no(pages["pending"])
    pagelist = "N/A" if pages is None else ""
    return S(
        "Retired Pages",
        "retired_pages",
        E("Single Bit ECC", None, single),
        E("Double Bit ECC", None, double),
        E("Pending Page Blacklist", None, pending),
        S(
            None,
            "multiple_single_bit_retirement",
            E(None, "retired_count", single),
            E(None, "retired_pagelist", pagelist),
        ),
        S(
            None,
            "double_bit_retirement",
            E(None, "retired_count", double),
            E(None, "retired_pagelist", pagelist),
        ),
        E(None, "pending_blacklist", pending),
        E(None, "pending_retirement", pending),
    )


def remapped_rows(gpu: dict) -> Entry:
    rows = gpu["remapped_rows"]
    hist = rows["histogram"]
    return S(
        "Remapped Rows",
        "remapped_rows",
        E("Correctable Error", "remapped_row_corr", rows["correctable"]),
        E("Uncorrectable Error", "remapped_row_unc", rows["uncorrectable"]),
        E("Pending", "remapped_row_pending", yes_no(rows["pending"])),
        E("Remapping Failure Occurred", "remapped_row_failure", yes_no(rows["failure"])),
        S(
            "Bank Remap Availability Histogram",
            "row_remapper_histogram",
            *[
                E(label, "row_remapper_histogram_" + key, f"{hist[key]} bank(s)")
                for label, key in (
                    ("Max", "max"),
                    ("High", "high"),
                    ("Partial", "partial"),
                    ("Low", "low"),
                    ("None", "none"),
                )
            ],
        ),
    )


def pci_section(gpu: dict) -> Entry:
    domain, bus, devfn = gpu["bus_id"].split(":")
    device = devfn.split(".")[0]
    pcie = gpu["pcie"]
    return S(
        "PCI",
        "pci",
        E("Bus", "pci_bus", "0x" + bus, xml_value=bus),
        E("Device", "pci_device", "0x" + device, xml_value=device),
        E("Domain", "pci_domain", "0x" + domain[-4:], xml_value=domain[-4:]),
        E("Device Id", "pci_device_id", gpu["pci_device_id"], xml_value=gpu["pci_device_id"][2:]),
        E("Bus Id", "pci_bus_id", gpu["bus_id"]),
        E(
            "Sub System Id",
            "pci_sub_system_id",
            gpu["pci_sub_system_id"],
            xml_value=gpu["pci_sub_system_id"][2:],
        ),
        S(
            "GPU Link Info",
            "pci_gpu_link_info",
            S(
                "PCIe Generation",
                "pcie_gen",
                E("Max", "max_link_gen", pcie["gen_max"]),
                E("Current", "current_link_gen", pcie["gen_current"]),
                E("Device Current", "device_current_link_gen", pcie["gen_current"]),
                E("Device Max", "max_device_link_gen", pcie["gen_max"]),
                E("Host Max", "max_host_link_gen", pcie.get("gen_host_max", "N/A")),
            ),
            S(
                "Link Width",
                "link_widths",
                E("Max", "max_link_width", f"{pcie['width_max']}x"),
                E("Current", "current_link_width", f"{pcie['width_current']}x"),
            ),
        ),
        S(
            "Bridge Chip",
            "pci_bridge_chip",
            E("Type", "bridge_chip_type", "N/A"),
            E("Firmware", "bridge_chip_fw", "N/A"),
        ),
        E("Replays Since Reset", "replay_counter", gpu.get("pcie_replays", 0)),
        E("Replay Number Rollovers", "replay_rollover_counter", 0),
        E("Tx Throughput", "tx_util", f"{gpu.get('pcie_tx_kbs', 0)} KB/s"),
        E("Rx Throughput", "rx_util", f"{gpu.get('pcie_rx_kbs', 0)} KB/s"),
        E("Atomic Caps Inbound", "atomic_caps_inbound", "N/A"),
        E("Atomic Caps Outbound", "atomic_caps_outbound", "N/A"),
    )


def clock_reasons(gpu: dict) -> Entry:
    idle = "Active" if gpu.get("clocks_idle", True) else "Not Active"
    rows = [
        ("Idle", "gpu_idle", idle, 0),
        ("Applications Clocks Setting", "applications_clocks_setting", "Not Active", 0),
        ("SW Power Cap", "sw_power_cap", "Not Active", 0),
        ("HW Slowdown", "hw_slowdown", "Not Active", 0),
        ("HW Thermal Slowdown", "hw_thermal_slowdown", "Not Active", 4),
        ("HW Power Brake Slowdown", "hw_power_brake_slowdown", "Not Active", 4),
        ("Sync Boost", "sync_boost", "Not Active", 0),
        ("SW Thermal Slowdown", "sw_thermal_slowdown", "Not Active", 0),
        ("Display Clock Setting", "display_clocks_setting", "Not Active", 0),
    ]
    return S(
        "Clocks Event Reasons",
        "clocks_event_reasons",
        *[
            E(label, "clocks_event_reason_" + tag, value, text_indent=extra)
            for label, tag, value, extra in rows
        ],
    )


def memory_sections(gpu: dict) -> list:
    mem = gpu["memory"]
    free = mem["total_mib"] - mem["reserved_mib"] - mem["used_mib"]
    bar1_free = mem["bar1_total_mib"] - mem["bar1_used_mib"]
    return [
        S(
            "FB Memory Usage",
            "fb_memory_usage",
            E("Total", "total", f"{mem['total_mib']} MiB"),
            E("Reserved", "reserved", f"{mem['reserved_mib']} MiB"),
            E("Used", "used", f"{mem['used_mib']} MiB"),
            E("Free", "free", f"{free} MiB"),
        ),
        S(
            "BAR1 Memory Usage",
            "bar1_memory_usage",
            E("Total", "total", f"{mem['bar1_total_mib']} MiB"),
            E("Used", "used", f"{mem['bar1_used_mib']} MiB"),
            E("Free", "free", f"{bar1_free} MiB"),
        ),
        S(
            "Conf Compute Protected Memory Usage",
            "cc_protected_memory_usage",
            E("Total", "total", "0 MiB"),
            E("Used", "used", "0 MiB"),
            E("Free", "free", "0 MiB"),
        ),
    ]


def temperature(gpu: dict) -> list:
    temp = gpu["temperature"]
    return [
        S(
            "Temperature",
            "temperature",
            E("GPU Current Temp", "gpu_temp", unit(temp["gpu_c"], "C")),
            E("GPU T.Limit Temp", "gpu_temp_tlimit", unit(temp["tlimit_c"], "C")),
            E(
                "GPU Shutdown T.Limit Temp",
                "gpu_temp_max_tlimit_threshold",
                unit(temp["shutdown_tlimit_c"], "C"),
            ),
            E(
                "GPU Slowdown T.Limit Temp",
                "gpu_temp_slow_tlimit_threshold",
                unit(temp["slowdown_tlimit_c"], "C"),
            ),
            E(
                "GPU Max Operating T.Limit Temp",
                "gpu_temp_max_gpu_tlimit_threshold",
                unit(temp["max_op_tlimit_c"], "C"),
            ),
            E("GPU Target Temperature", "gpu_target_temperature", "N/A"),
            E("Memory Current Temp", "memory_temp", unit(temp["memory_c"], "C")),
            E(
                "Memory Max Operating T.Limit Temp",
                "gpu_temp_max_mem_tlimit_threshold",
                unit(temp["mem_max_op_tlimit_c"], "C"),
            ),
        ),
        S(
            None,
            "supported_gpu_target_temp",
            E(None, "gpu_target_temp_min", "N/A"),
            E(None, "gpu_target_temp_max", "N/A"),
        ),
    ]


def power(gpu: dict, driver_branch: int) -> list:
    """Power readings; from the 550 branch on, one draw became an average and an instant one."""
    pw = gpu["power"]

    def draw(values) -> list:
        if driver_branch < 550:
            return [E("Power Draw", "power_draw", watts(values.get("draw_w")))]
        return [
            E("Average Power Draw", "average_power_draw", watts(values.get("draw_w"))),
            E("Instantaneous Power Draw", "instant_power_draw", watts(values.get("draw_w"))),
        ]

    def readings(label, tag, values):
        return S(
            label,
            tag,
            E(None, "power_state", gpu["pstate"]),
            *draw(values),
            E("Current Power Limit", "current_power_limit", watts(values.get("limit_w"))),
            E("Requested Power Limit", "requested_power_limit", watts(values.get("limit_w"))),
            E("Default Power Limit", "default_power_limit", watts(values.get("default_limit_w"))),
            E("Min Power Limit", "min_power_limit", watts(values.get("min_limit_w"))),
            E("Max Power Limit", "max_power_limit", watts(values.get("max_limit_w"))),
        )

    return [
        readings("GPU Power Readings", "gpu_power_readings", pw),
        readings("Module Power Readings", "module_power_readings", {}),
    ]


def clocks(gpu: dict) -> list:
    clk = gpu["clocks"]

    def mhz(value):
        return f"{value} MHz"

    supported = S(
        None,
        "supported_clocks",
        S(
            None,
            "supported_mem_clock",
            E(None, "value", mhz(clk["max_memory"])),
            *[
                E(None, "supported_graphics_clock", mhz(step))
                for step in range(clk["max_graphics"], clk["graphics"] - 1, -15)
            ],
        ),
    )
    return [
        S(
            "Clocks",
            "clocks",
            E("Graphics", "graphics_clock", mhz(clk["graphics"])),
            E("SM", "sm_clock", mhz(clk["sm"])),
            E("Memory", "mem_clock", mhz(clk["memory"])),
            E("Video", "video_clock", mhz(clk["video"])),
        ),
        S(
            "Applications Clocks",
            "applications_clocks",
            E("Graphics", "graphics_clock", mhz(clk["max_graphics"])),
            E("Memory", "mem_clock", mhz(clk["max_memory"])),
        ),
        S(
            "Default Applications Clocks",
            "default_applications_clocks",
            E("Graphics", "graphics_clock", mhz(clk["max_graphics"])),
            E("Memory", "mem_clock", mhz(clk["max_memory"])),
        ),
        S("Deferred Clocks", "deferred_clocks", E("Memory", "mem_clock", "N/A")),
        S(
            "Max Clocks",
            "max_clocks",
            E("Graphics", "graphics_clock", mhz(clk["max_graphics"])),
            E("SM", "sm_clock", mhz(clk["max_sm"])),
            E("Memory", "mem_clock", mhz(clk["max_memory"])),
            E("Video", "video_clock", mhz(clk["max_video"])),
        ),
        S(
            "Max Customer Boost Clocks",
            "max_customer_boost_clocks",
            E("Graphics", "graphics_clock", mhz(clk["max_graphics"])),
        ),
        S(
            "Clock Policy",
            "clock_policy",
            E("Auto Boost", "auto_boost", "N/A"),
            E("Auto Boost Default", "auto_boost_default", "N/A"),
        ),
        S("Voltage", "voltage", E("Graphics", "graphics_volt", f"{gpu['voltage_mv']:.3f} mV")),
        S(
            "Fabric",
            "fabric",
            E("State", "state", gpu["fabric"]["state"]),
            E("Status", "status", gpu["fabric"]["status"]),
        ),
        supported,
    ]


def gpu_tree(gpu: dict, driver_version: str) -> list:
    """Every entry `nvidia-smi -q` prints for one GPU, in the 535 driver's order (550: power draw split)."""
    ecc = gpu["ecc_errors"]
    sources = ecc["sram_sources"]
    inforom = gpu["inforom"]
    bus = int(gpu["bus_id"].split(":")[1], 16)
    return [
        E("Product Name", "product_name", gpu["name"]),
        E("Product Brand", "product_brand", gpu["brand"]),
        E("Product Architecture", "product_architecture", gpu["architecture"]),
        E("Display Mode", "display_mode", gpu["display_mode"]),
        E("Display Active", "display_active", "Disabled"),
        E("Persistence Mode", "persistence_mode", gpu["persistence_mode"]),
        E("Addressing Mode", "addressing_mode", "None"),
        S(
            "MIG Mode",
            "mig_mode",
            E("Current", "current_mig", gpu["mig_mode"]),
            E("Pending", "pending_mig", gpu["mig_mode"]),
        ),
        Entry(None, "mig_devices", "None"),
        E("Accounting Mode", "accounting_mode", "Disabled"),
        E("Accounting Mode Buffer Size", "accounting_mode_buffer_size", 4000),
        S(
            "Driver Model",
            "driver_model",
            E("Current", "current_dm", "N/A"),
            E("Pending", "pending_dm", "N/A"),
        ),
        E("Serial Number", "serial", gpu["serial"]),
        E("GPU UUID", "uuid", gpu["uuid"]),
        E("Minor Number", "minor_number", gpu["index"]),
        E("VBIOS Version", "vbios_version", gpu["vbios_version"]),
        E("MultiGPU Board", "multigpu_board", "No"),
        E("Board ID", "board_id", f"0x{bus:02x}00"),
        E("Board Part Number", "board_part_number", gpu["board_part_number"]),
        E("GPU Part Number", "gpu_part_number", gpu["gpu_part_number"]),
        E("FRU Part Number", "gpu_fru_part_number", "N/A"),
        E("Module ID", "gpu_module_id", gpu["module_id"]),
        S(
            "Inforom Version",
            "inforom_version",
            E("Image Version", "img_version", inforom["image"]),
            E("OEM Object", "oem_object", inforom["oem"]),
            E("ECC Object", "ecc_object", inforom["ecc"]),
            E("Power Management Object", "pwr_object", inforom["power"]),
        ),
        S(
            "Inforom BBX Object Flush",
            "inforom_bbx_flush",
            E("Latest Timestamp", "latest_timestamp", "N/A"),
            E("Latest Duration", "latest_duration", "N/A"),
        ),
        S(
            "GPU Operation Mode",
            "gpu_operation_mode",
            E("Current", "current_gom", "N/A"),
            E("Pending", "pending_gom", "N/A"),
        ),
        E("GSP Firmware Version", "gsp_firmware_version", driver_version),
        S(
            "GPU Virtualization Mode",
            "gpu_virtualization_mode",
            E("Virtualization Mode", "virtualization_mode", "None"),
            E("Host VGPU Mode", "host_vgpu_mode", "N/A"),
        ),
        S(
            "GPU Reset Status",
            "gpu_reset_status",
            E("Reset Required", "reset_required", "No"),
            E("Drain and Reset Recommended", "drain_and_reset_recommended", "No"),
        ),
        S("IBMNPU", "ibmnpu", E("Relaxed Ordering Mode", "relaxed_ordering_mode", "N/A")),
        pci_section(gpu),
        E("Fan Speed", "fan_speed", "N/A"),
        E("Performance State", "performance_state", gpu["pstate"]),
        clock_reasons(gpu),
        E("Sparse Operation Mode", "sparse_operation_mode", "Disabled"),
        *memory_sections(gpu),
        E("Compute Mode", "compute_mode", gpu["compute_mode"]),
        S(
            "Utilization",
            "utilization",
            E("Gpu", "gpu_util", f"{gpu.get('utilization_pct', 0)} %"),
            E("Memory", "memory_util", "0 %"),
            E("Encoder", "encoder_util", "0 %"),
            E("Decoder", "decoder_util", "0 %"),
            E("JPEG", "jpeg_util", "0 %"),
            E("OFA", "ofa_util", "0 %"),
        ),
        S(
            "Encoder Stats",
            "encoder_stats",
            E("Active Sessions", "session_count", 0),
            E("Average FPS", "average_fps", 0),
            E("Average Latency", "average_latency", 0),
        ),
        S(
            "FBC Stats",
            "fbc_stats",
            E("Active Sessions", "session_count", 0),
            E("Average FPS", "average_fps", 0),
            E("Average Latency", "average_latency", 0),
        ),
        S(
            "ECC Mode",
            "ecc_mode",
            E("Current", "current_ecc", gpu["ecc_mode"]),
            E("Pending", "pending_ecc", gpu["ecc_mode"]),
        ),
        S(
            "ECC Errors",
            "ecc_errors",
            S("Volatile", "volatile", *ecc_counts(ecc["volatile"], False, "")),
            S(
                "Aggregate",
                "aggregate",
                *ecc_counts(ecc["aggregate"], True, yes_no(ecc["sram_threshold_exceeded"])),
            ),
            S(
                "Aggregate Uncorrectable SRAM Sources",
                "aggregate_uncorrectable_sram_sources",
                E("SRAM L2", "sram_l2", sources["l2"]),
                E("SRAM SM", "sram_sm", sources["sm"]),
                E("SRAM Microcontroller", "sram_microcontroller", sources["microcontroller"]),
                E("SRAM PCIE", "sram_pcie", sources["pcie"]),
                E("SRAM Other", "sram_other", sources["other"]),
            ),
        ),
        retired_pages(gpu),
        remapped_rows(gpu),
        *temperature(gpu),
        *power(gpu, int(driver_version.split(".")[0])),
        *clocks(gpu),
        E("Processes", None, "None"),
        S(None, "processes"),
        S(None, "accounted_processes"),
    ]


# `-d` sections (nvidia-smi -q -d TYPE) and the top-level text labels each one keeps.
DISPLAY_SECTIONS = {
    "MEMORY": ("FB Memory Usage", "BAR1 Memory Usage", "Conf Compute Protected Memory Usage"),
    "UTILIZATION": ("Utilization",),
    "ECC": ("ECC Mode", "ECC Errors"),
    "TEMPERATURE": ("Temperature",),
    "POWER": ("GPU Power Readings", "Module Power Readings"),
    "CLOCK": (
        "Clocks",
        "Applications Clocks",
        "Default Applications Clocks",
        "Deferred Clocks",
        "Max Clocks",
        "Max Customer Boost Clocks",
        "Clock Policy",
    ),
    "COMPUTE": ("Compute Mode",),
    "PIDS": ("Processes",),
    "PERFORMANCE": ("Performance State", "Clocks Event Reasons"),
    "PAGE_RETIREMENT": ("Retired Pages",),
    "ROW_REMAPPER": ("Remapped Rows",),
    "VOLTAGE": ("Voltage",),
    "RESET_STATUS": ("GPU Reset Status",),
    "GSP_FIRMWARE_VERSION": ("GSP Firmware Version",),
}


def text_lines(entries: list, indent: int) -> list:
    lines = []
    for entry in entries:
        if entry.label is None:
            continue
        pad = " " * (indent + entry.text_indent)
        if entry.children is None:
            lines.append((pad + entry.label).ljust(KEY_WIDTH) + ": " + entry.value)
        else:
            lines.append(pad + entry.label)
            lines.extend(text_lines(entry.children, indent + 4))
    return lines


def xml_lines(entries: list, depth: int) -> list:
    lines = []
    tabs = "\t" * depth
    for entry in entries:
        if entry.tag is None:
            continue
        if entry.children is None:
            if entry.tag == "mig_devices":  # printed as a block, like the real tool
                lines.extend([tabs + "<mig_devices>", tabs + "\tNone", tabs + "</mig_devices>"])
            else:
                lines.append(f"{tabs}<{entry.tag}>{escape(entry.xml_value)}</{entry.tag}>")
        else:
            lines.append(f"{tabs}<{entry.tag}>")
            lines.extend(xml_lines(entry.children, depth + 1))
            lines.append(f"{tabs}</{entry.tag}>")
    return lines


def render_text(nvidia: dict, gpus: list, now: float, sections: tuple | None) -> str:
    out = [
        "",
        "==============NVSMI LOG==============",
        "",
        "Timestamp".ljust(KEY_WIDTH) + ": " + ctime(now),
        "Driver Version".ljust(KEY_WIDTH) + ": " + nvidia["driver_version"],
        "CUDA Version".ljust(KEY_WIDTH) + ": " + nvidia["cuda_version"],
        "",
        "Attached GPUs".ljust(KEY_WIDTH) + ": " + str(len(nvidia["gpus"])),
    ]
    for gpu in gpus:
        entries = gpu_tree(gpu, nvidia["driver_version"])
        if sections is not None:
            entries = [entry for entry in entries if entry.label in sections]
        out.append("GPU " + gpu["bus_id"])
        out.extend(text_lines(entries, 4))
        out.append("")
    return "\n".join(out) + "\n"


def render_xml(nvidia: dict, gpus: list, now: float) -> str:
    out = [
        '<?xml version="1.0" ?>',
        XML_DOCTYPE,
        "<nvidia_smi_log>",
        f"\t<timestamp>{ctime(now)}</timestamp>",
        f"\t<driver_version>{nvidia['driver_version']}</driver_version>",
        f"\t<cuda_version>{nvidia['cuda_version']}</cuda_version>",
        f"\t<attached_gpus>{len(nvidia['gpus'])}</attached_gpus>",
    ]
    for gpu in gpus:
        out.append(f"\t<gpu id={quoteattr(gpu['bus_id'])}>")
        out.extend(xml_lines(gpu_tree(gpu, nvidia["driver_version"]), 2))
        out.append("\t</gpu>")
        out.append("")
    out.append("</nvidia_smi_log>")
    return "\n".join(out) + "\n"
