"""`lab down`: remove everything `lab up` made for one lab, and nothing else.

Podman objects are found by the lab label (and must carry the cflab- prefix);
files by their fixed places, and the inventory only when it carries the lab's
mark. Also dropped: Ansible's persistent SSH masters to the lab's addresses and
its cached facts of the lab's hosts, which describe containers that are gone.
Removing an absent lab is not an error.
"""

from __future__ import annotations

import contextlib
import shutil
from dataclasses import dataclass, field

from clusterforge.errors import ClusterForgeError
from clusterforge.lab import offline, test_repo
from clusterforge.lab.context import LabContext, label_filter
from clusterforge.lab.disks import LabDisks
from clusterforge.lab.inventory import remove_inventory
from clusterforge.lab.model import LABEL_HOST, NAME_PREFIX, check_name, plan_nodes
from clusterforge.lab.state import AnsibleSettings, load_spec


@dataclass
class DownResult:
    name: str
    containers: list[str] = field(default_factory=list)
    networks: list[str] = field(default_factory=list)
    volumes: list[str] = field(default_factory=list)
    disks: list[str] = field(default_factory=list)  # loop devices detached
    files: list[str] = field(default_factory=list)

    @property
    def removed_anything(self) -> bool:
        return bool(self.containers or self.networks or self.volumes or self.disks or self.files)


def lab_down(ctx: LabContext, name: str) -> DownResult:
    check_name(name)
    ctx.preflight()
    podman = ctx.podman
    label = label_filter(name)
    result = DownResult(name)
    infos = ctx.lab_containers(name)
    hosts = {info.labels[LABEL_HOST]: info.ip for info in infos if LABEL_HOST in info.labels}
    try:
        spec = load_spec(ctx.root, name)
        planned = plan_nodes(spec) if spec is not None else []
    except ClusterForgeError:  # an unreadable record must not keep the lab from going away
        spec = None
        planned = []
    hosts.update({node.host: node.ip for node in planned if node.host not in hosts})

    result.containers = [info.name for info in infos if info.name.startswith(NAME_PREFIX)]
    result.containers += test_repo.service_containers(ctx, name)
    if result.containers:
        with ctx.reporter.step(f"remove {len(result.containers)} containers"):
            podman.remove_containers(result.containers)
    result.volumes = [vol for vol in podman.volume_names(label) if vol.startswith(NAME_PREFIX)]
    if result.volumes:
        with ctx.reporter.step(f"remove volumes {', '.join(result.volumes)}"):
            podman.remove_volumes(result.volumes)
    was_offline = offline.OFFLINE_FILE in {p.name for p in ctx.state_dir(name).glob("*")}
    if spec is not None and was_offline and offline.reconnect(ctx, name, spec.subnet):
        ctx.reporter.note(f"lab {name}: the offline rule for {spec.subnet} removed")
    result.networks = [net for net in podman.network_names(label) if net.startswith(NAME_PREFIX)]
    for network in result.networks:
        with ctx.reporter.step(f"remove network {network}"):
            podman.remove_network(network)

    settings = AnsibleSettings(ctx.root)
    ips = sorted({ip for ip in hosts.values() if ip})
    ctx.access(name).close_control_masters(ips, settings.control_path_dir())
    fact_dir = settings.fact_cache_dir()
    if fact_dir is not None:
        for host in sorted(hosts):
            cached = fact_dir / host
            if cached.is_file():
                cached.unlink()
                result.files.append(str(cached))
    result.disks = LabDisks(ctx.state_dir(name), ctx.runner).detach_all()
    inventory = ctx.inventory_dir(name)
    if remove_inventory(inventory, name):
        result.files.append(str(inventory))
    elif inventory.exists():
        ctx.reporter.warn(f"{inventory} was not generated for lab {name!r}; left in place")
    state = ctx.state_dir(name)
    if state.exists():
        shutil.rmtree(state)
        result.files.append(str(state))
    with contextlib.suppress(OSError):  # the labs' parent folder, when this was the last lab
        state.parent.rmdir()
    return result
