"""The lab's training environment (docs/design.md, "Framework readiness"): a CPU-only PyTorch in a
virtual environment of Debian's python, built once on the host by scripts/setup-train-venv.sh into
~/.cache/clusterforge/train-venv/torch-<version>/ (outside the checkout, so a fresh clone on the
same machine reuses it; $CF_TRAIN_VENV_CACHE moves it) and bind-mounted read-only on the accelerator nodes at
NODE_PATH, as a site puts its training environment on shared storage. The lab's inventory names it
in `framework_env`; `clusterforge validate --level framework` on the lab then reports what a CPU
build cannot do (no GPU, no torch_npu), honestly, while the probe's all-reduce machinery runs for
real over gloo.
"""

from __future__ import annotations

import os
from pathlib import Path

TORCH_VERSION = "2.13.0"  # the lab BOM's pytorch_version; the wheel's CUDA: none (a CPU build)
NODE_PATH = "/opt/train/venv"
SCRIPT = "scripts/setup-train-venv.sh"
STAMP = ".clusterforge-train-venv"


def host_path() -> Path:
    """Where scripts/setup-train-venv.sh builds the venv of TORCH_VERSION (the same default)."""
    cache = os.environ.get("CF_TRAIN_VENV_CACHE") or Path.home() / ".cache" / "clusterforge" / "train-venv"
    return Path(cache) / f"torch-{TORCH_VERSION}"


def mounts() -> dict[str, str]:
    """The accelerator nodes' read-only mount of the venv; none before the script has built it."""
    venv = host_path()
    return {str(venv): NODE_PATH} if (venv / STAMP).is_file() else {}


def framework_vars() -> dict[str, object]:
    """group_vars/all/framework.yml: the training environment every accelerator node validates in."""
    return {"framework_env": {"kind": "venv", "path": NODE_PATH}}
