"""Where a lab keeps its files, and the record of what `lab up` was asked for.

  <root>/.cache/lab/<name>/lab.json       the lab spec (mix, subnet, image, profiles)
  <root>/.cache/lab/<name>/id_ed25519     the lab's SSH key pair
  <root>/.cache/lab/<name>/known_hosts    the nodes' host keys
  <root>/inventories/lab/                 the generated inventory of the default lab `lab`
  <root>/inventories/lab-<name>/          ... of any other lab

All of them are git-ignored (.cache/, inventories/lab/ and inventories/lab-*/).
"""

from __future__ import annotations

import configparser
import json
import os
from dataclasses import asdict
from pathlib import Path

from clusterforge.errors import InvalidInput
from clusterforge.lab.model import DEFAULT_LAB_NAME, ROLE_ORDER, LabSpec

STATE_FILE = "lab.json"


def state_dir(root: Path, name: str) -> Path:
    return root / ".cache" / "lab" / name


def inventory_dir(root: Path, name: str) -> Path:
    return root / "inventories" / ("lab" if name == DEFAULT_LAB_NAME else f"lab-{name}")


def save_spec(root: Path, spec: LabSpec) -> None:
    path = state_dir(root, spec.name) / STATE_FILE
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(spec), indent=2, sort_keys=True) + "\n")
    tmp.replace(path)


def load_spec(root: Path, name: str) -> LabSpec | None:
    """The recorded spec of lab `name`, or None when the lab has no state."""
    path = state_dir(root, name) / STATE_FILE
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
        counts = {role: int(data["counts"][role]) for role in ROLE_ORDER}
        return LabSpec(
            name=data["name"],
            counts=counts,
            subnet=data["subnet"],
            image=data["image"],
            profiles=dict(data.get("profiles") or {}),
        )
    except (ValueError, KeyError, TypeError) as err:
        raise InvalidInput(
            f"lab state {path} is unreadable ({type(err).__name__}: {err})",
            f"remove the lab with `clusterforge lab down --name {name}` and bring it up again",
        ) from None


class AnsibleSettings:
    """The few ansible.cfg settings the lab must honour when it cleans up after itself."""

    def __init__(self, root: Path):
        parser = configparser.ConfigParser(interpolation=None)
        parser.read(root / "ansible.cfg")
        self._parser = parser
        self._root = root

    def _path(self, value: str) -> Path:
        # Ansible resolves relative paths of ansible.cfg against the file's folder.
        path = Path(os.path.expanduser(value))
        return path if path.is_absolute() else self._root / path

    def control_path_dir(self) -> Path:
        value = os.environ.get("ANSIBLE_SSH_CONTROL_PATH_DIR") or self._parser.get(
            "ssh_connection", "control_path_dir", fallback="~/.ansible/cp"
        )
        return self._path(value)

    def fact_cache_dir(self) -> Path | None:
        """The jsonfile fact cache folder, or None when facts are cached some other way."""
        plugin = os.environ.get("ANSIBLE_CACHE_PLUGIN") or self._parser.get(
            "defaults", "fact_caching", fallback="memory"
        )
        if plugin not in ("jsonfile", "ansible.builtin.jsonfile"):
            return None
        value = os.environ.get("ANSIBLE_CACHE_PLUGIN_CONNECTION") or self._parser.get(
            "defaults", "fact_caching_connection", fallback=""
        )
        return self._path(value) if value else None
