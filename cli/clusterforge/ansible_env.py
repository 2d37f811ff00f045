"""The one place that decides how the CLI runs Ansible: which ansible.cfg, executables and environment.

- `use_project_config()`: make Ansible *in this process* (the inventory API)
  read the checkout's ansible.cfg; call it before `ansible.constants` is first
  imported.
- `ansible_tool(name)`: an `ansible-*` executable, the one next to this
  Python first (the venv), then PATH; EnvironmentNotReady (exit 4) otherwise.
- `ansible_env()`: the environment of a subprocess or ansible-runner run:
  the same ansible.cfg, the venv's tools first on PATH, no colours, and for
  the bring-up's stages Mitogen's strategy (`mitogen_strategy`) unless
  CLUSTERFORGE_MITOGEN=0.
- `ensure_collection_link()`: makes the checkout resolvable as the Ansible
  collection `clusterforge.cluster` (ansible.cfg's collections_path points at
  `.collections/`, a git-ignored folder holding one symlink to the checkout).

Without a checkout (an installed CLI) Ansible's own configuration applies.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path

from clusterforge.errors import EnvironmentNotReady
from clusterforge.paths import project_root

COLLECTION_NAMESPACE = "clusterforge"
COLLECTION_NAME = "cluster"
COLLECTIONS_DIR = ".collections"  # relative to the checkout; named by ansible.cfg's collections_path
# The link sits in <checkout>/.collections/ansible_collections/clusterforge/: three levels up is the checkout.
_LINK_TARGET = os.path.join(os.pardir, os.pardir, os.pardir)


def checkout() -> Path | None:
    """The ClusterForge checkout, or None for an installed CLI without one."""
    try:
        return project_root()
    except EnvironmentNotReady:
        return None


def config_path() -> Path | None:
    """The ansible.cfg every Ansible run of the CLI uses (None: Ansible's own search applies)."""
    root = checkout()
    return root / "ansible.cfg" if root else None


def use_project_config() -> None:
    """Point this process's Ansible at the checkout's ansible.cfg (before ansible.constants is imported)."""
    config = config_path()
    if config is not None:
        os.environ["ANSIBLE_CONFIG"] = str(config)


def ansible_tool(name: str) -> str:
    """An Ansible executable: the one next to this Python first (the venv), then PATH."""
    local = Path(sys.executable).parent / name
    if local.is_file() and os.access(local, os.X_OK):
        return str(local)
    found = shutil.which(name)
    if not found:
        raise EnvironmentNotReady(
            f"{name} not found next to {sys.executable} nor on PATH",
            "install ClusterForge with its dependencies (scripts/setup-venv.sh) and run it from that venv",
        )
    return found


def ansible_env(base: dict[str, str] | None = None, *, mitogen: bool = False) -> dict[str, str]:
    """Ansible subprocess environment: the checkout's ansible.cfg and collection, the venv's tools first.

    `mitogen`: with Mitogen's strategy (`mitogen_strategy`): the bring-up's stages ask for it.
    """
    env = dict(os.environ if base is None else base)
    config = config_path()
    if config is not None:
        env["ANSIBLE_CONFIG"] = str(config)
        ensure_collection_link(config.parent)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env.setdefault("ANSIBLE_NOCOLOR", "1")
    if mitogen:
        env.update(mitogen_strategy(env))
    return env


MITOGEN_SWITCH = "CLUSTERFORGE_MITOGEN"  # 0: Ansible's own strategy and connections


def mitogen_strategy(env: dict[str, str]) -> dict[str, str]:
    """ANSIBLE_STRATEGY(_PLUGINS) for Mitogen's linear strategy, where it is installed and wanted.

    Mitogen runs modules in a persistent interpreter per host over one SSH connection: measured
    3-6x faster on converged runs (README, "Speed at fleet scale"). Not for ansible.cfg: its
    plugin path is inside the venv. An operator's own ANSIBLE_STRATEGY wins; plays naming a
    strategy (validate.yml: free) keep theirs.
    """
    switched_off = env.get(MITOGEN_SWITCH, "1").strip().lower() in ("0", "false", "no", "off")
    if switched_off or "ANSIBLE_STRATEGY" in env:
        return {}
    spec = importlib.util.find_spec("ansible_mitogen")
    if spec is None or not spec.submodule_search_locations:
        return {}
    plugins = Path(next(iter(spec.submodule_search_locations))) / "plugins" / "strategy"
    if not (plugins / "mitogen_linear.py").is_file():
        return {}
    return {"ANSIBLE_STRATEGY_PLUGINS": str(plugins), "ANSIBLE_STRATEGY": "mitogen_linear"}


def collection_link(root: Path) -> Path:
    return root / COLLECTIONS_DIR / "ansible_collections" / COLLECTION_NAMESPACE / COLLECTION_NAME


def ensure_collection_link(root: Path | None = None) -> Path | None:
    """Create (once) `<checkout>/.collections/ansible_collections/clusterforge/cluster` -> the checkout.

    Idempotent; a link pointing elsewhere is replaced. Returns the link, or
    None without a checkout. EnvironmentNotReady when the path is taken by
    something else or the checkout is not writable.
    """
    root = root or checkout()
    if root is None:
        return None
    link = collection_link(root)
    if link.is_symlink() and os.readlink(link) == _LINK_TARGET:
        return link
    fix = f"remove {link} if it is stale, or create it: ln -sfn {_LINK_TARGET} {link}"
    if link.exists() and not link.is_symlink():
        raise EnvironmentNotReady(f"{link} exists and is not the link to the checkout", fix)
    try:
        link.parent.mkdir(parents=True, exist_ok=True)
        staged = link.with_name(f".{link.name}.{os.getpid()}")
        if staged.is_symlink():
            staged.unlink()
        staged.symlink_to(_LINK_TARGET)
        os.replace(staged, link)  # atomic: concurrent runs never see a missing or half-made link
    except OSError as err:
        raise EnvironmentNotReady(f"cannot create the collection link {link}: {err.strerror}", fix) from None
    return link
