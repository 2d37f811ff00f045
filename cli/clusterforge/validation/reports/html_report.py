"""report.html: one self-contained page (inline CSS and a little JS, no external assets).

Summary first, then the nodes that need attention with evidence and remedy,
then the passing ones compactly (host names grouped by SKU), so a 10,000-node
report stays a few MB and opens quickly.
"""

from __future__ import annotations

import json
import os
import textwrap
from collections import defaultdict
from functools import cache
from pathlib import Path
from typing import Any

import jinja2

from clusterforge.validation.results import SEVERITY, first_message

TEMPLATE = "report.html.j2"
# Nodes needing attention are expanded on the page when there are few of them.
EXPAND_LIMIT = 30


@cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(Path(__file__).resolve().parents[2] / "templates"),
        autoescape=True,  # evidence is tool output: never trusted as markup
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["evidence_text"] = evidence_text
    return env


def evidence_text(evidence: Any) -> str:
    """Evidence as plain text: `key: value` lines, lists one item per line."""
    if not evidence:
        return ""
    if not isinstance(evidence, dict):
        return str(evidence)
    lines = []
    for key, value in evidence.items():
        if isinstance(value, list) and all(isinstance(v, str | int | float) for v in value):
            lines.append(f"{key}:")
            # Lines cut out of indented output (XML, nvidia-smi -q) keep their
            # common indentation; drop it so the decisive part stays readable.
            block = textwrap.dedent("\n".join(str(item) for item in value))
            lines.extend(f"  {item}" for item in block.splitlines())
        elif isinstance(value, dict | list):
            lines.append(f"{key}: {json.dumps(value, default=str)}")
        else:
            lines.append(f"{key}: {value}")
    return "\n".join(lines)


def _view(report: dict[str, Any]) -> dict[str, Any]:
    nodes = report.get("nodes", [])
    attention = sorted(
        (n for n in nodes if n["status"] in ("fail", "error", "warn")),
        key=lambda n: (-SEVERITY[n["status"]], n["host"]),
    )
    passing: dict[str, list[str]] = defaultdict(list)
    for node in nodes:
        if node["status"] in ("pass", "skip"):
            passing[str(node.get("node_sku") or "-")].append(node["host"])
    summary = report["summary"]
    check_rows = sorted(
        set(summary.get("check_failures", {})) | set(summary.get("check_errors", {})),
        key=lambda c: -(summary["check_failures"].get(c, 0) + summary["check_errors"].get(c, 0)),
    )
    return {
        "report": report,
        "run": report.get("run", {}),
        "summary": summary,
        "attention": [
            {
                "node": node,
                "first_message": first_message(node),
                "ids": [c["id"] for c in node["checks"] if c["status"] in ("fail", "error", "warn")],
                "checks": sorted(
                    (c for c in node["checks"] if c["status"] not in ("pass", "skip")),
                    key=lambda c: -SEVERITY[c["status"]],
                ),
            }
            for node in attention
        ],
        "expand": len(attention) <= EXPAND_LIMIT,
        "passing": sorted(passing.items()),
        "check_rows": check_rows,
        "outliers": report.get("outliers", {}),
        "quarantine": report.get("quarantine"),
    }


def render_html(report: dict[str, Any]) -> str:
    return _environment().get_template(TEMPLATE).render(**_view(report))


def write_html(report: dict[str, Any], path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(render_html(report), encoding="utf-8")
    os.replace(tmp, path)
