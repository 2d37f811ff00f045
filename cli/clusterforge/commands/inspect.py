"""`clusterforge inspect`: scheduled validation runs, their history and trends, and the timers."""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from clusterforge.commands.validate import _path
from clusterforge.errors import ChecksFailed, InvalidInput


@click.group()
def inspect() -> None:
    """Scheduled inspection: validation runs kept as history, trends over them, timers.

    \b
    clusterforge inspect run -i INV --level quick|full [--history DIR] [--quarantine-new]
    clusterforge inspect trend --history DIR [--last N] [--format table|json|html] [--out FILE]
    clusterforge inspect install -i INV [--on HOST] [-e VAR=VALUE ...]
    """


@inspect.command("run")
@click.option("-i", "--inventory", "inventory", required=True, type=click.Path(), callback=_path)
@click.option(
    "--level",
    type=click.Choice(["quick", "full"]),
    default="quick",
    show_default=True,
    help="full: adds dcgmi diag, only on idle or drained nodes.",
)
@click.option(
    "--history",
    "history_dir",
    type=click.Path(file_okay=False),
    callback=_path,
    help="History folder [default: inspect_history_dir].",
)
@click.option(
    "--quarantine-new",
    is_flag=True,
    help="Quarantine nodes whose failure is new since the previous run (inspect_auto_quarantine).",
)
def run_command(inventory: Path, level: str, history_dir: Path | None, quarantine_new: bool) -> None:
    """Validate the fleet once and keep the report in the history (what the timers run).

    Exit 0 every node healthy, 3 a node unhealthy, 2 bad input.
    """
    from clusterforge.inspection.run import inspect_run

    inspect_run(inventory, level, history_dir, quarantine_new=quarantine_new)


@inspect.command("trend")
@click.option("--history", "history_dir", required=True, type=click.Path(), callback=_path)
@click.option("--last", type=click.IntRange(1, 1000), default=10, show_default=True, help="Runs compared.")
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json", "html"]), default="table", show_default=True
)
@click.option(
    "--out",
    "out_file",
    type=click.Path(dir_okay=False),
    callback=_path,
    help="Write to this file instead of stdout.",
)
def trend_command(history_dir: Path, last: int, fmt: str, out_file: Path | None) -> None:
    """New failures, recoveries and drifting figures over the last runs.

    Exit 0 nothing new nor drifting, 3 a new failure, new error or drift, 2 bad input.
    """
    from cfcore.trend import needs_attention, trend

    from clusterforge.inspection import render
    from clusterforge.inspection.history import load_reports

    result = {**trend(load_reports(history_dir, last)), "history": str(history_dir)}
    if fmt == "table" and out_file is None:
        render.render_table(result, Console())
    elif fmt == "table":
        buffer = io.StringIO()
        render.render_table(result, Console(file=buffer, width=160))
        _emit(buffer.getvalue(), out_file)
    else:
        _emit(render.render_html(result) if fmt == "html" else render.render_json(result), out_file)
    if needs_attention(result):
        summary = result["summary"]
        raise ChecksFailed(
            f"{summary['new_failures']} new failure(s), {summary['new_errors']} new error(s), "
            f"{summary['drifts']} drifting figure(s) over {summary['runs']} run(s)",
            "read the evidence per node; drain and inspect the nodes named before a fixed check fails",
        )


def _emit(text: str, out_file: Path | None) -> None:
    if out_file is None:
        sys.stdout.write(text)
        return
    try:
        out_file.write_text(text, encoding="utf-8")
    except OSError as err:
        raise InvalidInput(f"--out {out_file}: {err.strerror or err}", "pass a file you can write") from None


def timer_install_options(command: Any) -> Any:
    """The options of every `... install` command (role ops_timers on the controller node)."""
    options = [
        click.option("-i", "--inventory", "inventory", required=True, type=click.Path(), callback=_path),
        click.option(
            "--on", "on", help="Controller host [default: first host of group clusterforge_controller]."
        ),
        click.option(
            "-e",
            "--extra-vars",
            "extra",
            multiple=True,
            metavar="VAR=VALUE",
            help="Variables of role ops_timers, e.g. clusterforge_cli=PATH clusterforge_inventory=PATH.",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


@inspect.command("install")
@timer_install_options
def install_command(inventory: Path, on: str | None, extra: tuple[str, ...]) -> None:
    """Install the quick (daily) and full (weekly) inspection timers on the controller node."""
    from clusterforge.commands.bringup import parse_extra_vars
    from clusterforge.inspection.install import inspect_install

    inspect_install(inventory, on, parse_extra_vars(extra))
