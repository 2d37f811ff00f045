"""A run as an operator reads it: per host and stage, the failures, and (--check) the drift.

Used by `clusterforge bringup` at its end and by `clusterforge runs show`.
"""

from __future__ import annotations

import difflib
from typing import Any

from rich.console import Console
from rich.table import Table

from clusterforge.bringup.recorder import FINISHED

FULL_TABLE_HOSTS = 50  # above this, the table lists only the hosts that did not finish every stage
_CELL = {
    "ok": "ok",
    "changed": "changed",
    "none": "-",
    "failed": "[red]FAILED[/]",
    "unreachable": "[red]UNREACHABLE[/]",
    "unfinished": "[red]unfinished[/]",
    "held": "[yellow]held[/]",
    "running": "[cyan]running[/]",
    "not run": "[dim]not run[/]",
}


def host_table(record: dict[str, Any], stages: list[dict[str, Any]], console: Console) -> None:
    hosts: list[str] = record.get("hosts", [])
    by_stage = {s["stage"]: s for s in stages}
    names = [name for name in record.get("stages", []) if name in by_stage]
    problems = [h for h in hosts if any(_result(by_stage[n], h) not in FINISHED for n in names)]
    shown = hosts if len(hosts) <= FULL_TABLE_HOSTS else problems
    table = Table(title=f"run {record.get('id')}: {record.get('status')}", title_justify="left")
    table.add_column("host", no_wrap=True)
    for name in names:
        table.add_column(name)
    for host in shown:
        cells = []
        for name in names:
            result = _result(by_stage[name], host)
            changed = len(by_stage[name].get("hosts", {}).get(host, {}).get("changed_tasks") or [])
            cell = _CELL.get(result, result)
            cells.append(f"{cell} ({changed})" if result == "changed" and changed else cell)
        table.add_row(host, *cells)
    if shown:
        console.print(table)
    if len(shown) < len(hosts):
        console.print(f"{len(hosts) - len(shown)} other host(s) finished every stage", highlight=False)


def cluster_wide(record: dict[str, Any], stages: list[dict[str, Any]], console: Console) -> None:
    """A stage that ran on the whole inventory (add-node's members): one line for the other hosts."""
    own = set(record.get("hosts", []))
    for stage_record in stages:
        others = {h: r for h, r in stage_record.get("hosts", {}).items() if h not in own}
        if not others:
            continue
        counts: dict[str, int] = {}
        for result in others.values():
            counts[result.get("result", "?")] = counts.get(result.get("result", "?"), 0) + 1
        told = ", ".join(f"{n} {result}" for result, n in sorted(counts.items()))
        console.print(
            f"stage {stage_record['stage']} on the {len(others)} other host(s) of the inventory: {told}",
            markup=False, highlight=False,
        )  # fmt: skip


def failures(stages: list[dict[str, Any]], console: Console) -> None:
    for stage_record in stages:
        for host, result in stage_record.get("hosts", {}).items():
            if result.get("result") in ("failed", "unreachable", "unfinished") and result.get("message"):
                task = f" in {result['failed_task']!r}" if result.get("failed_task") else ""
                console.print(
                    f"{host}: {stage_record['stage']} {result['result']}{task}: {result['message']}",
                    markup=False, highlight=False, soft_wrap=True,
                )  # fmt: skip


def drift_report(stages: list[dict[str, Any]], console: Console) -> int:
    """Every changed task of a --check run, per host: stage, task, what would change; returns the count."""
    per_host: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for stage_record in stages:
        for host, result in stage_record.get("hosts", {}).items():
            for change in result.get("changed_tasks") or []:
                per_host.setdefault(host, []).append((stage_record["stage"], change))
    count = 0
    for host in sorted(per_host):
        console.print(f"drift on {host}:", style="bold", highlight=False)
        for stage_name, change in per_host[host]:
            count += 1
            role = f"{change['role']} : " if change.get("role") else ""
            console.print(f"  [{stage_name}] {role}{change['task']}", markup=False, highlight=False)
            text = (
                render_diff(change["diff"]) if change.get("diff") else f"would change: {change.get('would')}"
            )
            for line in text.splitlines():
                console.print(f"      {line}", markup=False, highlight=False, soft_wrap=True)
    if not count:
        checked = all(
            r.get("result") in FINISHED | {"not run"} for s in stages for r in s.get("hosts", {}).values()
        )
        console.print(
            "no drift: every host is as the inventory says"
            if checked
            else "no drift on what could be checked (some hosts could not be: see the failures above)",
            highlight=False,
        )
    return count


def render_diff(diff: Any) -> str:
    """Ansible's diff result (a dict or a list of them) as text: unified diffs of before/after."""
    parts = diff if isinstance(diff, list) else [diff]
    out: list[str] = []
    for part in parts:
        if not isinstance(part, dict):
            out.append(str(part))
            continue
        if "prepared" in part:
            out.append(str(part["prepared"]).rstrip("\n"))
            continue
        before, after = part.get("before", ""), part.get("after", "")
        if isinstance(before, dict) or isinstance(after, dict):  # e.g. a file's state: {path, state}
            out.append(f"- {before}\n+ {after}")
            continue
        lines = difflib.unified_diff(
            str(before).splitlines(), str(after).splitlines(),
            fromfile=str(part.get("before_header", "before")), tofile=str(part.get("after_header", "after")),
            lineterm="",
        )  # fmt: skip
        out.extend(lines)
    return "\n".join(out)


def _result(stage_record: dict[str, Any], host: str) -> str:
    return str(stage_record.get("hosts", {}).get(host, {}).get("result", "not run"))
