"""NVIDIA GPU checks (`gpu.*`), decided on parsed nvidia-smi / kernel-log / lspci dicts.

Every function takes `Output` objects (see cfcore.outputs) and the SKU's
`accelerator` spec and returns one result dict. `smi` is the parsed
`nvidia-smi -q -x` (or `nvidia-smi -q`): keys as in cfcore.parsers.
"""

from __future__ import annotations

import re

from .. import xid as xid_table
from ..evidence import lines_at, lspci_link_lines, nvidia_gpu_block, nvlink_gpu_lines
from ..pci import norm_bus_id, same_device
from ..results import errored, evidence, failed, merge, passed, skipped, warned
from ..versions import at_least, version_key
from .common import as_flag, as_float, as_int, unavailable

SMI_FAILED = "nvidia-smi gave no GPU data (see gpu.tool)"


def gpus_of(smi) -> list[dict]:
    return list((smi.data or {}).get("gpus") or [])


def gpu_name(gpu: dict) -> str:
    return f"GPU {gpu.get('index')} ({norm_bus_id(gpu.get('pci_bus_id')) or gpu.get('pci_bus_id')})"


def _gpu_evidence(smi, gpu: dict, xml_tag: str, heading: str, fallback: list[str]) -> dict:
    lines = nvidia_gpu_block(smi, gpu.get("pci_bus_id") or "", xml_tag, heading) if smi.text else []
    return evidence(smi.command, lines or [f"{gpu_name(gpu)}: {line}" for line in fallback], smi.file)


# --- gpu.tool ---------------------------------------------------------------

# nvidia-smi's own words when it cannot reach the driver or a GPU.
_DRIVER_TROUBLE = re.compile(
    r"couldn't communicate with the NVIDIA driver|Failed to initialize NVML|"
    r"Driver/library version mismatch|Unable to determine the device handle|No devices were found|"
    r"Unknown Error|GPU is lost",
    re.IGNORECASE,
)


def gpu_tool(smi) -> dict:
    check = "gpu.tool"
    if smi.state in ("not_found", "not_captured", "timeout", "unparsable"):
        return unavailable(check, smi)
    if smi.state == "failed":
        said = [line for line in (smi.stderr + "\n" + smi.text).splitlines() if _DRIVER_TROUBLE.search(line)]
        if said or smi.data is not None:
            lines = said or [smi.error]
            return failed(
                check,
                f"nvidia-smi cannot talk to the driver or a GPU: {lines[0].strip()}",
                evidence(smi.command, lines, smi.file),
                "check the kernel log for Xid/NVRM errors; a version mismatch needs a reboot; "
                "reload the driver or reboot, then reseat/RMA a GPU that stays unreachable",
            )
        return unavailable(check, smi)
    data = smi.data or {}
    count = len(gpus_of(smi))
    lost = [m for m in data.get("tool_messages") or [] if _DRIVER_TROUBLE.search(m)]
    if lost:
        return failed(
            check,
            f"nvidia-smi cannot reach every GPU: {lost[0]}",
            evidence(smi.command, lost, smi.file),
            "check the kernel log for Xid 79; drain the node and reboot; reseat or RMA a GPU that stays lost",
        )
    return passed(
        check,
        f"nvidia-smi talks to driver {data.get('driver_version')} and sees {count} GPUs",
        evidence(smi.command, [f"driver_version: {data.get('driver_version')}", f"GPUs: {count}"], smi.file),
    )


# --- gpu.count / gpu.model / gpu.driver_version ------------------------------


def gpu_count(smi, accel: dict, lspci=None) -> dict:
    check = "gpu.count"
    if not smi.usable:
        return unavailable(check, smi, SMI_FAILED)
    gpus = gpus_of(smi)
    want = int(accel["count"])
    lines = [f"{gpu_name(gpu)} {gpu.get('name')}" for gpu in gpus]
    if len(gpus) == want:
        return passed(check, f"{want} GPUs as the SKU expects", evidence(smi.command, lines, smi.file))
    if len(gpus) > want:
        return failed(
            check,
            f"{len(gpus)} GPUs but the SKU expects {want}",
            evidence(smi.command, lines, smi.file),
            "the node's node_sku in the inventory names the wrong SKU: fix it",
        )
    missing = _missing_from_lspci(gpus, lspci)
    message = f"only {len(gpus)} of {want} GPUs visible to nvidia-smi"
    if missing:
        message += f"; on the PCI bus but not in nvidia-smi: {', '.join(missing)}"
        lines += [f"lspci: {bus} NVIDIA device not seen by nvidia-smi" for bus in missing]
    return failed(
        check,
        message,
        evidence(smi.command, lines, smi.file),
        "check the kernel log for Xid 79 (fallen off the bus); drain the node, reseat or replace the "
        "missing GPU; RMA if it stays missing",
    )


def _missing_from_lspci(gpus: list[dict], lspci) -> list[str]:
    """Bus ids lspci lists with a GPU's device id that nvidia-smi does not show."""
    if lspci is None or not lspci.usable:
        return []
    seen = {norm_bus_id(gpu.get("pci_bus_id")) for gpu in gpus}
    devices = (lspci.data or {}).get("devices") or []
    gpu_device_ids = {d.get("device_id") for d in devices if norm_bus_id(d.get("bus_id")) in seen}
    return sorted(
        norm_bus_id(d.get("bus_id"))
        for d in devices
        if d.get("device_id") in gpu_device_ids and norm_bus_id(d.get("bus_id")) not in seen
    )


def gpu_model(smi, accel: dict) -> dict:
    check = "gpu.model"
    if not smi.usable:
        return unavailable(check, smi, SMI_FAILED)
    model = str(accel["model"])
    findings = []
    for gpu in gpus_of(smi):
        name = str(gpu.get("name") or "")
        if model.lower() not in name.lower():
            findings.append(
                failed(
                    check,
                    f"{gpu_name(gpu)} is a {name or 'GPU of unknown model'}, the SKU expects {model}",
                    _gpu_evidence(smi, gpu, "product_name", "Product Name", [f"name: {name}"]),
                    "fix node_sku in the inventory, or swap the GPU for the SKU's model",
                )
            )
    names = sorted({str(gpu.get("name")) for gpu in gpus_of(smi)})
    return merge(check, findings, f"all GPUs are {model} ({', '.join(names)})")


def gpu_driver_version(smi, accel: dict, bom: dict) -> dict:
    check = "gpu.driver_version"
    if not smi.usable:
        return unavailable(check, smi, SMI_FAILED)
    data = smi.data or {}
    have = str(data.get("driver_version") or "")
    cuda = str(data.get("cuda_version") or "")
    want = str(bom.get("nvidia_driver_version") or "")
    branch = str(accel.get("min_driver") or "")
    want_cuda = str(bom.get("cuda_version") or "")
    found = evidence(smi.command, [f"Driver Version: {have}", f"CUDA Version: {cuda}"], smi.file)
    if not have:
        return failed(check, "nvidia-smi reports no driver version", found, "reinstall the NVIDIA driver")
    problems = []
    if want and have != want:
        problems.append(f"driver {have} is not the BOM's nvidia_driver_version {want}")
    if branch and not at_least(have, branch):
        problems.append(f"driver {have} is older than the SKU's minimum branch {branch}")
    if want_cuda and cuda and version_key(cuda) < version_key(want_cuda):
        problems.append(f"the driver supports CUDA {cuda}, older than the BOM's cuda_version {want_cuda}")
    if problems:
        return failed(
            check,
            "; ".join(problems),
            found,
            f"install NVIDIA driver {want or branch + '.x or newer'} (the distribution's nvidia-driver "
            "package or NVIDIA's .run installer), then reboot",
        )
    if not want:
        return warned(
            check,
            f"driver {have} (branch >= {branch or 'any'}); the BOM sets no nvidia_driver_version to compare",
            found,
            "set nvidia_driver_version in group_vars/all/versions.yml",
        )
    return passed(check, f"driver {have} = BOM, CUDA {cuda}", found)


# --- gpu.kernel_modules --------------------------------------------------------


# /proc/driver/nvidia/version: 'NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.01 ...' or
# 'NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  560.35.03 ...'.
_NVRM_VERSION = re.compile(r"NVRM version: NVIDIA .*?\b(Open )?Kernel Module\b")


_FLAVOUR_REMEDY = {
    "open": "install the open kernel modules (the nvidia-driver-<branch>-open package, or NVIDIA's .run "
    "installer with -m=kernel-open), then reboot",
    "proprietary": "install the proprietary kernel modules (the nvidia-driver-<branch> package without "
    "-open, or NVIDIA's .run installer with -m=kernel), then reboot",
}


def kernel_module_flavour(proc_version, modinfo) -> tuple:
    """('open' | 'proprietary' | None, evidence dict or None) from /proc/driver/nvidia/version or modinfo.

    None with evidence: the text was read but says neither (an error message, random bytes);
    None without evidence: neither source could be read.
    """
    if proc_version is not None and proc_version.ok and proc_version.text.strip():
        lines = proc_version.lines()
        line = next((ln for ln in lines if "NVRM version" in ln), next(ln for ln in lines if ln.strip()))
        found = evidence(proc_version.command, [line[:200]], proc_version.file)
        match = _NVRM_VERSION.search(line)
        if match is None:
            return None, found
        return ("open" if match.group(1) else "proprietary"), found
    if modinfo is not None and modinfo.ok and modinfo.text.strip():
        licence = modinfo.text.strip().splitlines()[0].strip()
        found = evidence(modinfo.command, [f"license: {licence[:200]}"], modinfo.file)
        # The open modules are dual licensed ("Dual MIT/GPL"); the proprietary ones say "NVIDIA".
        if licence == "NVIDIA":
            return "proprietary", found
        if "GPL" in licence and "MIT" in licence:
            return "open", found
        return None, found
    return None, None


def gpu_kernel_modules(proc_version, modinfo, accel: dict) -> dict:
    check = "gpu.kernel_modules"
    want = str(accel.get("kernel_module_flavour") or "any")
    flavour, found = kernel_module_flavour(proc_version, modinfo)
    if flavour is None and found is not None:
        return errored(
            check,
            "could not check: the kernel module version text names no NVIDIA kernel module flavour",
            found,
            "check that the NVIDIA kernel module is loaded: cat /proc/driver/nvidia/version; "
            "modinfo -F license nvidia",
        )
    if flavour is None:
        if want == "any":
            return skipped(
                check,
                "kernel module flavour unknown (no /proc/driver/nvidia/version, no modinfo); "
                "the SKU accepts any",
            )
        return unavailable(
            check,
            proc_version if proc_version is not None else modinfo,
            f"the SKU needs the {want} kernel modules but neither "
            "/proc/driver/nvidia/version nor `modinfo nvidia` could be read",
        )
    if want in ("any", flavour):
        return passed(check, f"{flavour} kernel modules loaded (SKU accepts {want})", found)
    return failed(
        check,
        f"{flavour} kernel modules loaded, the SKU needs the {want} ones",
        found,
        _FLAVOUR_REMEDY.get(want, f"install the {want} NVIDIA kernel modules, then reboot"),
    )


# --- gpu.pcie_link ---------------------------------------------------------------


def gpu_pcie_link(smi, accel: dict, lspci=None) -> dict:
    """Width is judged on the current link (it does not drop at idle), gen on the link's maximum.

    GPUs lower their PCIe gen at idle to save power, so a current gen below the
    maximum is normal and only noted; a trained width below x16 or a maximum
    gen below the SKU's is a seating/riser/BIOS fault.
    """
    check = "gpu.pcie_link"
    if not smi.usable:
        return unavailable(check, smi, SMI_FAILED)
    want_gen = as_int(accel.get("pcie_gen"))
    want_width = as_int(accel.get("pcie_width"))
    lspci_devices = {}
    if lspci is not None and lspci.usable:
        lspci_devices = {norm_bus_id(d.get("bus_id")): d for d in (lspci.data or {}).get("devices") or []}
    findings = []
    for gpu in gpus_of(smi):
        problems = _pcie_problems(gpu, want_gen, want_width)
        bus = norm_bus_id(gpu.get("pci_bus_id"))
        device = lspci_devices.get(bus)
        lspci_lines = []
        if device is not None:
            cap, sta = as_int(device.get("link_cap_width")), as_int(device.get("link_sta_width"))
            if cap and sta and sta < cap:
                problems.append(f"lspci: LnkSta width x{sta} below LnkCap x{cap}")
            lspci_lines = lspci_link_lines(lspci, bus) if lspci.text else []
        if problems:
            found = _gpu_evidence(smi, gpu, "pci_gpu_link_info", "GPU Link Info", _pcie_fields(gpu))
            found["lines"].extend(lspci_lines)
            findings.append(
                failed(
                    check,
                    f"{gpu_name(gpu)}: {', '.join(problems)}",
                    found,
                    "drain the node, reseat the GPU/riser and check the slot and BIOS PCIe speed setting; "
                    "RMA the GPU or baseboard if the link stays degraded",
                )
            )
    widths = [as_int(gpu.get("pcie_width_current")) for gpu in gpus_of(smi)]
    gens = [as_int(gpu.get("pcie_gen_max")) for gpu in gpus_of(smi)]
    summary = f"all GPUs at x{min(w for w in widths if w) if any(widths) else '?'}"
    summary += f", max gen {min(g for g in gens if g) if any(gens) else '?'}"
    return merge(check, findings, summary)


def _pcie_problems(gpu: dict, want_gen: int | None, want_width: int | None) -> list[str]:
    width_max, width_now = as_int(gpu.get("pcie_width_max")), as_int(gpu.get("pcie_width_current"))
    gen_max = as_int(gpu.get("pcie_gen_max"))
    problems = []
    expected_width = want_width or width_max
    if width_now is None:
        problems.append("current link width not reported")
    elif expected_width and width_now < expected_width:
        problems.append(f"link trained at x{width_now}, expected x{expected_width}")
    if want_width and width_max and width_max < want_width:
        problems.append(f"link capable of x{width_max} only, SKU needs x{want_width}")
    if want_gen and gen_max and gen_max < want_gen:
        problems.append(f"link capable of Gen{gen_max} only, SKU needs Gen{want_gen}")
    return problems


def _pcie_fields(gpu: dict) -> list[str]:
    return [
        f"pcie_gen current {gpu.get('pcie_gen_current')} max {gpu.get('pcie_gen_max')}",
        f"pcie_width current {gpu.get('pcie_width_current')} max {gpu.get('pcie_width_max')}",
    ]


# --- gpu.nvlink / gpu.fabric_manager -----------------------------------------------


def _link_up(link: dict) -> bool:
    state = str(link.get("state") or "").strip().lower()
    if state in ("inactive", "down", "disabled", "off"):
        return False
    speed = as_float(link.get("speed_gbps"))
    if speed is not None:
        return speed > 0
    return state in ("active", "up")


def _nvlink_problems(links: list[dict], per_device: int, top: float | None) -> tuple:
    """(problems, slow links) of one GPU: fewer active links than the SKU's, or links below the node's top."""
    readable = [link for link in links if link.get("state") != "unreadable"]
    up = [link for link in readable if _link_up(link)]
    # A link that trained at a lower speed than its siblings halves that path's bandwidth.
    slow = [link for link in up if top and (as_float(link.get("speed_gbps")) or top) < top * 0.99]
    problems = []
    if len(up) < per_device - (len(links) - len(readable)):
        down = [str(link.get("link")) for link in readable if not _link_up(link)]
        problems.append(
            f"{len(up)} of {per_device} NVLinks active" + (f" (down: {', '.join(down)})" if down else "")
        )
    if slow:
        problems.append(f"links {', '.join(str(link.get('link')) for link in slow)} below {top:g} GB/s")
    return problems, slow


def gpu_nvlink(nvlink, smi, accel: dict) -> dict:
    check = "gpu.nvlink"
    per_device = as_int(accel.get("nvlink_links_per_device"))
    if not per_device:
        return skipped(check, f"the SKU has no NVLink (interconnect: {accel.get('interconnect') or 'pcie'})")
    if nvlink is None or not nvlink.usable:
        return unavailable(check, nvlink)
    by_index = {as_int(g.get("index")): g for g in (nvlink.data or {}).get("gpus") or []}
    indexes = sorted(by_index)
    if smi is not None and smi.usable:
        indexes = sorted({as_int(g.get("index")) for g in gpus_of(smi)} | set(indexes))
    speeds = [
        as_float(link.get("speed_gbps"))
        for gpu in by_index.values()
        for link in gpu.get("links") or []
        if _link_up(link) and as_float(link.get("speed_gbps"))
    ]
    top = max(speeds) if speeds else None
    findings = []
    for index in indexes:
        links = (by_index.get(index) or {}).get("links") or []
        problems, slow = _nvlink_problems(links, per_device, top)
        unreadable = [link for link in links if link.get("state") == "unreadable"]
        if unreadable and not problems:
            said = ", ".join(f"link {ln.get('link')}: {ln.get('text')!r}" for ln in unreadable)
            findings.append(
                errored(
                    check,
                    f"GPU {index}: could not read {said}",
                    evidence(nvlink.command, nvlink_gpu_lines(nvlink, index, only_down=True), nvlink.file),
                    "run nvidia-smi nvlink -s on the node and check its output",
                )
            )
            continue
        if problems:
            lines = nvlink_gpu_lines(nvlink, index, only_down=not slow) if nvlink.text else []
            if not lines:  # parsed data only (unit tests): rebuild the lines from it
                lines = [
                    f"GPU {index}: link {ln.get('link')}: {ln.get('state')} {ln.get('speed_gbps')}"
                    for ln in links
                ] or [f"GPU {index}: no links"]
            findings.append(
                failed(
                    check,
                    f"GPU {index}: {'; '.join(problems)}",
                    evidence(nvlink.command, lines, nvlink.file),
                    "drain the node, restart nvidia-fabricmanager and reset the GPUs (or reboot); if links "
                    "stay down, reseat the GPU baseboard and RMA the GPU/NVSwitch tray",
                )
            )
    ok = f"{len(indexes)} GPUs with {per_device} NVLinks each active" + (f" at {top:g} GB/s" if top else "")
    return merge(check, findings, ok)


def gpu_fabric_manager(service, accel: dict, smi=None) -> dict:
    """`systemctl is-active nvidia-fabricmanager` (prints the state, exits non-zero unless active),
    and each GPU's fabric registration (`<fabric><state>`/`<status>` on Hopper and newer)."""
    check = "gpu.fabric_manager"
    if str(accel.get("interconnect") or "").lower() != "nvswitch":
        return skipped(
            check, f"the SKU has no NVSwitch (interconnect: {accel.get('interconnect') or 'pcie'})"
        )
    if service is None or not service.text.strip():
        return unavailable(check, service)
    state = service.text.strip().splitlines()[0].strip()
    found = evidence(service.command, [state], service.file)
    remedy = (
        "systemctl restart nvidia-fabricmanager; journalctl -u nvidia-fabricmanager shows why it failed "
        "(its version must equal the driver's); reset the GPUs or reboot if they stay unregistered"
    )
    if state != "active":
        return failed(
            check,
            f"nvidia-fabricmanager is {state}: without it NVSwitch systems cannot run CUDA jobs",
            found,
            remedy,
        )
    findings = []
    for gpu in gpus_of(smi) if smi is not None and smi.usable else []:
        fabric_state, status = gpu.get("fabric_state"), gpu.get("fabric_status")
        if fabric_state is None or (
            str(fabric_state).lower() == "completed" and str(status).lower() == "success"
        ):
            continue
        fields = [f"fabric state: {fabric_state}", f"fabric status: {status}"]
        findings.append(
            failed(
                check,
                f"{gpu_name(gpu)}: not registered with the NVSwitch fabric "
                f"(state {fabric_state}, status {status})",
                _gpu_evidence(smi, gpu, "fabric", "Fabric", fields),
                remedy,
            )
        )
    return merge(
        check,
        findings,
        "nvidia-fabricmanager is active"
        + (" and every GPU joined the fabric" if smi is not None and smi.usable else ""),
        found,
    )


# --- gpu.persistence_mode / gpu.mig --------------------------------------------------


def gpu_persistence_mode(smi) -> dict:
    check = "gpu.persistence_mode"
    if not smi.usable:
        return unavailable(check, smi, SMI_FAILED)
    findings = []
    for gpu in gpus_of(smi):
        mode = gpu.get("persistence_mode")
        if as_flag(mode) is not True:
            findings.append(
                failed(
                    check,
                    f"{gpu_name(gpu)}: persistence mode {mode or 'unknown'}",
                    _gpu_evidence(
                        smi, gpu, "persistence_mode", "Persistence Mode", [f"persistence_mode: {mode}"]
                    ),
                    "systemctl enable --now nvidia-persistenced (package nvidia-persistenced)",
                )
            )
    return merge(check, findings, "persistence mode enabled on every GPU")


def gpu_mig(smi, accel: dict) -> dict:
    check = "gpu.mig"
    if not smi.usable:
        return unavailable(check, smi, SMI_FAILED)
    want = str(accel.get("mig_mode") or "disabled").lower()
    findings = []
    for gpu in gpus_of(smi):
        mode = gpu.get("mig_mode")
        enabled = as_flag(mode)
        if enabled is None and want == "disabled":
            continue  # GPUs without MIG report N/A
        if (want == "enabled") != bool(enabled):
            switch = "1" if want == "enabled" else "0"
            findings.append(
                failed(
                    check,
                    f"{gpu_name(gpu)}: MIG mode {mode or 'unknown'}, expected {want}",
                    _gpu_evidence(smi, gpu, "mig_mode", "MIG Mode", [f"mig_mode: {mode}"]),
                    f"drain the node, nvidia-smi -i {gpu.get('index')} -mig {switch}, then reset the GPU",
                )
            )
    return merge(check, findings, f"MIG mode {want} on every GPU as expected")


# --- gpu.ecc / gpu.retired_pages / gpu.remapped_rows ----------------------------------


def gpu_ecc(smi) -> dict:
    check = "gpu.ecc"
    if not smi.usable:
        return unavailable(check, smi, SMI_FAILED)
    findings = []
    for gpu in gpus_of(smi):
        mode = gpu.get("ecc_mode")
        count = as_int(gpu.get("ecc_uncorrected_volatile"))
        fields = [f"ecc_mode: {mode}", f"ecc_uncorrected_volatile: {gpu.get('ecc_uncorrected_volatile')}"]
        if as_flag(mode) is False:
            findings.append(
                failed(
                    check,
                    f"{gpu_name(gpu)}: ECC is disabled",
                    _gpu_evidence(smi, gpu, "ecc_mode", "ECC Mode", fields),
                    f"nvidia-smi -i {gpu.get('index')} -e 1, then reset the GPU or reboot",
                )
            )
        elif count:
            findings.append(
                failed(
                    check,
                    f"{gpu_name(gpu)}: {count} uncorrected ECC errors since the driver loaded",
                    _gpu_evidence(smi, gpu, "ecc_errors", "ECC Errors", fields),
                    "drain the node and reset the GPU; RMA it if uncorrected errors come back",
                )
            )
        elif count is None and as_flag(mode) is True:
            findings.append(
                warned(
                    check,
                    f"{gpu_name(gpu)}: nvidia-smi reports no uncorrected ECC count",
                    _gpu_evidence(smi, gpu, "ecc_errors", "ECC Errors", fields),
                    "run nvidia-smi -q -d ECC on the node and check the driver",
                )
            )
    return merge(check, findings, "ECC enabled, no uncorrected volatile errors")


def gpu_retired_pages(smi) -> dict:
    check = "gpu.retired_pages"
    if not smi.usable:
        return unavailable(check, smi, SMI_FAILED)
    gpus = gpus_of(smi)
    reported = [gpu for gpu in gpus if as_flag(gpu.get("retired_pages_pending")) is not None]
    if gpus and not reported:
        return skipped(check, "the GPUs do not use page retirement (they remap rows: see gpu.remapped_rows)")
    findings = [
        failed(
            check,
            f"{gpu_name(gpu)}: retired pages pending: they take effect at the next GPU reset",
            _gpu_evidence(
                smi,
                gpu,
                "retired_pages",
                "Retired Pages",
                [f"retired_pages_pending: {gpu.get('retired_pages_pending')}"],
            ),
            "drain the node and reset the GPU (or reboot) to retire the pages; RMA if more keep coming",
        )
        for gpu in reported
        if as_flag(gpu.get("retired_pages_pending"))
    ]
    return merge(check, findings, "no retired pages pending")


def gpu_remapped_rows(smi) -> dict:
    check = "gpu.remapped_rows"
    if not smi.usable:
        return unavailable(check, smi, SMI_FAILED)
    gpus = gpus_of(smi)
    reported = [
        gpu
        for gpu in gpus
        if as_flag(gpu.get("remapped_rows_pending")) is not None
        or as_flag(gpu.get("remapped_rows_failure")) is not None
    ]
    if gpus and not reported:
        return skipped(check, "the GPUs do not remap rows (pre-Ampere: see gpu.retired_pages)")
    findings = []
    for gpu in reported:
        fields = [
            f"remapped_rows_pending: {gpu.get('remapped_rows_pending')}",
            f"remapped_rows_failure: {gpu.get('remapped_rows_failure')}",
        ]
        found = _gpu_evidence(smi, gpu, "remapped_rows", "Remapped Rows", fields)
        if as_flag(gpu.get("remapped_rows_failure")):
            findings.append(
                failed(
                    check,
                    f"{gpu_name(gpu)}: row remapping failed: the GPU has run out of spare rows",
                    found,
                    "drain the node and RMA the GPU",
                )
            )
        elif as_flag(gpu.get("remapped_rows_pending")):
            findings.append(
                failed(
                    check,
                    f"{gpu_name(gpu)}: row remapping pending: it takes effect at the next GPU reset",
                    found,
                    f"drain the node and reset the GPU (nvidia-smi -r -i {gpu.get('index')}) or reboot",
                )
            )
    return merge(check, findings, "no row remapping pending or failed")


# --- gpu.xid ---------------------------------------------------------------------------


def gpu_xid(kernel_log, smi=None) -> dict:
    check = "gpu.xid"
    if not kernel_log.usable:
        result = unavailable(check, kernel_log)
        if kernel_log.state == "failed":
            result["remedy"] = (
                "run validation as root (become: true): kernel.dmesg_restrict hides the kernel log"
            )
        return result
    gpus = gpus_of(smi) if smi is not None and smi.usable else []
    grouped: dict = {}
    for event in (kernel_log.data or {}).get("events") or []:
        code = as_int(event.get("xid"))
        if code is None:
            continue
        key = (code, norm_bus_id(event.get("pci_bus_id")) or str(event.get("pci_bus_id")))
        grouped.setdefault(key, []).append(event)
    findings = []
    for (code, bus), events in sorted(grouped.items()):
        name, severity, why, remedy = xid_table.classify(code)
        where = _gpu_for_bus(gpus, bus)
        times = f" ({len(events)} times)" if len(events) > 1 else ""
        # The parser records each event's line: the evidence is those lines, found without a rescan.
        lines = (
            lines_at(kernel_log, [as_int(e.get("line")) or 0 for e in events], limit=5)
            if kernel_log.text
            else []
        )
        lines = lines or [str(e.get("message") or "") for e in events[:3]]
        message = (
            f"{'fatal ' if severity == 'fail' else ''}Xid {code} ({name}) on {where} since boot{times}: {why}"
        )
        found = evidence(kernel_log.command, lines, kernel_log.file)
        found["source"] = xid_table.SOURCE
        make = failed if severity == "fail" else warned
        # The kernel log keeps the line until reboot, so this check fails until then.
        after = "; the kernel log keeps this line until reboot (or dmesg -C after a GPU reset)"
        findings.append(make(check, message, found, remedy + (after if severity == "fail" else "")))
    return merge(
        check,
        findings,
        "no Xid errors in the kernel log since boot",
        evidence(kernel_log.command, [], kernel_log.file),
    )


def _gpu_for_bus(gpus: list[dict], bus: str) -> str:
    for gpu in gpus:
        if same_device(gpu.get("pci_bus_id"), bus):
            return gpu_name(gpu)
    return bus


# --- metrics ---------------------------------------------------------------------------


def metrics(smi, nvlink=None, kernel_log=None) -> dict:
    """Numeric per-node figures for fleet outlier detection."""
    found: dict = {}
    gpus = gpus_of(smi) if smi is not None and smi.usable else []
    if gpus:
        found["gpu.count"] = len(gpus)
        _put_min(found, "gpu.pcie_width_min", [as_int(g.get("pcie_width_current")) for g in gpus])
        _put_min(found, "gpu.pcie_gen_max_min", [as_int(g.get("pcie_gen_max")) for g in gpus])
        temps = [t for t in (as_float(g.get("temperature_c")) for g in gpus) if t is not None]
        if temps:
            found["gpu.temperature_max_c"] = max(temps)
            found["gpu.temperature_mean_c"] = round(sum(temps) / len(temps), 1)
        power = [p for p in (as_float(g.get("power_draw_w")) for g in gpus) if p is not None]
        if power:
            found["gpu.power_draw_max_w"] = max(power)
        found["gpu.ecc_uncorrected_volatile_total"] = sum(
            as_int(g.get("ecc_uncorrected_volatile")) or 0 for g in gpus
        )
        _put_sum(
            found, "gpu.ecc_corrected_volatile_total", [as_int(g.get("ecc_corrected_volatile")) for g in gpus]
        )
        _put_sum(found, "gpu.pcie_replay_total", [as_int(g.get("pcie_replays")) for g in gpus])
        found["gpu.remapped_rows_pending_count"] = sum(
            1 for g in gpus if as_flag(g.get("remapped_rows_pending"))
        )
    if nvlink is not None and nvlink.usable:
        active = [
            sum(1 for link in g.get("links") or [] if _link_up(link))
            for g in (nvlink.data or {}).get("gpus") or []
        ]
        _put_min(found, "gpu.nvlink_active_links_min", active)
    if kernel_log is not None and kernel_log.usable:
        events = (kernel_log.data or {}).get("events") or []
        codes = [as_int(e.get("xid")) for e in events]
        found["gpu.xid_count"] = len(codes)
        found["gpu.xid_fatal_count"] = sum(
            1 for code in codes if code is not None and xid_table.classify(code)[1] == "fail"
        )
    return found


def _put_min(found: dict, key: str, values: list) -> None:
    known = [v for v in values if v is not None]
    if known:
        found[key] = min(known)


def _put_sum(found: dict, key: str, values: list) -> None:
    """The sum of the values reported; nothing when no GPU reports the figure (unknown is not 0)."""
    known = [v for v in values if v is not None]
    if known:
        found[key] = sum(known)
