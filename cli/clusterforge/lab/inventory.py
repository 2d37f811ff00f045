"""Write a lab's Ansible inventory in the model of docs/design.md.

  hosts.yml                      every group of the model; per host ansible_host,
                                 node_sku, rack (+ leaf and spine, hccn_devices,
                                 hwreplay_profile, sysfs_root where they apply)
  group_vars/all/versions.yml    the version bill of materials (BOM)
  group_vars/all/connection.yml  SSH as `ansible` with the lab key, strict host keys, sudo
  group_vars/all/{scheduler,storage,monitoring,time}.yml, group_vars/{ceph_osd,npu_ascend}.yml
                                 what the roles of the lab's groups need (sitevars.py)
  group_vars/all/framework.yml   the training environment (framework_env, train_env.py)
  group_vars/all/vault.yml       the lab's secrets, vault-encrypted (vault.py; mode 0600)
  group_vars/{gpu_nvidia,npu_ascend}.yml
                                 the storage clients' mounts (sitevars.storage_client_vars)

The first line of hosts.yml marks the folder as generated for one lab: `lab down`
only ever deletes a folder that carries its own lab's mark.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path

import yaml
from cfcore.groups import INVENTORY_GROUPS

from clusterforge.errors import EnvironmentNotReady
from clusterforge.lab import train_env
from clusterforge.lab.access import PROVISIONING_USER, LabAccess
from clusterforge.lab.model import RACK, SYSFS_ROOT, Node, fabric_of, hccn_devices
from clusterforge.lab.offline import BUNDLE_VARS_NAME
from clusterforge.lab.sitevars import (
    ascend_vars,
    backup_vars,
    ceph_osd_vars,
    monitoring_vars,
    nvidia_vars,
    perf_vars,
    scheduler_vars,
    storage_client_groups,
    storage_client_vars,
    storage_vars,
    time_vars,
)
from clusterforge.lab.vault import LabStorage

# The BOM the lab is built against (design.md).
# The NVIDIA versions are ones the lab's test repositories carry (tests/nvidia_repo).
LAB_BOM = {
    "nvidia_driver_version": "570.133.20",
    "cuda_version": "12.8",
    "nccl_version": "2.26.2",
    "dcgm_version": "4.2.3",
    "dcgm_exporter_version": "4.1.1",
    # The Ascend versions are ones the lab's test installers carry (tests/ascend_pkgs).
    "ascend_driver_version": "25.5.0",
    "ascend_firmware_version": "7.8.0.5.216",
    "cann_version": "8.5.0",
    "ascend_docker_runtime_version": "7.0.0",
    "npu_exporter_version": "6.0.0",
    "os_release": "debian 12",  # the node image
    # The training environment's PyTorch (train_env.py): a CPU build; its CUDA 12.6 build is what a
    # site with this BOM would install (PyTorch 2.13 has no 12.8 build).
    "pytorch_version": train_env.TORCH_VERSION,
    "pytorch_cuda_version": "12.6",
}
HOSTS_FILE = "hosts.yml"
VAULT_FILE = "group_vars/all/vault.yml"
PRIVATE_FILES = frozenset({VAULT_FILE})  # written 0600: they hold secrets (encrypted)


def marker(lab: str) -> str:
    return f"# clusterforge-lab: {lab}"


def is_generated_for(inventory_dir: Path, lab: str) -> bool:
    """True when inventory_dir was written by `lab up`/`lab inventory` for this lab."""
    hosts = inventory_dir / HOSTS_FILE
    try:
        with hosts.open() as fh:
            return fh.readline().rstrip("\n") == marker(lab)
    except OSError:
        return False


class _IndentedDumper(yaml.SafeDumper):
    """Indent block sequences under their key, as yamllint's default style wants."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


class _Quoted(str):
    """A string always written in double quotes: versions read as text, never as numbers."""


class _Folded(str):
    """A long string written as a folded block (`>-`), so lines stay short."""


_IndentedDumper.add_representer(
    _Quoted, lambda dumper, value: dumper.represent_scalar("tag:yaml.org,2002:str", value, style='"')
)
_IndentedDumper.add_representer(
    _Folded, lambda dumper, value: dumper.represent_scalar("tag:yaml.org,2002:str", value, style=">")
)


def _dump(data: object, width: int = 1000) -> str:
    return yaml.dump(data, Dumper=_IndentedDumper, sort_keys=False, default_flow_style=False, width=width)


def host_vars(node: Node, extra: dict[str, object] | None = None) -> dict[str, object]:
    values: dict[str, object] = {
        "ansible_host": node.ip,
        "node_sku": node.role.node_sku,
        "rack": RACK,
        **fabric_of(node),
        **(extra or {}),
    }
    if node.hwreplay_profile:
        values["hwreplay_profile"] = node.hwreplay_profile
    if node.role.accelerator:
        values["sysfs_root"] = SYSFS_ROOT
    if node.role.name == "npu":
        values["hccn_devices"] = hccn_devices(node.index)
    return values


def hosts_document(nodes: Sequence[Node]) -> dict[str, object]:
    children: dict[str, object] = {}
    for group in INVENTORY_GROUPS:  # every group, even empty: playbooks look up groups['npu_ppu']
        members = [node.host for node in nodes if group in node.role.groups]
        children[group] = {"hosts": dict.fromkeys(members)} if members else {}
    extra = time_vars(nodes)[1]
    hosts = {node.host: host_vars(node, extra.get(node.host)) for node in nodes}
    return {"all": {"hosts": hosts, "children": children}}


def connection_vars(access: LabAccess) -> dict[str, object]:
    return {
        "ansible_user": PROVISIONING_USER,
        "ansible_ssh_private_key_file": str(access.key),
        "ansible_ssh_common_args": _Folded(access.ansible_ssh_common_args()),
        "ansible_become": True,
        "ansible_become_method": "sudo",
    }


def _versions_quoted(data: dict[str, object]) -> dict[str, object]:
    return {key: _Quoted(value) if key.endswith("_version") else value for key, value in data.items()}


def render(
    lab: str,
    nodes: Sequence[Node],
    access: LabAccess,
    subnet: str,
    standin_vars: dict[str, dict[str, object]] | None = None,
    storage: LabStorage | None = None,
) -> dict[str, str]:
    """The inventory's files: relative path -> text. `standin_vars`: the lab's served stand-ins by name;
    `storage`: the lab's fsid and secrets (vault.py); without it no storage is planned."""
    hosts_header = (
        f"{marker(lab)}\n# Generated by `clusterforge lab up`; edits are lost. "
        f"Regenerate: clusterforge lab inventory --name {lab}\n"
    )
    versions_header = "# Version bill of materials (BOM) of the lab (docs/design.md).\n"
    connection_header = (
        "# Real SSH as the provisioning user with the lab key; host keys were read\n"
        "# from each node through podman and are checked strictly.\n"
    )
    lab_values = "# Lab values (clusterforge/lab/sitevars.py): what lab nodes can really run.\n"
    files = {
        HOSTS_FILE: hosts_header + _dump(hosts_document(nodes)),
        "group_vars/all/versions.yml": versions_header + _dump(_versions_quoted(LAB_BOM)),
        "group_vars/all/connection.yml": connection_header + _dump(connection_vars(access), width=72),
        "group_vars/all/scheduler.yml": lab_values + _dump(_versions_quoted(scheduler_vars(lab, nodes))),
        "group_vars/all/monitoring.yml": lab_values + _dump(_versions_quoted(monitoring_vars())),
        "group_vars/all/time.yml": lab_values + _dump(time_vars(nodes)[0]),
        "group_vars/all/perf.yml": lab_values + _dump(perf_vars()),
        "group_vars/all/framework.yml": lab_values + _dump(train_env.framework_vars()),
        "group_vars/ceph_osd.yml": "# The data disk every lab storage node has (a loop device on the host).\n"
        + _dump(ceph_osd_vars()),
    }
    group_files: dict[str, dict[str, object]] = {"npu_ascend": ascend_vars(), "gpu_nvidia": nvidia_vars()}
    if storage is not None:
        files["group_vars/all/storage.yml"] = (
            '# The lab\'s storage plan (clusterforge/lab/sitevars.py, docs/design.md "Shared storage");\n'
            "# secrets: vault.yml.\n" + _dump(storage_vars(nodes, subnet, storage.fsid))
        )
        files[VAULT_FILE] = storage.vault_text
        files["group_vars/all/backup.yml"] = (
            "# The lab's backups (clusterforge/lab/sitevars.py): sets copied to its RGW; keys: vault.yml.\n"
            + _dump(backup_vars(nodes))
        )
        client_vars = storage_client_vars(nodes)
        for group in storage_client_groups(nodes) if client_vars else []:
            group_files[group] = {**group_files.get(group, {}), **client_vars}
    for group, values in group_files.items():
        files[f"group_vars/{group}.yml"] = lab_values + _dump(values)
    for name, values in (standin_vars or {}).items():
        header = (
            "# The lab is offline (`clusterforge lab offline`): the bundle's variables that the\n"
            "# stand-ins do not set (every URL there points at the bundle too).\n"
            if name == BUNDLE_VARS_NAME
            else f"# The lab's stand-in for vendor downloads (tests/{name}, served on the lab network):\n"
            "# the roles' ordinary mirror and checksum variables.\n"
        )
        files[f"group_vars/all/{name}.yml"] = header + _dump(values)
    return files


def write_inventory(
    target: Path,
    lab: str,
    nodes: Sequence[Node],
    access: LabAccess,
    subnet: str,
    standin_vars: dict[str, dict[str, object]] | None = None,
    storage: LabStorage | None = None,
) -> Path:
    """Write the inventory into target, replacing a previous one of the same lab as a whole."""
    if target.exists() and not is_generated_for(target, lab):
        raise EnvironmentNotReady(
            f"{target} exists and was not generated for lab {lab!r}; it is left alone",
            f"move {target} away, or bring the lab up under another --name",
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = target.with_name(f".{target.name}.new")
    shutil.rmtree(staging, ignore_errors=True)
    for rel, text in render(lab, nodes, access, subnet, standin_vars, storage).items():
        path = staging / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = 0o600 if rel in PRIVATE_FILES else 0o644
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        path.chmod(mode)
    old = target.with_name(f".{target.name}.old")
    shutil.rmtree(old, ignore_errors=True)
    if target.exists():
        target.rename(old)
    staging.rename(target)
    shutil.rmtree(old, ignore_errors=True)
    return target


def remove_inventory(target: Path, lab: str) -> bool:
    """Remove the lab's generated inventory; a folder without the lab's mark is kept."""
    if target.exists() and is_generated_for(target, lab):
        shutil.rmtree(target)
        return True
    return False
