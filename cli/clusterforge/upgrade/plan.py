"""`clusterforge upgrade plan`: a rolling upgrade's batches, from the inventory and the installed versions.

The planner itself is cfcore/upgrade_plan.py (shared with the filter
cf_upgrade_plan). Here: the planning options as click options (`plan_options`,
reused by `clusterforge upgrade run`) and as `PlanOptions`, the inventory
checked and loaded, and the plan as a table.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
from cfcore.inputs import VERSION_FORM, InputError, plain_problem
from cfcore.upgrade_plan import (
    COMPONENTS,
    DEFAULT_COMPONENT,
    DEFAULT_DOMAIN_SHARE,
    DEFAULT_FLOOR,
    DEFAULT_MAX_UNAVAILABLE,
    Limit,
    Plan,
    candidates,
    component_named,
    make_plan,
    slurm_partitions_of,
)
from rich.console import Console
from rich.table import Table

from clusterforge.errors import InvalidInput
from clusterforge.validation.inventory import checked_inventory

# Hosts a table cell names before it says how many more there are.
SHOWN_HOSTS = 6
SHOWN_BLOCKED = 20


@dataclass
class PlanOptions:
    """The planning settings of `clusterforge upgrade plan` and `run` (make_plan's arguments)."""

    target: str
    component: str = DEFAULT_COMPONENT
    canary: int = 1
    max_unavailable: Limit = DEFAULT_MAX_UNAVAILABLE
    partition_max_unavailable: dict[str, Limit] = field(default_factory=dict)
    floor: Limit = DEFAULT_FLOOR
    partition_floor: dict[str, Limit] = field(default_factory=dict)
    domain_share: Limit = DEFAULT_DOMAIN_SHARE

    def __post_init__(self) -> None:
        # The target reaches playbooks/upgrade.yml as an extra variable (templated there): a version only.
        problem = plain_problem(self.target, VERSION_FORM)
        if problem:
            raise InvalidInput(
                f"--to {self.target!r}: the target version {problem}",
                "pass --to VERSION: letters, digits and . + ~ _ - (e.g. 570.133.20)",
            )
        # Limits may come as text or as dataclasses.asdict() left them (a run's record): Limits again.
        self.max_unavailable = _as_limit(self.max_unavailable)
        self.floor = _as_limit(self.floor)
        self.domain_share = _as_limit(self.domain_share)
        self.partition_max_unavailable = {k: _as_limit(v) for k, v in self.partition_max_unavailable.items()}
        self.partition_floor = {k: _as_limit(v) for k, v in self.partition_floor.items()}

    def as_text(self) -> dict[str, Any]:
        """The options as plain data (limits as their text), e.g. for a run's record."""
        return {
            "target": self.target,
            "component": self.component,
            "canary": self.canary,
            "max_unavailable": str(self.max_unavailable),
            "partition_max_unavailable": {k: str(v) for k, v in self.partition_max_unavailable.items()},
            "floor": str(self.floor),
            "partition_floor": {k: str(v) for k, v in self.partition_floor.items()},
            "domain_share": str(self.domain_share),
        }


def _as_limit(value: Any) -> Limit:
    if isinstance(value, dict):
        return Limit(int(value["value"]), bool(value.get("percent")))
    try:
        return Limit.parse(value)
    except InputError as err:
        raise InvalidInput(err.message, err.fix) from None


# ---------------------------------------------------------------- click options ----


def _limit(_ctx: click.Context, _param: click.Parameter, value: str) -> Limit:
    try:
        return Limit.parse(value, "value")
    except InputError as err:
        raise click.BadParameter(f"{err.message}: {err.fix}") from None


def _nonzero_limit(ctx: click.Context, param: click.Parameter, value: str) -> Limit:
    """A limit on what may go down: 0 would let no host go, ever."""
    limit = _limit(ctx, param, value)
    if limit.value == 0:
        raise click.BadParameter(f"{value!r} lets no host go down: allow at least 1 host (or 1%)")
    return limit


def _partition_limits(
    _ctx: click.Context, _param: click.Parameter, values: tuple[str, ...]
) -> dict[str, Limit]:
    """PART=LIMIT, repeatable: {partition: Limit}; the partition's own name may hold ':' (slurm:h100)."""
    limits: dict[str, Limit] = {}
    for value in values:
        name, sep, text = value.rpartition("=")
        if not sep or not name.strip():
            raise click.BadParameter(f"{value!r} is not PARTITION=LIMIT, e.g. slurm:h100=25%")
        try:
            limits[name.strip()] = Limit.parse(text, name.strip())
        except InputError as err:
            raise click.BadParameter(f"{err.message}: {err.fix}") from None
    return limits


LIMIT_HELP = "a number of hosts (3) or a percent of them (10%)"

# The options of plan_options, by the name click passes them under.
PLAN_OPTION_NAMES = (
    "target",
    "component",
    "canary",
    "max_unavailable",
    "partition_max_unavailable",
    "floor",
    "partition_floor",
    "domain_share",
)


def plan_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Add the planning options to a click command; `plan_options_from(kwargs)` reads them back."""
    options = [
        click.option("--to", "target", metavar="VERSION", help="The version to upgrade to (required)."),
        click.option(
            "--component",
            type=click.Choice(list(COMPONENTS)),
            default=DEFAULT_COMPONENT,
            show_default=True,
            help="What to upgrade; its inventory group's hosts are the candidates.",
        ),
        click.option(
            "--canary",
            type=click.IntRange(min=0),
            default=1,
            show_default=True,
            help="Hosts of the first batch, upgraded alone before the rest (0: no canary batch).",
        ),
        click.option(
            "--max-unavailable",
            default=str(DEFAULT_MAX_UNAVAILABLE),
            show_default=True,
            callback=_nonzero_limit,
            help=f"Most hosts of each partition down in one batch: {LIMIT_HELP}; a percent rounds down, "
            "but lets 1 go.",
        ),
        click.option(
            "--partition-max-unavailable",
            multiple=True,
            metavar="PART=LIMIT",
            callback=_partition_limits,
            help="--max-unavailable for one partition (slurm:NAME, k8s:QUEUE, unscheduled); repeatable.",
        ),
        click.option(
            "--floor",
            default=str(DEFAULT_FLOOR),
            show_default=True,
            callback=_limit,
            help=f"Fewest hosts of each partition kept in service: {LIMIT_HELP}; a percent rounds up.",
        ),
        click.option(
            "--partition-floor",
            multiple=True,
            metavar="PART=LIMIT",
            callback=_partition_limits,
            help="--floor for one partition; repeatable.",
        ),
        click.option(
            "--domain-share",
            default=str(DEFAULT_DOMAIN_SHARE),
            show_default=True,
            callback=_nonzero_limit,
            help=f"Most hosts of one rack, leaf switch or NVLink domain down at once: {LIMIT_HELP}; "
            "at least 1.",
        ),
    ]
    return functools.reduce(lambda wrapped, option: option(wrapped), reversed(options), command)


def plan_options_from(kwargs: Mapping[str, Any]) -> PlanOptions:
    """The PlanOptions of a command decorated with `plan_options` (its other keyword arguments ignored)."""
    if not kwargs.get("target"):
        raise InvalidInput("--to is required", "pass --to VERSION, the version to upgrade to")
    return PlanOptions(**{name: kwargs[name] for name in PLAN_OPTION_NAMES if name in kwargs})


# ------------------------------------------------------------------------ plan ----


def component_hosts(inventory: Any, component: str) -> list[str]:
    """The hosts of the component's group among the inventory's targets (--limit), inventory order."""
    try:
        group = set(inventory.group_hosts(component_named(component).group))
    except InputError as err:
        raise InvalidInput(err.message, err.fix) from None
    return [host for host in inventory.targets if host in group]


def build_plan(
    inventory: Any,
    options: PlanOptions,
    installed: Mapping[str, str | None],
    *,
    limit: str | None = None,
    allow_scripts: bool = False,
) -> Plan:
    """The plan for the inventory's hosts of the component; hosts missing from `installed`: version unknown.

    `inventory`: a loaded inventory (clusterforge.validation.inventory), or its path,
    then checked and loaded here with `limit`. InvalidInput on a bad setting.
    """
    if isinstance(inventory, (str, Path)):
        inventory = checked_inventory(inventory, limit, allow_scripts=allow_scripts)
    hosts = component_hosts(inventory, options.component)
    partitions = slurm_partitions_of(inventory.hostvars, inventory.groups)
    try:
        found = candidates(hosts, inventory.hostvars, inventory.groups, partitions)
        _check_partitions_named(options, found)
        return make_plan(
            found,
            {host: installed.get(host) for host in hosts},
            options.target,
            component=options.component,
            canary=options.canary,
            max_unavailable=options.max_unavailable,
            partition_max_unavailable=options.partition_max_unavailable,
            floor=options.floor,
            partition_floor=options.partition_floor,
            domain_share=options.domain_share,
        )
    except InputError as err:
        raise InvalidInput(err.message, err.fix) from None


def _check_partitions_named(options: PlanOptions, found: list[Any]) -> None:
    """Each --partition-* option names a partition of the candidates (a typo would be silently ignored)."""
    known = sorted({p for cand in found for p in cand.partitions})
    for option, limits in (
        ("--partition-max-unavailable", options.partition_max_unavailable),
        ("--partition-floor", options.partition_floor),
    ):
        for name in limits:
            if name not in known:
                raise InvalidInput(
                    f"{option} {name}: no {options.component} host to plan is in partition {name!r}",
                    f"name one of: {', '.join(known) or 'none'}",
                )


# ----------------------------------------------------------------------- table ----


def render_table(plan: Plan, console: Console) -> None:
    """Each batch (hosts, partitions and domains touched), then current and blocked hosts, then the bound."""
    table = Table(title=f"upgrade {plan.component} to {plan.target}")
    for column in ("batch", "canary", "hosts", "names", "partitions", "domains"):
        table.add_column(column, no_wrap=column != "names")
    for batch in plan.batches:
        table.add_row(
            str(batch.index),
            "yes" if batch.canary else "",
            str(len(batch.hosts)),
            abbreviated(batch.hosts, SHOWN_HOSTS),
            ", ".join(batch.partitions),
            ", ".join(f"{kind}: {n}" for kind, n in batch.domains.items()),
        )
    if plan.batches:
        console.print(table)
    else:
        console.print(f"no host to upgrade {plan.component} to {plan.target} on", markup=False)
    console.print(f"current (already at {plan.target}): {len(plan.current)}", markup=False)
    if plan.blocked:
        console.print(
            f"blocked: {len(plan.blocked)} host(s), never in a batch under these limits:", markup=False
        )
        for host, reason in list(plan.blocked.items())[:SHOWN_BLOCKED]:
            console.print(f"  {host}: {reason}", markup=False)
        if len(plan.blocked) > SHOWN_BLOCKED:
            console.print(f"  ... {len(plan.blocked) - SHOWN_BLOCKED} more (--format json lists them)")
    console.print(
        f"batches: {len(plan.batches)} (lower bound under these limits: {plan.lower_bound})", markup=False
    )


def abbreviated(hosts: tuple[str, ...] | list[str], shown: int) -> str:
    if len(hosts) <= shown:
        return ", ".join(hosts)
    return f"{', '.join(hosts[:shown])}, ... +{len(hosts) - shown} more"
