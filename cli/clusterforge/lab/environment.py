"""Preflight checks of the host: root, tools, node image, a free subnet.

Each failure is an EnvironmentNotReady (exit 4) naming the command that fixes it.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import struct
from collections.abc import Callable, Iterable
from pathlib import Path

from clusterforge.errors import EnvironmentNotReady, InvalidInput
from clusterforge.lab.model import DEFAULT_IMAGE
from clusterforge.lab.podman import Podman
from clusterforge.lab.runner import Runner

IMAGE_INPUTS_LABEL = "org.clusterforge.inputs"
BUILD_SCRIPT = "scripts/build-node-image.sh"
BUILD_FIX = f"run {BUILD_SCRIPT} (builds or loads it; a rebuild takes minutes)"
SETUP_HOST = "run scripts/setup-host.sh as root"
# Default lab subnets: 10.89.<n>.0/24 from n=100 on. Podman numbers the networks
# it creates without --subnet from 10.89.0.0/24 upwards, so the two rarely meet.
AUTO_SUBNET_FIRST = 100


def default_image() -> str:
    """The node image scripts/build-node-image.sh builds (it honours CF_NODE_IMAGE too)."""
    return os.environ.get("CF_NODE_IMAGE") or DEFAULT_IMAGE


def require_root(geteuid: Callable[[], int] = os.geteuid) -> None:
    uid = geteuid()
    if uid != 0:
        raise EnvironmentNotReady(
            f"lab nodes need rootful podman (static addresses on a bridge this host can reach); "
            f"this runs as uid {uid}",
            "run it as root, e.g. `sudo .venv/bin/clusterforge lab ...`",
        )


def require_tools(tools: Iterable[str], which: Callable[[str], str | None]) -> None:
    missing = [tool for tool in tools if which(tool) is None]
    if missing:
        raise EnvironmentNotReady(f"{', '.join(missing)} not found on PATH", SETUP_HOST)


def require_image(podman: Podman, image: str, root: Path, runner: Runner) -> list[str]:
    """Check the node image is there and, for the project's own image, current.

    Returns warnings (e.g. freshness could not be checked) for the caller to show.
    """
    labels = podman.image_labels(image)
    if labels is None:
        if image == default_image():
            raise EnvironmentNotReady(f"the node image {image} is not built", BUILD_FIX)
        raise EnvironmentNotReady(
            f"the image {image} given with --image is not in podman's local storage",
            f"build or load it (`podman images` lists what is there), or leave out --image "
            f"to use {default_image()} ({BUILD_SCRIPT})",
        )
    if image != default_image():
        return []
    result = runner([str(root / BUILD_SCRIPT), "--print-hash"], timeout=60)
    wanted = result.stdout.strip()
    if not result.ok or not wanted:
        return [
            f"could not tell whether {image} is current ({BUILD_SCRIPT} --print-hash: "
            f"{result.last_error_line()})"
        ]
    have = labels.get(IMAGE_INPUTS_LABEL)
    if have != wanted:
        raise EnvironmentNotReady(
            f"the node image {image} is out of date (built from inputs {have or 'unknown'}, "
            f"the checkout wants {wanted})",
            BUILD_FIX,
        )
    return []


def host_routes(route_table: Path = Path("/proc/net/route")) -> list[tuple[str, ipaddress.IPv4Network]]:
    """(interface, network) of the host's IPv4 routes, the default route left out."""
    routes = []
    try:
        lines = route_table.read_text().splitlines()[1:]
    except OSError:
        return []
    for line in lines:
        fields = line.split()
        if len(fields) < 8:
            continue
        dest, mask = (socket.inet_ntoa(struct.pack("<L", int(value, 16))) for value in (fields[1], fields[7]))
        if mask == "0.0.0.0":
            continue
        routes.append((fields[0], ipaddress.IPv4Network(f"{dest}/{mask}", strict=False)))
    return routes


def podman_subnets(networks: list[dict]) -> list[tuple[str, ipaddress.IPv4Network]]:
    """(network name, subnet) of every IPv4 subnet podman knows."""
    subnets = []
    for net in networks:
        for entry in net.get("subnets") or []:
            try:
                subnet = ipaddress.ip_network(entry.get("subnet", ""), strict=False)
            except ValueError:
                continue
            if isinstance(subnet, ipaddress.IPv4Network):
                subnets.append((net.get("name", "?"), subnet))
    return subnets


def _clashes(subnet: ipaddress.IPv4Network, networks: list[dict], route_table: Path) -> list[str]:
    taken = [(f"podman network {name}", net) for name, net in podman_subnets(networks)]
    podman_nets = {net for _, net in taken}
    # A podman network's own bridge route is already covered by that network.
    taken += [
        (f"host route via {iface}", net) for iface, net in host_routes(route_table) if net not in podman_nets
    ]
    return [f"{what} ({net})" for what, net in taken if net.overlaps(subnet)]


def check_subnet_free(subnet: str, networks: list[dict], route_table: Path) -> None:
    clashes = _clashes(ipaddress.IPv4Network(subnet), networks, route_table)
    if clashes:
        free = pick_subnet(networks, route_table, raise_if_none=False)
        raise InvalidInput(
            f"--subnet {subnet} overlaps {', '.join(clashes)}",
            f"pass a free subnet, e.g. --subnet {free}" if free else "pass a free subnet with --subnet",
        )


def pick_subnet(networks: list[dict], route_table: Path, raise_if_none: bool = True) -> str | None:
    """The first 10.89.<n>.0/24 (n >= 100) that no podman network or host route uses."""
    for n in range(AUTO_SUBNET_FIRST, 255):
        candidate = ipaddress.IPv4Network(f"10.89.{n}.0/24")
        if not _clashes(candidate, networks, route_table):
            return str(candidate)
    if raise_if_none:
        raise EnvironmentNotReady(
            "no free subnet 10.89.100-254.0/24 for the lab network", "pass a free one with --subnet CIDR"
        )
    return None
