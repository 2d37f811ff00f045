"""The lab's stand-in for NVIDIA's package repositories (tests/nvidia_repo, test-only).

Lab nodes reach Debian's mirror and nothing else, so a lab with GPU nodes gets
the checkout's test repositories (NVIDIA's package names, signed with a test
key) served on the lab network by tests/nvidia_repo/serve.yml, when the
checkout has it, like the hardware replay. The roles reach it through their
ordinary URL and key-checksum variables, recorded in the lab's state and
written into the inventory as group_vars/all/nvidia_repo.yml.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from typing import Any

from clusterforge.ansible_env import ansible_env, ansible_tool
from clusterforge.errors import EnvironmentNotReady
from clusterforge.lab.context import LabContext
from clusterforge.lab.model import NAME_PREFIX, LabSpec, Node

SERVE_PLAYBOOK = "tests/nvidia_repo/serve.yml"
# Not the lab label: `lab status`/`lab inventory` read every container with that one as a node.
SERVICE_LABEL = "org.clusterforge.lab.service"
VARS_FILE = "nvidia_repo.json"


def container_name(lab: str) -> str:
    return f"{NAME_PREFIX}{lab}-nvidia-repo"


def recorded_vars(ctx: LabContext, lab: str) -> dict[str, Any]:
    """The repository variables `serve` recorded for the lab; {} when it serves none."""
    path = ctx.state_dir(lab) / VARS_FILE
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as err:
        raise EnvironmentNotReady(
            f"{path} is unreadable: {err}", f"bring the lab up again: clusterforge lab up --name {lab}"
        ) from None


def serve(ctx: LabContext, spec: LabSpec, nodes: Sequence[Node]) -> dict[str, Any]:
    """Serve the test repositories on the lab network; their variables, or {} when not applicable."""
    playbook = ctx.root / SERVE_PLAYBOOK
    if not playbook.is_file() or not any("gpu_nvidia" in node.role.groups for node in nodes):
        return {}
    out = ctx.state_dir(spec.name) / VARS_FILE
    extra = {
        "nvidia_repo_network": spec.network,
        "nvidia_repo_container": container_name(spec.name),
        "nvidia_repo_labels": {SERVICE_LABEL: spec.name},
        "nvidia_repo_vars_out": str(out),
    }
    argv = [ansible_tool("ansible-playbook"), "-i", "localhost,", "-e", json.dumps(extra), str(playbook)]
    with ctx.reporter.step(f"serve the test NVIDIA repositories ({SERVE_PLAYBOOK})"):
        result = ctx.runner(argv, env=ansible_env(), cwd=ctx.root, timeout=900)
        if not result.ok:
            raise EnvironmentNotReady(
                f"{SERVE_PLAYBOOK} failed: {result.last_error_line()}",
                f"rerun it to see the whole output: cd {ctx.root} && {shlex.join(argv)}",
            )
    return recorded_vars(ctx, spec.name)


def service_containers(ctx: LabContext, lab: str) -> list[str]:
    """Containers serving the lab (not nodes), for `lab down`."""
    return [
        name for name in ctx.podman.container_names(f"{SERVICE_LABEL}={lab}") if name.startswith(NAME_PREFIX)
    ]
