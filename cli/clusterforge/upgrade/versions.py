"""The installed version of an upgrade's component on each node: read on the nodes, or from a file.

`installed_versions` runs playbooks/upgrade_versions.yml (read-only, in check
mode) through ansible-runner; each node returns its version with set_stats,
so the versions come from the run's stats event, never from Ansible's text
output. A node that could not be read has version None: the planner still
plans it and the upgrade's own pre-check reads it again.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from cfcore.files import UnsafeFile, read_text
from cfcore.inputs import VERSION_FORM, plain_problem

from clusterforge.errors import EnvironmentNotReady, InvalidInput
from clusterforge.paths import project_root
from clusterforge.upgrade.plan import component_hosts
from clusterforge.validation.inventory import load_inventory
from clusterforge.validation.runner import run_playbook

PLAYBOOK = "upgrade_versions.yml"
INSTALLED_KEY = "upgrade_installed"  # set_stats: {host: version or null}
UNREAD_KEY = "upgrade_unread"  # set_stats: {host: why the version could not be read}
SHOWN_HOSTS = 10
MAX_INSTALLED_FILE_BYTES = 64 * 1024 * 1024  # a version per host: far below for any fleet
INSTALLED_FILE_FIX = "write a JSON or YAML mapping of host to installed version, e.g. {gpu-01: 570.124.06}"


def installed_versions(
    inventory: Any,
    component: str,
    limit: str | None = None,
    *,
    private_dir: Path | None = None,
    note: Callable[[str], None] = lambda _text: None,
) -> dict[str, str | None]:
    """{host: installed version or None} for the component's hosts of `inventory` within `limit`.

    `inventory`: a loaded inventory (clusterforge.validation.inventory), or its
    path. `private_dir`: ansible-runner's folder (artifacts kept there); default
    a temporary one. `note` is told about every host whose version is unknown.
    """
    if isinstance(inventory, (str, Path)):
        inventory = load_inventory(inventory, limit)
    hosts = component_hosts(inventory, component)
    if not hosts:
        return {}
    unreachable: list[str] = []

    def on_event(name: str, data: dict[str, Any]) -> None:
        if name == "runner_on_unreachable" and data.get("host"):
            unreachable.append(str(data["host"]))

    with tempfile.TemporaryDirectory(prefix="clusterforge-upgrade-versions-") as scratch:
        run = run_playbook(
            project_root() / "playbooks" / PLAYBOOK,
            inventory.path,
            private_dir or Path(scratch),
            on_event,
            extravars={"upgrade_component": component},
            limit=limit,
            check_mode=True,  # it only reads; check mode makes sure of it
        )
        tail = run.stdout_tail()
    custom = run.stats.get("artifact_data") or {}
    versions = custom.get(INSTALLED_KEY) or {}
    if not versions and run.status != "successful":
        raise EnvironmentNotReady(
            f"playbooks/{PLAYBOOK} read no installed version ({run.status}, rc {run.rc}):\n{tail}",
            "check that the hosts are reachable (ansible -i INV -m ping GROUP), or pass --installed FILE",
        )
    _note_unknown(hosts, versions, custom.get(UNREAD_KEY) or {}, unreachable, note)
    found = {host: _version(versions.get(host)) for host in hosts}
    for host, version in found.items():
        problem = plain_problem(version, VERSION_FORM) if version is not None else None
        if problem:  # free text from the node (version.info's Version=): never a playbook's variable
            note(
                f"{host}: the installed version read from the node ({version!r}) {problem}; "
                "`upgrade run` stops this node untouched"
            )
    return found


def _note_unknown(
    hosts: list[str],
    versions: dict[str, Any],
    unread: dict[str, Any],
    unreachable: list[str],
    note: Callable[[str], None],
) -> None:
    down = [h for h in hosts if h in set(unreachable)]
    if down:
        note(f"{len(down)} host(s) unreachable, version unknown (still planned): {_names(down)}")
    for host in (h for h in hosts if h in unread):
        note(f"{host}: version not read ({unread[host]}); still planned")
    silent = [h for h in hosts if h not in versions and h not in unread and h not in set(unreachable)]
    if silent:
        note(f"{len(silent)} host(s) returned no version (still planned): {_names(silent)}")


def _names(hosts: list[str]) -> str:
    more = f", ... +{len(hosts) - SHOWN_HOSTS} more" if len(hosts) > SHOWN_HOSTS else ""
    return ", ".join(hosts[:SHOWN_HOSTS]) + more


def _version(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)


def read_installed_file(path: str | Path) -> dict[str, str | None]:
    """`--installed FILE`: {host: version} from JSON or YAML (null: unknown); InvalidInput naming the file."""
    path = Path(path)
    if not path.is_file():
        raise InvalidInput(f"--installed {path}: no such file", INSTALLED_FILE_FIX)
    try:
        data = yaml.safe_load(read_text(str(path), MAX_INSTALLED_FILE_BYTES, errors="strict"))  # JSON too
    except (UnsafeFile, OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        raise InvalidInput(
            f"--installed {path} is not readable JSON or YAML: {err}", INSTALLED_FILE_FIX
        ) from None
    if not isinstance(data, dict):
        raise InvalidInput(
            f"--installed {path} holds a {type(data).__name__}, not a mapping of host to version",
            INSTALLED_FILE_FIX,
        )
    installed: dict[str, str | None] = {}
    for host, version in data.items():
        if not isinstance(version, (str, int, float, type(None))) or isinstance(version, bool):
            raise InvalidInput(
                f"--installed {path}: the version of {host} is a {type(version).__name__}, not a version",
                "give each host one version string (or null when unknown)",
            )
        installed[str(host)] = read = _version(version)
        problem = plain_problem(read, VERSION_FORM) if read is not None else None
        if problem:
            raise InvalidInput(
                f"--installed {path}: the version of {host} ({read!r}) {problem}",
                "give each host one version (letters, digits and . + ~ _ -, e.g. 570.124.06), or null",
            )
    return installed
