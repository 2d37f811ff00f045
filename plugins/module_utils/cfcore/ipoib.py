"""The IPoIB plan of a host, and what `ip -j addr show` says about it.

One implementation for the `ib_fabric` role (filter `cf_ipoib_plan`), the
validate playbook and `node_validate` (check `ib.ipoib`):

    normalize_interfaces(plan) -> [{name, address, prefix, mtu, parent, pkey, mode}]

`plan` is the host's `fabric_ipoib_interfaces` (docs/design.md, "High-speed
fabric"): a list of `{name, address, mtu, parent, pkey, mode}`:

- `address`: IPv4 with its prefix (`10.40.0.11/16`); the normalized entry
  splits it into `address` and `prefix` (an entry already split, with
  `prefix`, is accepted too, so normalizing twice changes nothing);
- `mode`: `datagram` (default) or `connected`;
- `mtu`: default 2044 in datagram mode, 65520 connected; at most 4092 in
  datagram mode (the 4096-byte IB MTU less the 4-byte IPoIB header) and 65520
  connected;
- `pkey`: a partition child's P_Key, 0x0001-0x7fff, normalized to `0x%04x`
  (the full-membership bit 0x8000 is set by the kernel when it creates the
  child); needs `parent`, the IPoIB interface the child hangs off;
- `name`: required without `pkey`; a partition child's name defaults to the
  kernel's: `<parent>.<pkey with the full-membership bit, 4 hex digits>`
  (`ib0` + `0x0001` -> `ib0.8001`, as `echo 0x8001 > create_child` names it).

Bad input raises cfcore.inputs.InputError naming the entry, the field and the fix.
Stdlib only (runs on nodes).
"""

from __future__ import annotations

import ipaddress
import json
import re

from .inputs import InputError

VARIABLE = "fabric_ipoib_interfaces"
MODES = ("datagram", "connected")
DEFAULT_MTU = {"datagram": 2044, "connected": 65520}
MAX_MTU = {"datagram": 4092, "connected": 65520}
MIN_MTU = 68  # the IPv4 minimum
PKEY_MIN, PKEY_MAX = 0x0001, 0x7FFF
FULL_MEMBER = 0x8000
KEYS = ("name", "address", "prefix", "mtu", "parent", "pkey", "mode")
# Linux interface names: at most 15 bytes (IFNAMSIZ 16), no '/', ':' or blanks.
_IFNAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,14}$")
_FIX = (
    "write each entry as {name: ib0, address: 10.40.0.11/16} or, for a partition child, "
    "{parent: ib0, pkey: '0x0001', address: 10.41.0.11/16} (docs/design.md, High-speed fabric)"
)


def normalize_interfaces(plan, variable: str = VARIABLE) -> list:
    """The checked plan, defaults filled in; InputError naming `variable[i].field` otherwise."""
    if plan is None or plan == "":
        return []
    if not isinstance(plan, (list, tuple)):
        raise InputError(f"{variable} must be a list of interfaces, got {type(plan).__name__}", _FIX)
    entries = [_entry(f"{variable}[{index}]", raw) for index, raw in enumerate(plan)]
    _unique(variable, entries, "name")
    _unique(variable, entries, "address")
    return entries


def _entry(where: str, raw) -> dict:
    if not isinstance(raw, dict):
        raise InputError(f"{where} must be a mapping, got {raw!r}", _FIX)
    unknown = sorted(str(key) for key in raw if key not in KEYS)
    if unknown:
        raise InputError(f"{where} has unknown key(s) {', '.join(unknown)}", f"use only {', '.join(KEYS)}")
    mode = raw.get("mode") if raw.get("mode") is not None else "datagram"
    if mode not in MODES:
        raise InputError(f"{where}.mode must be datagram or connected, got {mode!r}", "e.g. mode: datagram")
    pkey = _pkey(where, raw.get("pkey"))
    parent = raw.get("parent")
    if parent is not None:
        _ifname(f"{where}.parent", parent)
    if pkey is not None and parent is None:
        raise InputError(
            f"{where}.pkey {pkey} needs parent: the IPoIB interface the partition child is created on",
            "add parent: ib0 (the port's IPoIB interface)",
        )
    if parent is not None and pkey is None:
        raise InputError(
            f"{where}.parent is only for partition children and needs pkey",
            "add pkey: '0x0001' (0x0001-0x7fff), or drop parent for the port's own interface",
        )
    name = raw.get("name")
    if name is None:
        if pkey is None:
            raise InputError(f"{where}.name is missing", "name the interface, e.g. name: ib0")
        name = f"{parent}.{int(pkey, 16) | FULL_MEMBER:04x}"
    _ifname(f"{where}.name", name)
    address, prefix = _address(where, raw.get("address"), raw.get("prefix"))
    mtu = _mtu(where, raw.get("mtu"), mode)
    return {
        "name": name,
        "address": address,
        "prefix": prefix,
        "mtu": mtu,
        "parent": parent,
        "pkey": pkey,
        "mode": mode,
    }


def _ifname(where: str, value) -> None:
    if not isinstance(value, str) or not _IFNAME.match(value):
        raise InputError(
            f"{where} must be a Linux interface name (1-15 letters, digits, '.', '-', '_'), got {value!r}",
            "e.g. ib0, ibp24s0 or ib0.8001",
        )


def _pkey(where: str, value):
    """'0x0001', 1 (YAML reads 0x0001 as an int) -> '0x0001'; None when not a partition child."""
    if value is None or value == "":
        return None
    number = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str) and re.match(r"^0[xX][0-9A-Fa-f]{1,4}$", value.strip()):
        number = int(value.strip(), 16)
    if number is None:
        raise InputError(f"{where}.pkey must be a hex P_Key such as '0x0001', got {value!r}", _PKEY_FIX)
    if number & FULL_MEMBER and PKEY_MIN <= number & ~FULL_MEMBER <= PKEY_MAX:
        raise InputError(
            f"{where}.pkey {number:#06x} has the full-membership bit set",
            f"write it without: pkey: '{number & ~FULL_MEMBER:#06x}' (the kernel sets the bit)",
        )
    if not PKEY_MIN <= number <= PKEY_MAX:
        raise InputError(f"{where}.pkey {number:#06x} is outside 0x0001-0x7fff", _PKEY_FIX)
    return f"{number:#06x}"


_PKEY_FIX = "use the partition's P_Key 0x0001-0x7fff as in the subnet manager's partitions.conf, quoted"


def _address(where: str, value, prefix) -> tuple:
    if not isinstance(value, str) or not value.strip():
        raise InputError(
            f"{where}.address is missing", "give the IPv4 address with its prefix, e.g. 10.40.0.11/16"
        )
    text = value.strip()
    if "/" not in text:
        try:
            ipaddress.IPv4Address(text)
        except ValueError:
            pass  # refused below as not IPv4/prefix
        else:
            if prefix is None:
                raise InputError(
                    f"{where}.address {text!r} has no prefix length",
                    f"write it as {text}/16 (your subnet's prefix)",
                )
            text = f"{text}/{prefix}"
    try:
        interface = ipaddress.IPv4Interface(text)
    except ValueError as exc:
        raise InputError(
            f"{where}.address {value!r} is not IPv4/prefix: {exc}", "e.g. 10.40.0.11/16"
        ) from None
    if prefix is not None and (isinstance(prefix, bool) or str(prefix) != str(interface.network.prefixlen)):
        raise InputError(
            f"{where}.prefix {prefix!r} disagrees with address {value!r}", "give the prefix once, in address"
        )
    ip = interface.ip
    if ip.is_multicast or ip.is_unspecified or ip.is_loopback or ip.is_link_local:
        raise InputError(
            f"{where}.address {ip} is not a unicast host address", "use an address of the IPoIB subnet"
        )
    network = interface.network
    if network.prefixlen <= 30 and ip in (network.network_address, network.broadcast_address):
        raise InputError(
            f"{where}.address {interface} is its subnet's network or broadcast address",
            "use a host address of the subnet",
        )
    return str(ip), network.prefixlen


def _mtu(where: str, value, mode: str) -> int:
    if value is None or value == "":
        return DEFAULT_MTU[mode]
    if isinstance(value, bool) or not (
        isinstance(value, int) or (isinstance(value, str) and value.isdigit())
    ):
        raise InputError(
            f"{where}.mtu must be a whole number of bytes, got {value!r}", f"e.g. mtu: {DEFAULT_MTU[mode]}"
        )
    mtu = int(value)
    if mtu < MIN_MTU or mtu > MAX_MTU[mode]:
        fix = (
            "use mode: connected for MTUs above 4092"
            if mode == "datagram" and mtu > MAX_MTU[mode]
            else f"use {MIN_MTU}-{MAX_MTU[mode]} (default {DEFAULT_MTU[mode]})"
        )
        raise InputError(f"{where}.mtu {mtu} is outside {MIN_MTU}-{MAX_MTU[mode]} in {mode} mode", fix)
    return mtu


def _unique(variable: str, entries: list, key: str) -> None:
    seen: dict = {}
    for index, entry in enumerate(entries):
        value = entry[key]
        if value in seen:
            raise InputError(
                f"{variable}[{index}].{key} {value} is also {variable}[{seen[value]}]'s",
                f"give each interface its own {key}",
            )
        seen[value] = index


# ------------------------------------------------------------ ip -j addr show ----

IP_ADDR = ("ip", "-j", "addr", "show")


def parse_ip_addr(text: str) -> dict:
    """`ip -j addr show` -> {ifname: {operstate, flags, mtu, addresses: [(ip, prefix)], link_type}}.

    ValueError when the text is not that JSON (a list of interface objects).
    """
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"not `ip -j addr show` output (no JSON: {exc})") from None
    if not isinstance(data, list):
        raise ValueError("not `ip -j addr show` output: expected a JSON list of interfaces")
    found = {}
    for item in data:
        if not isinstance(item, dict) or not isinstance(item.get("ifname"), str):
            continue  # iproute2 prints {} for interfaces it filtered out
        addresses = []
        for info in item.get("addr_info") or []:
            if isinstance(info, dict) and info.get("family") == "inet" and info.get("local"):
                addresses.append((str(info["local"]), info.get("prefixlen")))
        found[item["ifname"]] = {
            "operstate": str(item.get("operstate") or "UNKNOWN").upper(),
            "flags": [str(flag) for flag in item.get("flags") or []],
            "mtu": item.get("mtu"),
            "link_type": item.get("link_type"),
            "addresses": addresses,
        }
    return found
