"""Parsers of Huawei `hccn_tool` output (the NPUs' on-package RoCE ports).

    hccn_tool -i N -ip -g          ipaddr:29.1.112.213 / netmask:255.255.0.0
    hccn_tool -i N -link -g        link status: UP
    hccn_tool -i N -net_health -g  net health status: Success
    hccn_tool -i N -ping -g address PEER   device N PING PEER / recv seq=0,time=1.4ms / summary line

The output does not name the device: `device` comes from the caller (`device=N`), from
an echoed command line ('/usr/local/Ascend/driver/tools/hccn_tool -i 3 -ip -g') or from
a '[devid N]' prefix, else it is None. A capture of several devices, each after its
echoed command line, gives one entry per device in `devices`; the top-level fields then
describe the only device, or are None when there are several. Every result has
`devices`.

net_health is the tool's word ("Success", "Init", "Socket fail", "Receive timeout",
"Unreachable", "Fault", ...); `healthy` is True only for "Success". link_status is
"UP" or "DOWN"; `up` is its boolean.

-ping names its device and the peer itself ("device 3 PING 29.1.137.205"); each reply is a
"recv seq=N,time=T ms" line and the run ends with "3 packets transmitted, 3 received, 0.00%
packet loss". parse_hccn_ping returns {device, address, transmitted, received, loss_pct,
times_ms, errors, devices[]}: the counts and loss are None when the summary line is missing
(the run was cut), `errors` holds the tool's error lines printed with its ping output.
"""

from __future__ import annotations

import ipaddress
import re

from .common import ParseError, not_output, require_content, strip_source_header

IP_KIND = "hccn-ip"
LINK_KIND = "hccn-link"
NET_HEALTH_KIND = "hccn-net-health"
PING_KIND = "hccn-ping"

_COMMAND = re.compile(r"hccn_tool\s+-i\s+(\d+)\s+(-\w+)")
_DEVICE_PREFIX = re.compile(r"^\s*\[(?:devid|device)\s*(\d+)\]\s*")
_PAIR = re.compile(r"^([A-Za-z][A-Za-z0-9 _]*?)\s*:\s*(.*)$")
_ERROR_WORDS = ("fail", "error", "invalid", "not support", "usage")


def _fix(option: str) -> str:
    return f"capture it with: hccn_tool -i DEVICE_ID {option} -g > FILE"


def _segments(kind: str, text: str, option: str, device: int | None) -> list[dict]:
    """Split a capture into per-device segments of (line number, text) pairs."""
    segments: list[dict] = []
    current = None
    for number, raw in enumerate(text.splitlines(), 1):
        command = _COMMAND.search(raw)
        if command:
            if command.group(2) != option:
                raise ParseError(
                    kind,
                    f"not hccn_tool {option} output: the capture holds `hccn_tool {command.group(2)}`",
                    number,
                    raw,
                    fix=_fix(option),
                )
            current = {"device": int(command.group(1)), "line": number, "lines": []}
            segments.append(current)
            continue
        prefix = _DEVICE_PREFIX.match(raw)
        line = raw[prefix.end() :] if prefix else raw
        if not line.strip():
            continue
        if current is None:
            current = {"device": device, "line": number, "lines": []}
            segments.append(current)
        if current["device"] is None and prefix:
            current["device"] = int(prefix.group(1))
        current["lines"].append((number, line.strip()))
    return segments


def _pairs(segment: dict) -> dict:
    pairs = {}
    for number, line in segment["lines"]:
        match = _PAIR.match(line)
        if match:
            pairs[match.group(1).strip().lower()] = (number, match.group(2).strip())
    return pairs


def _refuse(kind: str, option: str, segment: dict) -> ParseError:
    """The segment holds no line the parser knows: the tool's error, or another tool's output."""
    if not segment["lines"]:
        return ParseError(
            kind,
            f"empty output: hccn_tool {option} printed nothing for device {segment['device']}",
            segment["line"],
            fix=_fix(option),
        )
    number, line = segment["lines"][0]
    if any(word in line.lower() for word in _ERROR_WORDS):
        return ParseError(
            kind,
            f"hccn_tool reported an error instead of its {option} output",
            number,
            line,
            fix=_fix(option),
        )
    return ParseError(kind, f"not hccn_tool {option} output", number, line, fix=_fix(option))


def _result(records: list[dict], empty: dict) -> dict:
    result = dict(records[0]) if len(records) == 1 else dict(empty)
    result["devices"] = records
    return result


def _parse(kind: str, text: str, option: str, device: int | None, read) -> list[dict]:
    require_content(kind, text, f"hccn_tool {option}", _fix(option))
    records = []
    for segment in _segments(kind, text, option, device):
        record = read(segment, _pairs(segment))
        if record is None:
            raise _refuse(kind, option, segment)
        records.append(record)
    if not records:
        raise ParseError(kind, f"empty input: no hccn_tool {option} output", fix=_fix(option))
    return records


def _read_ip(segment: dict, pairs: dict) -> dict | None:
    if "ipaddr" not in pairs:
        return None
    record = {"device": segment["device"], "address": None, "netmask": None, "prefix_length": None}
    for key, field in (("ipaddr", "address"), ("netmask", "netmask")):
        if key not in pairs:
            continue
        number, value = pairs[key]
        try:
            ipaddress.ip_address(value)
        except ValueError:
            raise ParseError(
                IP_KIND,
                f"hccn_tool -ip: {key} {value!r} is not an IP address",
                number,
                value,
                fix=_fix("-ip"),
            ) from None
        record[field] = value
    if record["netmask"]:
        network = ipaddress.ip_network(f"{record['address']}/{record['netmask']}", strict=False)
        record["prefix_length"] = network.prefixlen
    return record


def parse_hccn_ip(text: str, device: int | None = None) -> dict:
    """Parse `hccn_tool -i N -ip -g` into {device, address, netmask, prefix_length, devices[]}."""
    records = _parse(IP_KIND, text, "-ip", device, _read_ip)
    return _result(records, {"device": None, "address": None, "netmask": None, "prefix_length": None})


def _read_link(segment: dict, pairs: dict) -> dict | None:
    if "link status" not in pairs:
        return None
    status = pairs["link status"][1].upper()
    return {"device": segment["device"], "link_status": status, "up": status == "UP"}


def parse_hccn_link(text: str, device: int | None = None) -> dict:
    """Parse `hccn_tool -i N -link -g` into {device, link_status, up, devices[]}."""
    records = _parse(LINK_KIND, text, "-link", device, _read_link)
    return _result(records, {"device": None, "link_status": None, "up": None})


def _read_net_health(segment: dict, pairs: dict) -> dict | None:
    if "net health status" not in pairs:
        return None
    status = pairs["net health status"][1]
    return {"device": segment["device"], "net_health": status, "healthy": status.lower() == "success"}


def parse_hccn_net_health(text: str, device: int | None = None) -> dict:
    """Parse `hccn_tool -i N -net_health -g` into {device, net_health, healthy, devices[]}."""
    records = _parse(NET_HEALTH_KIND, text, "-net_health", device, _read_net_health)
    return _result(records, {"device": None, "net_health": None, "healthy": None})


# -- hccn_tool -i N -ping -g address PEER ----------------------------------------------------

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_PING_HEADER = re.compile(r"^device\s+(\d+)\s+PING\s+(\S+)", re.IGNORECASE)
_PING_REPLY = re.compile(
    r"^recv\b.*?\bseq\s*=\s*(\d+)(?:.*?\btime\s*=\s*([0-9]+(?:\.[0-9]+)?)\s*(ms|us)?)?", re.IGNORECASE
)
_PING_SUMMARY = re.compile(
    r"^(\d+)\s+packets?\s+transmitted,\s*(\d+)\s+(?:packets?\s+)?received"
    r"(?:.*?([0-9]+(?:\.[0-9]+)?)\s*%\s*packet\s+loss)?",
    re.IGNORECASE,
)
_PING_ADDRESS = re.compile(r"-g\s+address\s+(\S+)")
_PING_FIX = "capture it with: hccn_tool -i DEVICE_ID -ping -g address PEER_ADDRESS > FILE"
_MAX_PING_ERRORS = 20  # error lines kept per run: evidence, not the whole output


def _ping_record(device, address) -> dict:
    return {
        "device": device,
        "address": address,
        "transmitted": None,
        "received": None,
        "loss_pct": None,
        "times_ms": [],
        "errors": [],
        "_seen": False,  # a PING line, a reply or the summary: this is ping output
    }


def _read_ping_line(record: dict, line: str) -> bool:
    """Read one line into `record`; False when it is none of the ping lines."""
    header = _PING_HEADER.match(line)
    if header:
        record["device"] = int(header.group(1))
        record["address"] = header.group(2)
        record["_seen"] = True
        return True
    reply = _PING_REPLY.match(line)
    if reply:
        if reply.group(2) is not None:
            time = float(reply.group(2))
            record["times_ms"].append(time / 1000 if (reply.group(3) or "").lower() == "us" else time)
        record["_seen"] = True
        return True
    summary = _PING_SUMMARY.match(line)
    if summary:
        sent, received = int(summary.group(1)), int(summary.group(2))
        record["transmitted"], record["received"] = sent, received
        if summary.group(3) is not None:
            record["loss_pct"] = float(summary.group(3))
        elif sent:
            record["loss_pct"] = round(100.0 * (sent - received) / sent, 2)
        record["_seen"] = True
        return True
    return False


def _header_of(record, device: int) -> bool:
    """Whether a 'device N PING' line starts the output of `record` (its echoed command's)."""
    return (
        record is not None
        and not record["_seen"]
        and not record["errors"]
        and record["device"] in (None, device)
    )


def parse_hccn_ping(text: str, device: int | None = None) -> dict:
    """Parse `hccn_tool -i N -ping -g address PEER` (one run, or several one after another)."""
    what = "hccn_tool -ping"
    require_content(PING_KIND, strip_source_header(text or ""), what, _PING_FIX)
    records: list[dict] = []
    current = None
    stray_errors: list[str] = []  # error lines before any ping output
    for raw in _ANSI.sub("", strip_source_header(text)).splitlines():
        prefix = _DEVICE_PREFIX.match(raw)
        line = (raw[prefix.end() :] if prefix else raw).strip()
        if not line:
            continue
        command = _COMMAND.search(line)
        if command:
            if command.group(2) != "-ping":
                raise ParseError(
                    PING_KIND,
                    f"not hccn_tool -ping output: the capture holds `hccn_tool {command.group(2)}`",
                    fix=_PING_FIX,
                )
            address = _PING_ADDRESS.search(line)
            current = _ping_record(int(command.group(1)), address.group(1) if address else None)
            records.append(current)
            continue
        header = _PING_HEADER.match(line)
        if header and not _header_of(current, int(header.group(1))):
            # a run without an echoed command line, or the next run of a capture
            current = _ping_record(device, None)
            records.append(current)
        if current is not None and _read_ping_line(current, line):
            continue
        errors = current["errors"] if current is not None else stray_errors
        if any(word in line.lower() for word in _ERROR_WORDS) and len(errors) < _MAX_PING_ERRORS:
            errors.append(line)
    if not any(record["_seen"] for record in records):
        failed = stray_errors + [error for record in records for error in record["errors"]]
        if failed:
            message = f"hccn_tool reported an error instead of its -ping output: {failed[0]}"
            raise ParseError(PING_KIND, message, fix=_PING_FIX)
        raise not_output(PING_KIND, what, text, _PING_FIX, "no 'device N PING ADDRESS' line")
    # A device of a multi-run capture whose ping failed keeps its entry, with its errors and no counts.
    runs = [record for record in records if record.pop("_seen") or record["errors"]]
    for record in runs:
        if record["device"] is None:
            record["device"] = device
    result = dict(runs[0]) if len(runs) == 1 else dict.fromkeys(runs[0])
    result["devices"] = runs
    return result
