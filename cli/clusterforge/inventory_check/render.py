"""Output of `clusterforge inventory check`: one line per problem, or JSON."""

from __future__ import annotations

import json

from clusterforge.inventory_check.problems import WARNING, Report, display_path


def render_text(report: Report) -> str:
    lines = []
    for problem in report.problems:
        label = "warning: " if problem.severity == WARNING else ""
        lines.append(f"{problem.location}: {label}{problem.message} ({problem.fix})")
    sources = ", ".join(display_path(s) for s in report.sources)
    errors, warnings = len(report.errors), len(report.warnings)
    verdict = "valid" if report.valid else "INVALID"
    lines.append(
        f"{sources}: {verdict}: {report.host_count} hosts, {errors} error{'s' * (errors != 1)}, "
        f"{warnings} warning{'s' * (warnings != 1)}"
    )
    return "\n".join(lines)


def render_json(report: Report) -> str:
    return json.dumps([problem.as_dict() for problem in report.problems], indent=2, default=str)
