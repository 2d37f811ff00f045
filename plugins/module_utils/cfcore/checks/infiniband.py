"""Compute-fabric HCA checks (`ib.*`) on parsed ibstat or sysfs dicts.

`hcas` is an Output whose data is `{"cas": [{name, type, firmware, ports: [{port,
state, physical_state, rate_gbps, link_layer}]}]}` (ibstat, or the same shape
read from /sys/class/infiniband). Only *compute* ports count: those whose link
layer is the SKU's (`hca.link_layer`), on CAs of the SKU's `hca.ca_types` (e.g.
`[MT4129]`, ConnectX-7) and names matching `hca.devices` (glob patterns such as
`mlx5_[0-7]`) when the SKU sets them. A node's front-end NICs therefore never
fail the compute fabric's checks: by link layer on InfiniBand SKUs, by CA type
or name on RoCE SKUs, whose front-end NICs are Ethernet too.
"""

from __future__ import annotations

import fnmatch
import re

from ..evidence import ibstat_port_block
from ..results import evidence, failed, merge, passed, skipped, warned
from .common import as_float, unavailable


def _word(value) -> str:
    """`4: ACTIVE` (sysfs) or `Active` (ibstat) -> `active`."""
    return re.sub(r"^\d+:\s*", "", str(value or "")).strip().lower()


def compute_cas(hcas, hca: dict) -> list[dict]:
    layer = str(hca.get("link_layer") or "").lower()
    patterns = list(hca.get("devices") or [])
    types = {str(t).lower() for t in hca.get("ca_types") or []}
    chosen = []
    for ca in (hcas.data or {}).get("cas") or []:
        if patterns and not any(fnmatch.fnmatch(str(ca.get("name")), p) for p in patterns):
            continue
        if types and str(ca.get("type") or "").lower() not in types:
            continue
        layers = {_word(port.get("link_layer")) for port in ca.get("ports") or []}
        if layer and layers and layer not in layers:
            continue
        chosen.append(ca)
    return chosen


def _ports(cas: list[dict], hca: dict):
    layer = str(hca.get("link_layer") or "").lower()
    for ca in cas:
        for port in ca.get("ports") or []:
            if layer and port.get("link_layer") and _word(port.get("link_layer")) != layer:
                continue
            yield ca, port


def _port_evidence(hcas, ca: dict, port: dict) -> dict:
    lines = ibstat_port_block(hcas, str(ca.get("name")), port.get("port")) if hcas.text else []
    if not lines:
        prefix = f"{ca.get('name')}/ports/{port.get('port')}"
        lines = [
            f"{prefix}/state: {port.get('state')}",
            f"{prefix}/phys_state: {port.get('physical_state')}",
            f"{prefix}/rate: {port.get('rate_gbps')} Gb/sec",
            f"{prefix}/link_layer: {port.get('link_layer')}",
        ]
    return evidence(hcas.command, lines, hcas.file)


def _no_hca(check: str) -> dict:
    return skipped(check, "the SKU has no compute-fabric HCAs (hca: null)")


def ib_hca_count(hcas, hca: dict | None) -> dict:
    check = "ib.hca_count"
    if not hca:
        return _no_hca(check)
    if not hcas.usable:
        return unavailable(check, hcas)
    cas = compute_cas(hcas, hca)
    want = int(hca.get("count") or 0)
    lines = [f"CA '{ca.get('name')}' {ca.get('type')} firmware {ca.get('firmware')}" for ca in cas]
    found = evidence(hcas.command, lines or ["no compute HCA found"], hcas.file)
    layer = hca.get("link_layer") or "any"
    if len(cas) == want:
        return passed(check, f"{want} {layer} HCAs as the SKU expects", found)
    if len(cas) < want:
        return failed(
            check,
            f"only {len(cas)} of {want} {layer} HCAs present",
            found,
            "check lspci -d 15b3: for the missing adapter; reseat it, check its firmware/link type "
            "(mlxconfig LINK_TYPE_P1) and that the mlx5_ib driver (DOCA/MLNX_OFED) is loaded",
        )
    return warned(
        check,
        f"{len(cas)} {layer} HCAs, more than the SKU's {want}",
        found,
        "set hca.ca_types or hca.devices in the SKU catalog to name the compute HCAs, or fix node_sku",
    )


def ib_port_state(hcas, hca: dict | None) -> dict:
    check = "ib.port_state"
    if not hca:
        return _no_hca(check)
    if not hcas.usable:
        return unavailable(check, hcas)
    findings = []
    count = 0
    for ca, port in _ports(compute_cas(hcas, hca), hca):
        count += 1
        state, phys = _word(port.get("state")), _word(port.get("physical_state"))
        if state == "active" and phys == "linkup":
            continue
        findings.append(
            failed(
                check,
                f"{ca.get('name')} port {port.get('port')}: "
                f"{port.get('state')} / {port.get('physical_state')}",
                _port_evidence(hcas, ca, port),
                _port_remedy(state, phys),
            )
        )
    if count == 0:
        return failed(
            check, "no compute HCA ports found", evidence(hcas.command, [], hcas.file), "see ib.hca_count"
        )
    return merge(check, findings, f"all {count} compute ports Active / LinkUp")


def _port_remedy(state: str, phys: str) -> str:
    if phys == "linkup" and state in ("initializing", "init", "armed"):
        return "the link is up but no subnet manager configured it: check opensm/UFM on the fabric"
    if phys == "disabled":
        return (
            "the port is administratively disabled: enable it (ibportstate / switch port) and check mlxlink"
        )
    if phys == "polling":
        return "no link partner: check the cable/transceiver seating and the switch port; swap the cable"
    return (
        "check the cable, transceiver and switch port (mlxlink -d <ca> shows why); "
        "replace the cable if it persists"
    )


def ib_port_rate(hcas, hca: dict | None) -> dict:
    check = "ib.port_rate"
    if not hca:
        return _no_hca(check)
    if not hcas.usable:
        return unavailable(check, hcas)
    want = as_float(hca.get("rate_gbps"))
    findings = []
    active = 0
    for ca, port in _ports(compute_cas(hcas, hca), hca):
        if _word(port.get("state")) != "active":
            continue  # ib.port_state reports it
        active += 1
        rate = as_float(port.get("rate_gbps"))
        if not want or (rate is not None and rate >= want):
            continue
        name = f"{ca.get('name')} port {port.get('port')}"
        said = f"at {rate:g} Gb/s" if rate is not None else "reports no rate"
        findings.append(
            failed(
                check,
                f"{name} {said}, the SKU expects {want:g} Gb/s",
                _port_evidence(hcas, ca, port),
                "the link trained below its speed: check the cable/transceiver type and the switch port "
                "speed (mlxlink -d <ca> -p 1); replace the cable if it persists",
            )
        )
    if active == 0:
        return skipped(check, "no active compute port to measure (see ib.port_state)")
    if not want:
        return skipped(check, "the SKU sets no hca.rate_gbps to compare with")
    return merge(check, findings, f"all {active} active compute ports at {want:g} Gb/s or more")


def metrics(hcas, hca: dict | None) -> dict:
    if not hca or hcas is None or not hcas.usable:
        return {}
    cas = compute_cas(hcas, hca)
    ports = list(_ports(cas, hca))
    active = [port for _, port in ports if _word(port.get("state")) == "active"]
    found = {"ib.hca_count": len(cas), "ib.ports_active": len(active)}
    rates = [r for r in (as_float(port.get("rate_gbps")) for port in active) if r is not None]
    if rates:
        found["ib.rate_gbps_min"] = min(rates)
    return found
