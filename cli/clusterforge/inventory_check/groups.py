"""Group structure: the expected groups exist, dependent groups have what they depend on, and
Slurm partitions select hosts."""

from __future__ import annotations

import difflib
from dataclasses import replace
from typing import Any

from cfcore.groups import EXPECTED_GROUPS

from clusterforge.inventory_check.context import UNRESOLVED, Context, kind
from clusterforge.inventory_check.problems import ERROR, WARNING, Problem

# (group with hosts, group it needs hosts in, why)
_DEPENDS = (
    ("k8s_workers", "k8s_control_plane", "Kubernetes workers need a control plane to join"),
    ("slurm_workers", "slurm_controller", "slurmd needs a slurmctld"),
    ("ceph_osd", "ceph_mon", "Ceph OSDs need monitors"),
)

# Groups whose members form a quorum: an even count tolerates no more failures than one less.
_QUORUM = ("k8s_control_plane", "ceph_mon")


def check_groups(ctx: Context) -> list[Problem]:
    problems = _expected(ctx) + _dependencies(ctx) + _quorum(ctx) + _scheduler_overlap(ctx)
    return problems + _slurm_partitions(ctx)


def _group_problem(
    ctx: Context, group: str | None, rule: str, message: str, fix: str, severity: str
) -> Problem:
    file, line = ctx.inventory.group_origins.get(group, (None, None)) if group else (None, None)
    return Problem(rule=rule, message=message, fix=fix, severity=severity, file=file, line=line)


def _expected(ctx: Context) -> list[Problem]:
    defined = set(ctx.inventory.groups)
    unknown = sorted(defined - set(EXPECTED_GROUPS) - {"all", "ungrouped"})
    problems = []
    for group in EXPECTED_GROUPS:
        if group in defined:
            continue
        close = difflib.get_close_matches(group, unknown, n=1, cutoff=0.8)
        if close:
            problems.append(
                _group_problem(
                    ctx,
                    close[0],
                    "group.misspelt",
                    f"group {close[0]!r} looks like a misspelling of {group!r}, which is not defined: "
                    f"playbooks target {group!r} and would skip these hosts",
                    f"rename group {close[0]!r} to {group!r}",
                    ERROR,
                )
            )
        else:
            problems.append(
                _group_problem(
                    ctx,
                    None,
                    "group.missing",
                    f"group {group!r} is not defined (playbooks that target it will do nothing)",
                    f"define {group}, empty if the site has no such hosts (`{group}: {{hosts: {{}}}}`)",
                    WARNING,
                )
            )
    return problems


def _dependencies(ctx: Context) -> list[Problem]:
    problems = []
    for group, needed, why in _DEPENDS:
        if ctx.group(group) and not ctx.group(needed):
            problems.append(
                _group_problem(
                    ctx,
                    group,
                    "group.dependency",
                    f"group {group} has hosts but {needed} has none: {why}",
                    f"add hosts to {needed}, or empty {group}",
                    ERROR,
                )
            )
    return problems


def _quorum(ctx: Context) -> list[Problem]:
    problems = []
    for group in _QUORUM:
        count = len(ctx.group(group))
        if count and count % 2 == 0:
            problems.append(
                _group_problem(
                    ctx,
                    group,
                    "group.quorum",
                    f"group {group} has {count} hosts: an even count survives no more failures than "
                    f"{count - 1} hosts would",
                    f"use an odd number of {group} hosts (3 or 5)",
                    WARNING,
                )
            )
    return problems


def _scheduler_overlap(ctx: Context) -> list[Problem]:
    both = sorted(ctx.group("k8s_workers") & ctx.group("slurm_workers"))
    if not both:
        return []
    return [
        Problem(
            rule="group.scheduler_overlap",
            message="host is both a Kubernetes and a Slurm worker: both schedulers will place jobs on the "
            "same accelerators",
            fix="give each node to one scheduler (remove it from k8s_workers or slurm_workers)",
            severity=WARNING,
            hosts=tuple(both),
        )
    ]


def _slurm_partitions(ctx: Context) -> list[Problem]:
    """Each partition's nodes_group exists and holds slurm_workers hosts (read where slurmctld runs)."""
    controllers = [v for v in ctx.views if "slurm_controller" in v.groups]
    if not controllers:
        return []
    view = controllers[0]
    partitions = view.value("slurm_partitions")
    if partitions is None or partitions is UNRESOLVED:
        return []
    if not isinstance(partitions, list):
        return [
            view.problem(
                "slurm.partitions",
                "slurm_partitions",
                f"slurm_partitions must be a list, got {kind(partitions)}",
                "list partitions as {name, nodes_group, default, max_time} (group_vars/all/scheduler.yml)",
            )
        ]
    problems: list[Problem] = []
    names: set[str] = set()
    workers = ctx.group("slurm_workers")
    for index, partition in enumerate(partitions):
        problems += _partition(ctx, view, index, partition, names, workers)
    if not any(isinstance(p, dict) and p.get("default") is True for p in partitions):
        problems.append(
            view.problem(
                "slurm.partitions",
                "slurm_partitions",
                "no partition is marked `default: true`: jobs submitted without -p are rejected",
                "mark one partition default: true",
                severity=WARNING,
            )
        )
    return [_unhosted(p) for p in problems]


def _partition(
    ctx: Context, view: Any, index: int, partition: Any, names: set[str], workers: frozenset
) -> list:
    where = f"slurm_partitions[{index}]"
    if not isinstance(partition, dict) or not isinstance(partition.get("name"), str):
        return [
            view.problem(
                "slurm.partitions",
                where,
                f"{where} must be a mapping with a name",
                "write {name: gpu, nodes_group: gpu_nvidia}",
                value=partition,
            )
        ]
    problems = []
    name = partition["name"]
    if name in names:
        problems.append(
            view.problem(
                "slurm.partitions",
                f"{where}.name",
                f"partition {name!r} is defined twice",
                "give each partition its own name",
                value=name,
            )
        )
    names.add(name)
    group = partition.get("nodes_group")
    if group not in ctx.inventory.groups:
        close = difflib.get_close_matches(str(group), sorted(ctx.inventory.groups), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        problems.append(
            view.problem(
                "slurm.partitions",
                f"{where}.nodes_group",
                f"partition {name!r}: nodes_group {group!r} is not a group of the inventory{hint}",
                "set nodes_group to the group whose slurm_workers hosts form the partition",
                value=partition,
            )
        )
    elif not ctx.group(group) & workers:
        problems.append(
            view.problem(
                "slurm.partitions",
                f"{where}.nodes_group",
                f"partition {name!r} is empty: no host of {group} is in slurm_workers",
                f"add {group} hosts to slurm_workers, or point nodes_group at a group that has some",
                value=partition,
            )
        )
    return problems


def _unhosted(problem: Problem) -> Problem:
    """Partition problems are about the site-wide variable, not the controller host they were read on."""
    return replace(problem, host=None)
