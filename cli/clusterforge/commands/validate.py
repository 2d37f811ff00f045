"""`clusterforge validate`: validate a fleet (or one node's capture) and report."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console

from clusterforge.errors import InvalidInput
from clusterforge.validation.reports import FORMATS
from clusterforge.validation.workflow import (
    Output,
    QuarantineOptions,
    default_out_dir,
    validate_capture,
    validate_fleet,
)


def _path(_ctx: click.Context, _param: click.Parameter, value: str | None) -> Path | None:
    """The option's path; an empty one is refused, since Path("") would silently be the current folder."""
    if value is None:
        return None
    if not value.strip():
        raise click.BadParameter("must not be empty: pass a path (./ for the current folder)")
    return Path(value)


def _name(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """A name option (--sku, --host): an empty one would silently fall back to the capture's."""
    if value is not None and not value.strip():
        raise click.BadParameter("must not be empty")
    return value


@click.command()
@click.option(
    "-i",
    "--inventory",
    "inventory",
    type=click.Path(),
    callback=_path,
    help="Inventory file or directory.",
)
@click.option("-l", "--limit", help="Validate only these hosts (an Ansible host pattern).")
@click.option(
    "--level",
    type=click.Choice(["quick", "full", "perf", "framework"]),
    default="quick",
    show_default=True,
    help="quick: seconds per node; full: adds dcgmi diag -r 2 where DCGM is installed (minutes); "
    "perf: NCCL/HCCL, RDMA and storage benchmarks alone and in pairs, on idle or drained nodes (minutes); "
    "framework: the training environment (framework_env) sees every accelerator and all-reduces across them.",
)
@click.option(
    "--max-rounds",
    type=click.IntRange(1, 20),
    help="With --level perf: the most rounds of pair tests (a survey, then re-pairing failures) "
    "[default: 4].",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="table",
    show_default=True,
    help="What to print on stdout; every report file is written regardless.",
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False),
    callback=_path,
    help="Report folder [default: reports/validate-<UTC time>/].",
)
@click.option(
    "--forks", type=click.IntRange(1, 5000), help="Nodes validated in parallel [default: ansible.cfg's]."
)
@click.option(
    "--skip-check", "skip_checks", multiple=True, metavar="ID", help="Skip a check id (repeatable)."
)
@click.option(
    "--quarantine",
    is_flag=True,
    help="Drain failed nodes in Slurm and taint/label them in Kubernetes where those run.",
)
@click.option(
    "--quarantine-on-error",
    is_flag=True,
    help="With --quarantine: also quarantine nodes that could not be validated (status error).",
)
@click.option(
    "--quarantine-dry-run",
    is_flag=True,
    help="With --quarantine: run the quarantine playbook in check mode and only report the commands.",
)
@click.option(
    "--from-capture",
    "capture_dir",
    type=click.Path(),
    callback=_path,
    help="Validate one node from a folder of captured tool outputs; runs nothing on nodes.",
)
@click.option(
    "--sku",
    callback=_name,
    help="With --from-capture: the node's SKU (else -i/--host or the capture's meta.json).",
)
@click.option(
    "--bom",
    "bom_file",
    type=click.Path(dir_okay=False),
    callback=_path,
    help="With --from-capture: YAML/JSON file of BOM variables (e.g. group_vars/all/versions.yml).",
)
@click.option(
    "--host", callback=_name, help="With --from-capture and -i: the inventory host the capture comes from."
)
@click.option(
    "--allow-scripts",
    is_flag=True,
    help="Run executable files of the inventory (Ansible's script inventories); off: they are refused.",
)
def validate(
    inventory: Path | None,
    limit: str | None,
    level: str,
    max_rounds: int | None,
    fmt: str,
    out_dir: Path | None,
    forks: int | None,
    skip_checks: tuple[str, ...],
    quarantine: bool,
    quarantine_on_error: bool,
    quarantine_dry_run: bool,
    capture_dir: Path | None,
    sku: str | None,
    bom_file: Path | None,
    host: str | None,
    allow_scripts: bool,
) -> None:
    """Validate nodes against their SKU and the version BOM; write reports.

    \b
    clusterforge validate -i INV [--level quick|full|perf|framework] [--format table|json|junit|html|prom]
                          [--out DIR] [--limit HOSTS] [--quarantine]
    clusterforge validate --from-capture DIR [--sku NAME] [--bom FILE] [-i INV --host HOST]

    Writes report.json, junit.xml, report.html and clusterforge.prom (Prometheus
    textfile) into --out, which must be writable before anything runs. Exit 0
    when every node passes (warnings allowed), 3 when any node fails or could
    not be validated, 2 on bad input. Should writing the reports fail after
    validating, the error is printed and the exit code stays 0 or 3.
    """
    if (quarantine_on_error or quarantine_dry_run) and not quarantine:
        raise InvalidInput(
            "--quarantine-on-error and --quarantine-dry-run only apply with --quarantine",
            "add --quarantine",
        )
    _check_ids_known(skip_checks)
    if max_rounds is not None and level != "perf":
        raise InvalidInput(
            "--max-rounds only applies with --level perf", "drop --max-rounds, or add --level perf"
        )
    output = Output(
        out_dir=out_dir or default_out_dir(),
        fmt=fmt,
        stdout=Console(),
        stderr=Console(stderr=True),
    )
    if capture_dir is not None:
        if level in ("perf", "framework"):
            raise InvalidInput(
                f"--level {level} runs on live nodes: a capture cannot be benchmarked or probed",
                "drop --from-capture and pass -i INVENTORY",
            )
        if quarantine or limit is not None or forks:
            raise InvalidInput(
                "--from-capture validates one captured node: --quarantine, --limit and --forks do not apply",
                "drop those options",
            )
        validate_capture(
            capture_dir,
            level,
            output,
            sku=sku,
            bom_file=bom_file,
            inventory_path=inventory,
            host=host,
            skip_checks=list(skip_checks),
            allow_scripts=allow_scripts,
        )
        return
    if inventory is None:
        raise InvalidInput("no inventory", "pass -i INVENTORY (or --from-capture DIR for one captured node)")
    if sku or bom_file or host:
        raise InvalidInput(
            "--sku, --bom and --host only apply with --from-capture", "drop them, or add --from-capture"
        )
    if level == "perf":
        if skip_checks:
            raise InvalidInput("--skip-check does not apply to --level perf", "drop --skip-check")
        from clusterforge.validation.perf import validate_perf_fleet

        validate_perf_fleet(
            inventory,
            output,
            limit=limit,
            forks=forks,
            quarantine=QuarantineOptions(quarantine, quarantine_on_error, quarantine_dry_run),
            allow_scripts=allow_scripts,
            max_rounds=max_rounds or 4,
        )
        return
    if level == "framework":
        if skip_checks:
            raise InvalidInput("--skip-check does not apply to --level framework", "drop --skip-check")
        from clusterforge.validation.framework import validate_framework_fleet

        validate_framework_fleet(
            inventory,
            output,
            limit=limit,
            forks=forks,
            quarantine=QuarantineOptions(quarantine, quarantine_on_error, quarantine_dry_run),
            allow_scripts=allow_scripts,
        )
        return
    validate_fleet(
        inventory,
        level,
        output,
        limit=limit,
        forks=forks,
        skip_checks=list(skip_checks),
        quarantine=QuarantineOptions(quarantine, quarantine_on_error, quarantine_dry_run),
        allow_scripts=allow_scripts,
    )


def _check_ids_known(check_ids: tuple[str, ...]) -> None:
    from cfcore.checks import CHECK_IDS

    unknown = [c for c in check_ids if c not in CHECK_IDS]
    if unknown:
        raise InvalidInput(
            f"--skip-check: unknown check id(s) {', '.join(unknown)}",
            f"use one of the known ids: {', '.join(CHECK_IDS)}",
        )
