"""Replayed `ibstat` and the matching /sys/class/infiniband tree."""

from __future__ import annotations

import os

from .common import ToolResult

# ibstat's port states and the "N: NAME" form sysfs uses for them.
STATE_CODES = {"Down": "1: DOWN", "Initializing": "2: INIT", "Armed": "3: ARMED", "Active": "4: ACTIVE"}
PHYS_CODES = {
    "Sleep": "1: Sleep",
    "Polling": "2: Polling",
    "Disabled": "3: Disabled",
    "PortConfigurationTraining": "4: PortConfigurationTraining",
    "LinkUp": "5: LinkUp",
    "LinkErrorRecovery": "6: LinkErrorRecovery",
}
# Rate in Gb/s -> sysfs's "<rate> Gb/sec (<width> <speed>)".
RATE_TEXT = {
    10: "10 Gb/sec (4X SDR)",
    25: "25 Gb/sec (1X EDR)",
    40: "40 Gb/sec (4X QDR)",
    50: "50 Gb/sec (2X HDR)",
    56: "56 Gb/sec (4X FDR)",
    100: "100 Gb/sec (4X EDR)",
    200: "200 Gb/sec (4X HDR)",
    400: "400 Gb/sec (4X NDR)",
    800: "800 Gb/sec (4X XDR)",
}


def guid_colons(guid: str) -> str:
    """'0xa088c20300e3142a' -> 'a088:c203:00e3:142a' (the sysfs form)."""
    digits = guid[2:].rjust(16, "0")
    return ":".join(digits[i : i + 4] for i in range(0, 16, 4))


def ca_block(hca: dict, only_port: int | None = None) -> list:
    lines = [
        f"CA '{hca['name']}'",
        f"\tCA type: {hca['hca_type']}",
        f"\tNumber of ports: {len(hca['ports'])}",
        f"\tFirmware version: {hca['fw_ver']}",
        "\tHardware version: 0",
        f"\tNode GUID: {hca['node_guid']}",
        f"\tSystem image GUID: {hca.get('sys_image_guid', hca['node_guid'])}",
    ]
    for port in hca["ports"]:
        if only_port is not None and port["port"] != only_port:
            continue
        lines.extend(
            [
                f"\tPort {port['port']}:",
                f"\t\tState: {port['state']}",
                f"\t\tPhysical state: {port['phys_state']}",
                f"\t\tRate: {port['rate']}",
                f"\t\tBase lid: {port['lid']}",
                "\t\tLMC: 0",
                f"\t\tSM lid: {port['sm_lid']}",
                f"\t\tCapability mask: {port['cap_mask']}",
                f"\t\tPort GUID: {port['port_guid']}",
                f"\t\tLink layer: {port['link_layer']}",
            ]
        )
    return lines


def ibpanic(message: str) -> ToolResult:
    # ibstat's fatal errors: "ibpanic: [pid] main: ..." and exit status 255.
    return ToolResult(rc=255, stderr=f"ibpanic: [{os.getpid()}] main: {message}\n")


def ibstat(profile: dict, args: list) -> ToolResult:
    hcas = profile["infiniband"]["hcas"]
    if args in (["-l"], ["--list_of_cas"]):
        return ToolResult(stdout="".join(hca["name"] + "\n" for hca in hcas))
    if args in (["-p"], ["--port_list"]):
        guids = [port["port_guid"] for hca in hcas for port in hca["ports"]]
        return ToolResult(stdout="".join(guid + "\n" for guid in guids))
    if not args:
        lines = [line for hca in hcas for line in ca_block(hca)]
        return ToolResult(stdout="\n".join(lines) + "\n")
    if args[0].startswith("-") or len(args) > 2:
        return ToolResult(
            rc=255,
            stderr="Usage: ibstat [-d(ebug) -l(ist_of_cas) -s(hort) -p(ort_list) -V(ersion)] "
            "<ca_name> [portnum]\n",
        )
    by_name = {hca["name"]: hca for hca in hcas}
    if args[0] not in by_name:
        return ibpanic(f"stat of IB device '{args[0]}' failed: No such file or directory")
    hca = by_name[args[0]]
    if len(args) == 2:
        ports = [str(port["port"]) for port in hca["ports"]]
        if args[1] not in ports:
            return ibpanic(f"stat of IB port {args[1]} of '{args[0]}' failed")
        return ToolResult(stdout="\n".join(ca_block(hca, int(args[1]))) + "\n")
    return ToolResult(stdout="\n".join(ca_block(hca)) + "\n")


# A loaded kernel module's directory: nvidia_peermem (GPUDirect RDMA) on nodes with GPUs and HCAs.
PEERMEM_DIR = "sys/module/nvidia_peermem"


def peermem_loaded(profile: dict) -> bool:
    """NVIDIA GPUs and HCAs: loaded unless the profile says `"nvidia": {"peermem": false}`."""
    nvidia = profile.get("nvidia") or {}
    hcas = (profile.get("infiniband") or {}).get("hcas")
    return bool(nvidia.get("gpus") and hcas) and nvidia.get("peermem", True) is not False


def sysfs_files(profile: dict) -> dict:
    """Relative path under the sysroot -> file content: sys/class/infiniband, sys/module/nvidia_peermem."""
    files = {}
    if peermem_loaded(profile):
        files[PEERMEM_DIR + "/refcnt"] = "0"
        files[PEERMEM_DIR + "/initstate"] = "live"
    for hca in (profile.get("infiniband") or {}).get("hcas", []):
        base = "sys/class/infiniband/" + hca["name"]
        files[base + "/fw_ver"] = hca["fw_ver"]
        files[base + "/hca_type"] = hca["hca_type"]
        files[base + "/board_id"] = hca["board_id"]
        files[base + "/node_guid"] = guid_colons(hca["node_guid"])
        files[base + "/sys_image_guid"] = guid_colons(hca.get("sys_image_guid", hca["node_guid"]))
        files[base + "/node_type"] = "1: CA"
        files[base + "/hw_rev"] = "0x0"
        if hca.get("vpd"):
            # The PCI VPD (binary on a real node; its keywords as text here). NVIDIA's
            # fabric manager tells NVLink 5 systems by SW_MNG in it.
            files[base + "/device/vpd"] = hca["vpd"]
        for port in hca["ports"]:
            pbase = f"{base}/ports/{port['port']}"
            files[pbase + "/state"] = STATE_CODES[port["state"]]
            files[pbase + "/phys_state"] = PHYS_CODES[port["phys_state"]]
            files[pbase + "/rate"] = RATE_TEXT.get(port["rate"], f"{port['rate']} Gb/sec")
            files[pbase + "/link_layer"] = port["link_layer"]
            files[pbase + "/lid"] = f"0x{port['lid']:x}"
            files[pbase + "/sm_lid"] = f"0x{port['sm_lid']:x}"
            files[pbase + "/lid_mask_count"] = "0"
            files[pbase + "/cap_mask"] = port["cap_mask"]
            files[pbase + "/gids/0"] = "fe80:0000:0000:0000:" + guid_colons(port["port_guid"])
            for counter in (
                "symbol_error",
                "link_downed",
                "link_error_recovery",
                "port_rcv_errors",
                "port_xmit_discards",
            ):
                files[pbase + "/counters/" + counter] = str(port.get("counters", {}).get(counter, 0))
    return {path: content + "\n" for path, content in files.items()}
