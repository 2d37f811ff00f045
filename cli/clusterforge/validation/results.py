"""Node results: statuses, their order, and results made up by the controller.

A node result comes from the `node_validate` module (docs/design.md). The
controller adds results of its own for nodes that never produced one
(unreachable, the module crashed): those are `error`, never missing, never pass.
"""

from __future__ import annotations

import math
from collections import Counter
from datetime import UTC, datetime
from typing import Any

from cfcore.results import worst

STATUSES = ("pass", "warn", "fail", "error", "skip")
# Worse wins when statuses combine; docs/design.md: fail > error > warn > pass.
SEVERITY = {"skip": 0, "pass": 1, "warn": 2, "error": 3, "fail": 4}
BAD_STATUSES = ("fail", "error")

# Check ids the controller itself uses (the module owns all others).
CHECK_REACHABLE = "node.reachable"
CHECK_MODULE_RAN = "node.validate"


def utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def is_bad(status: str) -> bool:
    return status in BAD_STATUSES


def controller_error(
    host: str,
    node_sku: str | None,
    level: str,
    check_id: str,
    message: str,
    remedy: str,
    evidence: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A node result for a node the controller could not validate."""
    return {
        "host": host,
        "node_sku": node_sku,
        "level": level,
        "status": "error",
        "checks": [
            {
                "id": check_id,
                "status": "error",
                "message": message,
                "evidence": evidence or {},
                "remedy": remedy,
            }
        ],
        "metrics": {},
        "facts": {},
        "collected_at": utc_now(),
        "duration_s": 0.0,
    }


def unreachable_result(host: str, node_sku: str | None, level: str, reason: str) -> dict[str, Any]:
    return controller_error(
        host,
        node_sku,
        level,
        CHECK_REACHABLE,
        f"unreachable: {reason}",
        "check that the node is up, its ansible_host address and SSH access "
        "(`ssh <user>@<address>`), then rerun with --limit <host>",
    )


def module_failed_result(
    host: str, node_sku: str | None, level: str, task: str, reason: str
) -> dict[str, Any]:
    return controller_error(
        host,
        node_sku,
        level,
        CHECK_MODULE_RAN,
        f"validation did not run: task '{task}' failed: {reason}",
        "read the message; rerun `ansible-playbook playbooks/validate.yml -l <host> -vvv` for details",
    )


def normalise(host: str, raw: Any, level: str, node_sku: str | None) -> dict[str, Any]:
    """Check a module result's shape and fill in the inventory host name.

    Anything that does not look like a node result becomes an `error` result:
    a malformed result must never be read as a pass.
    """
    problem = _shape_problem(raw)
    if problem:
        return controller_error(
            host,
            node_sku,
            level,
            CHECK_MODULE_RAN,
            f"node_validate returned an unusable result: {problem}",
            "a bug in node_validate or a version mismatch between the CLI and the module: report it",
            {"result": repr(raw)[:2000]},
        )
    result = dict(raw)
    reported = result.get("host")
    facts = dict(result.get("facts") or {})
    if reported and reported != host:
        facts.setdefault("hostname", reported)
    result["host"] = host
    result["facts"] = facts
    result.setdefault("node_sku", node_sku)
    result.setdefault("level", level)
    result.setdefault("metrics", {})
    result["metrics"] = result["metrics"] or {}
    result["status"] = worst([c["status"] for c in result["checks"]]) if result["checks"] else "error"
    return result


def _shape_problem(raw: Any) -> str | None:
    if not isinstance(raw, dict):
        return f"expected a mapping, got {type(raw).__name__}"
    checks = raw.get("checks")
    if not isinstance(checks, list):
        return "no 'checks' list"
    if not checks:
        return "no checks at all"
    for index, check in enumerate(checks):
        if not isinstance(check, dict) or not isinstance(check.get("id"), str):
            return f"check #{index} has no 'id'"
        if check.get("status") not in SEVERITY:
            return f"check {check['id']} has status {check.get('status')!r}, not one of {', '.join(STATUSES)}"
    if not isinstance(raw.get("metrics", {}) or {}, dict):
        return "'metrics' is not a mapping"
    return None


def bad_checks(result: dict[str, Any], statuses: tuple[str, ...] = BAD_STATUSES) -> list[dict[str, Any]]:
    return [c for c in result["checks"] if c["status"] in statuses]


def first_message(result: dict[str, Any]) -> str:
    """The message an operator reads first: the worst check's."""
    checks = [c for c in result["checks"] if c["status"] not in ("pass", "skip")]
    if not checks:
        return ""
    top = max(checks, key=lambda c: SEVERITY[c["status"]])
    return str(top.get("message") or "")


def summarise(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts per status, per failing check, and the overall verdict."""
    by_status = Counter(r["status"] for r in results)
    check_failures: Counter[str] = Counter()
    check_errors: Counter[str] = Counter()
    for result in results:
        for check in result["checks"]:
            if check["status"] == "fail":
                check_failures[check["id"]] += 1
            elif check["status"] == "error":
                check_errors[check["id"]] += 1
    durations = [r.get("duration_s") for r in results]
    durations = [d for d in durations if isinstance(d, int | float) and math.isfinite(d)]
    return {
        "nodes": len(results),
        "status_counts": {s: by_status.get(s, 0) for s in STATUSES},
        "overall": worst([r["status"] for r in results]) if results else "skip",
        "unhealthy_nodes": sorted(r["host"] for r in results if is_bad(r["status"])),
        "check_failures": dict(check_failures.most_common()),
        "check_errors": dict(check_errors.most_common()),
        "node_duration_s_max": max(durations) if durations else None,
    }
