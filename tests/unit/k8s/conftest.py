"""Rendered Kubernetes documents of the example and lab inventories, one ansible-playbook run each.

tests/k8s_render/render.yml runs each role's tasks/render.yml on this machine for every k8s
host; the session-scoped fixture keeps the tree for all tests of this folder.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tests" / "k8s_render"))

LAB_MIX = {"control": 1, "gpu": 2, "npu": 1, "storage": 1}
LAB_SUBNET = "10.89.100.0/24"


def lab_inventory(target: Path) -> Path:
    """The lab's inventory as `clusterforge lab up` writes it, without starting anything."""
    from clusterforge.lab.access import LabAccess
    from clusterforge.lab.inventory import write_inventory
    from clusterforge.lab.model import LabSpec, plan_nodes

    nodes = plan_nodes(LabSpec("lab", dict(LAB_MIX), LAB_SUBNET, "img"))
    access = LabAccess(target.parent / "state" / "lab", runner=None)
    return write_inventory(target, "lab", nodes, access, LAB_SUBNET)


def render(inventory: Path, root: Path) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
        # Facts of these stand-in hosts must not land in the shared fact cache.
        "ANSIBLE_CACHE_PLUGIN": "memory",
        "ANSIBLE_NOCOLOR": "1",
    }
    return subprocess.run(
        [
            str(Path(sys.executable).parent / "ansible-playbook"),
            "-i",
            str(inventory),
            str(REPO / "tests" / "k8s_render" / "render.yml"),
            "-e",
            f"k8s_render_root={root}",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


class Rendered:
    def __init__(
        self, name: str, inventory: Path, root: Path, run: subprocess.CompletedProcess, seconds: float
    ):
        self.name, self.inventory, self.root, self.run, self.seconds = name, inventory, root, run, seconds

    def host(self, name: str) -> Path:
        return self.root / name


@pytest.fixture(scope="session")
def rendered(tmp_path_factory):
    """name -> Rendered, rendered once per session for each inventory."""
    cache: dict[str, Rendered] = {}

    def get(name: str) -> Rendered:
        if name not in cache:
            base = tmp_path_factory.mktemp(f"k8s-{name}")
            inventory = (
                REPO / "inventories" / "example" if name == "example" else lab_inventory(base / "inventory")
            )
            start = time.monotonic()
            run = render(inventory, base / "out")
            cache[name] = Rendered(name, inventory, base / "out", run, time.monotonic() - start)
        return cache[name]

    return get
