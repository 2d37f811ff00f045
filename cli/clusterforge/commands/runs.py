"""`clusterforge runs`: read the run ledger (bring-up and upgrade runs)."""

from __future__ import annotations

import json

import click
from rich.table import Table

from clusterforge.commands.bringup import LEDGER_HELP
from clusterforge.commands.lab import stdout_console


@click.group()
def runs() -> None:
    """Read the run ledger: what ran, where each host stands."""


@runs.command("list")
@click.option("--ledger", "ledger_dir", type=click.Path(file_okay=False), help=LEDGER_HELP)
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
def list_runs(ledger_dir: str | None, fmt: str) -> None:
    """Every run, newest first: id, kind, status, start, hosts, stages done."""
    from clusterforge.bringup.workflow import ledger_from
    from clusterforge.errors import InvalidInput

    rows = []
    for run in ledger_from(ledger_dir).runs():
        try:  # one unreadable run (a FIFO, a broken file) is flagged; the others are listed
            record = run.read()
            stages = run.stages()
            done = sum(1 for s in stages if isinstance(s, dict) and s.get("status") == "ok")
            if record.get("kind") == "upgrade":  # its steps are batches: the last one reached
                stages, done = [None] * _count(record.get("batches")), _batches_done(run)
        except InvalidInput as err:
            rows.append({
                "id": run.id, "kind": None, "status": "corrupt", "started": None, "ended": None,
                "hosts": 0, "stages_ok": 0, "stages": 0, "check": False, "error": err.message,
            })  # fmt: skip
            continue
        rows.append({
            "id": run.id, "kind": record.get("kind"), "status": run.status(record),
            "started": record.get("started"), "ended": record.get("ended"),
            "hosts": _count(record.get("hosts")), "stages_ok": done,
            "stages": _count(record.get("stages")) or len(stages),
            "check": isinstance(record.get("options"), dict) and record["options"].get("check") is True,
        })  # fmt: skip
    if fmt == "json":
        click.echo(json.dumps(rows, indent=1))
        return
    if not rows:
        click.echo("no runs in the ledger")
        return
    table = Table()
    for column in ("id", "kind", "status", "started", "hosts", "stages ok"):
        table.add_column(column, no_wrap=True)
    for row in rows:
        kind = f"{row['kind']} --check" if row["check"] else str(row["kind"])
        table.add_row(row["id"], kind, row["status"], str(row["started"]), str(row["hosts"]),
                      f"{row['stages_ok']}/{row['stages']}")  # fmt: skip
    stdout_console().print(table)
    for row in rows:
        if row["status"] == "corrupt":
            click.echo(f"warning: run {row['id']} cannot be read: {row['error']}", err=True)


def _count(value: object) -> int:
    """A recorded list's length, or a recorded count; 0 for anything else (a damaged record)."""
    if isinstance(value, list):
        return len(value)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


@runs.command("show")
@click.argument("run_id", metavar="RUN")
@click.option("--ledger", "ledger_dir", type=click.Path(file_okay=False), help=LEDGER_HELP)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def show(run_id: str, ledger_dir: str | None, fmt: str) -> None:
    """One run: its inventory, BOM and attempts, each host's result per stage, failures and drift."""
    from clusterforge.bringup import summary
    from clusterforge.bringup.workflow import ledger_from, resume_command
    from clusterforge.runs.ledger import recorded_extra_vars

    run = ledger_from(ledger_dir).open(run_id)
    record = run.read()
    options = record.get("options")
    if isinstance(options, dict) and isinstance(options.get("extra_vars"), dict):
        # A run written before secrets were recorded as digests: never printed either.
        options["extra_vars"] = recorded_extra_vars(options["extra_vars"])
    if record.get("kind") == "upgrade":
        from clusterforge.upgrade.view import show_upgrade

        show_upgrade(run, record, fmt, stdout_console())
        return
    stages = run.stages()
    status = run.status(record)
    if fmt == "json":
        click.echo(json.dumps({**record, "status": status, "stage_records": stages}, indent=1, default=str))
        return
    console = stdout_console()
    inventory = record.get("inventory") or {}
    console.print(f"run {run.id} ({record.get('kind')}): {status}", markup=False)
    console.print(
        f"  inventory {inventory.get('path')} (sha256 {str(inventory.get('sha256'))[:12]})", markup=False
    )
    bom = ", ".join(f"{k}={v}" for k, v in (record.get("bom") or {}).items()) or "none"
    console.print(f"  BOM: {bom}", markup=False)
    for attempt in record.get("attempts") or []:
        console.print(
            f"  attempt {attempt.get('n')}: {attempt.get('started')} to {attempt.get('ended') or 'now'}, "
            f"pid {attempt.get('pid')} on {attempt.get('host')}",
            markup=False,
        )
    if status == "interrupted":
        console.print(f"  the controller is gone: continue with `{resume_command(record)}`", markup=False)
    summary.host_table({**record, "status": status}, stages, console)
    summary.cluster_wide(record, stages, console)
    summary.failures(stages, console)
    if (record.get("options") or {}).get("check"):
        summary.drift_report(stages, console)
    console.print(f"artifacts: {run.path}", markup=False)


def _batches_done(run) -> int:
    from clusterforge.upgrade.run import DONE, FAILED, read_nodes

    by_batch: dict[int, set[str]] = {}
    for node in read_nodes(run).values():
        by_batch.setdefault(node["batch"], set()).add(node["status"])
    return sum(1 for statuses in by_batch.values() if statuses <= {DONE, FAILED})
