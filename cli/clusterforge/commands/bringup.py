"""`clusterforge bringup`: bring a fleet from racked servers to validated capacity, stage by stage."""

from __future__ import annotations

import shlex
from typing import Any

import click
import yaml
from cfcore.files import UnsafeFile, read_text
from rich.console import Console

from clusterforge.bringup import summary
from clusterforge.bringup.stages import STAGE_NAMES, select_stages
from clusterforge.commands.lab import stdout_console
from clusterforge.errors import InvalidInput

MAX_VARS_FILE_BYTES = 16 * 1024 * 1024  # -e @FILE: variables, not data sets
LEDGER_HELP = "The run ledger folder [default: .clusterforge/runs under the current folder]."


def parse_extra_vars(values: tuple[str, ...]) -> dict[str, Any]:
    """-e as ansible-playbook takes it: KEY=VALUE pairs, a YAML/JSON mapping, or @FILE of one."""
    merged: dict[str, Any] = {}
    for value in values:
        text, where = value, f"-e {value!r}"
        if value.startswith("@"):
            where = f"-e {value}"
            try:
                text = read_text(value[1:], MAX_VARS_FILE_BYTES, errors="strict")
            except UnsafeFile as err:
                raise InvalidInput(f"{where}: {err}", "name a readable YAML file after @") from None
            except (OSError, UnicodeDecodeError) as err:
                raise InvalidInput(f"{where}: {err}", "name a readable YAML file after @") from None
        if value.startswith(("@", "{")):
            try:
                data = yaml.safe_load(text)
            except yaml.YAMLError as err:
                raise InvalidInput(f"{where}: not YAML: {err}", "pass a YAML or JSON mapping") from None
            if not isinstance(data, dict):
                raise InvalidInput(f"{where}: not a mapping of variables", "pass KEY=VALUE or a mapping")
            merged.update(data)
            continue
        for pair in shlex.split(text):
            key, sep, val = pair.partition("=")
            if not sep or not key.isidentifier():
                raise InvalidInput(
                    f"{where}: {pair!r} is not KEY=VALUE", "pass -e name=value (or -e @vars.yml)"
                )
            merged[key] = val
    return merged


def run_options(command: Any) -> Any:
    """The options every ledger run takes (bringup, add-node): failures, variables, forks, ledger."""
    options = [
        click.option(
            "--force",
            is_flag=True,
            default=None,
            help="Let hosts that failed a stage go on to the later ones.",
        ),
        click.option(
            "--max-fail-percent",
            type=click.FloatRange(0, 100),
            default=20.0,
            show_default=True,
            help="Stop the run after a stage whose failed or unreachable hosts exceed this share.",
        ),
        click.option(
            "-e",
            "--extra-vars",
            "extra_vars",
            multiple=True,
            metavar="VARS",
            help="KEY=VALUE, a mapping or @FILE (repeatable).",
        ),
        click.option(
            "--forks", type=click.IntRange(1, 5000), help="Hosts in parallel [default: ansible.cfg's]."
        ),
        click.option("--ledger", "ledger_dir", type=click.Path(file_okay=False), help=LEDGER_HELP),
        click.option(
            "--allow-scripts", is_flag=True, help="Run executable inventory files to list their hosts."
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def refuse_with_resume(flags: tuple[tuple[str, Any], ...]) -> None:
    """--resume takes the run's own inputs: any of these (flag, value) given too is bad input (-e
    only gives again what the run recorded as a secret's digest: runs/ledger.py resumed_extra_vars)."""
    given = [flag for flag, value in flags if value]
    if given:
        raise InvalidInput(
            f"--resume keeps the run's own inventory, hosts and stages: not with {', '.join(given)}",
            f"drop {', '.join(given)}, or start a new run without --resume",
        )


@click.command()
@click.option(
    "-i", "--inventory", "inventory", metavar="PATH", help="Inventory file, directory or host list."
)
@click.option("-l", "--limit", help="Only these hosts (an Ansible host pattern).")
@click.option(
    "--stages",
    "only",
    metavar="LIST",
    help=f"Run only these stages (comma-separated): {', '.join(STAGE_NAMES)}.",
)
@click.option("--skip", metavar="LIST", help="Skip these stages (comma-separated).")
@click.option(
    "--check", is_flag=True, help="Change nothing: report the drift (host, stage, task, diff); exit 3 if any."
)
@click.option(
    "--resume", "resume_id", metavar="RUN", help="Continue run RUN: only the stages and hosts not finished."
)
@run_options
@click.option(
    "--shard-size", type=click.IntRange(1, 100000), default=500, show_default=True,
    help="Node-local stages over more hosts run as concurrent ansible-playbook processes of this size.",
)  # fmt: skip
@click.option(
    "--shard-parallel", type=click.IntRange(1, 64), default=4, show_default=True,
    help="Shards running at once (give each about one controller core).",
)  # fmt: skip
def bringup(
    inventory: str | None,
    limit: str | None,
    only: str | None,
    skip: str | None,
    check: bool,
    resume_id: str | None,
    force: bool | None,
    max_fail_percent: float,
    extra_vars: tuple[str, ...],
    forks: int | None,
    shard_size: int,
    shard_parallel: int,
    ledger_dir: str | None,
    allow_scripts: bool,
) -> None:
    """Bring the fleet up stage by stage, recording every run in the ledger.

    \b
    Stages: preflight (inventory check, reachability, facts, OS) -> base ->
    fabric -> accelerators -> storage -> schedulers -> monitoring -> validate.
    A host that fails a stage stays out of the later ones (unless --force);
    a stage whose failures exceed --max-fail-percent stops the run.

    \b
    Exit codes: 0 every host finished every stage (--check: no drift),
    2 invalid input (nothing ran), 3 hosts failed or the run stopped
    (--check: drift found), 4 environment not ready.
    """
    from clusterforge.bringup import workflow
    from clusterforge.bringup.progress import BringupDisplay

    stdout = stdout_console()
    display = BringupDisplay(Console(stderr=True, highlight=False, soft_wrap=True))
    ledger = workflow.ledger_from(ledger_dir)
    if resume_id:
        refuse_with_resume((("-i", inventory), ("--limit", limit), ("--stages", only), ("--skip", skip),
                            ("--check", check)))  # fmt: skip
        # Consent (--allow-scripts) and the secrets the ledger holds only as digests (-e): from
        # this command line, never from the ledger.
        outcome = workflow.resume(
            resume_id, ledger, display, stdout, force=force, allow_scripts=allow_scripts,
            extra_vars=parse_extra_vars(extra_vars),
        )  # fmt: skip
    else:
        if not inventory:
            raise InvalidInput(
                "-i/--inventory is required", "pass -i with an inventory (e.g. -i inventories/lab)"
            )
        options = workflow.BringupOptions(
            inventory=inventory,
            stages=select_stages(only, skip),
            limit=limit,
            check=check,
            force=bool(force),
            max_fail_percent=max_fail_percent,
            extra_vars=parse_extra_vars(extra_vars),
            forks=forks,
            allow_scripts=allow_scripts,
            shard_size=shard_size,
            shard_parallel=shard_parallel,
        )
        outcome = workflow.start(options, ledger, display, stdout)
    report(outcome, stdout)


def report(outcome: Any, stdout: Console) -> None:
    """The end of a run (bringup, add-node): the table, failures, drift, the ledger; the exit code."""
    from clusterforge.bringup import workflow

    stdout.print()
    summary.host_table(outcome.record, outcome.stages, stdout)
    summary.cluster_wide(outcome.record, outcome.stages, stdout)
    summary.failures(outcome.stages, stdout)
    if outcome.record["options"].get("check"):
        summary.drift_report(outcome.stages, stdout)
    stdout.print(f"ledger: {outcome.run.path}  (clusterforge runs show {outcome.run.id})")
    workflow.finish(outcome, bool(outcome.record["options"].get("check")))
