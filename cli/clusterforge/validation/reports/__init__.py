"""Validation reports: one report dict (see `assemble`), written in every format.

Files are always written; `--format` only chooses what goes to stdout.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from clusterforge.validation.reports.html_report import write_html
from clusterforge.validation.reports.json_report import write_json
from clusterforge.validation.reports.junit import write_junit
from clusterforge.validation.reports.prom import write_prom

SCHEMA = "clusterforge.validate/v1"
FORMATS = ("table", "json", "junit", "html", "prom")
FILE_NAMES = {
    "json": "report.json",
    "junit": "junit.xml",
    "html": "report.html",
    "prom": "clusterforge.prom",
}
WRITERS = {"json": write_json, "junit": write_junit, "html": write_html, "prom": write_prom}


def assemble(
    results: list[dict[str, Any]],
    summary: dict[str, Any],
    outliers: dict[str, Any],
    run: dict[str, Any],
    quarantine: dict[str, Any] | None = None,
    perf: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The one report every format is written from (`perf`: pairs and verdicts of --level perf)."""
    report = {"schema": SCHEMA, "run": run, "summary": summary, "outliers": outliers}
    if perf is not None:
        report["perf"] = perf
    if quarantine is not None:
        report["quarantine"] = quarantine
    report["nodes"] = results
    return report


def write_all(report: dict[str, Any], out_dir: Path) -> dict[str, Path]:
    """Write every report file into out_dir; returns format -> path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = {}
    for fmt, writer in WRITERS.items():
        path = out_dir / FILE_NAMES[fmt]
        writer(report, path)
        written[fmt] = path
    return written
