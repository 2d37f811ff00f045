"""Huawei Ascend NPU checks (`npu.*`) on parsed npu-smi and hccn_tool dicts.

`info` is the parsed `npu-smi info` ({version, npus: [{npu_id, chip_id, name,
health, ...}]}, one entry per chip row); `boards`, `healths` map an NPU id to
the Output of `npu-smi info -t board|health -i N`; `nic_*` map a NIC device id
(hccn_tool -i N) to the Output of `hccn_tool -i N -ip|-link|-net_health -g`.
"""

from __future__ import annotations

from ..evidence import key_value_lines, npu_smi_rows
from ..results import errored, evidence, failed, merge, passed, skipped, warned
from ..versions import at_least, same_version
from .common import as_float, as_int, field, unavailable

INFO_FAILED = "npu-smi info gave no NPU data (see npu.tool)"

# npu-smi's Health column: OK, then rising alarm levels.
_HEALTH = {"ok": "pass", "warning": "warn", "alarm": "fail", "critical": "fail"}


def chips_of(info) -> list[dict]:
    return list((info.data or {}).get("npus") or [])


def npu_ids(info) -> list[int]:
    ids = []
    for chip in chips_of(info):
        npu = as_int(chip.get("npu_id"))
        if npu is not None and npu not in ids:
            ids.append(npu)
    return ids


def _chip_name(chip: dict) -> str:
    where = chip.get("bus_id")
    return f"NPU {chip.get('npu_id')} chip {chip.get('chip_id')}" + (f" ({where})" if where else "")


def _rows(info, chip: dict) -> dict:
    lines = npu_smi_rows(info, as_int(chip.get("npu_id"))) if info.text else []
    fallback = [f"{_chip_name(chip)}: {chip.get('name')} health {chip.get('health')}"]
    return evidence(info.command, lines or fallback, info.file)


def npu_tool(info) -> dict:
    check = "npu.tool"
    if info.state == "failed" and not info.usable:
        return failed(
            check,
            f"npu-smi cannot talk to the driver: {info.error}",
            evidence(info.command, [info.error, *info.stderr.splitlines()[:3]], info.file),
            "check that the Ascend driver is loaded (lsmod | grep drv_davinci, dmesg) and matches the "
            "firmware; reinstall the Ascend driver package (Ascend-hdk-*-npu-driver_*.run --full) and reboot",
        )
    if not info.ok:
        return unavailable(check, info)
    return passed(
        check,
        f"npu-smi {info.data.get('version')} lists {len(npu_ids(info))} NPUs",
        evidence(
            info.command, [f"version: {info.data.get('version')}", f"chips: {len(chips_of(info))}"], info.file
        ),
    )


def npu_count(info, accel: dict) -> dict:
    check = "npu.count"
    if not info.usable:
        return unavailable(check, info, INFO_FAILED)
    ids = npu_ids(info)
    want = int(accel["count"])
    lines = [
        f"NPU {chip.get('npu_id')} chip {chip.get('chip_id')} {chip.get('name')} {chip.get('bus_id')}"
        for chip in chips_of(info)
    ]
    found = evidence(info.command, lines, info.file)
    if len(ids) == want:
        return passed(check, f"{want} NPUs ({len(chips_of(info))} chips) as the SKU expects", found)
    if len(ids) > want:
        return failed(
            check,
            f"{len(ids)} NPUs but the SKU expects {want}",
            found,
            "the node's node_sku in the inventory names the wrong SKU: fix it",
        )
    return failed(
        check,
        f"only {len(ids)} of {want} NPUs visible to npu-smi",
        found,
        "check lspci -d 19e5: and dmesg for the missing NPU; drain the node, reseat the module, RMA if it "
        "stays missing",
    )


def npu_model(info, accel: dict) -> dict:
    check = "npu.model"
    if not info.usable:
        return unavailable(check, info, INFO_FAILED)
    model = str(accel["model"])
    findings = [
        failed(
            check,
            f"{_chip_name(chip)} is a {chip.get('name')}, the SKU expects {model}",
            _rows(info, chip),
            "fix node_sku in the inventory, or the SKU's accelerator.model",
        )
        for chip in chips_of(info)
        if model.lower() not in str(chip.get("name") or "").lower()
    ]
    names = sorted({str(chip.get("name")) for chip in chips_of(info)})
    return merge(check, findings, f"all NPUs are {model} ({', '.join(names)})")


def npu_health(info, healths: dict | None = None) -> dict:
    check = "npu.health"
    if not info.usable:
        return unavailable(check, info, INFO_FAILED)
    healths = healths or {}
    findings = []
    for chip in chips_of(info):
        health = str(chip.get("health") or "")
        status = _HEALTH.get(health.lower(), "fail")
        if status == "pass":
            continue
        found = _rows(info, chip)
        detail = healths.get(as_int(chip.get("npu_id")))
        if detail is not None and detail.ok:
            found["lines"].extend(
                key_value_lines(detail.text, ("Health Status", "Error Code", "Error Information"))
            )
            found["command"] += f"; {detail.command}"
        make = warned if status == "warn" else failed
        findings.append(
            make(
                check,
                f"{_chip_name(chip)} health {health or 'unknown'}",
                found,
                f"read the error code: npu-smi info -t health -i {chip.get('npu_id')} and the device log "
                "(msnpureport); drain the node, reset the NPU or reboot; RMA if the alarm stays",
            )
        )
    return merge(check, findings, f"all {len(chips_of(info))} NPU chips report health OK")


def npu_driver_version(info, accel: dict, bom: dict) -> dict:
    check = "npu.driver_version"
    if not info.usable:
        return unavailable(check, info, INFO_FAILED)
    have = str((info.data or {}).get("version") or "")
    want = str(bom.get("ascend_driver_version") or "")
    minimum = str(accel.get("min_driver") or "")
    found = evidence(info.command, [f"npu-smi version: {have}"], info.file)
    if not have:
        return failed(check, "npu-smi reports no driver version", found, "reinstall the Ascend driver")
    problems = []
    if want and not same_version(have, want):
        problems.append(f"driver {have} is not the BOM's ascend_driver_version {want}")
    if minimum and not at_least(have, minimum):
        problems.append(f"driver {have} is older than the SKU's min_driver {minimum}")
    if problems:
        return failed(
            check,
            "; ".join(problems),
            found,
            f"install Ascend driver {want or minimum} (the Ascend-hdk-*-npu-driver_*.run package with "
            "--upgrade), then reboot",
        )
    if not want:
        return warned(
            check,
            f"driver {have}; the BOM sets no ascend_driver_version to compare",
            found,
            "set ascend_driver_version in group_vars/all/versions.yml",
        )
    return passed(check, f"driver {have} = BOM", found)


def npu_firmware_compat(boards: dict, ids: list[int]) -> dict:
    """`Compatibility : OK` in `npu-smi info -t board -i N` means firmware and driver match."""
    check = "npu.firmware_compat"
    findings = []
    versions = set()
    for npu in ids:
        board = boards.get(npu)
        if board is None or not board.usable:
            if board is not None:
                findings.append(unavailable(check, board))
            continue
        data = board.data or {}
        compat = str(field(data, "compatibility") or "")
        firmware = field(data, "firmware_version")
        software = field(data, "software_version")
        versions.add(str(firmware))
        lines = key_value_lines(board.text, ("Software Version", "Firmware Version", "Compatibility")) or [
            f"software_version: {software}",
            f"firmware_version: {firmware}",
            f"compatibility: {compat}",
        ]
        found = evidence(board.command, lines, board.file)
        if not compat:
            findings.append(
                warned(
                    check,
                    f"NPU {npu}: board info reports no compatibility (firmware {firmware})",
                    found,
                    "compare the firmware with the driver's compatibility list in "
                    "/usr/local/Ascend/driver/version.info",
                )
            )
        elif compat.lower() != "ok":
            findings.append(
                failed(
                    check,
                    f"NPU {npu}: firmware {firmware} not compatible with driver {software} ({compat})",
                    found,
                    "install the firmware package (Ascend-hdk-*-npu-firmware_*.run --upgrade) matching the "
                    "driver, then reboot",
                )
            )
    if not ids:
        return skipped(check, "no NPUs listed by npu-smi (see npu.count)")
    return merge(
        check,
        findings,
        f"firmware {', '.join(sorted(versions))} compatible with the driver on all {len(ids)} NPUs",
    )


def _nic_rows(outputs: dict, check: str, judge, ok_message: str) -> dict:
    findings = []
    for device in sorted(outputs):
        output = outputs[device]
        if not output.usable:
            findings.append(unavailable(check, output))
            continue
        problem = judge(device, output)
        if problem is not None:
            findings.append(problem)
    return merge(check, findings, ok_message.format(count=len(outputs)))


def _no_nics(check: str, npu_nics: dict | None) -> dict | None:
    if not npu_nics:
        return skipped(check, "the SKU has no on-package NPU NICs (npu_nics: null)")
    return None


def npu_nic_link(links: dict, npu_nics: dict | None) -> dict:
    check = "npu.nic_link"
    none = _no_nics(check, npu_nics)
    if none is not None:
        return none

    def judge(device, output):
        status = str(field(output.data, "link_status") or "")
        if status.upper() == "UP":
            return None
        return failed(
            check,
            f"NPU NIC {device}: link {status or 'unknown'}",
            evidence(output.command, output.lines()[:3], output.file),
            f"check the optical module and cable of device {device} (hccn_tool -i {device} -optical -g) and "
            "the switch port; reseat or replace the module",
        )

    return _nic_rows(links, check, judge, "link UP on all {count} NPU NICs")


def npu_nic_net_health(healths: dict, npu_nics: dict | None) -> dict:
    check = "npu.nic_net_health"
    none = _no_nics(check, npu_nics)
    if none is not None:
        return none

    def judge(device, output):
        status = str(field(output.data, "net_health") or "")
        if status.lower() == "success":
            return None
        return failed(
            check,
            f"NPU NIC {device}: net health {status or 'unknown'}",
            evidence(output.command, output.lines()[:3], output.file),
            f"check the detect address: hccn_tool -i {device} -netdetect -g must name a reachable gateway "
            f"(set it with hccn_tool -i {device} -netdetect -s address <gateway>); check link, IP and "
            "switch port",
        )

    return _nic_rows(healths, check, judge, "net health Success on all {count} NPU NICs")


def npu_nic_ip(addresses: dict, plan: list[dict], npu_nics: dict | None) -> dict:
    check = "npu.nic_ip"
    none = _no_nics(check, npu_nics)
    if none is not None:
        return none
    if not plan:
        return errored(
            check,
            "could not check: the inventory gives this host no hccn_devices (the NPU NIC plan)",
            None,
            "add hccn_devices: [{id, address, netmask, gateway, netdetect}, ...] to the host's inventory",
        )
    findings = []
    for entry in plan:
        device = as_int(entry.get("id"))
        output = addresses.get(device)
        if output is None:
            continue
        if not output.usable:
            findings.append(unavailable(check, output))
            continue
        have_addr = str(field(output.data, "address", "ipaddr") or "")
        have_mask = str(field(output.data, "netmask") or "")
        want_addr, want_mask = str(entry.get("address")), str(entry.get("netmask"))
        if have_addr == want_addr and have_mask == want_mask:
            continue
        findings.append(
            failed(
                check,
                f"NPU NIC {device}: {have_addr or 'no address'}/{have_mask or '-'}, the plan says "
                f"{want_addr}/{want_mask}",
                evidence(output.command, output.lines()[:3] or ["(no address set)"], output.file),
                f"hccn_tool -i {device} -ip -s address {want_addr} netmask {want_mask} "
                "(as the host's hccn_devices plan says)",
            )
        )
    return merge(check, findings, f"all {len(plan)} NPU NIC addresses match the hccn_devices plan")


def metrics(info, links: dict | None = None) -> dict:
    found: dict = {}
    if info is None or not info.usable:
        return found
    chips = chips_of(info)
    found["npu.count"] = len(npu_ids(info))
    found["npu.chip_count"] = len(chips)
    temps = [t for t in (as_float(c.get("temperature_c")) for c in chips) if t is not None]
    if temps:
        found["npu.temperature_max_c"] = max(temps)
    power = [p for p in (as_float(c.get("power_w")) for c in chips) if p is not None]
    if power:
        found["npu.power_max_w"] = max(power)
    hbm = [h for h in (as_int(c.get("hbm_total_mb")) for c in chips) if h is not None]
    if hbm:
        found["npu.hbm_total_mb_min"] = min(hbm)
    found["npu.health_not_ok_count"] = sum(1 for c in chips if str(c.get("health") or "").lower() != "ok")
    if links:
        found["npu.nic_links_up"] = sum(
            1
            for out in links.values()
            if out.usable and str(field(out.data, "link_status") or "").upper() == "UP"
        )
    return found
