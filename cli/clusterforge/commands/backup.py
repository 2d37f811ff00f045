"""`clusterforge backup` and `clusterforge restore`: cluster state into dated, checksummed sets, and back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from clusterforge.commands.bringup import parse_extra_vars
from clusterforge.commands.inspect import timer_install_options
from clusterforge.commands.lab import stdout_console
from clusterforge.errors import ChecksFailed, InvalidInput

COMPONENT_HELP = "Only this component (repeatable): ledger, etcd, slurm, slurmdbd, juicefs, ceph, monitoring."
TARGET_HELP = (
    "A folder on this machine, or s3://BUCKET/PREFIX [default: the inventory's backup_target / backup_s3_*]."
)
LEDGER_HELP = "The run ledger folder [default: .clusterforge/runs]."


def _stderr() -> Console:
    return Console(stderr=True, highlight=False, soft_wrap=True)


def _load_inventory(inventory: str | None, allow_scripts: bool, command: str) -> Any:
    from clusterforge.validation.inventory import checked_inventory

    if not inventory:
        raise InvalidInput("-i/--inventory is required", f"pass the inventory: clusterforge {command} -i INV")
    return checked_inventory(inventory, allow_scripts=allow_scripts, console=_stderr(), note=_stderr().print)


def _components(values: tuple[str, ...]) -> list[str]:
    from cfcore.backup_set import COMPONENTS

    unknown = [value for value in values if value not in COMPONENTS]
    if unknown:
        raise InvalidInput(
            f"--component {', '.join(unknown)}: no such component", f"choose among {', '.join(COMPONENTS)}"
        )
    return list(dict.fromkeys(values))


def _set_table(manifest: dict[str, Any], stdout: Console) -> None:
    table = Table(title=f"backup set {manifest['id']}", show_lines=False)
    for column in ("component", "status", "hosts", "items", "bytes", "why"):
        table.add_column(column)
    for name, entry in manifest["components"].items():
        items = [item for item in manifest["items"] if item["component"] == name]
        table.add_row(
            name,
            entry.get("status", ""),
            ", ".join(entry.get("hosts") or []),
            str(len(items)),
            str(sum(item["size"] for item in items)),
            entry.get("reason", ""),
        )
    stdout.print(table)


@click.group("backup", invoke_without_command=True)
@click.option("-i", "--inventory", metavar="PATH", help="The inventory.")
@click.option("--target", metavar="DIR|s3://BUCKET/PREFIX", help=TARGET_HELP)
@click.option("--component", "components", multiple=True, metavar="NAME", help=COMPONENT_HELP)
@click.option(
    "-e", "--extra-vars", "extra_vars", multiple=True, metavar="VARS", help="KEY=VALUE, a mapping or @FILE."
)
@click.option("--ledger", "ledger_dir", type=click.Path(file_okay=False), help=LEDGER_HELP)
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.option("--allow-scripts", is_flag=True, help="Run executable inventory files to list their hosts.")
@click.pass_context
def backup(
    ctx: click.Context,
    inventory: str | None,
    target: str | None,
    components: tuple[str, ...],
    extra_vars: tuple[str, ...],
    ledger_dir: str | None,
    fmt: str,
    allow_scripts: bool,
) -> None:
    """Take a backup set of cluster state (no sub-command), or list, verify, schedule them.

    \b
    clusterforge backup -i INV [--target DIR|s3://BUCKET/PREFIX] [--component NAME]...
    clusterforge backup list    [-i INV] [--target ...]
    clusterforge backup verify  SET_DIR
    clusterforge backup install -i INV [--on HOST]

    \b
    A set holds the etcd snapshot, Slurm's controller state (and accounting
    database), each JuiceFS volume's metadata dump, Ceph's monmap and keys,
    Prometheus's files and the run ledger, each item checksummed in
    manifest.json; secret items are encrypted on their node with
    backup_encryption_key (Vault). Sets beyond backup_keep (14) are removed.
    Exit 0 every component taken, 3 some failed (the set is kept, the
    failures named), 2 bad input, 4 the playbook could not run.
    """
    if ctx.invoked_subcommand is not None:
        return
    from clusterforge.backups import workflow

    loaded = _load_inventory(inventory, allow_scripts, "backup")
    chosen = _components(components)
    resolved = workflow.resolve_target(target, loaded)
    result = workflow.take(
        loaded,
        resolved,
        chosen,
        parse_extra_vars(extra_vars),
        Path(ledger_dir) if ledger_dir else None,
        _stderr().print,
    )
    stdout = stdout_console()
    if fmt == "json":
        click.echo(json.dumps({"set_dir": str(result.set_dir), "manifest": result.manifest}, indent=1))
    else:
        _set_table(result.manifest, stdout)
        stdout.print(
            f"set: {result.set_dir}" + (f"  (copied to {resolved.describe()})" if resolved.is_s3 else "")
        )
    failed = [name for name, c in result.manifest["components"].items() if c.get("status") == "failed"]
    if failed or result.outcome.rc != 0:
        raise ChecksFailed(
            f"backup set {result.manifest['id']} is incomplete: "
            + ("; ".join(f"{n}: {result.manifest['components'][n].get('reason', '')}" for n in failed) or "")
            + ("" if not result.outcome.failures else "\n" + "\n".join(result.outcome.failures[-5:])),
            f"fix what is named and take another backup; the whole output: {result.outcome.stdout}",
        )


@backup.command("list")
@click.option("-i", "--inventory", metavar="PATH", help="The inventory (its backup_target / backup_s3_*).")
@click.option("--target", metavar="DIR|s3://BUCKET/PREFIX", help=TARGET_HELP)
@click.option(
    "-e", "--extra-vars", "extra_vars", multiple=True, metavar="VARS", help="KEY=VALUE, a mapping or @FILE."
)
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.option("--allow-scripts", is_flag=True, help="Run executable inventory files to list their hosts.")
def list_cmd(
    inventory: str | None, target: str | None, extra_vars: tuple[str, ...], fmt: str, allow_scripts: bool
):
    """The complete sets of a target, oldest first."""
    from clusterforge.backups import workflow

    loaded = _load_inventory(inventory, allow_scripts, "backup list") if inventory else None
    resolved = workflow.resolve_target(target, loaded)
    if resolved.is_s3 and loaded is None:
        raise InvalidInput("an S3 target is read with the inventory's keys", "pass -i INV as well")
    sets = workflow.list_sets(resolved, loaded, parse_extra_vars(extra_vars))
    stdout = stdout_console()
    if fmt == "json":
        click.echo(json.dumps(sets, indent=1))
        return
    table = Table(title=f"backup sets in {resolved.describe()}")
    for column in ("set", "items", "bytes", "components"):
        table.add_column(column)
    for entry in sets:
        components = entry.get("components") or {}
        table.add_row(
            entry["id"],
            str(entry.get("items", "")),
            str(entry.get("bytes", "")),
            entry.get("error")
            or ", ".join(f"{k} {v}" for k, v in components.items() if v != "not applicable"),
        )
    stdout.print(table)


@backup.command("verify")
@click.argument("set_dir", type=click.Path(file_okay=False, exists=True))
def verify_cmd(set_dir: str) -> None:
    """Check every item of SET_DIR against its manifest (size and sha256); exit 3 naming each bad one."""
    from cfcore import backup_set

    try:
        data = backup_set.load_manifest(set_dir)
    except backup_set.BackupSetError as err:
        raise InvalidInput(err.message, err.fix) from None
    problems = backup_set.verify(set_dir, data)
    stdout = stdout_console()
    if problems:
        raise ChecksFailed(
            f"{len(problems)} of {len(data['items'])} items of {set_dir} fail:\n"
            + "\n".join(f"  {problem}" for problem in problems),
            "restore from another set, or fetch this one again",
        )
    stdout.print(f"{set_dir}: {len(data['items'])} items match the manifest")


DEFAULT_SCHEDULE = "*-*-* 01:30"


def backup_jobs(inventory: Any) -> list[dict[str, Any]]:
    """The backup's timer: `backup_schedule` (systemd OnCalendar), the ledger `backup_ledger_dir`
    where the site keeps it on the controller (else the timer's working folder's)."""
    from clusterforge.backups.workflow import site_var

    ledger = site_var(inventory, "backup_ledger_dir")
    args = ["backup", "-i", "{{ clusterforge_inventory }}"] + (["--ledger", str(ledger)] if ledger else [])
    return [
        {
            "name": "backup",
            "description": "ClusterForge backup of cluster state",
            "schedule": str(site_var(inventory, "backup_schedule") or DEFAULT_SCHEDULE),
            "args": args,
            "randomized_delay_s": 300,
        }
    ]


@backup.command("install")
@timer_install_options
def install_cmd(inventory: Path, on: str | None, extra: tuple[str, ...]) -> None:
    """Install the backup's systemd timer (backup_schedule, default daily 01:30) on the controller node."""
    from clusterforge.ops_timers import install_jobs

    install_jobs(inventory, on, "backup", backup_jobs, parse_extra_vars(extra))


@click.command("restore")
@click.option(
    "-i", "--inventory", metavar="PATH", help="The inventory (as it is now: the hosts to restore onto)."
)
@click.option(
    "--from", "source", required=True, metavar="SET", help="A set folder, or a set id in the target."
)
@click.option("--target", metavar="DIR|s3://BUCKET/PREFIX", help=TARGET_HELP)
@click.option("--component", "components", multiple=True, metavar="NAME", help=COMPONENT_HELP)
@click.option(
    "--fresh",
    "fresh",
    multiple=True,
    metavar="HOST",
    help="A host that was replaced (repeatable or comma-separated): brought up once its data is placed.",
)
@click.option(
    "-e", "--extra-vars", "extra_vars", multiple=True, metavar="VARS", help="KEY=VALUE, a mapping or @FILE."
)
@click.option("--ledger", "ledger_dir", type=click.Path(file_okay=False), help=LEDGER_HELP)
@click.option("--allow-scripts", is_flag=True, help="Run executable inventory files to list their hosts.")
def restore(
    inventory: str | None,
    source: str,
    target: str | None,
    components: tuple[str, ...],
    fresh: tuple[str, ...],
    extra_vars: tuple[str, ...],
    ledger_dir: str | None,
    allow_scripts: bool,
) -> None:
    """Put a backup set back, bring the replaced hosts up on it, and prove the services work.

    \b
    1. verify: every item against the manifest (a bad one: exit 2, nothing runs);
    2. place: playbooks/restore.yml (each component's packages from its role,
       its data where that role finds it; JuiceFS dumps loaded into empty engines);
    3. bring up the --fresh hosts: their node stages (preflight to accelerators)
       before the data is placed, their service stages (storage, schedulers,
       monitoring) after it;
    4. drill: playbooks/restore_drill.yml (Slurm's nodes, partitions and queued
       jobs are back and a job runs; files written before the backup read back;
       Prometheus has its rules), and the ledger's runs are readable.
    Exit 0 done, 3 a step failed (named), 2 bad input.
    """
    from clusterforge.backups import workflow

    loaded = _load_inventory(inventory, allow_scripts, "restore")
    chosen = _components(components)
    fresh_hosts = [host for value in fresh for host in value.split(",") if host]
    unknown = [host for host in fresh_hosts if host not in loaded.hostvars]
    if unknown:
        raise InvalidInput(f"--fresh {', '.join(unknown)}: not in the inventory", "name inventory hosts")
    extra = parse_extra_vars(extra_vars)
    resolved = None
    if not Path(source).expanduser().is_dir():
        resolved = workflow.resolve_target(target, loaded)
    set_dir = workflow.locate_set(source, resolved, loaded, extra)
    data = workflow.verified_manifest(set_dir, chosen or None)
    stderr = _stderr()
    stderr.print(f"set {data['id']} ({set_dir}): {len(data['items'])} items verified")
    ledger = Path(ledger_dir) if ledger_dir else None

    def bring_up(stages: tuple[str, ...]) -> None:
        if fresh_hosts:
            _bring_up(loaded, fresh_hosts, list(stages), extra, ledger, allow_scripts)

    from clusterforge.runs.ledger import DEFAULT_LEDGER

    result = workflow.place_and_drill(
        loaded, set_dir, data, chosen, extra, (ledger or DEFAULT_LEDGER).resolve(), bring_up, stderr.print
    )
    stdout = stdout_console()
    stdout.print(
        f"restored {', '.join(result.components) or 'nothing on nodes'} from {data['id']}"
        + (f"; ledger: {len(result.ledger.get('restored', []))} run(s)" if result.ledger else "")
        + ("; the drill passed" if result.drill is not None else "")
    )


def _bring_up(
    inventory: Any,
    hosts: list[str],
    stages: list[str],
    extra: dict[str, Any],
    ledger: Path | None,
    scripts: bool,
) -> None:
    """A bring-up run of the replaced hosts through `stages` (in the ledger like any other)."""
    from clusterforge.bringup import workflow
    from clusterforge.bringup.progress import BringupDisplay
    from clusterforge.commands.bringup import report

    options = workflow.BringupOptions(
        inventory=str(inventory.path),
        stages=stages,
        limit=",".join(hosts),
        extra_vars=extra,
        allow_scripts=scripts,
    )
    display = BringupDisplay(_stderr())
    loaded = workflow.checked_inventory(options, display)
    outcome = workflow.start(options, workflow.ledger_from(str(ledger) if ledger else None), display,
                             stdout_console(), inventory=loaded)  # fmt: skip
    report(outcome, stdout_console())
