"""Parsers of the shared-storage tools: `juicefs status` and `ceph health` / `ceph status`.

    parse_juicefs_status(text) -> {
        "setting": {...the volume's settings, keys as printed ("Name", "Storage", "BlockSize")...},
        "sessions": [{"sid": 3, "hostname": "c1", "mountpoint": "/mnt/jfs",
                      "version": "1.1.5+2024-...", "expire": "2026-12-01T16:05:47Z",
                      "heartbeat": None, "process_id": 4242}],
    }
    parse_ceph_health(text) -> {
        "status": "HEALTH_OK" | "HEALTH_WARN" | "HEALTH_ERR",
        "checks": {"OSD_DOWN": {"severity": "HEALTH_WARN", "summary": "1 osds down", "detail": [...]}},
        "source": "json" | "health" | "health-detail" | "status",
    }

`juicefs status` prints one JSON object (0.16 to 1.x), with log lines before it
(`2026/12/01 16:00:00.123 juicefs[42] <INFO>: Meta address: redis://...`) and sometimes
after. Versions differ: 0.16 names the session fields `Hostname` and `Heartbeat` (the
last heartbeat; the session is cleaned 5 minutes after it), 1.x `HostName` and `Expire`
(when the session expires). Both are kept as printed (`expire` / `heartbeat`, the other
None); `session_expiry` turns either into an aware datetime. A `<FATAL>` line (the
volume is not formatted, the password is wrong) raises ParseError with that line.

`parse_ceph_health` reads `ceph health --format json` (Luminous and later: `status`,
`checks`; Jewel: `overall_status`, `summary` list), `ceph status --format json` (the
same under `health`), and the text of `ceph health`, `ceph health detail` and
`ceph -s` / `ceph status`. Checks without a name (the text of `ceph health` and `ceph -s`,
Jewel's summary list) are named `summary_<n>`. Lines before the output (cephadm's
"Inferring fsid ...", a shell prompt) are tolerated; Ceph's own errors ("Error
initializing cluster client", "[errno 110] error connecting to the cluster") raise
ParseError saying so.
"""

from __future__ import annotations

import datetime
import json
import re

from .common import ParseError, not_output, require_content, strip_source_header

JUICEFS_KIND = "juicefs-status"
CEPH_KIND = "ceph-health"
JUICEFS_FIX = "capture the output of `juicefs status <META-URL>` (META_PASSWORD in the environment)"
CEPH_FIX = "capture the output of `ceph health --format json` (or `ceph status --format json`)"

HEALTH_STATUSES = ("HEALTH_OK", "HEALTH_WARN", "HEALTH_ERR")
# 0.16's sessions are cleaned this long after their last heartbeat (pkg/meta: 5 minutes).
LEGACY_SESSION_TIMEOUT_S = 300

_JUICEFS_LOG = re.compile(r"^\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2}(?:\.\d+)? \S+ <(\w+)>: ?(.*)$")
_SEVERITY_WORDS = {"WRN": "HEALTH_WARN", "ERR": "HEALTH_ERR", "INF": "HEALTH_OK"}
_DETAIL_BRACKET = re.compile(r"^\[(WRN|ERR|INF)\]\s+([A-Z][A-Z0-9_]*):\s*(.*)$")
_DETAIL_PLAIN = re.compile(r"^([A-Z][A-Z0-9_]{2,})\s+(\S.*)$")
_HEALTH_LINE = re.compile(r"^(HEALTH_OK|HEALTH_WARN|HEALTH_ERR)\b\s*(.*)$")
_STATUS_HEALTH = re.compile(r"^(\s*)health:?\s+(HEALTH_OK|HEALTH_WARN|HEALTH_ERR)\s*$")
_CEPH_ERRORS = re.compile(
    r"(Error initializing cluster client|error connecting to the cluster|\[errno \d+\]|"
    r"RADOS (?:object not found|permission denied|timed out)|monclient(?:\(hunting\))?: |"
    r"AuthRegistry|unable to find a keyring|failed to fetch mon config)",
    re.IGNORECASE,
)
_TIME = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?\s*(Z|[+-]\d{2}:?\d{2})?(?:\s+\S+)?$"
)


# -- JuiceFS ------------------------------------------------------------------------------


def _json_object(text: str, kind: str, what: str, fix: str):
    """The first JSON object in `text` whose opening brace starts a line, with its line number."""
    decoder = json.JSONDecoder()
    lines = text.splitlines(keepends=True)
    offset = 0
    first_error = None
    for number, line in enumerate(lines, 1):
        if line.lstrip().startswith("{"):
            start = offset + (len(line) - len(line.lstrip()))
            try:
                value, _end = decoder.raw_decode(text, start)
            except ValueError as exc:
                if first_error is None:
                    first_error = (number, line, str(exc))
            else:
                if isinstance(value, dict):
                    return value, number
        offset += len(line)
    if first_error is not None:
        number, line, why = first_error
        raise ParseError(kind, f"not {what} output: broken JSON ({why})", number, line, fix=fix)
    return None, None


def parse_juicefs_status(text: str) -> dict:
    """The volume's settings and mount sessions from `juicefs status META-URL`."""
    what = "juicefs status"
    text = strip_source_header(text)
    require_content(JUICEFS_KIND, text, what, JUICEFS_FIX)
    for number, line in enumerate(text.splitlines(), 1):
        match = _JUICEFS_LOG.match(line.strip())
        if match and match.group(1).upper() in ("FATAL", "ERROR"):
            raise ParseError(
                JUICEFS_KIND, f"juicefs status failed: {match.group(2)}", number, line, fix=JUICEFS_FIX
            )
    document, number = _json_object(text, JUICEFS_KIND, what, JUICEFS_FIX)
    if document is None:
        raise not_output(JUICEFS_KIND, what, text, JUICEFS_FIX, "no JSON object")
    setting = document.get("Setting")
    if not isinstance(setting, dict):
        raise ParseError(JUICEFS_KIND, f'not {what} output: no "Setting" object', number, fix=JUICEFS_FIX)
    raw_sessions = document.get("Sessions") or []
    if not isinstance(raw_sessions, list):
        raise ParseError(
            JUICEFS_KIND, f'not {what} output: "Sessions" is not a list', number, fix=JUICEFS_FIX
        )
    sessions = []
    for raw in raw_sessions:
        if not isinstance(raw, dict):
            raise ParseError(
                JUICEFS_KIND, f"not {what} output: a session is not an object", number, fix=JUICEFS_FIX
            )
        sessions.append(
            {
                "sid": raw.get("Sid"),
                "hostname": _first_key(raw, "HostName", "Hostname"),
                "mountpoint": raw.get("MountPoint"),
                "version": raw.get("Version"),
                "expire": raw.get("Expire"),
                "heartbeat": raw.get("Heartbeat"),
                "process_id": raw.get("ProcessID"),
            }
        )
    return {"setting": setting, "sessions": sessions}


def _first_key(mapping: dict, *keys: str):
    for key in keys:
        if key in mapping:
            return mapping[key]
    return None


def parse_time(value, local_tz: datetime.tzinfo | None = None) -> datetime.datetime | None:
    """An aware datetime from Go's time formats ("2026-12-01T16:05:47Z", "...+08:00",
    "2026-12-01T16:05:47.123456789+08:00", "2026-12-01 16:05:47 +0800 CST"); a time
    without a zone is local time (`local_tz`, default the machine's). None if unreadable."""
    if not isinstance(value, str):
        return None
    match = _TIME.match(value.strip())
    if not match:
        return None
    year, month, day, hour, minute, second, fraction, zone = match.groups()
    micro = int((fraction or "0")[:6].ljust(6, "0"))
    try:
        moment = datetime.datetime(
            int(year), int(month), int(day), int(hour), int(minute), int(second), micro
        )
    except ValueError:
        return None
    if zone in (None, ""):
        if local_tz is not None:
            return moment.replace(tzinfo=local_tz)
        return moment.astimezone()  # naive -> the machine's local zone
    if zone == "Z":
        return moment.replace(tzinfo=datetime.timezone.utc)
    sign = -1 if zone[0] == "-" else 1
    digits = zone[1:].replace(":", "")
    delta = datetime.timedelta(hours=int(digits[:2]), minutes=int(digits[2:4]))
    return moment.replace(tzinfo=datetime.timezone(sign * delta))


def session_expiry(session: dict, local_tz: datetime.tzinfo | None = None) -> datetime.datetime | None:
    """When a parsed session expires: `expire` (1.x), else 0.16's `heartbeat` + 5 minutes."""
    expire = parse_time(session.get("expire"), local_tz)
    if expire is not None:
        return expire
    heartbeat = parse_time(session.get("heartbeat"), local_tz)
    if heartbeat is not None:
        return heartbeat + datetime.timedelta(seconds=LEGACY_SESSION_TIMEOUT_S)
    return None


# -- Ceph ---------------------------------------------------------------------------------


def _summary_text(summary) -> str | None:
    if isinstance(summary, dict):
        message = summary.get("message")
        return str(message) if message is not None else None
    if summary is None:
        return None
    return str(summary)


def _health_from_json(health: dict, number: int) -> dict:
    status = health.get("status") or health.get("overall_status")
    if status not in HEALTH_STATUSES:
        raise ParseError(
            CEPH_KIND,
            f"not ceph health output: health status {status!r} is not one of " + ", ".join(HEALTH_STATUSES),
            number,
            fix=CEPH_FIX,
        )
    checks: dict = {}
    raw_checks = health.get("checks")
    if isinstance(raw_checks, dict):
        for name, raw in raw_checks.items():
            if not isinstance(raw, dict):
                continue
            entry = {"severity": raw.get("severity"), "summary": _summary_text(raw.get("summary"))}
            detail = raw.get("detail")
            if isinstance(detail, list) and detail:
                entry["detail"] = [_summary_text(item) for item in detail]
            if raw.get("muted"):
                entry["muted"] = True
            checks[str(name)] = entry
    summary = health.get("summary")
    if not checks and isinstance(summary, list):  # Jewel: [{severity, summary}]
        for index, item in enumerate(summary, 1):
            if isinstance(item, dict):
                checks[f"summary_{index}"] = {
                    "severity": item.get("severity"),
                    "summary": _summary_text(item.get("summary")),
                }
    return {"status": status, "checks": checks, "source": "json"}


def _ceph_json(text: str) -> dict | None:
    document, number = _json_object(text, CEPH_KIND, "ceph health", CEPH_FIX)
    if document is None:
        return None
    if "status" in document or "overall_status" in document:
        return _health_from_json(document, number)
    health = document.get("health")
    if isinstance(health, dict):
        return _health_from_json(health, number)
    raise ParseError(CEPH_KIND, "not ceph health output: JSON without a health status", number, fix=CEPH_FIX)


def _split_summaries(rest: str) -> list[str]:
    return [part.strip() for part in rest.split("; ") if part.strip()]


def _ceph_health_text(lines: list[str], start: int, status: str, rest: str) -> dict:
    """`ceph health` (one line) or `ceph health detail` (named checks below it)."""
    checks: dict = {}
    current = None
    detailed = False
    for line in lines[start + 1 :]:
        if not line.strip():
            continue
        stripped = line.strip()
        indented = line[:1].isspace()
        bracket = _DETAIL_BRACKET.match(stripped)
        plain = None if indented else _DETAIL_PLAIN.match(stripped)
        if bracket and not indented:
            severity, name, summary = bracket.groups()
            current = checks[name] = {"severity": _SEVERITY_WORDS[severity], "summary": summary, "detail": []}
            detailed = True
        elif plain and not indented:
            name, summary = plain.groups()
            current = checks[name] = {"severity": status, "summary": summary, "detail": []}
            detailed = True
        elif indented and current is not None:
            current["detail"].append(stripped)
        else:
            break  # the output ended (a prompt or another command follows)
    if not detailed:
        for index, summary in enumerate(_split_summaries(rest), 1):
            checks[f"summary_{index}"] = {"severity": status, "summary": summary}
    for entry in checks.values():
        if not entry.get("detail"):
            entry.pop("detail", None)
    return {"status": status, "checks": checks, "source": "health-detail" if detailed else "health"}


def _ceph_status_text(lines: list[str], start: int, indent: int, status: str) -> dict:
    """`ceph -s`: the lines indented below `health:` are the checks' summaries."""
    checks: dict = {}
    for line in lines[start + 1 :]:
        if not line.strip():
            break
        own = len(line) - len(line.lstrip())
        if own <= indent:
            break
        checks[f"summary_{len(checks) + 1}"] = {"severity": status, "summary": line.strip()}
    return {"status": status, "checks": checks, "source": "status"}


def parse_ceph_health(text: str) -> dict:
    """Overall health and its checks from `ceph health [detail]` / `ceph status`, text or JSON."""
    text = strip_source_header(text)
    require_content(CEPH_KIND, text, "ceph health", CEPH_FIX)
    lines = text.splitlines()
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if _HEALTH_LINE.match(stripped) or _STATUS_HEALTH.match(line) or stripped.startswith("{"):
            break
        if _CEPH_ERRORS.search(stripped):
            raise ParseError(CEPH_KIND, f"ceph failed: {stripped}", number, line, fix=CEPH_FIX)
    parsed = _ceph_json(text)
    if parsed is not None:
        return parsed
    for index, line in enumerate(lines):
        health = _HEALTH_LINE.match(line.strip())
        if health and not line[:1].isspace():
            return _ceph_health_text(lines, index, health.group(1), health.group(2))
        status = _STATUS_HEALTH.match(line)
        if status:
            return _ceph_status_text(lines, index, len(status.group(1)), status.group(2))
    raise not_output(CEPH_KIND, "ceph health", text, CEPH_FIX, "no HEALTH_OK/HEALTH_WARN/HEALTH_ERR status")
