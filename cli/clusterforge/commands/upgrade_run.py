"""`clusterforge upgrade run`: a rolling upgrade, batch by batch, recorded per node in the run ledger."""

from __future__ import annotations

from typing import Any

import click
from rich.console import Console

from clusterforge.commands.bringup import LEDGER_HELP, parse_extra_vars, refuse_with_resume
from clusterforge.errors import InvalidInput
from clusterforge.upgrade.plan import plan_options, plan_options_from


@click.command("run")
@click.option("-i", "--inventory", "inventory", metavar="PATH", help="The inventory.")
@plan_options
@click.option("--limit", metavar="PATTERN", help="Only these hosts (an Ansible host pattern).")
@click.option(
    "--installed",
    "installed_file",
    type=click.Path(dir_okay=False),
    help="The nodes' installed versions ({host: version}, YAML or JSON) instead of reading them.",
)
@click.option(
    "--max-failed",
    metavar="N|P%",
    default=None,
    help="Halt before the next batch once more nodes failed [default: 2%; a failed canary always halts].",
)
@click.option("--allow-reboot", is_flag=True, help="Reboot a node whose new driver needs it.")
@click.option(
    "--drain-timeout",
    "drain_timeout_s",
    type=click.IntRange(1, 86400),
    default=3600,
    show_default=True,
    help="Seconds to wait for a node's running jobs (Slurm) or evictions (Kubernetes).",
)
@click.option("--resume", "resume_id", metavar="RUN", help="Continue upgrade run RUN.")
@click.option("--rollback", "rollback_id", metavar="RUN", help="Take the done nodes of run RUN back.")
@click.option(
    "-e", "--extra-vars", "extra_vars", multiple=True, metavar="VARS", help="As ansible-playbook -e."
)
@click.option("-f", "--forks", type=click.IntRange(1, 1000), default=None, help="Ansible forks.")
@click.option("--ledger", "ledger_dir", type=click.Path(file_okay=False), help=LEDGER_HELP)
@click.option(
    "--allow-scripts", is_flag=True, help="Allow an executable inventory (it runs a program on this machine)."
)
def run(
    inventory: str | None,
    limit: str | None,
    installed_file: str | None,
    max_failed: str | None,
    allow_reboot: bool,
    drain_timeout_s: int,
    resume_id: str | None,
    rollback_id: str | None,
    extra_vars: tuple[str, ...],
    forks: int | None,
    ledger_dir: str | None,
    allow_scripts: bool,
    **planning: Any,
) -> None:
    """Upgrade the nodes to --to, batch by batch, as `clusterforge upgrade plan` shows.

    \b
    Each node of a batch: precheck (the BOM with the target, the target in the
    repository, the node healthy and not drained by anyone else), drain (Slurm:
    with a reason, waiting for its jobs; Kubernetes: cordon and evict), stop
    the services holding the devices and unload the modules, upgrade through
    the accelerator roles, reboot (only if needed and --allow-reboot),
    validate, and resume only when validation passes. A failed node stays
    drained with the reason. The run halts before the next batch when the
    canary failed or more than --max-failed nodes failed.

    \b
    Exit codes: 0 every node done, 2 invalid input (nothing ran), 3 a node
    failed or the run halted, 4 environment not ready.
    """
    from clusterforge.bringup.workflow import ledger_from
    from clusterforge.upgrade import run as workflow

    console = Console(stderr=True, highlight=False, soft_wrap=True)

    def say(line: str) -> None:
        console.print(line, markup=False)

    ledger = ledger_from(ledger_dir)
    source = click.get_current_context().get_parameter_source
    given_plan = {k: v for k, v in planning.items() if source(k) == click.core.ParameterSource.COMMANDLINE}
    if resume_id or rollback_id:
        if resume_id and rollback_id:
            raise InvalidInput("--resume and --rollback go separately", "pass one of them")
        refuse_with_resume(
            (
                ("-i", inventory),
                ("--limit", limit),
                ("--installed", installed_file),
                *((f"--{k.replace('_', '-')}", v) for k, v in given_plan.items()),
            )
        )
    # Consent (--allow-reboot, --allow-scripts) and the secrets a ledger holds only as digests (-e):
    # from this command line, never from the run's record.
    consent = workflow.Consent(allow_reboot, allow_scripts, parse_extra_vars(extra_vars))
    if resume_id:
        outcome = workflow.resume(resume_id, ledger, say, max_failed, consent)
    elif rollback_id:
        outcome = workflow.rollback(rollback_id, ledger, say, max_failed, consent)
    else:
        if not inventory:
            raise InvalidInput("-i/--inventory is required", "pass -i with the fleet's inventory")
        options = workflow.RunOptions(
            inventory=inventory,
            plan=plan_options_from(planning),
            max_failed=max_failed or "2%",
            allow_reboot=allow_reboot,
            drain_timeout_s=drain_timeout_s,
            extra_vars=parse_extra_vars(extra_vars),
            forks=forks,
            limit=limit,
            allow_scripts=allow_scripts,
        )
        installed = None
        if installed_file:
            from clusterforge.upgrade.versions import read_installed_file

            installed = read_installed_file(installed_file)
        outcome = workflow.start(options, ledger, say, installed)
    workflow.summary(outcome, say)
    workflow.finish(outcome)
