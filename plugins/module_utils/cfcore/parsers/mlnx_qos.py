"""Parser of `mlnx_qos -i <netdev>` (NVIDIA mlnx-tools, shipped with DOCA-OFED / MLNX_OFED).

    from cfcore.parsers.mlnx_qos import parse_mlnx_qos
    qos = parse_mlnx_qos(text)

The tool prints the port's QoS state (also after a `--trust` / `--pfc` write):

    DCBX mode: OS controlled
    Priority trust state: dscp
    dscp2prio mapping:
            prio:0 dscp:07,06,05,04,03,02,01,00,
            ...
    default priority:
    Receive buffer size (bytes): 130944,130944,0,0,0,0,0,0,total_size=1027728
    Cable len: 7
    PFC configuration:
            priority    0   1   2   3   4   5   6   7
            enabled     0   0   0   1   0   0   0   0
            buffer      0   0   0   1   0   0   0   0
    tc: 1 ratelimit: unlimited, tsa: vendor
             priority:  0
    tc: 0 ratelimit: unlimited, tsa: vendor
             priority:  1
    ...

Tolerated variants: older releases say "Priority trust mode:" and print no
`dscp2prio mapping` section (or none at all when the trust state is pcp), no
receive buffer line, no `buffer` row; a `tc:` line may carry `, bw: 10%`;
indentation is tabs or spaces; the tc blocks come in any order (Python 3's
mlnx_qos prints them in the order the priorities map to them); warnings such as
"****** WARNING: lldpad service is running ..." or "Buffers commands are not
supported on your system" are kept in `warnings`.

Result:

    {"dcbx_mode": "OS controlled" | None,
     "trust": "dscp" | "pcp" | "none" | None,
     "dscp2prio": {dscp: prio} | None (no section printed),
     "pfc": [8 ints 0/1],
     "pfc_buffer": [8 ints] | None,
     "cable_len": int | None,
     "receive_buffers": [ints] | None,
     "tcs": {tc: {"ratelimit": str, "tsa": str, "bw": int | None, "priorities": [int]}},
     "prio_tc": {priority: tc},
     "warnings": [str]}

Input that is not mlnx_qos output (no PFC configuration) raises ParseError.
"""

from __future__ import annotations

import re

from .common import ParseError, require_content, strip_source_header

KIND = "mlnx-qos"
FIX = "capture it with: mlnx_qos -i <netdev> > FILE (as root, with DOCA-OFED's mlnx-tools installed)"

_TRUST = re.compile(r"^\s*Priority trust (?:state|mode)\s*:\s*(\S+)\s*$", re.IGNORECASE)
_DCBX = re.compile(r"^\s*DCBX mode\s*:\s*(.+?)\s*$", re.IGNORECASE)
_DSCP_ROW = re.compile(r"^\s*prio\s*:\s*(\d+)\s+dscp\s*:\s*([\d,\s]*)$", re.IGNORECASE)
_CABLE = re.compile(r"^\s*Cable len\s*:\s*(\d+)\s*$", re.IGNORECASE)
_BUFFERS = re.compile(r"^\s*Receive buffer size \(bytes\)\s*:\s*(.*)$", re.IGNORECASE)
_ROW = re.compile(r"^\s*(priority|enabled|buffer)\s+((?:\d+\s*)+)$", re.IGNORECASE)
_TC = re.compile(
    r"^\s*tc\s*:\s*(\d+)\s+ratelimit\s*:\s*([^,]+?)\s*,\s*tsa\s*:\s*(\w+)(?:\s*,\s*bw\s*:\s*(\d+)\s*%)?\s*$",
    re.IGNORECASE,
)
_TC_PRIO = re.compile(r"^\s*priority\s*:\s*(\d+)\s*$", re.IGNORECASE)
_WARNING = re.compile(r"(warning|not supported|error)", re.IGNORECASE)


def parse_mlnx_qos(text: str) -> dict:
    require_content(KIND, text, "mlnx_qos", FIX)
    text = strip_source_header(text)
    result = {
        "dcbx_mode": None,
        "trust": None,
        "dscp2prio": None,
        "pfc": None,
        "pfc_buffer": None,
        "cable_len": None,
        "receive_buffers": None,
        "tcs": {},
        "prio_tc": {},
        "warnings": [],
    }
    section = None
    current_tc = None
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        if not line.strip():
            continue
        match = _TRUST.match(line)
        if match:
            result["trust"] = match.group(1).lower()
            section = None
            continue
        match = _DCBX.match(line)
        if match:
            result["dcbx_mode"] = match.group(1)
            continue
        if re.match(r"^\s*dscp2prio mapping\s*:\s*$", line, re.IGNORECASE):
            result["dscp2prio"] = {}
            section = "dscp2prio"
            continue
        if re.match(r"^\s*default priority\s*:\s*$", line, re.IGNORECASE):
            section = "default"
            continue
        if re.match(r"^\s*PFC configuration\s*:\s*$", line, re.IGNORECASE):
            section = "pfc"
            continue
        match = _DSCP_ROW.match(line)
        if match and section == "dscp2prio":
            _dscp_row(result, match, number, line)
            continue
        if section == "default" and re.match(r"^\s*prio\s*:\s*\d+\s*$", line, re.IGNORECASE):
            continue  # the default priority (an ethertype app entry): not part of the RoCE plan
        match = _CABLE.match(line)
        if match:
            result["cable_len"] = int(match.group(1))
            continue
        match = _BUFFERS.match(line)
        if match:
            sizes = [part for part in match.group(1).split(",") if part.strip() and "=" not in part]
            try:
                result["receive_buffers"] = [int(part) for part in sizes]
            except ValueError:
                raise ParseError(KIND, "unreadable receive buffer sizes", number, line, FIX) from None
            continue
        match = _ROW.match(line)
        if match and section == "pfc":
            _pfc_row(result, match, number, line)
            continue
        match = _TC.match(line)
        if match:
            current_tc = int(match.group(1))
            result["tcs"][current_tc] = {
                "ratelimit": match.group(2).strip(),
                "tsa": match.group(3).lower(),
                "bw": int(match.group(4)) if match.group(4) else None,
                "priorities": [],
            }
            section = "tc"
            continue
        match = _TC_PRIO.match(line)
        if match and section == "tc" and current_tc is not None:
            priority = int(match.group(1))
            result["tcs"][current_tc]["priorities"].append(priority)
            result["prio_tc"][priority] = current_tc
            continue
        if _WARNING.search(line):
            result["warnings"].append(line.strip().strip("*").strip())
            continue
        if result["pfc"] is None and result["trust"] is None:
            raise ParseError(KIND, "not mlnx_qos output", number, line, FIX)
        # Lines of later releases this parser does not know are ignored, not guessed at.
    if result["pfc"] is None:
        why = "; ".join(result["warnings"]) or "no 'PFC configuration' with an 'enabled' row"
        raise ParseError(KIND, f"not usable mlnx_qos output: {why}", fix=FIX)
    return result


def _dscp_row(result: dict, match, number: int, line: str) -> None:
    priority = int(match.group(1))
    if priority > 7:
        raise ParseError(KIND, f"priority {priority} is not 0-7", number, line, FIX)
    for part in match.group(2).split(","):
        part = part.strip()
        if not part:
            continue
        dscp = int(part)
        if dscp > 63:
            raise ParseError(KIND, f"DSCP {dscp} is not 0-63", number, line, FIX)
        result["dscp2prio"][dscp] = priority


def _pfc_row(result: dict, match, number: int, line: str) -> None:
    name = match.group(1).lower()
    values = [int(part) for part in match.group(2).split()]
    if name == "priority":
        if values != list(range(8)):
            raise ParseError(KIND, "the PFC priority header is not 0..7", number, line, FIX)
        return
    if len(values) != 8:
        raise ParseError(KIND, f"the PFC {name} row has {len(values)} values, not 8", number, line, FIX)
    if name == "enabled":
        if any(value not in (0, 1) for value in values):
            raise ParseError(KIND, "the PFC enabled row holds values other than 0/1", number, line, FIX)
        result["pfc"] = values
    else:
        result["pfc_buffer"] = values


def evidence_lines(text: str, settings) -> list:
    """The lines of a mlnx_qos output that show `settings` ("trust", "pfc", "dscp2prio")."""
    lines = text.splitlines() if text else []
    wanted = set(settings)
    found = []
    for index, line in enumerate(lines):
        if "trust" in wanted and _TRUST.match(line):
            found.append(line.strip())
        if "pfc" in wanted and re.match(r"^\s*PFC configuration\s*:", line, re.IGNORECASE):
            found.extend(row.strip() for row in lines[index : index + 3] if row.strip())
        if "dscp2prio" in wanted and re.match(r"^\s*dscp2prio mapping\s*:", line, re.IGNORECASE):
            rows = []
            for row in lines[index + 1 :]:
                if not _DSCP_ROW.match(row):
                    break
                rows.append(row.strip())
            found.extend([line.strip(), *rows])
    return found
