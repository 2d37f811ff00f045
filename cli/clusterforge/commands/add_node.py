"""`clusterforge add-node`: new hosts into a running cluster without re-running roles on the others."""

from __future__ import annotations

import dataclasses
from typing import Any

import click
from rich.console import Console

from clusterforge.bringup.stages import ADD_NODE_STAGE_NAMES, select_stages
from clusterforge.commands.bringup import parse_extra_vars, refuse_with_resume, report, run_options
from clusterforge.commands.lab import stdout_console
from clusterforge.errors import InvalidInput

NODE_STAGES = [name for name in ADD_NODE_STAGE_NAMES if name not in ("members", "validate")]
SKIPPABLE = (*NODE_STAGES, "validate")  # members is the point of add-node


def _stages(skip: str | None) -> list[str]:
    kept = select_stages(None, skip, SKIPPABLE)
    return [name for name in ADD_NODE_STAGE_NAMES if name in kept or name == "members"]


def check_new_hosts(hosts: tuple[str, ...], inventory: Any, source: str) -> list[str]:
    """The HOST arguments as inventory hosts, in the order given; unknown ones are bad input."""
    unknown = [host for host in hosts if host not in inventory.hostvars]
    if unknown:
        raise InvalidInput(
            f"{', '.join(unknown)}: not in the inventory {source}",
            "add the host to the inventory first (with its groups and variables), then run add-node",
        )
    return list(dict.fromkeys(hosts))


@click.command("add-node")
@click.option(
    "-i", "--inventory", "inventory", metavar="PATH", help="The inventory, with the new hosts already in it."
)
@click.argument("hosts", nargs=-1, metavar="HOST...")
@click.option("--skip", metavar="LIST", help=f"Skip these stages (comma-separated): {', '.join(SKIPPABLE)}.")
@click.option(
    "--check",
    is_flag=True,
    help="Change nothing: what would change on the new hosts and the others; exit 3 if any.",
)
@click.option("--resume", "resume_id", metavar="RUN", help="Continue add-node run RUN.")
@run_options
def add_node(
    inventory: str | None,
    hosts: tuple[str, ...],
    skip: str | None,
    check: bool,
    resume_id: str | None,
    force: bool | None,
    max_fail_percent: float,
    extra_vars: tuple[str, ...],
    forks: int | None,
    ledger_dir: str | None,
    allow_scripts: bool,
) -> None:
    """Add HOST... (already in the inventory) to the running cluster.

    \b
    The new hosts alone go through the node stages (preflight, base, fabric,
    accelerators, storage, schedulers, monitoring: the Kubernetes join is the
    kubernetes role's, with a token from the first control-plane node). Then
    `members` (playbooks/members.yml) updates what names every host, on every
    host, without re-running their roles: the /etc/hosts block, slurm.conf
    (existing workers keep their NodeName lines; slurmctld and slurmd restart,
    or `scontrol reconfigure` where no restart is needed) and Prometheus's
    file-SD targets. Last, the new hosts are validated.

    \b
    Exit codes as `clusterforge bringup`: 0 done, 2 invalid input (nothing
    ran), 3 hosts failed or the run stopped (--check: changes found).
    """
    from clusterforge.bringup import workflow
    from clusterforge.bringup.progress import BringupDisplay

    stdout = stdout_console()
    display = BringupDisplay(Console(stderr=True, highlight=False, soft_wrap=True))
    ledger = workflow.ledger_from(ledger_dir)
    if resume_id:
        refuse_with_resume((("-i", inventory), ("HOST", hosts), ("--skip", skip), ("--check", check)))
        outcome = workflow.resume(
            resume_id, ledger, display, stdout, force=force, allow_scripts=allow_scripts,
            extra_vars=parse_extra_vars(extra_vars),
        )  # fmt: skip
        report(outcome, stdout)
        return
    if not inventory:
        raise InvalidInput(
            "-i/--inventory is required", "pass -i with the inventory that lists the new hosts"
        )
    if not hosts:
        raise InvalidInput("no HOST given", "name the new hosts: clusterforge add-node -i INV HOST...")
    options = workflow.BringupOptions(
        inventory=inventory,
        stages=_stages(skip),
        check=check,
        force=bool(force),
        max_fail_percent=max_fail_percent,
        extra_vars=parse_extra_vars(extra_vars),
        forks=forks,
        allow_scripts=allow_scripts,
    )
    loaded = workflow.checked_inventory(options, display)  # the whole inventory: the new hosts are named
    new_hosts = check_new_hosts(hosts, loaded, inventory)
    options.limit = ",".join(new_hosts)  # what the ledger keeps, for --resume
    loaded = dataclasses.replace(loaded, targets=new_hosts)
    outcome = workflow.start(options, ledger, display, stdout, kind=workflow.ADD_NODE_KIND, inventory=loaded)
    report(outcome, stdout)
