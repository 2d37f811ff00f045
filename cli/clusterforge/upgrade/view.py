"""`clusterforge runs show` of an upgrade run: the run, then where each node stands."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console
from rich.table import Table

from clusterforge.runs.ledger import Run
from clusterforge.upgrade.run import read_nodes


def show_upgrade(run: Run, record: dict[str, Any], fmt: str, console: Console) -> None:
    status = run.status(record)
    nodes = read_nodes(run)
    if fmt == "json":
        console.print_json(
            json.dumps({**record, "status": status, "nodes": list(nodes.values())}, default=str)
        )
        return
    what = (
        f"rollback of {record['rollback_of']}" if record.get("rollback_of") else f"to {record.get('target')}"
    )
    console.print(f"run {run.id} (upgrade {record.get('component')} {what}): {status}", markup=False)
    inventory = record.get("inventory") or {}
    console.print(
        f"  inventory {inventory.get('path')} (sha256 {str(inventory.get('sha256'))[:12]})", markup=False
    )
    for attempt in record.get("attempts") or []:
        console.print(
            f"  attempt {attempt.get('n')}: {attempt.get('started')} to {attempt.get('ended') or 'now'}, "
            f"pid {attempt.get('pid')} on {attempt.get('host')}",
            markup=False,
        )
    if record.get("halted"):
        console.print(
            f"  halted after batch {record['halted']['after_batch']}: {record['halted']['reason']}",
            markup=False,
        )
    if status in ("interrupted", "halted", "failed"):
        console.print(f"  continue: clusterforge upgrade run --resume {run.id}", markup=False)
        console.print(
            f"  roll back the done nodes: clusterforge upgrade run --rollback {run.id}", markup=False
        )
    table = Table()
    for column in ("host", "batch", "from", "to", "status", "phase", "attempt", "message"):
        table.add_column(column, overflow="fold")
    for host, node in nodes.items():
        table.add_row(host, str(node["batch"]), str(node.get("from") or "?"), str(node["to"]), node["status"],
                      str(node.get("phase") or "-"), str(node.get("attempt") or "-"),
                      str(node.get("message") or ""))  # fmt: skip
    console.print(table)
    console.print(f"artifacts: {run.path}", markup=False)
