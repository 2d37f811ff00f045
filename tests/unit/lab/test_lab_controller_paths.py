"""The lab's control node runs this ClusterForge (scheduled inspection and backups): what it mounts."""

from __future__ import annotations

import sys
from pathlib import Path

from clusterforge.lab.up import clusterforge_paths


def test_a_venv_on_a_python_outside_usr_brings_that_python_along(monkeypatch):
    pyenv = "/root/.pyenv/versions/3.11.7"
    monkeypatch.setattr(sys, "base_prefix", pyenv)
    assert clusterforge_paths(Path("/src/clusterforge")) == ["/src/clusterforge", pyenv]


def test_a_venv_on_the_system_python_uses_the_node_s_own(monkeypatch):
    monkeypatch.setattr(sys, "base_prefix", "/usr")
    assert clusterforge_paths(Path("/src/clusterforge")) == ["/src/clusterforge"]
