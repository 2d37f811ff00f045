"""Fixtures of the lab unit tests: a fake checkout and a LabContext wired to a FakeHost."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from clusterforge.lab.context import LabContext
from clusterforge.lab.podman import Podman
from clusterforge.lab.progress import Reporter
from labfake import FakeHost, route_line
from rich.console import Console


class FakeClock:
    """time.monotonic/time.sleep stand-ins: sleeping moves the clock, instantly."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.slept = 0.0

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.slept += seconds


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A minimal ClusterForge checkout whose Ansible caches live inside tmp_path."""
    root = tmp_path / "checkout"
    (root / "playbooks").mkdir(parents=True)
    (root / "images" / "node").mkdir(parents=True)
    (root / "images" / "node" / "containers.conf").write_text('[engine]\nruntime = "runc"\n')
    (tmp_path / "cp").mkdir()
    (root / "ansible.cfg").write_text(
        "[defaults]\n"
        "fact_caching = jsonfile\n"
        f"fact_caching_connection = {tmp_path / 'facts'}\n"
        "[ssh_connection]\n"
        f"control_path_dir = {tmp_path / 'cp'}\n"
        "control_path = %(directory)s/%%C\n"
    )
    return root


@pytest.fixture
def host() -> FakeHost:
    return FakeHost()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def routes(tmp_path: Path) -> Path:
    """The host's route table: a default route and the LAN 192.168.1.0/24."""
    table = tmp_path / "route"
    table.write_text(
        "Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\tMTU\tWindow\tIRTT\n"
        + route_line("eth0", "0.0.0.0", "0.0.0.0")
        + "\n"
        + route_line("eth0", "192.168.1.0", "255.255.255.0")
        + "\n"
    )
    return table


@pytest.fixture
def progress() -> io.StringIO:
    return io.StringIO()


@pytest.fixture
def ctx(checkout, host, clock, routes, progress, monkeypatch) -> LabContext:
    monkeypatch.delenv("CONTAINERS_CONF", raising=False)
    monkeypatch.delenv("CF_NODE_IMAGE", raising=False)
    for var in (
        "ANSIBLE_SSH_CONTROL_PATH_DIR",
        "ANSIBLE_CACHE_PLUGIN",
        "ANSIBLE_CACHE_PLUGIN_CONNECTION",
        "ANSIBLE_VAULT_PASSWORD_FILE",
    ):
        monkeypatch.delenv(var, raising=False)
    fuse = checkout.parent / "dev-fuse"  # the host's /dev/fuse, as far as the lab looks at it
    fuse.touch()
    return LabContext(
        root=checkout,
        podman=Podman(host, checkout / "images" / "node" / "containers.conf"),
        runner=host,
        reporter=Reporter(Console(file=progress, width=200)),
        sleep=clock.sleep,
        clock=clock.clock,
        geteuid=lambda: 0,
        which=lambda tool: f"/usr/bin/{tool}",
        route_table=routes,
        fuse_device=fuse,
    )
