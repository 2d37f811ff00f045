"""`lab up`: create (or complete) a lab and write its inventory.

On an existing lab, `up` reconciles: it re-creates missing nodes, starts stopped
ones, re-installs the Slurm workers' boot-time unit (bare_metal.py), re-grants SSH
access and rewrites the inventory. It refuses to change an
existing lab's node mix, subnet or image (that needs `lab down` first), because
addresses and names derive from them and would shift under running nodes.

An `up` that fails removes what that run created (containers, the network and,
for a new lab, its state and inventory) unless keep_on_failure is set.
"""

from __future__ import annotations

import shlex
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from clusterforge.ansible_env import ansible_env, ansible_tool
from clusterforge.errors import EnvironmentNotReady, InvalidInput
from clusterforge.lab import bare_metal, environment, readiness, test_repo, train_env, vault
from clusterforge.lab.context import LabContext
from clusterforge.lab.disks import DATA_DISK, LabDisks
from clusterforge.lab.inventory import is_generated_for, remove_inventory, write_inventory
from clusterforge.lab.model import (
    FUSE_DEVICE,
    LABEL,
    LABEL_DISK,
    LABEL_HOST,
    LABEL_INDEX,
    LABEL_ROLE,
    ROLE_ORDER,
    ROLES,
    LabSpec,
    Node,
    check_counts,
    check_name,
    check_subnet,
    network_name,
    plan_nodes,
)
from clusterforge.lab.podman import ContainerInfo
from clusterforge.lab.state import AnsibleSettings, load_spec, save_spec

HWREPLAY_PLAYBOOK = "tests/hwreplay/install.yml"
DEFAULT_TIMEOUT_S = 300


@dataclass(frozen=True)
class UpRequest:
    name: str
    counts: dict[str, int | None]  # None: the existing lab's count, or the default for a new lab
    subnet: str | None = None
    image: str | None = None
    profiles: dict[str, str] = field(default_factory=dict)
    keep_on_failure: bool = False
    timeout_s: float = DEFAULT_TIMEOUT_S
    hwreplay: bool = True


@dataclass
class UpResult:
    spec: LabSpec
    nodes: list[Node]
    inventory: Path
    created: list[str] = field(default_factory=list)  # containers this run created
    started: list[str] = field(default_factory=list)  # stopped containers it started
    hwreplay_ran: bool = False
    vault_password_file: Path | None = None  # for ANSIBLE_VAULT_PASSWORD_FILE


def resolve_spec(
    request: UpRequest, recorded: LabSpec | None, networks: list[dict], ctx: LabContext
) -> LabSpec:
    """The spec to bring up: the request, completed from the recorded lab or the defaults."""
    counts: dict[str, int] = {}
    for role in ROLE_ORDER:
        asked = request.counts.get(role)
        if asked is not None:
            counts[role] = asked
        else:
            counts[role] = recorded.counts[role] if recorded else ROLES[role].default_count
    check_counts(counts)
    total = sum(counts.values())
    image = request.image or (recorded.image if recorded else environment.default_image())
    if recorded is None:
        if request.subnet:
            subnet = check_subnet(request.subnet, total)
            environment.check_subnet_free(subnet, networks, ctx.route_table)
        else:
            subnet = environment.pick_subnet(networks, ctx.route_table) or ""
        return LabSpec(request.name, counts, subnet, image, dict(request.profiles))

    subnet = check_subnet(request.subnet, total) if request.subnet else recorded.subnet
    changes = []
    if counts != recorded.counts:
        changes.append(f"the node mix ({recorded.mix()})")
    if subnet != recorded.subnet:
        changes.append(f"the subnet ({recorded.subnet})")
    if image != recorded.image:
        changes.append(f"the image ({recorded.image})")
    if changes:
        raise InvalidInput(
            f"lab {request.name!r} is already up; `lab up` only completes an existing lab "
            f"and cannot change {', '.join(changes)}",
            f"rerun `clusterforge lab up --name {request.name}` without those flags, or remove the lab "
            f"first with `clusterforge lab down --name {request.name}`",
        )
    return LabSpec(request.name, counts, subnet, image, {**recorded.profiles, **request.profiles})


def node_labels(node: Node) -> dict[str, str]:
    return {
        LABEL: node.lab,
        LABEL_ROLE: node.role.name,
        LABEL_HOST: node.host,
        LABEL_INDEX: str(node.index),
    }


class _Undo:
    """What one `up` run created, to remove again when the run fails."""

    def __init__(self, ctx: LabContext, name: str, new_lab: bool):
        self.ctx = ctx
        self.name = name
        self.new_lab = new_lab
        self.containers: list[str] = []
        self.network: str | None = None
        self.devices: list[str] = []  # loop devices attached by this run

    def run(self) -> None:
        ctx = self.ctx
        steps = [
            (
                f"containers {', '.join(self.containers)}",
                lambda: ctx.podman.remove_containers(self.containers),
            ),
        ]
        if self.network:
            network = self.network
            steps.append((f"network {network}", lambda: ctx.podman.remove_network(network)))
        disks = LabDisks(ctx.state_dir(self.name), ctx.runner)
        steps += [(f"loop device {dev}", lambda dev=dev: disks.detach(dev)) for dev in self.devices]
        if self.new_lab:
            steps.append(("lab state", lambda: shutil.rmtree(ctx.state_dir(self.name), ignore_errors=True)))
            steps.append(("inventory", lambda: remove_inventory(ctx.inventory_dir(self.name), self.name)))
        for what, undo in steps:
            try:
                undo()
            except Exception as err:  # keep undoing the rest; the original error is what matters
                ctx.reporter.warn(f"could not remove {what}: {err}")
        ctx.reporter.note("removed what this run had created")


def lab_up(ctx: LabContext, request: UpRequest) -> UpResult:
    check_name(request.name)
    ctx.preflight()
    reporter = ctx.reporter
    recorded = load_spec(ctx.root, request.name)
    existing = {info.name: info for info in ctx.lab_containers(request.name)}
    networks = ctx.podman.networks()
    network_names = {net.get("name") for net in networks}
    network = network_name(request.name)
    if recorded is None and (existing or network in network_names):
        found = ", ".join(sorted(existing)) or f"network {network}"
        raise EnvironmentNotReady(
            f"lab {request.name!r} has podman objects ({found}) but no record "
            f"({ctx.state_dir(request.name)}/lab.json)",
            f"remove them with `clusterforge lab down --name {request.name}`, then run `lab up` again",
        )
    spec = resolve_spec(request, recorded, networks, ctx)
    nodes = plan_nodes(spec)
    inventory = ctx.inventory_dir(spec.name)
    if inventory.exists() and not is_generated_for(inventory, spec.name):
        raise EnvironmentNotReady(
            f"{inventory} exists and was not generated for lab {spec.name!r}; it is left alone",
            f"move {inventory} away, or bring the lab up under another --name",
        )
    with reporter.step(f"check node image {spec.image}"):
        warnings = environment.require_image(ctx.podman, spec.image, ctx.root, ctx.runner)
    for warning in warnings:
        reporter.warn(warning)
    strays = sorted(set(existing) - {node.container for node in nodes})
    if strays:
        reporter.warn(f"containers of lab {spec.name!r} outside its plan are left as they are: {strays}")

    undo = _Undo(ctx, spec.name, new_lab=recorded is None)
    result = UpResult(spec, nodes, inventory)
    try:
        _bring_up(ctx, spec, nodes, existing, network in network_names, undo, result)
        access = ctx.access(spec.name)
        deadline = ctx.clock() + request.timeout_s
        with reporter.step(f"wait for systemd to boot on {len(nodes)} nodes"):
            readiness.wait_for_boot(ctx, nodes, deadline)
        # Every run, on every worker (new, restarted or running): the unit is idempotent, and a lab
        # brought up by an older ClusterForge gets it too.
        slurm_workers = bare_metal.workers(nodes)
        if slurm_workers:
            with reporter.step(
                f"enable {bare_metal.UNIT} on {len(slurm_workers)} Slurm workers "
                "(writable cgroups, GPU device files)"
            ):
                bare_metal.install(ctx, slurm_workers)
        with reporter.step("install the lab SSH key, record host keys"):
            readiness.grant_access(ctx, access, nodes)
        with reporter.step("SSH login as ansible + sudo on every node"):
            readiness.wait_for_ssh(ctx, access, nodes, deadline)
        save_spec(ctx.root, spec)
        # Before any playbook run: they all get the lab's vault password file.
        storage = vault.ensure_storage(ctx.state_dir(spec.name))
        result.vault_password_file = storage.password_file
        standin_vars = test_repo.serve(ctx, spec, nodes) if request.hwreplay else {}
        with reporter.step(f"write inventory {result.inventory}"):
            write_inventory(result.inventory, spec.name, nodes, access, spec.subnet, standin_vars, storage)
        if request.hwreplay:
            result.hwreplay_ran = run_hwreplay(ctx, result.inventory, nodes)
        reporter.note(vault.password_note(storage.password_file))
    except BaseException:
        if request.keep_on_failure:
            reporter.warn(
                f"--keep-on-failure: left lab {spec.name!r} as it is; `lab down --name {spec.name}`"
            )
        else:
            undo.run()
        raise
    return result


def clusterforge_paths(root: Path) -> list[str]:
    """What a lab controller node needs to run this ClusterForge: the checkout (its .venv, the
    lab's state) and, when the venv's interpreter lives outside /usr (pyenv, a self-built Python),
    that installation too; a /usr Python is the node's own (the node image is the host's Debian)."""
    paths = [str(root)]
    base = str(Path(sys.base_prefix).resolve())
    if not (base == "/usr" or base.startswith("/usr/")) and not base.startswith(str(root)):
        paths.append(base)
    return paths


def _bring_up(
    ctx: LabContext,
    spec: LabSpec,
    nodes: Sequence[Node],
    existing: dict[str, ContainerInfo],
    network_exists: bool,
    undo: _Undo,
    result: UpResult,
) -> None:
    podman = ctx.podman
    if not network_exists:
        with ctx.reporter.step(f"create network {spec.network} ({spec.subnet})"):
            environment.check_subnet_free(spec.subnet, podman.networks(), ctx.route_table)
            podman.create_network(spec.network, spec.subnet, spec.gateway, {LABEL: spec.name})
            undo.network = spec.network
    disks = LabDisks(ctx.state_dir(spec.name), ctx.runner)
    stopped = [node for node in nodes if node.container in existing and not existing[node.container].running]
    # After a host restart a data disk may come back on another loop device than the one
    # its stopped container was created with: such a node is re-created.
    moved = []
    for node in stopped:
        if node.role.data_disk:
            device = _attach(disks, node, undo)
            if existing[node.container].labels.get(LABEL_DISK) != device:
                moved.append(node)
    if moved:
        ctx.reporter.warn(f"data disks moved to other loop devices; re-creating {[n.host for n in moved]}")
        podman.remove_containers([node.container for node in moved])
    stopped = [node for node in stopped if node not in moved]
    missing = [node for node in nodes if node.container not in existing] + moved
    # A container re-created on an address may meet Ansible's persistent SSH master of
    # its predecessor: stop those first.
    ctx.access(spec.name).close_control_masters(
        [node.ip for node in missing], AnsibleSettings(ctx.root).control_path_dir()
    )
    hosts = {node.host: node.ip for node in nodes}
    if any(node.role.storage_client for node in missing) and not ctx.fuse_device.exists():
        raise EnvironmentNotReady(
            f"the storage clients of lab {spec.name!r} mount through FUSE, but this host has no "
            f"{ctx.fuse_device}",
            "load the fuse module (modprobe fuse), or bring the lab up without GPU and NPU nodes",
        )
    if missing:
        with ctx.reporter.step(f"create {len(missing)} node containers"):
            for node in missing:
                labels, devices = node_labels(node), {}
                if node.role.data_disk:
                    device = _attach(disks, node, undo)
                    labels[LABEL_DISK] = device
                    devices[device] = DATA_DISK
                if node.role.storage_client:
                    devices[FUSE_DEVICE] = FUSE_DEVICE
                podman.run_node(
                    name=node.container,
                    hostname=node.host,
                    network=spec.network,
                    ip=node.ip,
                    labels=labels,
                    hosts=hosts,
                    image=spec.image,
                    devices=devices,
                    capabilities=node.role.capabilities,
                    device_cgroup_rules=node.role.device_cgroup_rules,
                    read_only_paths=clusterforge_paths(ctx.root) if node.role.clusterforge_checkout else [],
                    # The training environment, where scripts/setup-train-venv.sh has built it.
                    read_only_mounts=train_env.mounts() if node.role.accelerator else None,
                )
                undo.containers.append(node.container)
                result.created.append(node.container)
    if stopped:
        with ctx.reporter.step(f"start {len(stopped)} stopped node containers"):
            for node in stopped:
                podman.start(node.container)
                result.started.append(node.container)


def _attach(disks: LabDisks, node: Node, undo: _Undo) -> str:
    device, attached_now = disks.attach(node.host)
    if attached_now:
        undo.devices.append(device)
    return device


def run_hwreplay(ctx: LabContext, inventory: Path, nodes: Sequence[Node]) -> bool:
    """Install the test-only hardware replay on nodes with a hwreplay_profile, when the checkout has it."""
    playbook = ctx.root / HWREPLAY_PLAYBOOK
    if not playbook.is_file() or not any(node.hwreplay_profile for node in nodes):
        return False
    argv = [ansible_tool("ansible-playbook"), "-i", str(inventory), str(playbook)]
    env = vault.vault_env(ansible_env(), ctx.state_dir(nodes[0].lab))
    with ctx.reporter.step(f"install hardware replay ({HWREPLAY_PLAYBOOK})"):
        result = ctx.runner(argv, env=env, cwd=ctx.root, timeout=1800)
        if not result.ok:
            raise EnvironmentNotReady(
                f"{HWREPLAY_PLAYBOOK} failed: {first_failure(result.stdout) or result.last_error_line()}",
                f"rerun it to see the whole output: cd {ctx.root} && {shlex.join(argv)}",
            )
    return True


def first_failure(output: str, max_lines: int = 8) -> str:
    """The first `fatal:` line of ansible-playbook's output with the indented result under it (the msg)."""
    lines = output.splitlines()
    for index, line in enumerate(lines):
        if line.startswith("fatal:"):
            detail = []
            for follow in lines[index + 1 : index + 1 + max_lines]:
                if not follow.startswith((" ", "\t")):
                    break
                detail.append(follow.strip())
            return " ".join([line.strip(), *detail])
    return ""
