"""node_sku: known to the catalog, and consistent with the host's accelerator group."""

from __future__ import annotations

from clusterforge.catalog import VENDOR_GROUPS
from clusterforge.inventory_check.context import UNRESOLVED, Context, HostView, kind
from clusterforge.inventory_check.hosts import is_managed
from clusterforge.inventory_check.problems import Problem

_GROUP_VENDORS = {group: vendor for vendor, group in VENDOR_GROUPS.items()}


def check_skus(ctx: Context) -> list[Problem]:
    problems: list[Problem] = []
    for view in ctx.views:
        if not is_managed(view):
            continue
        name = view.value("node_sku")
        if name is None or name is UNRESOLVED:
            continue  # missing: reported by the required-variables check
        if not isinstance(name, str):
            problems.append(
                view.problem(
                    "sku.type",
                    "node_sku",
                    f"node_sku must be a SKU name, got {kind(name)} {name!r}",
                    "set node_sku to a SKU of the catalog, e.g. hgx-h100-8gpu",
                )
            )
            continue
        unknown = ctx.unknown_sku(view)
        if unknown:
            problems.append(unknown)
            continue
        problems += _vendor_groups(ctx, view)
    return problems + ctx.catalog_problems


def _vendor_groups(ctx: Context, view: HostView) -> list[Problem]:
    """Accelerator roles run by group: a host outside its vendor's group gets no driver."""
    sku = ctx.sku(view)
    if sku is None:
        return []
    name = view.value("node_sku")
    vendor = (sku.get("accelerator") or {}).get("vendor")
    problems = []
    for group in sorted(view.groups & set(_GROUP_VENDORS)):
        expected = _GROUP_VENDORS[group]
        if vendor != expected:
            what = f"a {vendor} accelerator" if vendor else "no accelerator"
            problems.append(
                view.problem(
                    "sku.group_mismatch",
                    "node_sku",
                    f"host is in group {group} ({expected} accelerators) but its SKU {name!r} has {what}",
                    f"set node_sku to the host's {expected} SKU, or move the host out of {group}",
                )
            )
    if vendor and VENDOR_GROUPS[vendor] not in view.groups:
        group = VENDOR_GROUPS[vendor]
        problems.append(
            view.problem(
                "sku.group_missing",
                "node_sku",
                f"SKU {name!r} has {vendor} accelerators but the host is not in group {group}: "
                "its driver and runtime would never be installed",
                f"add the host to group {group} (or correct node_sku)",
            )
        )
    return problems
