"""The result model of node validation: one dict per check, one per node.

Shapes are fixed in docs/design.md. A check result is a plain dict (it crosses
Ansible's JSON boundary unchanged):

    {"id": "gpu.xid", "status": "fail", "message": "...",
     "evidence": {"command": "dmesg", "lines": [...]}, "remedy": "..."}

`error` means the check could not run (tool missing, timed out, output not
understood). It is never counted as a pass: the node's overall status is the
worst of its checks in the order fail > error > warn > pass, `skip` only
when every check skipped, and `error` when there is no check at all.
"""

from __future__ import annotations

PASS = "pass"
WARN = "warn"
FAIL = "fail"
ERROR = "error"
SKIP = "skip"
STATUSES = (PASS, WARN, FAIL, ERROR, SKIP)

# Worst first: the overall status of a node is the first of these any check has.
_SEVERITY_ORDER = (FAIL, ERROR, WARN, PASS)

# Evidence lines are for a human reading a report: keep a handful, not whole outputs.
MAX_EVIDENCE_LINES = 40
# Findings named in one merged message; the count of the others follows.
MAX_MERGED_MESSAGES = 10


def evidence(command: str, lines: list[str] | None = None, file: str | None = None) -> dict:
    """What decided a check: the command (or file) read and its decisive lines."""
    kept = [line.rstrip() for line in (lines or [])]
    if len(kept) > MAX_EVIDENCE_LINES:
        dropped = len(kept) - MAX_EVIDENCE_LINES
        kept = [*kept[:MAX_EVIDENCE_LINES], f"... ({dropped} more lines)"]
    found = {"command": command, "lines": kept}
    if file:
        found["file"] = file
    return found


def result(
    check_id: str,
    status: str,
    message: str,
    evidence: dict | None = None,
    remedy: str | None = None,
) -> dict:
    if status not in STATUSES:
        raise ValueError(f"unknown check status {status!r} for {check_id}")
    return {
        "id": check_id,
        "status": status,
        "message": message,
        "evidence": evidence,
        "remedy": remedy,
    }


def passed(check_id: str, message: str, evidence: dict | None = None) -> dict:
    return result(check_id, PASS, message, evidence)


def warned(check_id: str, message: str, evidence: dict | None = None, remedy: str | None = None) -> dict:
    return result(check_id, WARN, message, evidence, remedy)


def failed(check_id: str, message: str, evidence: dict | None = None, remedy: str | None = None) -> dict:
    return result(check_id, FAIL, message, evidence, remedy)


def errored(check_id: str, message: str, evidence: dict | None = None, remedy: str | None = None) -> dict:
    return result(check_id, ERROR, message, evidence, remedy)


def skipped(check_id: str, reason: str) -> dict:
    return result(check_id, SKIP, reason)


def worst(statuses) -> str:
    """The overall status of a set of check statuses (see the module docstring).

    The one implementation for checks, nodes and fleets. No status at all means
    nothing was checked: `error`, never a silent `skip` or `pass`.
    """
    present = set(statuses)
    if not present:
        return ERROR
    unknown = present - set(STATUSES)
    if unknown:
        raise ValueError(f"unknown check status(es) {', '.join(sorted(map(str, unknown)))}")
    for status in _SEVERITY_ORDER:
        if status in present:
            return status
    return SKIP


def merge(check_id: str, findings: list[dict], ok_message: str, ok_evidence: dict | None = None) -> dict:
    """One result from per-device findings: the worst finding wins, others are listed.

    `findings` are results of the same check id for single devices; with none,
    the check passes with `ok_message`.
    """
    if not findings:
        return passed(check_id, ok_message, ok_evidence)
    status = worst([f["status"] for f in findings])
    decisive = [f for f in findings if f["status"] == status]
    # A hostile or broken output can name thousands of devices: a report line names a few.
    message = "; ".join(f["message"] for f in decisive[:MAX_MERGED_MESSAGES])
    if len(decisive) > MAX_MERGED_MESSAGES:
        message += f"; ... and {len(decisive) - MAX_MERGED_MESSAGES} more"
    lines: list[str] = []
    commands: list[str] = []
    files: list[str] = []
    for finding in decisive:
        found = finding.get("evidence") or {}
        lines.extend(found.get("lines") or [])
        if found.get("command") and found["command"] not in commands:
            commands.append(found["command"])
        if found.get("file") and found["file"] not in files:
            files.append(found["file"])
    remedies = []
    for finding in decisive:
        if finding.get("remedy") and finding["remedy"] not in remedies:
            remedies.append(finding["remedy"])
    found = evidence("; ".join(commands), lines, ", ".join(files) or None) if commands else None
    sources = {f["evidence"]["source"] for f in decisive if (f.get("evidence") or {}).get("source")}
    if found is not None and sources:
        found["source"] = "; ".join(sorted(sources))
    return result(check_id, status, message, found, "; ".join(remedies) or None)
