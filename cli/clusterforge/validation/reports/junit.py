"""junit.xml for CI systems: one testsuite per node, one testcase per check.

fail -> <failure>, error -> <error>, skip -> <skipped>, warn -> a passing
testcase with the warning in <system-out>. Written as a stream (no element
tree) with escaped strings cached (check ids and skip reasons repeat on every
node), so 10,000 nodes x 25 checks stay fast and small in memory. Text from
tool output may hold characters XML 1.0 forbids; they are dropped.
"""

from __future__ import annotations

import json
import os
import re
from functools import lru_cache
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape, quoteattr

_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_ATTR_ENTITIES = {"\n": "&#10;", "\r": "&#13;", "\t": "&#9;"}


def _text(value: Any) -> str:
    return escape(_NOT_XML.sub("", str(value)))


@lru_cache(maxsize=4096)
def _attr(value: Any) -> str:
    return quoteattr(_NOT_XML.sub("", str(value)), _ATTR_ENTITIES)


def _counts(checks: list[dict[str, Any]]) -> dict[str, int]:
    statuses = [c["status"] for c in checks]
    return {
        "tests": len(statuses),
        "failures": statuses.count("fail"),
        "errors": statuses.count("error"),
        "skipped": statuses.count("skip"),
    }


def _details(check: dict[str, Any]) -> str:
    parts = [str(check.get("message") or "")]
    evidence = check.get("evidence")
    if evidence:
        parts.append("evidence: " + json.dumps(evidence, indent=1, default=str))
    if check.get("remedy"):
        parts.append(f"remedy: {check['remedy']}")
    return "\n".join(parts)


def write_junit(report: dict[str, Any], path: Path) -> None:
    nodes = report.get("nodes", [])
    total = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for node in nodes:
        for key, value in _counts(node["checks"]).items():
            total[key] += value
    run = report.get("run", {})
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as out:
        out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
        out.write(
            f"<testsuites name={_attr('clusterforge validate ' + str(run.get('level', '')))}"
            + "".join(f" {k}={_attr(v)}" for k, v in total.items())
            + f" time={_attr(run.get('duration_s', 0))}>\n"
        )
        for node in nodes:
            out.write(_suite(node))
        out.write("</testsuites>\n")
    os.replace(tmp, path)


def _suite(node: dict[str, Any]) -> str:
    host = _attr(node["host"])  # per node: not cached, 10,000 hosts would only churn the cache
    counts = _counts(node["checks"])
    lines = [
        f" <testsuite name={host} hostname={host}"
        + "".join(f" {k}={_attr(v)}" for k, v in counts.items())
        + f" time={_attr(node.get('duration_s') or 0)} timestamp={_attr(node.get('collected_at') or '')}>",
        f'  <properties><property name="node_sku" value={_attr(node.get("node_sku"))}/>'
        f'<property name="status" value={_attr(node["status"])}/></properties>',
    ]
    for check in node["checks"]:
        status = check["status"]
        head = f"  <testcase classname={host} name={_attr(check['id'])}"
        if status == "pass":
            lines.append(head + "/>")
        elif status == "skip":
            lines.append(f"{head}><skipped message={_attr(str(check.get('message') or ''))}/></testcase>")
        else:
            lines.append(f"{head}>{_body(check)}</testcase>")
    lines.append(" </testsuite>\n")
    return "\n".join(lines)


def _body(check: dict[str, Any]) -> str:
    status = check["status"]
    if status == "warn":
        return f"<system-out>{_text('warning: ' + _details(check))}</system-out>"
    tag = "failure" if status == "fail" else "error"
    message = quoteattr(_NOT_XML.sub("", str(check.get("message") or "")[:500]), _ATTR_ENTITIES)
    return f"<{tag} message={message} type={_attr(check['id'])}>{_text(_details(check))}</{tag}>"
