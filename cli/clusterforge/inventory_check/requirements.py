"""Which variables each host must have, and why (docs/design.md).

Three sources, each where the variable is used:
- HOST_REQUIRED: the inventory model's per-host identity;
- what `playbooks/validate.yml` reads: the BOM variables of the host's
  accelerator vendor (VENDOR_REQUIRED) and, on Ascend hosts, the NPU NIC plan
  (VALIDATE_GROUP_REQUIRED: npu.nic_ip checks it);
- the roles: each role's `meta/argument_specs.yml` options marked
  `required: true`, for the hosts of the plays of `playbooks/site.yml` that
  apply the role (`role_requirements`). A rule exists once a role reads the
  variable, and cannot drift from the role.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from cfcore.files import UnsafeFile, read_text

# Every managed host (not ansible_connection=local).
HOST_REQUIRED = ("ansible_host", "node_sku", "rack")

# Hosts of a group need these because the validate playbook reads them there.
VALIDATE_GROUP_REQUIRED: dict[str, tuple[str, ...]] = {
    "npu_ascend": ("hccn_devices",),
}

SITE_PLAYBOOK = "playbooks/site.yml"
_COLLECTION_PREFIX = "clusterforge.cluster."
_MAX_PLAYBOOK_BYTES = 1024 * 1024


@dataclass(frozen=True)
class RoleRequirement:
    """`variable` is required by `role`, which the play `play` applies to the host pattern `hosts`."""

    role: str
    play: str
    hosts: str
    variable: str

    @property
    def because(self) -> str:
        return f" (required by role {self.role}, which {SITE_PLAYBOOK} applies to hosts: {self.hosts})"


@cache
def role_requirements(root: Path | None) -> tuple[RoleRequirement, ...]:
    """The required options of every role `playbooks/site.yml` (and what it imports) applies, per play."""
    if root is None:
        return ()
    found: list[RoleRequirement] = []
    for play in _plays(root / SITE_PLAYBOOK, set()):
        hosts = play.get("hosts")
        if not isinstance(hosts, str) or "{{" in hosts:
            continue  # a templated pattern is resolved only at run time
        name = str(play.get("name") or hosts)
        for role in _roles(play):
            for variable in _required_options(root / "roles" / role):
                found.append(RoleRequirement(role, name, hosts, variable))
    return tuple(found)


def _plays(playbook: Path, seen: set[Path]) -> list[dict[str, Any]]:
    real = playbook.resolve()
    if real in seen:
        return []
    seen.add(real)
    data = _yaml(playbook)
    plays: list[dict[str, Any]] = []
    for entry in data if isinstance(data, list) else []:
        if not isinstance(entry, dict):
            continue
        imported = entry.get("import_playbook") or entry.get("ansible.builtin.import_playbook")
        if isinstance(imported, str) and "{{" not in imported:
            plays += _plays(playbook.parent / imported, seen)
        elif "hosts" in entry:
            plays.append(entry)
    return plays


def _roles(play: dict[str, Any]) -> list[str]:
    """The roles the play applies whole: its `roles:`, and the static imports of a role's main
    tasks in its task lists (a play that checks its roles' specs in one task imports them)."""
    entries = list(play.get("roles") or [])
    for section in ("pre_tasks", "tasks", "post_tasks"):
        for task in play.get(section) or []:
            imported = _static_import(task)
            if imported is not None:
                entries.append(imported)
    names = []
    for entry in entries:
        name = entry.get("role") or entry.get("name") if isinstance(entry, dict) else entry
        if isinstance(name, str) and "{{" not in name:
            names.append(name.removeprefix(_COLLECTION_PREFIX))
    return names


def _static_import(task: Any) -> dict[str, Any] | None:
    """`import_role` of a role's main tasks, applied to every host of the play (no `when`)."""
    if not isinstance(task, dict) or "when" in task:
        return None
    args = task.get("ansible.builtin.import_role") or task.get("import_role")
    if not isinstance(args, dict) or args.get("tasks_from") not in (None, "main"):
        return None
    return args


def _required_options(role_dir: Path) -> list[str]:
    specs = _yaml(role_dir / "meta" / "argument_specs.yml")
    if not isinstance(specs, dict) or "argument_specs" not in specs:
        meta = _yaml(role_dir / "meta" / "main.yml")
        specs = meta if isinstance(meta, dict) else {}
    main = ((specs.get("argument_specs") or {}).get("main") or {}) if isinstance(specs, dict) else {}
    options = main.get("options") or {} if isinstance(main, dict) else {}
    return [name for name, spec in options.items() if isinstance(spec, dict) and spec.get("required") is True]


@cache
def no_log_options(root: Path | None) -> frozenset[str]:
    """Every role option its `meta/argument_specs.yml` marks `no_log: true` (a secret: a run records
    it only as a digest, cfcore/redact.py)."""
    found: set[str] = set()
    for specs_file in sorted((root / "roles").glob("*/meta/argument_specs.yml")) if root else []:
        specs = _yaml(specs_file)
        for entry in ((specs or {}).get("argument_specs") or {}).values() if isinstance(specs, dict) else []:
            options = (entry or {}).get("options") or {} if isinstance(entry, dict) else {}
            found.update(
                name
                for name, spec in options.items()
                if isinstance(spec, dict) and spec.get("no_log") is True
            )
    return frozenset(found)


def _yaml(path: Path) -> Any:
    """A playbook or role file of the checkout; None when absent (a broken one is a bug of the checkout)."""
    if not os.path.isfile(path):
        return None
    try:
        return yaml.safe_load(read_text(str(path), _MAX_PLAYBOOK_BYTES))
    except (UnsafeFile, yaml.YAMLError) as err:
        raise RuntimeError(f"cannot read {path}: {err}") from None


# Hosts whose SKU has an accelerator of this vendor need its BOM variables.
VENDOR_REQUIRED: dict[str, tuple[str, ...]] = {
    "nvidia": ("nvidia_driver_version", "cuda_version", "nccl_version", "dcgm_version"),
    "huawei": ("ascend_driver_version", "cann_version"),
    "alibaba": ("ppu_sdk_version",),
}


# Where a missing variable belongs, for the fix text (by name prefix).
_HOMES = (
    (
        (
            "nvidia_",
            "cuda_",
            "nccl_",
            "dcgm_",
            "ascend_driver",
            "ascend_firmware",
            "cann_",
            "ppu_sdk",
            "mlnx_",
        ),
        "group_vars/all/versions.yml",
    ),
    (("fabric_",), "group_vars/all/fabric.yml"),
    (("juicefs_", "ceph_", "validate_required_mounts"), "group_vars/all/storage.yml"),
    (("k8s_", "volcano_", "slurm_"), "group_vars/all/scheduler.yml"),
    (
        ("monitoring_", "prometheus_", "alertmanager_", "grafana_", "exporters_"),
        "group_vars/all/monitoring.yml",
    ),
)


def home_of(variable: str, host: str) -> str:
    """Where an operator would set `variable` in a ClusterForge inventory."""
    if variable in HOST_REQUIRED:
        return f"the inventory entry of host {host}"
    if variable in VALIDATE_GROUP_REQUIRED["npu_ascend"]:
        return f"host_vars/{host}.yml (one entry per NPU NIC: id, address, netmask, gateway, netdetect)"
    for prefixes, path in _HOMES:
        if variable.startswith(prefixes):
            return path
    return "group_vars/"
