"""`clusterforge demo`: README's main job on one machine, from an empty lab to a validated cluster."""

from __future__ import annotations

import os

import click
from rich.console import Console

from clusterforge.commands.bringup import LEDGER_HELP
from clusterforge.commands.lab import _print_up, name_option, stdout_console


@click.command()
@name_option
@click.option("--ledger", "ledger_dir", type=click.Path(file_okay=False), help=LEDGER_HELP)
def demo(name: str, ledger_dir: str | None) -> None:
    """Bring up the local lab and take it through every stage to the validation report.

    \b
    1. `clusterforge lab up`: podman nodes reachable over SSH (default mix:
       control, 2 NVIDIA GPU, 1 Ascend NPU, 1 storage node), its inventory;
    2. `clusterforge bringup` of that inventory through every stage, the
       last one the validation report;
    3. where to look: the run's ledger and reports, what Prometheus sees,
       and how to take the lab down.
    The lab stays up. A second `clusterforge bringup -i inventories/lab`
    changes nothing.

    \b
    Exit codes: as `clusterforge bringup` (0: every node finished every
    stage and passed validation), 4 when podman, root or the image are missing.
    """
    from clusterforge.bringup import summary, workflow
    from clusterforge.bringup.progress import BringupDisplay
    from clusterforge.bringup.stages import STAGE_NAMES
    from clusterforge.lab.context import LabContext
    from clusterforge.lab.monitoring_view import monitoring_view
    from clusterforge.lab.up import UpRequest, lab_up
    from clusterforge.paths import project_root

    stdout = stdout_console()
    ctx = LabContext.create(project_root())
    up = lab_up(ctx, UpRequest(name=name, counts={}))
    _print_up(up, ctx.reporter.elapsed())
    if up.vault_password_file:  # the lab's secrets are Vault values of its inventory
        os.environ["ANSIBLE_VAULT_PASSWORD_FILE"] = str(up.vault_password_file)
    display = BringupDisplay(Console(stderr=True, highlight=False, soft_wrap=True))
    options = workflow.BringupOptions(inventory=str(up.inventory), stages=list(STAGE_NAMES))
    outcome = workflow.start(options, workflow.ledger_from(ledger_dir), display, stdout)

    stdout.print()
    summary.host_table(outcome.record, outcome.stages, stdout)
    summary.failures(outcome.stages, stdout)
    monitor = next((n for n in up.nodes if "monitoring" in n.role.groups), None)
    if monitor is not None and outcome.record["status"] == "succeeded":
        stdout.print(f"\nPrometheus on {monitor.host} (http://{monitor.ip}:9090):", markup=False)
        for line in monitoring_view(ctx, monitor.container).lines():
            stdout.print(f"  {line}", markup=False)
    run = outcome.run
    validation = sorted(run.path.glob("validation-*"))
    stdout.print("\nwhere to look:", markup=False)
    for text in (
        f"run ledger: {run.path}  (clusterforge runs show {run.id})",
        f"validation report: {validation[-1]}/report.html, report.json, junit.xml" if validation else "",
        f"inventory: {up.inventory}; vault password file: {up.vault_password_file}",
        f"again, changing nothing: clusterforge bringup -i {up.inventory}  (--check: the drift report)",
        f"the lab: clusterforge lab status --name {name}; remove it: clusterforge lab down --name {name}",
    ):
        if text:
            stdout.print(f"  {text}", markup=False)
    workflow.finish(outcome, check=False)
