"""Where the ClusterForge checkout (playbooks, roles, ansible.cfg) lives."""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

from clusterforge.errors import EnvironmentNotReady


@cache
def project_root() -> Path:
    """The checkout holding ansible.cfg, playbooks/ and roles/.

    CLUSTERFORGE_HOME wins; otherwise the checkout this package was installed
    from (pip install -e), found from this file's location.
    """
    env = os.environ.get("CLUSTERFORGE_HOME")
    candidates = [Path(env)] if env else [Path(__file__).resolve().parents[2]]
    for root in candidates:
        if (root / "ansible.cfg").is_file() and (root / "playbooks").is_dir():
            return root
    where = env or str(candidates[0])
    raise EnvironmentNotReady(
        f"no ClusterForge checkout (ansible.cfg and playbooks/) at {where}",
        "set CLUSTERFORGE_HOME to the checkout, or install with `pip install -e .` from it",
    )
