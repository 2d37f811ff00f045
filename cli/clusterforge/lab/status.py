"""`lab status` (what runs and whether Ansible can reach it) and `lab inventory` (rewrite it).

Both start from the containers podman reports for the lab, so they show the
truth even when the lab's record and the containers disagree.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

from clusterforge.errors import EnvironmentNotReady
from clusterforge.lab import readiness, test_repo, vault
from clusterforge.lab.context import LabContext, node_from_container
from clusterforge.lab.inventory import write_inventory
from clusterforge.lab.model import LABEL_HOST, LABEL_ROLE, ROLE_ORDER, check_name, network_name, plan_nodes
from clusterforge.lab.podman import ContainerInfo
from clusterforge.lab.state import load_spec

MAX_PARALLEL = 16


@dataclass(frozen=True)
class NodeStatus:
    host: str
    role: str
    container: str
    ip: str | None
    state: str  # the container's state, or "missing" when a planned node has no container
    systemd: str  # is-system-running, or "-" when the container does not run
    ssh: str  # "ok" or why a login as ansible with sudo failed

    @property
    def healthy(self) -> bool:
        return self.state == "running" and self.systemd in readiness.BOOTED and self.ssh == "ok"


@dataclass(frozen=True)
class LabStatus:
    name: str
    subnet: str | None
    inventory: str | None
    nodes: list[NodeStatus]

    @property
    def healthy(self) -> bool:
        return bool(self.nodes) and all(node.healthy for node in self.nodes)

    def to_dict(self) -> dict:
        return {**asdict(self), "healthy": self.healthy}


def _not_up(name: str) -> EnvironmentNotReady:
    return EnvironmentNotReady(
        f"lab {name!r} is not up", f"bring it up with `clusterforge lab up --name {name}`"
    )


def lab_status(ctx: LabContext, name: str) -> LabStatus:
    check_name(name)
    ctx.preflight()
    spec = load_spec(ctx.root, name)
    infos = ctx.lab_containers(name)
    if not infos and spec is None:
        raise _not_up(name)
    access = ctx.access(name)
    can_probe = access.key.is_file() and access.known_hosts.is_file()
    planned = plan_nodes(spec) if spec is not None else []
    planned_ips = {node.container: node.ip for node in planned}

    def node_status(info: ContainerInfo) -> NodeStatus:
        systemd, ssh = "-", "-"
        if info.running:
            systemd, _ = readiness.systemd_state(ctx, info.name)
            if not info.ip:
                ssh = "no address"
            elif can_probe:
                ssh = access.probe(info.ip).detail
            else:
                ssh = f"no lab key in {access.state_dir}"
        return NodeStatus(
            host=info.labels.get(LABEL_HOST, info.name),
            role=info.labels.get(LABEL_ROLE, "?"),
            container=info.name,
            ip=info.ip or planned_ips.get(info.name),  # podman shows no address for a stopped one
            state=info.state,
            systemd=systemd,
            ssh=ssh,
        )

    with ThreadPoolExecutor(max_workers=MAX_PARALLEL) as pool:
        nodes = list(pool.map(node_status, infos))
    seen = {node.container for node in nodes}
    for node in planned:
        if node.container not in seen:
            nodes.append(NodeStatus(node.host, node.role.name, node.container, node.ip, "missing", "-", "-"))
    inventory = ctx.inventory_dir(name)
    return LabStatus(
        name=name,
        subnet=spec.subnet if spec else None,
        inventory=str(inventory) if (inventory / "hosts.yml").is_file() else None,
        nodes=sorted(nodes, key=lambda node: node.host),
    )


def _network_subnet(ctx: LabContext, name: str) -> str:
    """The lab network's subnet as podman reports it (for a lab whose record is gone)."""
    for net in ctx.podman.networks():
        if net.get("name") == network_name(name) and net.get("subnets"):
            return net["subnets"][0]["subnet"]
    raise EnvironmentNotReady(
        f"lab {name!r} has no network {network_name(name)}",
        f"remove the lab with `clusterforge lab down --name {name}` and bring it up again",
    )


def refresh_inventory(ctx: LabContext, name: str) -> Path:
    """Rewrite the lab's inventory (and SSH access) from its running containers."""
    check_name(name)
    ctx.preflight()
    spec = load_spec(ctx.root, name)
    infos = ctx.lab_containers(name)
    if not infos:
        raise _not_up(name)
    stopped = [info.name for info in infos if not info.running]
    if stopped:
        raise EnvironmentNotReady(
            f"lab {name!r} has stopped nodes: {', '.join(stopped)}",
            f"start them with `clusterforge lab up --name {name}`",
        )
    nodes = sorted(
        (node_from_container(name, info, spec) for info in infos),
        key=lambda node: (ROLE_ORDER.index(node.role.name), node.index),
    )
    access = ctx.access(name)
    with ctx.reporter.step("install the lab SSH key, record host keys"):
        readiness.grant_access(ctx, access, nodes)
    target = ctx.inventory_dir(name)
    with ctx.reporter.step(f"write inventory {target}"):
        subnet = spec.subnet if spec else _network_subnet(ctx, name)
        storage = vault.ensure_storage(ctx.state_dir(name))
        write_inventory(target, name, nodes, access, subnet, test_repo.recorded_vars(ctx, name), storage)
    ctx.reporter.note(vault.password_note(storage.password_file))
    return target
