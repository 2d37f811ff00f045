"""OpenSM settings of role `ib_fabric`: the partitions file and the ports to bind.

    partitions_lines([{"name": "Default", "pkey": "0x7fff", "ipoib": True},
                      {"name": "storage", "pkey": "0x0002", "members": "ALL=full", "ipoib": True}])
    -> ["Default=0x7fff, ipoib : ALL=full ;", "storage=0x0002, ipoib : ALL=full ;"]
    port_guids(["0x0002C903000E0B72"]) -> ["0x0002c903000e0b72"]

partitions.conf(5) line: `Name=PKey[,ipoib] : members ;`. The P_Key is the 15-bit key
(0x0001-0x7fff): membership (full/limited) is said per member, not by the key's top bit.
Errors raise OpensmError naming the variable, the entry and the fix.

Stdlib only, Python 3.8: used by a filter.
"""

from __future__ import annotations

import re

_NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,64}$")
_PKEY = re.compile(r"^0x[0-9A-Fa-f]{1,4}$")
_GUID = re.compile(r"^0x[0-9A-Fa-f]{16}$")
# "ALL=full", "ALL_CAS=limited", "0x0002c903000e0b72=full, SELF=full": no ';' or ':' that would end the entry.
_MEMBERS = re.compile(r"^[A-Za-z0-9_=, x]+$")
VARIABLE = "ib_fabric_opensm_partitions"


class OpensmError(ValueError):
    """A setting opensm would refuse or misread: the message names the variable, the entry and the fix."""


def pkey_value(pkey, where: str) -> int:
    """'0x8001'-style text or an int -> the 15-bit key; OpensmError outside 0x0001-0x7fff."""
    if isinstance(pkey, bool):
        value = None
    elif isinstance(pkey, int):
        value = pkey
    else:
        text = str(pkey).strip()
        value = int(text, 16) if _PKEY.match(text) else None
    if value is None or not 0x0001 <= value <= 0x7FFF:
        raise OpensmError(
            f"{where}: pkey {pkey!r} is not a P_Key in 0x0001-0x7fff (written without the full-membership "
            'bit 0x8000): set it as a quoted hex string, e.g. pkey: "0x0002"'
        )
    return value


def partitions_lines(partitions) -> list:
    """The lines of /etc/opensm/partitions.conf, one per partition (OpensmError on a bad entry)."""
    if not isinstance(partitions, list):
        raise OpensmError(f"{VARIABLE} must be a list of {{name, pkey, members, ipoib}}, got {partitions!r}")
    lines, names, pkeys = [], {}, {}
    for index, entry in enumerate(partitions):
        where = f"{VARIABLE}[{index}]"
        if not isinstance(entry, dict):
            raise OpensmError(f"{where} must be a mapping {{name, pkey, members, ipoib}}, got {entry!r}")
        unknown = sorted(set(entry) - {"name", "pkey", "members", "ipoib"})
        if unknown:
            raise OpensmError(f"{where}: unknown keys {unknown}: use name, pkey, members, ipoib")
        name = str(entry.get("name", "")).strip()
        if not _NAME.match(name):
            raise OpensmError(
                f"{where}: name {entry.get('name')!r} must be 1-64 letters, digits, '_', '.' or '-', "
                "e.g. storage"
            )
        where = f"{VARIABLE}[{index}] ({name})"
        pkey = pkey_value(entry.get("pkey"), where)
        members = entry.get("members")
        members = "ALL=full" if members is None else str(members).strip()
        if not members or not _MEMBERS.match(members) or "=" not in members:
            raise OpensmError(
                f"{where}: members {entry.get('members')!r} must be "
                "'<port GUID or ALL/ALL_CAS/SELF>=full|limited' entries separated by commas, e.g. ALL=full"
            )
        ipoib = entry.get("ipoib", False)
        if not isinstance(ipoib, bool):
            raise OpensmError(f"{where}: ipoib must be true or false, got {ipoib!r}")
        if name in names:
            raise OpensmError(
                f"{where}: the name {name} is also {VARIABLE}[{names[name]}]: use one entry per name"
            )
        if pkey in pkeys:
            raise OpensmError(
                f"{where}: pkey 0x{pkey:04x} is also {VARIABLE}[{pkeys[pkey]}]: one partition per P_Key"
            )
        names[name], pkeys[pkey] = index, index
        flags = ", ipoib" if ipoib else ""
        lines.append(f"{name}=0x{pkey:04x}{flags} : {members} ;")
    return lines


def port_guids(guids, variable: str = "ib_fabric_opensm_guids") -> list:
    """Port GUIDs to bind ('0x' + 16 hex digits, lower case); [] means every port."""
    if guids is None:
        return []
    if not isinstance(guids, list):
        raise OpensmError(f"{variable} must be a list of port GUIDs (ibstat -p), got {guids!r}")
    found = []
    for index, guid in enumerate(guids):
        text = str(guid).strip()
        if not _GUID.match(text):
            raise OpensmError(
                f"{variable}[{index}] is {guid!r}, not a port GUID: use what `ibstat -p` prints, quoted, "
                'e.g. "0x0002c903000e0b72"'
            )
        if text.lower() not in found:
            found.append(text.lower())
    return found
