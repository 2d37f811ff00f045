"""The one lab every end-to-end test shares (run with `pytest -m lab tests/integration`).

Bringing a lab up and the site playbook on it cost minutes, so the whole
session uses one: `cftest` (its own name: a developer's `lab` is never
touched), a control node, three GPU and two NPU nodes, some of them faulty on
purpose (PROFILES), and a storage node (a one-node Ceph cluster the others
mount), brought up and then prepared by `playbooks/site.yml` as in production.
It is removed at the end whatever happens.

Modules run in the order of their LAB_ORDER (default 50): the ones that only
read the nodes or switch replay profiles first, the lab's own lifecycle
(reconcile, regenerate, down) last, since it stops and finally removes nodes.
Needs root, podman and the node image (scripts/test.sh sets all of them up).
"""

from __future__ import annotations

import os
import re
import shutil
import time

import pytest
from labkit import BIN, COUNTS, HOSTS, INVENTORY, LAB, PROFILES, ROOT, STATE, Lab, explain, lab_cli, run


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the modules in LAB_ORDER (stable: tests keep their order inside a module)."""
    items.sort(key=lambda item: getattr(item.module, "LAB_ORDER", 50))


# profile_tasks (ansible.cfg) stamps every task: "... (0:00:01.234)       0:05:12.345 ****".
_ELAPSED = re.compile(r"\(\d+:\d\d:\d\d\.\d+\)\s+(\d+):(\d\d):(\d\d\.\d+)")


def part_seconds(output: str, first_play: str, next_play: str | None = None) -> str:
    """The time of a part of site.yml: from its first play to the next part's (or the end)."""
    start = output.find(f"PLAY [{first_play}")
    end = output.find(f"PLAY [{next_play}", start) if next_play and start >= 0 else -1
    part = output[start : end if end >= 0 else len(output)] if start >= 0 else ""
    stamps = [int(h) * 3600 + int(m) * 60 + float(s) for h, m, s in _ELAPSED.findall(part)]
    return f"{stamps[-1] - stamps[0]:.0f} s" if len(stamps) > 1 else "not found"


# The first play of storage.yml, schedulers.yml and monitoring.yml, which site.yml imports last.
STORAGE_PLAY, SCHEDULERS_PLAY, MONITORING_PLAY = "Ceph cluster", "ClusterForge's health check", "Exporters"


@pytest.fixture(scope="session")
def lab():
    if os.geteuid() != 0 or shutil.which("podman") is None:
        pytest.skip("lab tests need root and podman (scripts/setup-host.sh)")
    lab_cli("down", "--name", LAB)  # a leftover of an interrupted run
    clock = time.monotonic()
    counts = [arg for role, count in COUNTS.items() for arg in (f"--{role}", str(count))]
    profiles = [arg for host, profile in PROFILES.items() for arg in ("--profile", f"{host}={profile}")]
    up = lab_cli("up", "--name", LAB, *counts, *profiles, timeout=900)
    try:
        assert up.returncode == 0, explain(up)
        print(f"\nlab up: {time.monotonic() - clock:.0f} s")
        # Tests follow bring-up, as in production: the site playbook prepares the
        # nodes (chrony from the lab's time server, the NVIDIA stack from the
        # lab's test repositories, ...). Its own validation would stop on the
        # nodes that are faulty on purpose: the tests judge them.
        clock = time.monotonic()
        site = run(
            BIN / "ansible-playbook", "-i", INVENTORY, "-e", "validate_block_on_fail=false",
            ROOT / "playbooks" / "site.yml", timeout=900,
        )  # fmt: skip
        assert site.returncode == 0, explain(site)
        print(
            f"site playbook: {time.monotonic() - clock:.0f} s (storage plays: "
            f"{part_seconds(site.stdout, STORAGE_PLAY, SCHEDULERS_PLAY)}, "
            f"scheduler plays: {part_seconds(site.stdout, SCHEDULERS_PLAY, MONITORING_PLAY)}, "
            f"monitoring plays: {part_seconds(site.stdout, MONITORING_PLAY)})"
        )
        yield Lab(LAB, INVENTORY, STATE, HOSTS, up)
    finally:
        down = lab_cli("down", "--name", LAB)
        assert down.returncode == 0, explain(down)
