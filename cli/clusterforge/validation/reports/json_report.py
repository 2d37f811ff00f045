"""report.json: the whole report, one node result per line.

Readable at the top (run, summary, outliers indented), greppable below (one
line per node), and fast: node lines go through json's C encoder, which an
indented dump of 10,000 nodes would not.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def write_json(report: dict[str, Any], path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as out:
        out.write("{\n")
        for key, value in report.items():
            if key == "nodes":
                continue
            out.write(f" {json.dumps(key)}: {json.dumps(value, indent=1, default=str)},\n")
        out.write(' "nodes": [')
        for index, node in enumerate(report.get("nodes", [])):
            out.write(",\n  " if index else "\n  ")
            out.write(json.dumps(node, separators=(",", ":"), default=str))
        out.write("\n ]\n}\n")
    os.replace(tmp, path)  # readers (a CI job, a dashboard) never see half a file
