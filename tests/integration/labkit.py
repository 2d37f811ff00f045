"""What the end-to-end tests share: the lab's shape, and running commands against it.

conftest.py brings the lab up once per session; see its docstring.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
LAB = "cftest"
INVENTORY = ROOT / "inventories" / f"lab-{LAB}"
STATE = ROOT / ".cache" / "lab" / LAB
# The lab's vault password file (`lab up` creates it before its first playbook run): every
# Ansible run against the lab needs it for the storage secrets (cli/clusterforge/lab/vault.py).
VAULT_PASSWORD_FILE = STATE / "vault-password"
# The lab's offline bundle (conftest.offline_bundle), kept between local runs, and its server.
BUNDLE = ROOT / ".cache" / "bundle" / LAB
BUNDLE_PORT = 8089
BUNDLE_VARS = STATE / "bundle-vars.yml"
ENV = {
    **os.environ,
    "CONTAINERS_CONF": os.environ.get("CONTAINERS_CONF", str(ROOT / "images" / "node" / "containers.conf")),
    "ANSIBLE_NOCOLOR": "1",
    "NO_COLOR": "1",
    "ANSIBLE_VAULT_PASSWORD_FILE": str(VAULT_PASSWORD_FILE),
}
# One storage node: a one-node Ceph cluster (CephFS, RGW) that the GPU and NPU nodes mount,
# with the JuiceFS volume (metadata in Redis on the control node, data in RGW).
COUNTS = {"control": 1, "gpu": 3, "npu": 2, "storage": 1}
# Host -> replay profile at lab creation (gpu-01 and npu-01 keep their healthy default).
PROFILES = {
    f"{LAB}-gpu-02": "h100-xid79",
    f"{LAB}-gpu-03": "h100-ib-port-down",
    f"{LAB}-npu-02": "910b-health-alarm",
}
STORAGE = f"{LAB}-sto-01"
CLIENTS = [*(f"{LAB}-gpu-0{i}" for i in (1, 2, 3)), *(f"{LAB}-npu-0{i}" for i in (1, 2))]
HOSTS = [f"{LAB}-ctl-01", *CLIENTS, STORAGE]


def run(*argv: str | Path, timeout: float = 600, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(arg) for arg in argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env or ENV,
        timeout=timeout,
        check=False,
    )


def explain(proc: subprocess.CompletedProcess) -> str:
    return f"rc={proc.returncode}\nstdout:\n{proc.stdout[-4000:]}\nstderr:\n{proc.stderr[-4000:]}"


def lab_cli(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return run(BIN / "clusterforge", "lab", *args, timeout=timeout)


@dataclass(frozen=True)
class Lab:
    name: str
    inventory: Path
    state: Path
    hosts: list[str]
    up: subprocess.CompletedProcess  # the `lab up` that created it
    bringup_run: str  # the id of the bring-up run (in conftest.LEDGER) that prepared it


def node(host: str, *argv: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run a command as root on a lab node (its container; the host name without the prefix)."""
    return run("podman", "exec", f"cflab-{host}", *argv, timeout=timeout)


def sh(host: str, script: str, timeout: float = 120) -> str:
    """Run a shell script as root on a lab node; fail the test with its output if it fails."""
    proc = node(host, "sh", "-ec", script, timeout=timeout)
    assert proc.returncode == 0, f"{host}: {script}\n{explain(proc)}"
    return proc.stdout
