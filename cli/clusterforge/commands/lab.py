"""`clusterforge lab`: a local cluster of podman nodes that Ansible reaches over real SSH."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich import box
from rich.console import Console
from rich.table import Table

from clusterforge.errors import ChecksFailed, EnvironmentNotReady, InvalidInput
from clusterforge.lab.context import LabContext
from clusterforge.lab.down import lab_down
from clusterforge.lab.model import DEFAULT_LAB_NAME, MAX_PER_ROLE, ROLE_ORDER, ROLES, parse_profiles
from clusterforge.lab.status import LabStatus, lab_status, refresh_inventory
from clusterforge.lab.up import DEFAULT_TIMEOUT_S, UpRequest, UpResult, lab_up
from clusterforge.paths import project_root

name_option = click.option(
    "--name",
    default=DEFAULT_LAB_NAME,
    show_default=True,
    help="Lab name: several labs can run side by side under different names.",
)


def stdout_console() -> Console:
    """stdout for tables: the terminal's width, or 200 columns in logs and pipes (one row a line)."""
    console = Console(highlight=False)
    if not console.is_terminal:  # keep table rows on one line in logs and pipes
        console = Console(highlight=False, width=200)
    return console


def _shown(path: Path | str) -> str:
    """A path relative to the current folder when it is below it (shorter to copy)."""
    try:
        return str(Path(path).relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _count_help(role: str, what: str) -> str:
    spec = ROLES[role]
    return f"{what}, {spec.node_sku} (default {spec.default_count}; an existing lab: its count)."


@click.group()
def lab() -> None:
    """A local lab cluster: podman containers as nodes, reachable over real SSH.

    \b
    Default mix: 1 control, 2 NVIDIA GPU, 1 Ascend NPU and 1 storage node on
    their own podman network, with a generated inventory (inventories/lab/, or
    inventories/lab-NAME/ for --name NAME) in the project's inventory model.
    Needs root, podman and the node image (scripts/build-node-image.sh).

    \b
      clusterforge lab up && ansible -i inventories/lab all -m ping
      clusterforge lab down
    """


@lab.command()
@name_option
@click.option("--control", type=click.IntRange(0, MAX_PER_ROLE), help=_count_help("control", "Control nodes"))
@click.option("--gpu", type=click.IntRange(0, MAX_PER_ROLE), help=_count_help("gpu", "NVIDIA GPU nodes"))
@click.option("--npu", type=click.IntRange(0, MAX_PER_ROLE), help=_count_help("npu", "Ascend NPU nodes"))
@click.option("--storage", type=click.IntRange(0, MAX_PER_ROLE), help=_count_help("storage", "Storage nodes"))
@click.option(
    "--subnet", metavar="CIDR", help="Lab network (default: the first free 10.89.N.0/24, N >= 100)."
)
@click.option("--image", help="Node image (default: the one scripts/build-node-image.sh builds).")
@click.option(
    "--profile",
    "profiles",
    multiple=True,
    metavar="HOST=PROFILE",
    help="Hardware-replay profile of one host (repeatable), e.g. lab-gpu-01=h100-xid79.",
)
@click.option(
    "--timeout",
    type=click.IntRange(10, 3600),
    default=DEFAULT_TIMEOUT_S,
    show_default=True,
    help="Seconds to wait for nodes to boot and answer SSH.",
)
@click.option("--keep-on-failure", is_flag=True, help="Leave what a failed run created, for debugging.")
@click.option("--no-hwreplay", is_flag=True, help="Do not install the test hardware replay on the nodes.")
def up(
    name: str,
    control: int | None,
    gpu: int | None,
    npu: int | None,
    storage: int | None,
    subnet: str | None,
    image: str | None,
    profiles: tuple[str, ...],
    timeout: int,
    keep_on_failure: bool,
    no_hwreplay: bool,
) -> None:
    """Create the lab (or start its missing/stopped nodes) and write its inventory.

    On an existing lab, `up` completes it: missing nodes are re-created, stopped
    ones started, SSH access and the inventory rewritten. Changing the mix,
    subnet or image of an existing lab is refused: run `lab down` first.
    A failed `up` removes what it created unless --keep-on-failure.
    """
    counts = dict(zip(ROLE_ORDER, (control, gpu, npu, storage), strict=True))
    request = UpRequest(
        name=name,
        counts=counts,
        subnet=subnet,
        image=image,
        profiles=parse_profiles(profiles),
        keep_on_failure=keep_on_failure,
        timeout_s=timeout,
        hwreplay=not no_hwreplay,
    )
    ctx = LabContext.create(project_root())
    result = lab_up(ctx, request)
    _print_up(result, ctx.reporter.elapsed())


def _print_up(result: UpResult, elapsed: float) -> None:
    table = Table(box=box.SIMPLE, title=f"lab {result.spec.name} ({result.spec.subnet})")
    for column in ("host", "role", "address", "node_sku", "hwreplay profile", "container"):
        table.add_column(column)
    for node in result.nodes:
        table.add_row(
            node.host,
            node.role.name,
            node.ip,
            node.role.node_sku,
            node.hwreplay_profile or "-",
            node.container,
        )
    out = stdout_console()
    out.print(table)
    reused = len(result.nodes) - len(result.created) - len(result.started)
    out.print(
        f"lab {result.spec.name!r} is up: {len(result.nodes)} nodes ({len(result.created)} created, "
        f"{len(result.started)} started, {reused} already running) in {elapsed:.1f}s"
    )
    inventory = _shown(result.inventory)
    out.print(f"inventory: {inventory}\n  try: ansible -i {inventory} all -m ping")


@lab.command()
@name_option
def down(name: str) -> None:
    """Remove the lab: its containers, network, volumes, state and generated inventory.

    Nothing else is touched. Removing a lab that is not up says so and succeeds.
    """
    ctx = LabContext.create(project_root())
    result = lab_down(ctx, name)
    if not result.removed_anything:
        click.echo(f"lab {name!r} is not up; nothing to remove")
        return
    parts = [f"{len(result.containers)} containers"]
    parts += [f"network {net}" for net in result.networks]
    parts += [f"volume {vol}" for vol in result.volumes]
    parts += [f"data disk {dev}" for dev in result.disks]
    parts += [_shown(path) for path in result.files]
    click.echo(f"lab {name!r} removed in {ctx.reporter.elapsed():.1f}s: {', '.join(parts)}")


@lab.command()
@name_option
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
def status(name: str, fmt: str) -> None:
    """Show the lab's nodes: container state, address, systemd state, SSH login + sudo.

    Exit status 3 when a node is missing, stopped, not booted or not reachable
    over SSH; 4 when the lab is not up.
    """
    ctx = LabContext.create(project_root())
    result = lab_status(ctx, name)
    if fmt == "json":
        click.echo(json.dumps(result.to_dict(), indent=2))
    else:
        _print_status(result)
    if not result.healthy:
        bad = [node.host for node in result.nodes if not node.healthy]
        raise ChecksFailed(
            f"lab {name!r}: {len(bad)} of {len(result.nodes)} nodes not ready: {', '.join(bad)}",
            f"`clusterforge lab up --name {name}` starts missing and stopped nodes; "
            f"`clusterforge lab inventory --name {name}` re-installs SSH access",
        )


def _print_status(result: LabStatus) -> None:
    table = Table(box=box.SIMPLE, title=f"lab {result.name} ({result.subnet or 'no record'})")
    for column in ("host", "role", "address", "container", "state", "systemd", "ssh (ansible + sudo)"):
        table.add_column(column)
    for node in result.nodes:
        table.add_row(
            node.host, node.role, node.ip or "-", node.container, node.state, node.systemd, node.ssh
        )
    out = stdout_console()
    out.print(table)
    if result.inventory:
        out.print(f"inventory: {_shown(result.inventory)}")


@lab.command()
@name_option
@click.option(
    "--vars",
    "vars_file",
    type=click.Path(dir_okay=False),
    help="The bundle's variables (`bundle serve --vars-out`).",
)
@click.option("--online", is_flag=True, help="Undo: reconnect the lab and drop the bundle's variables.")
def offline(name: str, vars_file: str | None, online: bool) -> None:
    """Air-gap the lab: its nodes reach only the lab network and this host, and its inventory the bundle.

    \b
    clusterforge bundle build -i inventories/lab-NAME --out DIR
    clusterforge bundle serve DIR --bind GATEWAY --vars-out FILE &   (GATEWAY: the lab network's, .1)
    clusterforge lab offline --name NAME --vars FILE
    """
    from clusterforge.lab import offline as air_gap
    from clusterforge.lab.state import load_spec

    if online == bool(vars_file):
        raise InvalidInput(
            "give either --vars FILE or --online", "clusterforge lab offline --name NAME --vars FILE"
        )
    ctx = LabContext.create(project_root())
    spec = load_spec(ctx.root, name)
    if spec is None:
        raise EnvironmentNotReady(
            f"lab {name!r} is not up", f"bring it up with `clusterforge lab up --name {name}`"
        )
    if online:
        air_gap.go_online(ctx, name, spec.subnet)
    else:
        air_gap.go_offline(ctx, name, spec.subnet, air_gap.read_vars_file(Path(vars_file)))
    path = refresh_inventory(ctx, name)
    state = "online again" if online else f"offline: only {spec.subnet} and this host are reachable"
    click.echo(f"lab {name!r} {state}; inventory {_shown(path)}")


@lab.command(name="inventory")
@name_option
def inventory_cmd(name: str) -> None:
    """Rewrite the lab's inventory from its running containers and print its path.

    Also re-installs the lab SSH key and re-reads the nodes' host keys.
    """
    ctx = LabContext.create(project_root())
    path = refresh_inventory(ctx, name)
    click.echo(_shown(path))
