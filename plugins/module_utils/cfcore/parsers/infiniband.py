"""`ibstat` output and the /sys/class/infiniband tree, read into one shape.

    {"cas": [{"name": "mlx5_0", "type": "MT4129", "firmware": "28.39.1002",
              "node_guid": "0x...", "board_id": None, "port_count": 1,
              "ports": [{"port": 1, "state": "Active", "physical_state": "LinkUp",
                         "rate_gbps": 400, "link_layer": "InfiniBand", ...}]}],
     "tool_messages": []}

States use ibstat's words for both sources (sysfs '4: ACTIVE' -> "Active",
'5: LinkUp' -> "LinkUp", '2: Polling' -> "Polling") so results compare directly.
rate_gbps is in gigabits per second (400 for NDR 4X). Lines such as
"ibpanic: ... stat of IB device 'mlx5_8' failed" (ibstat exits 255 after the devices
it could read) go to `tool_messages`: the listed CAs are real, but one is missing.
"""

from __future__ import annotations

import os
import re

from ..files import UnsafeFile, confined, read_text
from .common import ParseError, na, natural_key, not_output, require_content, to_int, to_number

IBSTAT_KIND = "ibstat"
SYSFS_KIND = "sysfs-infiniband"
IBSTAT_FIX = "capture it with: ibstat > FILE (package infiniband-diags)"

# IB port states and physical states by their numeric code, in ibstat's words.
PORT_STATES = {0: "Unknown", 1: "Down", 2: "Initializing", 3: "Armed", 4: "Active", 5: "Active Defer"}
PHYSICAL_STATES = {
    0: "No state change",
    1: "Sleep",
    2: "Polling",
    3: "Disabled",
    4: "PortConfigurationTraining",
    5: "LinkUp",
    6: "LinkErrorRecovery",
    7: "PhyTest",
}

_CA_HEADER = re.compile(r"^CA\s+'([^']+)'\s*$")
_PORT_HEADER = re.compile(r"^Port\s+(\d+)\s*:\s*$")
_FIELD = re.compile(r"^([A-Za-z][A-Za-z ]*?)\s*:\s*(.*)$")
_CODED = re.compile(r"^\s*(\d+)\s*:\s*(.*?)\s*$")
_IBSTATUS = re.compile(r"^Infiniband device '[^']+' port \d+ status:")


def _port(number: int) -> dict:
    return {
        "port": number,
        "state": None,
        "physical_state": None,
        "rate_gbps": None,
        "link_layer": None,
        "base_lid": None,
        "sm_lid": None,
        "port_guid": None,
    }


def _ca(name: str) -> dict:
    return {
        "name": name,
        "type": None,
        "firmware": None,
        "hardware_version": None,
        "node_guid": None,
        "system_image_guid": None,
        "board_id": None,
        "port_count": None,
        "ports": [],
    }


_CA_FIELDS = {
    "ca type": ("type", na),
    "firmware version": ("firmware", na),
    "hardware version": ("hardware_version", na),
    "node guid": ("node_guid", na),
    "system image guid": ("system_image_guid", na),
    "number of ports": ("port_count", to_int),
}
_PORT_FIELDS = {
    "state": ("state", na),
    "physical state": ("physical_state", na),
    "rate": ("rate_gbps", to_number),
    "link layer": ("link_layer", na),
    "base lid": ("base_lid", to_int),
    "sm lid": ("sm_lid", to_int),
    "port guid": ("port_guid", na),
}


def parse_ibstat(text: str) -> dict:
    """Parse `ibstat` (all CAs, or `ibstat CA_NAME`) into {cas[] with ports[]}."""
    require_content(IBSTAT_KIND, text, "ibstat", IBSTAT_FIX + "; empty output means no RDMA device")
    cas: list[dict] = []
    messages: list[str] = []
    port = None
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        if _IBSTATUS.match(line):
            raise ParseError(
                IBSTAT_KIND, "not ibstat output: this is ibstatus output", number, raw, fix=IBSTAT_FIX
            )
        header = _CA_HEADER.match(line)
        if header:
            cas.append(_ca(header.group(1)))
            port = None
            continue
        port_header = _PORT_HEADER.match(line)
        field = _FIELD.match(line)
        target, table = (port, _PORT_FIELDS) if port is not None else (cas[-1] if cas else None, _CA_FIELDS)
        # Fields are known by name, not by indentation: pasted text may have lost its tabs.
        if cas and port_header:
            port = _port(int(port_header.group(1)))
            cas[-1]["ports"].append(port)
        elif target is not None and field and (raw[:1].isspace() or field.group(1).lower() in table):
            key, value = field.group(1).lower(), field.group(2)
            if key in table:
                name, convert = table[key]
                target[name] = convert(value)
        elif cas:
            messages.append(line)  # ibpanic/ibwarn lines
        else:
            raise not_output(IBSTAT_KIND, "ibstat", text, IBSTAT_FIX, "no \"CA '<name>'\" line")
    if not cas:
        raise not_output(IBSTAT_KIND, "ibstat", text, IBSTAT_FIX, "no \"CA '<name>'\" line")
    for ca in cas:
        for entry in ca["ports"]:
            if entry["state"] is None or entry["physical_state"] is None:
                raise ParseError(
                    IBSTAT_KIND,
                    f"truncated ibstat output: {ca['name']} port {entry['port']} has no State/Physical state",
                    fix=IBSTAT_FIX,
                )
    return {"cas": cas, "tool_messages": messages}


# A sysfs attribute is one short line; a capture's copy of it is no bigger.
SYSFS_MAX_BYTES = 64 * 1024


def _read(path: str, confine: str | None = None) -> str | None:
    """A sysfs attribute's text; None when absent or unreadable (e.g. rate of a down RoCE port).

    Regular files only, size-capped, and inside `confine` when given (a capture folder):
    UnsafeFile otherwise, so a FIFO cannot hang the reader nor a link leak a local file.
    """
    if not os.path.lexists(path):
        return None
    try:
        return read_text(path, SYSFS_MAX_BYTES, root=confine).strip()
    except UnsafeFile:
        if confine is not None:
            raise
        return None
    except OSError:
        return None  # an attribute the kernel refuses to read (EINVAL on a down port's rate)


def _coded(value: str | None, names: dict) -> str | None:
    """'4: ACTIVE' -> 'Active' (ibstat's word for the code); other text kept as is."""
    if value is None:
        return None
    match = _CODED.match(value)
    if not match:
        return na(value)
    return names.get(int(match.group(1)), match.group(2) or None)


def _sysfs_port(port_dir: str, number: int, confine: str | None) -> dict:
    def attribute(name: str) -> str | None:
        return _read(os.path.join(port_dir, name), confine)

    state = attribute("state")
    physical = attribute("phys_state")
    if state is None or physical is None:
        raise ParseError(
            SYSFS_KIND,
            f"malformed sysfs tree: {port_dir} has no readable state/phys_state",
            fix="read it on the node itself, as root, with the ib_core/mlx5_ib modules loaded",
        )
    rate = attribute("rate")
    entry = _port(number)
    entry.update(
        state=_coded(state, PORT_STATES),
        physical_state=_coded(physical, PHYSICAL_STATES),
        rate_gbps=to_number(rate),
        link_layer=na(attribute("link_layer")),
        rate_text=rate,
    )
    lid = attribute("lid")
    sm_lid = attribute("sm_lid")
    entry["base_lid"] = int(lid, 16) if lid and lid.startswith("0x") else to_int(lid)
    entry["sm_lid"] = int(sm_lid, 16) if sm_lid and sm_lid.startswith("0x") else to_int(sm_lid)
    return entry


def read_sysfs_infiniband(root: str, confine: str | None = None) -> dict:
    """Read <root>/sys/class/infiniband into the ibstat shape ({cas[] with ports[]}).

    `confine`: a folder nothing read may leave once links are resolved (a capture);
    UnsafeFile when something does. A live sysfs links each CA into /sys/devices.
    """
    base = os.path.join(root, "sys", "class", "infiniband")
    if confine is not None:
        confined(base, confine)
    if not os.path.isdir(base):
        raise ParseError(
            SYSFS_KIND,
            f"no {base}: no RDMA device, or the ib_core/mlx5_ib modules are not loaded",
            fix="load the RDMA modules (modprobe mlx5_ib) or check the HCAs with lspci -d 15b3:",
        )
    names = sorted(os.listdir(base), key=natural_key)
    if not names:
        raise ParseError(
            SYSFS_KIND, f"{base} is empty: no RDMA device", fix="check the HCAs with lspci -d 15b3:"
        )
    cas = []
    for name in names:
        ca_dir = os.path.join(base, name)
        ports_dir = os.path.join(ca_dir, "ports")
        if confine is not None:
            confined(ports_dir, confine)
        if not os.path.isdir(ports_dir):
            raise ParseError(SYSFS_KIND, f"malformed sysfs tree: {ca_dir} has no ports/ directory")
        ca = _ca(name)
        ca.update(
            type=na(_read(os.path.join(ca_dir, "hca_type"), confine)),
            firmware=na(_read(os.path.join(ca_dir, "fw_ver"), confine)),
            board_id=na(_read(os.path.join(ca_dir, "board_id"), confine)),
            node_guid=_guid(_read(os.path.join(ca_dir, "node_guid"), confine)),
        )
        port_numbers = sorted(int(entry) for entry in os.listdir(ports_dir) if entry.isdigit())
        if not port_numbers:
            raise ParseError(SYSFS_KIND, f"malformed sysfs tree: {ports_dir} lists no port")
        ca["ports"] = [_sysfs_port(os.path.join(ports_dir, str(n)), n, confine) for n in port_numbers]
        ca["port_count"] = len(port_numbers)
        cas.append(ca)
    return {"cas": cas, "tool_messages": []}


def _guid(value: str | None) -> str | None:
    """sysfs 'a088:c203:00e3:142a' -> ibstat's '0xa088c20300e3142a'."""
    text = na(value)
    if text is None:
        return None
    return "0x" + text.replace(":", "").lower() if ":" in text else text
