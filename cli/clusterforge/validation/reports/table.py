"""The per-node summary table printed on the terminal."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from clusterforge.validation.results import SEVERITY, first_message

_STYLE = {"pass": "green", "warn": "yellow", "fail": "bold red", "error": "red", "skip": "dim"}
# Beyond this many nodes the table lists only the nodes that need attention;
# the passing ones are counted (report.html lists them all).
FULL_TABLE_LIMIT = 200


def render_table(report: dict[str, Any], console: Console) -> None:
    nodes = report.get("nodes", [])
    shown = nodes
    if len(nodes) > FULL_TABLE_LIMIT:
        shown = [n for n in nodes if n["status"] not in ("pass", "skip")]
    shown = sorted(shown, key=lambda n: (-SEVERITY[n["status"]], n["host"]))
    table = Table(title=_title(report), title_justify="left", show_lines=False)
    table.add_column("host", no_wrap=True)
    table.add_column("SKU", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("failing checks")
    table.add_column("first message", overflow="fold")
    for node in shown:
        ids = [c["id"] for c in node["checks"] if c["status"] in ("fail", "error")]
        if not ids:
            ids = [c["id"] for c in node["checks"] if c["status"] == "warn"]
        status = node["status"]
        table.add_row(
            node["host"],
            str(node.get("node_sku") or "-"),
            f"[{_STYLE[status]}]{status}[/]",
            ", ".join(ids),
            first_message(node)[:200],
        )
    if shown:
        console.print(table)
    hidden = len(nodes) - len(shown)
    if hidden:
        console.print(
            f"{hidden} passing node(s) not listed (more than {FULL_TABLE_LIMIT} nodes): see report.html"
        )
    console.print(_verdict(report))


def _title(report: dict[str, Any]) -> str:
    run = report.get("run", {})
    return f"clusterforge validate ({run.get('level', '?')}): {len(report.get('nodes', []))} node(s)"


def _verdict(report: dict[str, Any]) -> str:
    counts = report["summary"]["status_counts"]
    parts = [
        f"[{_STYLE[s]}]{counts[s]} {s}[/]" for s in ("pass", "warn", "fail", "error", "skip") if counts[s]
    ]
    flagged = len(report.get("outliers", {}).get("flagged", []))
    if flagged:
        parts.append(f"{flagged} fleet outlier figure(s)")
    return "summary: " + ", ".join(parts or ["no nodes"])
