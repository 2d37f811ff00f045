"""`clusterforge upgrade`: rolling upgrades of a component (docs/design.md, "Rolling upgrades")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from clusterforge.commands.lab import stdout_console
from clusterforge.commands.upgrade_run import run
from clusterforge.upgrade.plan import build_plan, plan_options, plan_options_from, render_table
from clusterforge.validation.inventory import checked_inventory


@click.group()
def upgrade() -> None:
    """Rolling upgrades: plan the batches, run them (drain, upgrade, validate, resume), roll back."""


upgrade.add_command(run)


@upgrade.command("plan")
@click.option("-i", "--inventory", required=True, type=click.Path(), help="Inventory file or directory.")
@click.option("-l", "--limit", help="Plan only these hosts (an Ansible host pattern).")
@click.option(
    "--installed",
    "installed_file",
    type=click.Path(dir_okay=False),
    help="JSON or YAML {host: version}: the installed versions, instead of reading them on the nodes.",
)
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@plan_options
def plan(inventory: str, limit: str | None, installed_file: str | None, fmt: str, **settings: Any) -> None:
    """Plan the batches that upgrade a component to --to, within the limits; changes nothing.

    \b
    clusterforge upgrade plan -i INV --to VERSION [--component nvidia-driver|ascend-driver|
        ascend-firmware|cann] [--installed FILE] [--canary N] [--max-unavailable N|P%]
        [--partition-max-unavailable PART=LIMIT ...] [--floor N|P%]
        [--partition-floor PART=LIMIT ...] [--domain-share N|P%] [--limit PATTERN]

    Without --installed, the installed versions are read on the nodes
    (playbooks/upgrade_versions.yml, check mode). Partitions are slurm:NAME,
    k8s:QUEUE and unscheduled. Exit 0 with a plan (blocked hosts included),
    2 on bad input, 4 when no node could be read.
    """
    options = plan_options_from(settings)
    loaded = checked_inventory(inventory, limit)
    if installed_file is not None:
        from clusterforge.upgrade.versions import read_installed_file

        installed = read_installed_file(Path(installed_file))
    else:
        from clusterforge.upgrade.versions import installed_versions

        stderr = Console(stderr=True, highlight=False)
        installed = installed_versions(
            loaded, options.component, limit, note=lambda text: stderr.print(f"note: {text}", markup=False)
        )
    result = build_plan(loaded, options, installed)
    if fmt == "json":
        click.echo(json.dumps(result.to_dict(), indent=1))
    else:
        render_table(result, stdout_console())
