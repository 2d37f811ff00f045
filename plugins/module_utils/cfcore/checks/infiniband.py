"""Compute-fabric HCA checks (`ib.*`) on parsed ibstat or sysfs dicts.

`hcas` is an Output whose data is `{"cas": [{name, type, firmware, ports: [{port,
state, physical_state, rate_gbps, link_layer}]}]}` (ibstat, or the same shape
read from /sys/class/infiniband). Only *compute* ports count: those whose link
layer is the SKU's (`hca.link_layer`), on CAs of the SKU's `hca.ca_types` (e.g.
`[MT4129]`, ConnectX-7) and names matching `hca.devices` (glob patterns such as
`mlx5_[0-7]`) when the SKU sets them. A node's front-end NICs therefore never
fail the compute fabric's checks: by link layer on InfiniBand SKUs, by CA type
or name on RoCE SKUs, whose front-end NICs are Ethernet too.

`ib.link_layer` makes the link layer itself a verdict, so a compute port set
to the wrong layer (mlxconfig LINK_TYPE_P<n>) fails there instead of only
dropping out of the port checks. Its CAs are those of `hca.ca_types` /
`hca.devices`, every port of which must have the SKU's layer. A SKU that sets
neither names its compute HCAs by count only: CAs with a port of the SKU's
layer are compute HCAs, and CAs with none are front-end NICs while at least
`hca.count` CAs have the layer; with fewer, they are named as possibly
mis-set compute HCAs (ib.hca_count fails as well).

`ib.ipoib` compares the planned IPoIB interfaces (cfcore/ipoib.py) with
`ip -j addr show`.
"""

from __future__ import annotations

import fnmatch
import re

from ..evidence import ibstat_port_block
from ..ipoib import parse_ip_addr
from ..results import errored, evidence, failed, merge, passed, skipped, warned
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


# mlxconfig's LINK_TYPE_P<n> values.
LINK_TYPES = {"infiniband": 1, "ethernet": 2}


def _selected_cas(hcas, hca: dict) -> list[dict]:
    """The CAs hca.devices / hca.ca_types name, whatever their link layer (all when neither is set)."""
    return compute_cas(hcas, {**hca, "link_layer": None})


def _layer_remedy(ca: str, port, want: str) -> str:
    value = LINK_TYPES.get(want.lower())
    setting = f"LINK_TYPE_P{port}={value}" if value else f"LINK_TYPE_P{port}"
    return (
        f"set the port's link layer in the adapter firmware: mlxconfig -d {ca} set {setting} "
        f"(1 = InfiniBand, 2 = Ethernet; -d also takes the PCI address, readlink "
        f"/sys/class/infiniband/{ca}/device), then reboot (or mlxfwreset -d {ca} reset) to apply it"
    )


def ib_link_layer(hcas, hca: dict | None) -> dict:
    check = "ib.link_layer"
    if not hca:
        return _no_hca(check)
    if not hcas.usable:
        return unavailable(check, hcas)
    want = str(hca.get("link_layer") or "")
    layer = want.lower()
    selectors = bool(hca.get("devices") or hca.get("ca_types"))
    cas = _selected_cas(hcas, hca)
    others: list[dict] = []
    if not selectors:
        with_layer = [
            ca for ca in cas if any(_word(p.get("link_layer")) == layer for p in ca.get("ports") or [])
        ]
        without = [ca for ca in cas if ca not in with_layer]
        if len(with_layer) >= int(hca.get("count") or 0):
            cas, others = with_layer, without
    findings = []
    count = 0
    for ca in cas:
        for port in ca.get("ports") or []:
            count += 1
            got = _word(port.get("link_layer"))
            name = f"{ca.get('name')} port {port.get('port')}"
            if got == layer:
                continue
            found = _port_evidence(hcas, ca, port)
            if not got:
                findings.append(
                    errored(
                        check,
                        f"{name} reports no link layer",
                        found,
                        "read it with: ibstat " + str(ca.get("name")),
                    )
                )
                continue
            message = f"{name} is {port.get('link_layer')}, the SKU's compute fabric is {want}"
            if not selectors:
                message += (
                    f" (if {ca.get('name')} is a front-end NIC, name the compute HCAs in hca.ca_types or "
                    "hca.devices of the SKU catalog)"
                )
            findings.append(
                failed(check, message, found, _layer_remedy(str(ca.get("name")), port.get("port"), want))
            )
    if count == 0:
        return failed(
            check, "no compute HCA ports found", evidence(hcas.command, [], hcas.file), "see ib.hca_count"
        )
    ok = f"all {count} compute ports are {want}"
    if others:
        ok += f"; not compute (no {want} port): {', '.join(str(ca.get('name')) for ca in others)}"
    return merge(check, findings, ok)


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


def _ipoib_remedy(problem: str, entry: dict) -> str:
    name = entry["name"]
    if problem == "missing":
        child = (
            f"; a partition child needs its parent {entry['parent']} and P_Key {entry['pkey']} in the "
            "subnet manager's partitions"
            if entry.get("parent")
            else ""
        )
        return (
            f"apply the ib_fabric role (playbooks/fabric.yml) so the network stack creates {name}; "
            f"check that ib_ipoib is loaded (lsmod | grep ib_ipoib){child}"
        )
    if problem == "down":
        return (
            f"bring it up (ip link set dev {name} up, or networkctl/nmcli/netplan apply); a port that is not "
            "Active has no carrier: see ib.port_state"
        )
    if problem == "address":
        return (
            f"the network configuration of {name} did not apply: rerun the ib_fabric role, or reload the "
            "network stack (networkctl reload / nmcli connection up / netplan apply)"
        )
    return (
        f"set the MTU through the ib_fabric role (ip link set dev {name} mtu {entry['mtu']} to test); in "
        f"datagram mode the MTU is at most 4092 (the IB MTU less 4), connected mode allows 65520: "
        f"cat /sys/class/net/{name}/mode"
    )


def ib_ipoib(ip_addr, interfaces: list) -> dict:
    """Each planned IPoIB interface exists, is up (UP, or UNKNOWN with LOWER_UP), has its address and MTU."""
    check = "ib.ipoib"
    if not interfaces:
        return skipped(check, "no IPoIB interface planned (fabric_ipoib_interfaces)")
    if ip_addr is None or not ip_addr.ok:
        return unavailable(check, ip_addr)
    try:
        links = parse_ip_addr(ip_addr.text)
    except ValueError as exc:
        return errored(
            check,
            f"could not check: {exc}",
            evidence(ip_addr.command, [ip_addr.text[:200]], ip_addr.file),
            f"run `{ip_addr.command}` on the node: iproute2 4.14 or later prints JSON with -j",
        )
    findings = []
    for entry in interfaces:
        name = entry["name"]
        link = links.get(name)
        want = f"{entry['address']}/{entry['prefix']}"
        if link is None:
            listed = [n for n in links if n.startswith("ib")] or sorted(links)[:8]
            findings.append(
                failed(
                    check,
                    f"{name} does not exist",
                    evidence(ip_addr.command, [f"interfaces: {', '.join(listed) or 'none'}"], ip_addr.file),
                    _ipoib_remedy("missing", entry),
                )
            )
            continue
        held = [f"{ip}/{prefix}" for ip, prefix in link["addresses"]]
        lines = [
            f"{name}: state {link['operstate']} <{','.join(link['flags'])}> mtu {link['mtu']}",
            f"{name}: inet {', '.join(held) or 'none'}",
        ]
        found = evidence(ip_addr.command, lines, ip_addr.file)
        up = link["operstate"] == "UP" or (link["operstate"] == "UNKNOWN" and "LOWER_UP" in link["flags"])
        if not up:
            findings.append(
                failed(check, f"{name} is {link['operstate']}, not up", found, _ipoib_remedy("down", entry))
            )
        if want not in held:
            same_ip = [h for h in held if h.split("/")[0] == entry["address"]]
            said = f"holds {same_ip[0]}" if same_ip else "does not hold it"
            findings.append(
                failed(check, f"{name} should hold {want}, {said}", found, _ipoib_remedy("address", entry))
            )
        if link["mtu"] != entry["mtu"]:
            findings.append(
                failed(
                    check,
                    f"{name} MTU {link['mtu']}, planned {entry['mtu']} ({entry['mode']} mode)",
                    found,
                    _ipoib_remedy("mtu", entry),
                )
            )
    names = ", ".join(f"{e['name']} {e['address']}/{e['prefix']}" for e in interfaces)
    return merge(check, findings, f"{len(interfaces)} IPoIB interface(s) up as planned: {names}")


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
