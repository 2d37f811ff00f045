"""The trend as a table (rich), JSON (the design's contract) or one self-contained HTML page."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jinja2
from rich.console import Console
from rich.table import Column, Table

FORMATS = ("table", "json", "html")
SPARK_WIDTH, SPARK_HEIGHT, SPARK_PAD = 160, 36, 3


def render_json(result: dict[str, Any]) -> str:
    return json.dumps(result, indent=2, default=str) + "\n"


def render_table(result: dict[str, Any], console: Console) -> None:
    summary = result["summary"]
    console.print(
        f"{summary['runs']} run(s), {summary['nodes']} node(s): {summary['new_failures']} new failure(s), "
        f"{summary['new_errors']} new error(s), {summary['recoveries']} recovery(ies), "
        f"{summary['still_failing']} still failing, {summary['drifts']} drift(s)",
        markup=False,
    )
    changes = Table(
        *_columns("node", "check", "change", "previous -> latest", "message"), title="Transitions"
    )
    for row in transition_rows(result):
        changes.add_row(
            row["host"],
            row["check"],
            row["kind"],
            f"{row['previous'] or 'absent'} -> {row['latest']}",
            row["message"],
        )
    drifts = Table(*_columns("node", "figure", "rule", "series", "why"), title="Drifting figures")
    for row in drift_rows(result):
        series = " ".join(f"{point['value']:g}" for point in row["series"])
        drifts.add_row(row["host"], row["metric"], row["rule"], series, row["message"])
    for table in (changes, drifts):
        if table.row_count:
            console.print(table)
    for note in result["notes"]:
        console.print(f"note: {note}", markup=False, soft_wrap=True)


def _columns(*names: str) -> list[Column]:
    """Names and ids whole on one line (cut or folded, they cannot be searched for); the last column,
    the message, folds into the room left."""
    return [Column(name, no_wrap=True) for name in names[:-1]] + [Column(names[-1], overflow="fold")]


def transition_rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"host": host, **t} for host, node in result["nodes"].items() for t in node["transitions"]]


def drift_rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"host": host, **d} for host, node in result["nodes"].items() for d in node["drifts"]]


def sparkline(values: list[float]) -> dict[str, Any]:
    """Polyline points of a small plot of `values` (oldest left), scaled to fill the box."""
    low, high = min(values), max(values)
    span = (high - low) or 1.0
    step = (SPARK_WIDTH - 2 * SPARK_PAD) / max(len(values) - 1, 1)
    points = [
        (SPARK_PAD + i * step, SPARK_HEIGHT - SPARK_PAD - (v - low) / span * (SPARK_HEIGHT - 2 * SPARK_PAD))
        for i, v in enumerate(values)
    ]
    return {
        "width": SPARK_WIDTH,
        "height": SPARK_HEIGHT,
        "points": " ".join(f"{x:.1f},{y:.1f}" for x, y in points),
        "last_x": f"{points[-1][0]:.1f}",
        "last_y": f"{points[-1][1]:.1f}",
        "values": ", ".join(f"{v:g}" for v in values),
    }


@cache
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(Path(__file__).resolve().parents[1] / "templates"),
        autoescape=True,  # messages come from tool output: never trusted as markup
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render_html(result: dict[str, Any]) -> str:
    drifts = [{**row, "spark": sparkline([p["value"] for p in row["series"]])} for row in drift_rows(result)]
    return (
        _environment()
        .get_template("trend.html.j2")
        .render(**result, transitions=transition_rows(result), drifts=drifts)
    )
