"""SSH access to lab nodes: the lab key pair, authorized_keys, known_hosts, reachability.

Ansible reaches lab nodes the way it reaches real servers: over SSH as the
provisioning user `ansible` with a key, sudo for become, and strict host-key
checking against a known_hosts file. The node's host keys are read through
`podman exec` (a trusted channel), never accepted on first use.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import Path

from clusterforge.errors import EnvironmentNotReady
from clusterforge.lab.podman import Podman
from clusterforge.lab.runner import Runner

PROVISIONING_USER = "ansible"
KEY_NAME = "id_ed25519"
KNOWN_HOSTS_NAME = "known_hosts"

# Installs the public key (read from stdin) for the provisioning user, then prints
# the node's SSH host keys: one podman exec per node, which counts on a busy host.
_GRANT_SCRIPT = (
    f"set -e; home=$(getent passwd {PROVISIONING_USER} | cut -d: -f6); "
    'umask 077; mkdir -p "$home/.ssh"; cat > "$home/.ssh/authorized_keys"; '
    f'chown -R {PROVISIONING_USER}: "$home/.ssh"; '
    "cat /etc/ssh/ssh_host_*_key.pub"
)


@dataclass(frozen=True)
class Probe:
    ok: bool
    detail: str  # "ok" or why not, in ssh's words


class LabAccess:
    """The SSH material of one lab, kept in its state directory."""

    def __init__(self, state_dir: Path, runner: Runner):
        self.state_dir = state_dir
        self.key = state_dir / KEY_NAME
        self.known_hosts = state_dir / KNOWN_HOSTS_NAME
        self._run = runner

    def ssh_options(self) -> list[str]:
        """Options every SSH connection to the lab uses (Ansible gets the same ones)."""
        return [
            "-o",
            f"UserKnownHostsFile={self.known_hosts}",
            "-o",
            "StrictHostKeyChecking=yes",
            "-o",
            "IdentitiesOnly=yes",
        ]

    def _comment(self) -> str:
        return f"clusterforge-lab-{self.state_dir.name}"

    def ensure_key(self) -> str:
        """Create the lab's ed25519 key pair unless it exists; return the public key line."""
        public = self.key.with_name(KEY_NAME + ".pub")
        if not (self.key.is_file() and public.is_file()):
            self.state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            for path in (self.key, public):
                path.unlink(missing_ok=True)
            result = self._run(
                ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.key), "-C", self._comment()],
                timeout=60,
            )
            if not result.ok:
                raise EnvironmentNotReady(
                    f"ssh-keygen could not create the lab key {self.key}: {result.last_error_line()}",
                    "run scripts/setup-host.sh as root (installs openssh-client)",
                )
        return public.read_text().strip()

    def grant(self, podman: Podman, container: str, public_key: str) -> list[str]:
        """Authorize the lab key for the provisioning user; return the node's SSH host keys.

        Host keys come back as 'type base64' pairs, read through podman (trusted).
        """
        result = podman.exec_checked(container, ["sh", "-c", _GRANT_SCRIPT], input=public_key + "\n")
        keys = []
        for line in result.stdout.splitlines():
            fields = line.split()
            if len(fields) >= 2:
                keys.append(f"{fields[0]} {fields[1]}")
        return keys

    def write_known_hosts(self, keys_by_ip: dict[str, list[str]]) -> None:
        lines = [f"{ip} {key}" for ip, keys in sorted(keys_by_ip.items()) for key in keys]
        tmp = self.known_hosts.with_suffix(".tmp")
        tmp.write_text("".join(line + "\n" for line in lines))
        os.chmod(tmp, 0o600)
        tmp.replace(self.known_hosts)

    def probe(self, ip: str, timeout_s: int = 5) -> Probe:
        """Log in over SSH as the provisioning user and check passwordless sudo."""
        argv = [
            "ssh",
            *self.ssh_options(),
            "-o",
            "BatchMode=yes",
            "-o",
            f"ConnectTimeout={timeout_s}",
            "-o",
            "ControlMaster=no",
            "-o",
            "ControlPath=none",
            "-i",
            str(self.key),
            f"{PROVISIONING_USER}@{ip}",
            "sudo -n true",
        ]
        result = self._run(argv, timeout=timeout_s + 10)
        if result.ok:
            return Probe(True, "ok")
        return Probe(False, result.last_error_line())

    def close_control_masters(self, ips: list[str], control_path_dir: Path) -> None:
        """Stop Ansible's persistent SSH masters to these addresses.

        A lab brought down and up again reuses its addresses; a master left from
        the old containers would carry the next Ansible run into a dead session.
        """
        if not control_path_dir.is_dir():
            return
        for ip in ips:
            self._run(
                [
                    "ssh",
                    "-O",
                    "exit",
                    "-o",
                    f"ControlPath={control_path_dir}/%C",
                    f"{PROVISIONING_USER}@{ip}",
                ],
                timeout=10,
            )

    def ansible_ssh_common_args(self) -> str:
        return shlex.join(self.ssh_options())
