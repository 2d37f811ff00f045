"""Bring started node containers to "reachable over SSH as ansible with sudo".

1. wait until systemd inside each node has finished booting (running or degraded);
2. install the lab's public key for the provisioning user, read the host keys
   through podman and write the lab's known_hosts;
3. wait until a real SSH login + `sudo -n true` works on every node.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from clusterforge.errors import EnvironmentNotReady
from clusterforge.lab.access import LabAccess
from clusterforge.lab.context import LabContext
from clusterforge.lab.model import Node, network_name
from clusterforge.lab.podman import PodmanError

BOOTED = ("running", "degraded")
# systemd states that will not turn into "running" by waiting.
BOOT_FAILED = ("maintenance", "stopping")
PODMAN_EXEC_ERRORS = (125, 126, 127)  # podman's own failures, not the command's
POLL_S = 0.5
SSH_POLL_S = 1.0
MAX_PARALLEL = 16  # podman execs and SSH logins at once


def systemd_state(ctx: LabContext, container: str) -> tuple[str, int]:
    """(state word or error line, podman exec return code) of `systemctl is-system-running`."""
    result = ctx.podman.exec(container, ["systemctl", "is-system-running"], timeout=30)
    words = result.stdout.split()
    return (words[-1] if words else result.last_error_line()), result.returncode


def failed_units(ctx: LabContext, container: str) -> list[str]:
    result = ctx.podman.exec(container, ["systemctl", "--failed", "--plain", "--no-legend", "--no-pager"])
    return [line.split()[0] for line in result.stdout.splitlines() if line.split()]


def wait_for_boot(ctx: LabContext, nodes: Sequence[Node], deadline: float) -> None:
    pending = list(nodes)
    last_state: dict[str, str] = {}
    while pending:
        # One round polls every pending node at once: on a busy host each exec takes a while.
        with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL, len(pending))) as pool:
            states = list(pool.map(lambda node: systemd_state(ctx, node.container), pending))
        still_booting = []
        for node, (state, rc) in zip(pending, states, strict=True):
            last_state[node.host] = state
            if state in BOOTED:
                if state == "degraded":
                    units = ", ".join(failed_units(ctx, node.container)) or "unknown units"
                    ctx.reporter.warn(f"{node.host}: systemd is degraded (failed: {units})")
                continue
            if state in BOOT_FAILED:
                raise EnvironmentNotReady(
                    f"node {node.host} did not boot: systemd is in state {state!r}",
                    f"read its journal: podman exec {node.container} journalctl -b --no-pager | tail -50",
                )
            if rc in PODMAN_EXEC_ERRORS:
                _raise_if_stopped(ctx, node)
            still_booting.append(node)
        pending = still_booting
        if not pending:
            return
        if ctx.clock() >= deadline:
            late = ", ".join(f"{node.host} ({last_state[node.host]})" for node in pending)
            raise EnvironmentNotReady(
                f"nodes did not finish booting in time: {late}",
                "see what systemd waits for: podman exec CONTAINER systemctl list-jobs; "
                "on a busy machine raise --timeout",
            )
        ctx.sleep(POLL_S)


def _raise_if_stopped(ctx: LabContext, node: Node) -> None:
    try:
        infos = ctx.podman.inspect_containers([node.container], network_name(node.lab))
    except PodmanError:  # removed under our feet
        infos = []
    state = infos[0].state if infos else "gone"
    if state != "running":
        raise EnvironmentNotReady(
            f"container {node.container} of node {node.host} stopped while booting (state {state})",
            f"read its output: podman logs {node.container}",
        )


def grant_access(ctx: LabContext, access: LabAccess, nodes: Sequence[Node]) -> None:
    """Install the lab key for `ansible` on every node and record every node's host keys."""
    public_key = access.ensure_key()
    with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL, len(nodes))) as pool:
        all_keys = list(pool.map(lambda node: access.grant(ctx.podman, node.container, public_key), nodes))
    for node, keys in zip(nodes, all_keys, strict=True):
        if not keys:
            raise EnvironmentNotReady(
                f"node {node.host} has no SSH host keys in /etc/ssh",
                f"check the key generation unit: podman exec {node.container} systemctl status ssh-hostkeys",
            )
    access.write_known_hosts({node.ip: keys for node, keys in zip(nodes, all_keys, strict=True)})


def wait_for_ssh(ctx: LabContext, access: LabAccess, nodes: Sequence[Node], deadline: float) -> None:
    pending = list(nodes)
    while True:
        with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL, len(pending))) as pool:
            probes = list(pool.map(lambda node: access.probe(node.ip), pending))
        failures = [(node, probe) for node, probe in zip(pending, probes, strict=True) if not probe.ok]
        if not failures:
            return
        if ctx.clock() >= deadline:
            detail = "; ".join(f"{node.host} ({node.ip}): {probe.detail}" for node, probe in failures)
            first = failures[0][0]
            raise EnvironmentNotReady(
                f"no SSH login with sudo as ansible on: {detail}",
                f"check sshd on the node: podman exec {first.container} systemctl status ssh",
            )
        pending = [node for node, _ in failures]
        ctx.sleep(SSH_POLL_S)
