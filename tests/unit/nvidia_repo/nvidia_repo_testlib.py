"""What the test repository's tests share: the builder module and the paths (unique name: not conftest)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

REPO_DIR = Path(__file__).resolve().parents[2] / "nvidia_repo"
HWREPLAY_DIR = Path(__file__).resolve().parents[2] / "hwreplay"
CUDA = "compute/cuda/repos/debian12/x86_64"
CTK = "libnvidia-container/stable/deb/amd64"


def build_module():
    """tests/nvidia_repo/build.py as a module (it is a script, not a package)."""
    if "nvidia_repo_build" not in sys.modules:
        spec = importlib.util.spec_from_file_location("nvidia_repo_build", REPO_DIR / "build.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["nvidia_repo_build"] = module
        spec.loader.exec_module(module)
    return sys.modules["nvidia_repo_build"]


def parse_packages(text: str) -> list:
    """Packages stanzas as dicts (continuation lines joined)."""
    stanzas = []
    for block in text.strip().split("\n\n"):
        fields, last = {}, None
        for line in block.splitlines():
            if line.startswith(" ") and last:
                fields[last] += "\n" + line
            else:
                last, _, value = line.partition(": ")
                fields[last] = value
        stanzas.append(fields)
    return stanzas
