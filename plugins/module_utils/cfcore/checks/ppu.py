"""Alibaba T-Head PPU checks (`ppu.*`) on parsed `ppu-smi -L` and `ppu-smi -q` outputs.

`listed` is the Output of `ppu-smi -L` (data: {"ppus": [{index, name, uuid, migs}]}),
`detail` the Output of `ppu-smi -q` (data: {driver_version, sdk_version, ppus: [...]});
shapes in cfcore/parsers/ppu.py, whose output formats are an ASSUMPTION modelled on
nvidia-smi (see its docstring): a check that cannot find what it needs says so
(`error` or `warn`), never `pass`.
"""

from __future__ import annotations

from ..parsers.ppu import sdk_version_matches
from ..results import errored, evidence, failed, merge, passed, warned
from ..versions import at_least
from .common import as_float, as_int, unavailable

LIST_FAILED = "ppu-smi -L gave no PPU list (see ppu.tool)"
DETAIL_FAILED = "ppu-smi -q gave no PPU detail (see ppu.tool)"

# ppu-smi -q's Health (assumed values): OK, then rising severities.
_HEALTH = {"ok": "pass", "healthy": "pass", "warning": "warn", "degraded": "warn"}


def ppus_of(output) -> list:
    if output is None or not output.usable:
        return []
    return list((output.data or {}).get("ppus") or [])


def _name(ppu: dict) -> str:
    where = ppu.get("bus_id")
    return f"PPU {ppu.get('index')}" + (f" ({where})" if where else "")


def _list_lines(listed) -> list:
    return [f"PPU {p.get('index')}: {p.get('name')} (UUID: {p.get('uuid')})" for p in ppus_of(listed)]


def ppu_tool(listed, detail) -> dict:
    check = "ppu.tool"
    for output in (listed, detail):
        if output.state == "failed" and not output.usable:
            return failed(
                check,
                f"ppu-smi cannot talk to the PPU driver: {output.error}",
                evidence(output.command, [output.error, *output.stderr.splitlines()[:3]], output.file),
                "check the PPU kernel driver is loaded (ls /dev/alixpu*, dmesg) and matches the SDK; "
                "reinstall the PPU SDK (the ppu role with the BOM's ppu_sdk_version) and reboot",
            )
        if not output.ok:
            return unavailable(check, output)
    data = detail.data or {}
    return passed(
        check,
        f"ppu-smi {data.get('smi_version') or '(version not reported)'} lists {len(ppus_of(listed))} PPUs",
        evidence(
            f"{listed.command}; {detail.command}",
            [f"driver: {data.get('driver_version')}", f"PPUs: {len(ppus_of(listed))}"],
            listed.file,
        ),
    )


def ppu_count(listed, accel: dict) -> dict:
    check = "ppu.count"
    if not listed.usable:
        return unavailable(check, listed, LIST_FAILED)
    have = len(ppus_of(listed))
    want = int(accel["count"])
    found = evidence(listed.command, _list_lines(listed), listed.file)
    if have == want:
        return passed(check, f"{want} PPUs as the SKU expects", found)
    if have > want:
        return failed(
            check,
            f"{have} PPUs but the SKU expects {want}",
            found,
            "the node's node_sku in the inventory names the wrong SKU: fix it (or the SKU's "
            "accelerator.count)",
        )
    return failed(
        check,
        f"only {have} of {want} PPUs visible to ppu-smi",
        found,
        "check lspci and dmesg for the missing PPU; drain the node, reseat the card, RMA if it stays missing",
    )


def ppu_model(listed, accel: dict) -> dict:
    check = "ppu.model"
    if not listed.usable:
        return unavailable(check, listed, LIST_FAILED)
    model = str(accel["model"])
    findings = [
        failed(
            check,
            f"{_name(ppu)} is a {ppu.get('name')}, the SKU expects {model}",
            evidence(listed.command, [line], listed.file),
            "fix node_sku in the inventory, or the SKU's accelerator.model",
        )
        for ppu, line in zip(ppus_of(listed), _list_lines(listed))
        if model.lower() not in str(ppu.get("name") or "").lower()
    ]
    names = sorted({str(ppu.get("name")) for ppu in ppus_of(listed)})
    return merge(check, findings, f"all PPUs are {model} ({', '.join(names)})")


def ppu_health(detail, listed=None) -> dict:
    """Each device's Health and volatile uncorrectable ECC errors from `ppu-smi -q`."""
    check = "ppu.health"
    if not detail.usable:
        return unavailable(check, detail, DETAIL_FAILED)
    ppus = ppus_of(detail)
    findings = []
    unreported = []
    for ppu in ppus:
        health = ppu.get("health")
        uncorrectable = as_int(ppu.get("ecc_uncorrectable_volatile"))
        lines = [
            f"{_name(ppu)} {ppu.get('name')}: Health {health}, ECC volatile uncorrectable {uncorrectable}"
        ]
        found = evidence(detail.command, lines, detail.file)
        remedy = (
            f"read the device's errors (ppu-smi -q -i {ppu.get('index')}) and the kernel log (dmesg: XID "
            "records); drain the node, reset the PPU or reboot; RMA if it stays"
        )
        if uncorrectable:
            findings.append(
                failed(
                    check, f"{_name(ppu)}: {uncorrectable} uncorrectable ECC errors since boot", found, remedy
                )
            )
            continue
        if health is None:
            unreported.append(ppu)
            continue
        status = _HEALTH.get(str(health).lower(), "fail")
        if status == "warn":
            findings.append(warned(check, f"{_name(ppu)} health {health}", found, remedy))
        elif status == "fail":
            findings.append(failed(check, f"{_name(ppu)} health {health}", found, remedy))
    if unreported and len(unreported) == len(ppus):
        return errored(
            check,
            "could not check: ppu-smi -q reports no Health for any PPU (its output format may differ from "
            "the one ClusterForge assumes)",
            evidence(detail.command, detail.lines()[:5], detail.file),
            "send `ppu-smi -q` of this node with a ClusterForge bug report (cfcore/parsers/ppu.py)",
        )
    for ppu in unreported:
        findings.append(
            warned(
                check,
                f"{_name(ppu)}: ppu-smi -q reports no Health",
                evidence(
                    detail.command, [f"{_name(ppu)} {ppu.get('name')}: Health not reported"], detail.file
                ),
                f"check the device by hand: ppu-smi -q -i {ppu.get('index')}",
            )
        )
    listed_count = len(ppus_of(listed)) if listed is not None else None
    if listed_count is not None and listed.usable and listed_count != len(ppus):
        findings.append(
            failed(
                check,
                f"ppu-smi -L lists {listed_count} PPUs but ppu-smi -q details {len(ppus)}",
                evidence(f"{listed.command}; {detail.command}", _list_lines(listed), detail.file),
                "a device stopped answering: check dmesg, drain the node, reset the PPU or reboot",
            )
        )
    return merge(check, findings, f"all {len(ppus)} PPUs report health OK and no uncorrectable ECC errors")


def ppu_sdk_version(detail, accel: dict, bom: dict) -> dict:
    """The SDK version `ppu-smi -q` reports against the BOM's ppu_sdk_version and the SKU's min_driver."""
    check = "ppu.sdk_version"
    if not detail.usable:
        return unavailable(check, detail, DETAIL_FAILED)
    data = detail.data or {}
    have = data.get("sdk_version")
    want = str(bom.get("ppu_sdk_version") or "")
    lines = [f"SDK Version: {have}", f"Driver Version: {data.get('driver_version')}"]
    found = evidence(detail.command, lines, detail.file)
    if not have:
        return warned(
            check,
            "ppu-smi -q reports no SDK Version: the installed SDK could not be compared with the BOM",
            found,
            "compare <ppu_sdk_prefix>/VERSION.txt with ppu_sdk_version by hand; report the ppu-smi -q format",
        )
    minimum = str(accel.get("min_driver") or "")
    if minimum and not _at_least(have, minimum):
        return failed(
            check,
            f"SDK {have} is older than the SKU's min_driver {minimum}",
            found,
            f"install PPU SDK {want or minimum} or newer with the ppu role (playbooks/ppu.yml)",
        )
    if not want:
        return warned(
            check,
            f"SDK {have}; the BOM sets no ppu_sdk_version to compare",
            found,
            "set ppu_sdk_version in group_vars/all/versions.yml",
        )
    if not sdk_version_matches(have, want):
        return failed(
            check,
            f"SDK {have} is not the BOM's ppu_sdk_version {want}",
            found,
            f"install PPU SDK {want} with the ppu role (playbooks/ppu.yml), then reboot if its "
            "driver changed",
        )
    return passed(check, f"SDK {have} = BOM ({want})", found)


def _at_least(have: str, minimum: str) -> bool:
    """`have` without its build id ('2.1.0-a5f865' -> '2.1.0') is `minimum` or newer; unreadable: False."""
    try:
        return at_least(str(have).split("-")[0], minimum)
    except ValueError:
        return False


def metrics(listed, detail) -> dict:
    found: dict = {}
    if listed is not None and listed.usable:
        found["ppu.count"] = len(ppus_of(listed))
    ppus = ppus_of(detail)
    temps = [t for t in (as_float(p.get("temperature_c")) for p in ppus) if t is not None]
    if temps:
        found["ppu.temperature_max_c"] = max(temps)
    power = [w for w in (as_float(p.get("power_draw_w")) for p in ppus) if w is not None]
    if power:
        found["ppu.power_draw_max_w"] = max(power)
    memory = [m for m in (as_int(p.get("memory_total_mib")) for p in ppus) if m is not None]
    if memory:
        found["ppu.memory_total_mib_min"] = min(memory)
    if ppus:
        found["ppu.ecc_uncorrectable_volatile_total"] = sum(
            as_int(p.get("ecc_uncorrectable_volatile")) or 0 for p in ppus
        )
    return found
