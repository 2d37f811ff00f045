"""A thin driver for the podman CLI (rootful), with JSON output wherever podman offers it.

Every call runs with CONTAINERS_CONF pointing at images/node/containers.conf
(unless the caller set one): it selects runc and ulimits that work on hosts
like our CI VMs (see that file).
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from clusterforge.errors import EnvironmentNotReady
from clusterforge.lab.runner import Result, Runner, run_command

# Capabilities added to podman's defaults, and why. Newer podman releases dropped
# both from the default set, so they are asked for explicitly.
NODE_CAPABILITIES = (
    "AUDIT_WRITE",  # sshd and PAM write a login audit record; without it SSH logins fail
    "NET_RAW",  # ping between nodes (network checks of the playbooks)
)
STOP_TIMEOUT_S = 10  # systemd as PID 1 shuts down on SIGRTMIN+3 well within this


class PodmanError(EnvironmentNotReady):
    """A podman command failed; the message names the command and podman's own words."""

    def __init__(self, result: Result, conf: str | None):
        cmdline = shlex.join(result.argv)
        super().__init__(
            f"`{cmdline}` failed: {result.last_error_line()}",
            "rerun it by hand to see the full message" + (f" (with CONTAINERS_CONF={conf})" if conf else ""),
        )
        self.result = result


@dataclass(frozen=True)
class ContainerInfo:
    """What the lab needs to know about one of its containers."""

    name: str
    state: str  # running, exited, created, ...
    labels: dict[str, str]
    ip: str | None  # on the lab network
    image: str

    @property
    def running(self) -> bool:
        return self.state == "running"


class Podman:
    def __init__(self, runner: Runner = run_command, containers_conf: Path | None = None):
        self._run = runner
        env = dict(os.environ)
        if "CONTAINERS_CONF" not in env and containers_conf is not None:
            env["CONTAINERS_CONF"] = str(containers_conf)
        self._env = env
        self.conf = env.get("CONTAINERS_CONF")

    # -- plumbing ---------------------------------------------------------------------------
    def _call(self, *args: str, input: str | None = None, timeout: float | None = 120) -> Result:
        return self._run(["podman", *args], input=input, env=self._env, timeout=timeout)

    def _check(self, *args: str, input: str | None = None, timeout: float | None = 120) -> Result:
        result = self._call(*args, input=input, timeout=timeout)
        if not result.ok:
            raise PodmanError(result, self.conf)
        return result

    def _json(self, *args: str) -> list[dict]:
        result = self._check(*args)
        text = result.stdout.strip()
        data = json.loads(text) if text else []
        return data or []  # podman prints null for an empty list in some versions

    # -- images -----------------------------------------------------------------------------
    def image_labels(self, image: str) -> dict[str, str] | None:
        """The image's labels, or None when the image is not in local storage."""
        result = self._call("image", "inspect", "--format", "json", image)
        if not result.ok:
            if "image not known" in result.stderr or "no such image" in result.stderr.lower():
                return None
            raise PodmanError(result, self.conf)
        data = json.loads(result.stdout)
        return (data[0].get("Labels") or {}) if data else None

    # -- networks ---------------------------------------------------------------------------
    def networks(self) -> list[dict]:
        return self._json("network", "ls", "--format", "json")

    def network_names(self, label: str) -> list[str]:
        """Names of the networks carrying the label filter `key=value`."""
        rows = self._json("network", "ls", "--filter", f"label={label}", "--format", "json")
        return sorted(row["name"] for row in rows)

    def create_network(self, name: str, subnet: str, gateway: str, labels: Mapping[str, str]) -> None:
        args = ["network", "create", "--driver", "bridge", "--subnet", subnet, "--gateway", gateway]
        for key, value in labels.items():
            args += ["--label", f"{key}={value}"]
        self._check(*args, name)

    def remove_network(self, name: str) -> None:
        self._check("network", "rm", name)

    # -- containers -------------------------------------------------------------------------
    def container_names(self, label: str) -> list[str]:
        """Names of all containers (any state) carrying the label filter `key=value`."""
        rows = self._json("ps", "-a", "--filter", f"label={label}", "--format", "json")
        return sorted(row["Names"][0] for row in rows if row.get("Names"))

    def inspect_containers(self, names: Sequence[str], network: str) -> list[ContainerInfo]:
        if not names:
            return []
        infos = []
        for data in self._json("container", "inspect", "--format", "json", *names):
            networks = (data.get("NetworkSettings") or {}).get("Networks") or {}
            ip = (networks.get(network) or {}).get("IPAddress") or None
            infos.append(
                ContainerInfo(
                    name=data["Name"].lstrip("/"),
                    state=(data.get("State") or {}).get("Status", "unknown"),
                    labels=(data.get("Config") or {}).get("Labels") or {},
                    ip=ip,
                    image=data.get("ImageName", ""),
                )
            )
        return infos

    def run_node(
        self,
        *,
        name: str,
        hostname: str,
        network: str,
        ip: str,
        labels: Mapping[str, str],
        hosts: Mapping[str, str],
        image: str,
        devices: Mapping[str, str] | None = None,
        capabilities: Sequence[str] = (),
        device_cgroup_rules: Sequence[str] = (),
        read_only_paths: Sequence[str] = (),
        read_only_mounts: Mapping[str, str] | None = None,
    ) -> None:
        """Start a node container: systemd as PID 1 on a static address of the lab network.

        devices maps host devices to their path in the node; capabilities are added to
        NODE_CAPABILITIES (e.g. SYS_ADMIN for FUSE mounts); device_cgroup_rules let the node
        open device files it creates itself ('c 195:0 rwm': a GPU of a Slurm worker);
        read_only_paths are host folders bind-mounted read-only at the same path in the node;
        read_only_mounts maps host folders to the path they are bind-mounted at, read-only.
        """
        args = [
            "run",
            "--detach",
            "--name",
            name,
            "--hostname",
            hostname,
            "--network",
            network,
            "--ip",
            ip,
            "--systemd=always",
            f"--stop-timeout={STOP_TIMEOUT_S}",
        ]
        for cap in (*NODE_CAPABILITIES, *(c for c in capabilities if c not in NODE_CAPABILITIES)):
            args += ["--cap-add", cap]
        for key, value in labels.items():
            args += ["--label", f"{key}={value}"]
        # Every node resolves every other node by its inventory hostname, as on a
        # real cluster with DNS, without depending on podman's DNS plugin.
        for host, host_ip in hosts.items():
            if host != hostname:
                args += ["--add-host", f"{host}:{host_ip}"]
        for host_path, node_path in (devices or {}).items():
            args += ["--device", f"{host_path}:{node_path}:rwm"]
        for rule in device_cgroup_rules:
            args += ["--device-cgroup-rule", rule]
        for path in read_only_paths:
            args += ["--volume", f"{path}:{path}:ro"]
        for host_path, node_path in (read_only_mounts or {}).items():
            args += ["--volume", f"{host_path}:{node_path}:ro"]
        self._check(*args, image, "/sbin/init")

    def start(self, name: str) -> None:
        self._check("start", name)

    def remove_containers(self, names: Sequence[str]) -> None:
        """Force-remove containers with their anonymous volumes."""
        if names:
            self._check("rm", "--force", "--volumes", "--time", str(STOP_TIMEOUT_S), *names)

    def exec(
        self, container: str, argv: Sequence[str], *, input: str | None = None, timeout: float = 60
    ) -> Result:
        """Run a command in a container; returns the result whatever its exit status."""
        opts = ["--interactive"] if input is not None else []
        return self._call("exec", *opts, container, *argv, input=input, timeout=timeout)

    def exec_checked(
        self, container: str, argv: Sequence[str], *, input: str | None = None, timeout: float = 60
    ) -> Result:
        result = self.exec(container, argv, input=input, timeout=timeout)
        if not result.ok:
            raise PodmanError(result, self.conf)
        return result

    # -- volumes ----------------------------------------------------------------------------
    def volume_names(self, label: str) -> list[str]:
        rows = self._json("volume", "ls", "--filter", f"label={label}", "--format", "json")
        return sorted(row["Name"] for row in rows)

    def remove_volumes(self, names: Sequence[str]) -> None:
        if names:
            self._check("volume", "rm", "--force", *names)
