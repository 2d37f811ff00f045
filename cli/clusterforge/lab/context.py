"""What every lab command works with: the checkout, podman, a command runner, progress.

Clock, sleep and host lookups are injectable so unit tests run without waiting
and without touching the machine.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from clusterforge.errors import EnvironmentNotReady, InvalidInput
from clusterforge.lab import environment
from clusterforge.lab.access import LabAccess
from clusterforge.lab.model import LABEL, LABEL_INDEX, LABEL_ROLE, ROLES, LabSpec, Node, network_name
from clusterforge.lab.podman import ContainerInfo, Podman
from clusterforge.lab.progress import Reporter
from clusterforge.lab.runner import Runner, run_command
from clusterforge.lab.state import inventory_dir, state_dir

HOST_TOOLS = ("podman", "ssh", "ssh-keygen", "losetup")


@dataclass
class LabContext:
    root: Path
    podman: Podman
    runner: Runner = run_command
    reporter: Reporter = field(default_factory=Reporter)
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic
    geteuid: Callable[[], int] = os.geteuid
    which: Callable[[str], str | None] = shutil.which
    route_table: Path = Path("/proc/net/route")
    fuse_device: Path = Path("/dev/fuse")

    @classmethod
    def create(cls, root: Path) -> LabContext:
        return cls(root=root, podman=Podman(containers_conf=root / "images" / "node" / "containers.conf"))

    def preflight(self) -> None:
        """Root and the host tools: needed by every lab command."""
        environment.require_root(self.geteuid)
        environment.require_tools(HOST_TOOLS, self.which)

    def access(self, name: str) -> LabAccess:
        return LabAccess(state_dir(self.root, name), self.runner)

    def state_dir(self, name: str) -> Path:
        return state_dir(self.root, name)

    def inventory_dir(self, name: str) -> Path:
        return inventory_dir(self.root, name)

    def lab_containers(self, name: str) -> list[ContainerInfo]:
        names = self.podman.container_names(label_filter(name))
        return self.podman.inspect_containers(names, network_name(name))


def label_filter(name: str) -> str:
    return f"{LABEL}={name}"


def node_from_container(lab: str, info: ContainerInfo, spec: LabSpec | None) -> Node:
    """Rebuild a Node from the labels `lab up` put on its container."""
    try:
        role = ROLES[info.labels[LABEL_ROLE]]
        index = int(info.labels[LABEL_INDEX])
    except (KeyError, ValueError):
        raise InvalidInput(
            f"container {info.name} carries lab label {lab!r} but not the role/index labels `lab up` sets",
            f"remove the lab with `clusterforge lab down --name {lab}` and bring it up again",
        ) from None
    if not info.ip:
        raise EnvironmentNotReady(
            f"container {info.name} has no address on network {network_name(lab)} (state {info.state})",
            f"start it with `clusterforge lab up --name {lab}`",
        )
    node = Node(lab, role, index, info.ip, role.hwreplay_profile)
    if spec is not None and node.host in spec.profiles:
        node = Node(lab, role, index, info.ip, spec.profiles[node.host])
    return node
