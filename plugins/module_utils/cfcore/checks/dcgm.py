"""`gpu.dcgm_diag` (level full): NVIDIA DCGM's active diagnostic, `dcgmi diag -r 2 -j`.

Reads the JSON of DCGM 3.x (`DCGM GPU Diagnostic` ... results with `gpu_ids`)
and 4.x (`DCGM Diagnostic` ... results with `entity_id`, `warnings[]`).
"""

from __future__ import annotations

import json

from ..results import errored, evidence, failed, passed, skipped, warned
from .common import unavailable


def _report(text: str) -> dict | None:
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    for key, value in data.items():
        if key.startswith("DCGM") and isinstance(value, dict):
            return value
    return None


def _warnings(result: dict) -> list[str]:
    said = []
    for warning in result.get("warnings") or []:
        if isinstance(warning, dict):
            said.append(str(warning.get("warning") or warning.get("message") or ""))
        elif warning:
            said.append(str(warning))
    for key in ("warning", "info"):
        if isinstance(result.get(key), str) and result[key]:
            said.append(result[key])
    return [line for line in said if line]


def gpu_dcgm_diag(diag) -> dict:
    check = "gpu.dcgm_diag"
    if diag.state == "not_found":
        return skipped(check, "dcgmi is not installed: install DCGM to run its diagnostic at level full")
    if not diag.text.strip():
        return unavailable(check, diag)
    report = _report(diag.text)
    if report is None:
        return errored(
            check,
            "dcgmi diag printed no JSON report",
            evidence(diag.command, diag.lines()[:5]),
            "run dcgmi diag -r 2 on the node; nv-hostengine must be running",
        )
    if report.get("runtime_error"):
        return errored(
            check,
            f"dcgmi diag could not run: {report['runtime_error']}",
            evidence(diag.command, [str(report["runtime_error"])], diag.file),
            "systemctl start nvidia-dcgm (nv-hostengine) and run again",
        )
    fails, warns, total = [], [], 0
    for category in report.get("test_categories") or []:
        for test in category.get("tests") or []:
            for result in test.get("results") or []:
                total += 1
                status = str(result.get("status") or "").lower()
                who = result.get("entity_id", result.get("gpu_ids", "?"))
                line = f"{category.get('category')}/{test.get('name')} GPU {who}: {result.get('status')}"
                detail = [line] + [f"  {w}" for w in _warnings(result)]
                if status == "fail":
                    fails.extend(detail)
                elif status == "warn":
                    warns.extend(detail)
    found = evidence(diag.command, fails or warns, diag.file)
    if fails:
        return failed(
            check,
            f"dcgmi diag -r 2 failed {sum(1 for ln in fails if not ln.startswith('  '))} tests",
            found,
            "drain the node; act on the failed tests (reset, reseat or RMA the named GPU) "
            "and run dcgmi diag -r 3 before returning it",
        )
    if diag.rc not in (0, None) and not warns:
        return errored(
            check,
            f"dcgmi diag exited {diag.rc} without failed tests",
            evidence(diag.command, diag.stderr.splitlines()[:5], diag.file),
            "run dcgmi diag -r 2 on the node and read its output",
        )
    if warns:
        return warned(
            check,
            "dcgmi diag -r 2 passed with warnings",
            found,
            "read the warnings; rerun with -r 3 if they name hardware",
        )
    if total == 0:
        return errored(
            check,
            "dcgmi diag ran no tests",
            evidence(diag.command, diag.lines()[:5], diag.file),
            "run dcgmi diag -r 2 on the node and read its output",
        )
    return passed(
        check, f"dcgmi diag -r 2: all {total} results pass or skip", evidence(diag.command, [], diag.file)
    )
