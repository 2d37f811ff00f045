"""`clusterforge inventory`: check an inventory before anything runs against it."""

from __future__ import annotations

import click

from clusterforge.errors import InvalidInput


@click.group()
def inventory() -> None:
    """Work with ClusterForge inventories."""


@inventory.command("check")
@click.option(
    "-i",
    "--inventory",
    "sources",
    multiple=True,
    required=True,
    metavar="PATH",
    help="Inventory file, directory or plugin config (repeatable, like ansible -i).",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="text: one `location: problem (fix)` line each; json: a list of problem objects.",
)
@click.option(
    "--allow-scripts",
    is_flag=True,
    help="Run executable inventory files (Ansible's script plugin) to list their hosts. Off by default: "
    "checking an inventory runs nothing from it.",
)
def check(sources: tuple[str, ...], output_format: str, allow_scripts: bool) -> None:
    """Check an inventory: syntax, SKUs, required variables, addresses, BOM and NPU NIC plans.

    Loads the inventory through Ansible (INI, YAML, directories, host lists
    such as 'a,b,' and inventory plugins all work) and reports every problem
    at once. Nothing from the inventory runs: lookups and templates with side
    effects are not evaluated (reported as checked at run time), executable
    inventory files only with --allow-scripts. Vaulted values are decrypted
    with ANSIBLE_VAULT_PASSWORD_FILE, else reported as encrypted, not checked.

    \b
    Exit codes: 0 valid (warnings allowed), 2 invalid, 1 internal error.
    """
    from clusterforge.inventory_check import check_inventory  # imported late: loads Ansible
    from clusterforge.inventory_check.render import render_json, render_text

    report = check_inventory(list(sources), allow_scripts=allow_scripts)
    click.echo(render_json(report) if output_format == "json" else render_text(report))
    if not report.valid:
        count = len(report.errors)
        raise InvalidInput(
            f"the inventory has {count} error{'s' * (count != 1)} (listed above)",
            "fix each problem at the location shown, then rerun `clusterforge inventory check`",
        )


@inventory.command("skus")
@click.option(
    "-i",
    "--inventory",
    "sources",
    multiple=True,
    metavar="PATH",
    help="Include this inventory's clusterforge_sku_catalog overrides (repeatable).",
)
@click.option(
    "--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True
)
def skus(sources: tuple[str, ...], output_format: str) -> None:
    """List the SKU catalog: what each node type must have (node_sku values)."""
    import json

    from clusterforge.catalog import load_catalog

    catalog = load_catalog(_site_overrides(list(sources)) if sources else None)
    if output_format == "json":
        click.echo(json.dumps(catalog, indent=2, default=str))
        return
    _print_catalog(catalog)


def _site_overrides(sources: list[str]) -> dict | None:
    """The inventory's clusterforge_sku_catalog, as the hosts see it (it is site-wide)."""
    from clusterforge.catalog import OVERRIDE_VARIABLE
    from clusterforge.inventory_check.ansible_load import load_inventory
    from clusterforge.inventory_check.context import UNRESOLVED, HostView
    from clusterforge.inventory_check.problems import ERROR

    loaded = load_inventory(sources)
    blocking = [
        p for p in loaded.problems if p.severity == ERROR and p.rule.startswith(("file.", "inventory."))
    ]
    if blocking:
        raise InvalidInput(
            f"{blocking[0].location}: {blocking[0].message}",
            f"{blocking[0].fix}; `clusterforge inventory check -i PATH` lists every problem",
        )
    if not loaded.hosts:
        raise InvalidInput(
            f"no hosts loaded from {', '.join(sources)}",
            "run `clusterforge inventory check -i PATH` and fix what it reports",
        )
    for entry in loaded.hosts.values():
        if OVERRIDE_VARIABLE in entry.vars:
            view = HostView(entry, loaded.loader, vault=loaded.vault)
            value = view.value(OVERRIDE_VARIABLE)
            if value is UNRESOLVED:
                problem = view.unresolved[OVERRIDE_VARIABLE]
                raise InvalidInput(f"{problem.location}: {problem.message}", problem.fix)
            return value
    return None


def _print_catalog(catalog: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="SKU catalog", show_lines=False)
    for column in ("SKU", "accelerators", "link", "PCIe", "compute fabric", "min driver", "modules"):
        # SKU names are what operators copy into node_sku: never wrapped.
        table.add_column(column, no_wrap=column in ("SKU", "min driver"))
    for name, spec in sorted(catalog.items()):
        acc = spec.get("accelerator") or {}
        hca, nics = spec.get("hca"), spec.get("npu_nics")
        if hca:
            fabric = f"{hca['count']}x {hca['rate_gbps']}G {hca['link_layer']}"
        elif nics:
            fabric = f"{nics['count']}x {nics['rate_gbps']}G NPU RoCE, {nics['subnet_rule']}"
        else:
            fabric = "-"
        table.add_row(
            name,
            f"{acc['count']}x {acc['vendor']} {acc['model']} {acc['memory_gib']} GiB" if acc else "-",
            acc.get("interconnect", "-"),
            f"Gen{acc['pcie_gen']} x{acc['pcie_width']}" if acc else "-",
            fabric,
            acc.get("min_driver", "-"),
            acc.get("kernel_module_flavour", "-"),
        )
    Console().print(table)
