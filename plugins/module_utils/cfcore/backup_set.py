"""Backup sets of cluster state: which components apply, the manifest, verification, retention.

docs/design.md, "Backup and restore of cluster state", is the contract. A set is a folder
`<target>/<id>/` of items `<component>/<host>/<name>` and `manifest.json` listing each item's
sha256 and size; it is made in `.<id>.partial/` and renamed when whole. Used by the backup
playbook (filter `cf_backup_plan`) and by the CLI (manifest, verify, retention). Stdlib only.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from dataclasses import dataclass, field

from .checksums import Problem, digests, parallel_map, safe_relpath, verify_files
from .files import UnsafeFile, read_json, write_atomic
from .inputs import InputError, plain_problem

SCHEMA = 1
MANIFEST_NAME = "manifest.json"
PARTIAL_PREFIX = "."
PARTIAL_SUFFIX = ".partial"
ENCRYPTED_SUFFIX = ".enc"
# Components in the order a backup takes them and a restore places them (the ledger first: the
# restore's own bring-up run is recorded next to the restored runs).
COMPONENTS = ("ledger", "etcd", "slurm", "slurmdbd", "juicefs", "ceph", "monitoring")
CONTROLLER = "controller"  # the "host" of the ledger's items: the machine running the CLI
CIPHER = {"cipher": "aes-256-cbc", "kdf": "pbkdf2-sha256", "iter": 200000, "tool": "openssl enc"}
MIN_KEY_LENGTH = 32
MAX_MANIFEST_BYTES = 64 * 1024 * 1024
STALE_PARTIAL_S = 24 * 3600
# The one form of a set id (new_set_id's): a set's folder name and its manifest's `id`, and the
# only form of it that reaches a playbook (restore_set_id).
SET_ID_FORM = re.compile(r"[0-9]{8}T[0-9]{6}Z")
# A set folder as the restore passes it (restore_set_dir): absolute, no template, one line.
SET_DIR_FORM = re.compile(r"/.*")


class BackupSetError(InputError):
    """A set or target that cannot be used: `message` names the file and what is wrong."""


# ------------------------------------------------------------------- the plan ----


@dataclass
class ComponentPlan:
    name: str
    hosts: list[str] = field(default_factory=list)
    reason: str = ""  # why it does not apply (empty when it does)
    volumes: dict[str, str] = field(default_factory=dict)  # juicefs: volume -> the host that dumps it

    @property
    def applies(self) -> bool:
        return not self.reason

    def as_dict(self) -> dict:
        return {"hosts": self.hosts, "applies": self.applies, "reason": self.reason, "volumes": self.volumes}


def _truthy(value, default: bool) -> bool:
    if value is None:
        return default
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


def _first(groups: dict, name: str) -> list[str]:
    hosts = list(groups.get(name) or [])
    return hosts[:1]


def juicefs_dumpers(hostvars, hosts: list[str]) -> dict[str, str]:
    """Each mounted JuiceFS volume -> the first host (inventory order) that mounts it: it has the
    binary and reaches both the metadata engine and the object store."""
    found: dict[str, str] = {}
    for host in hosts:
        mounts = hostvars[host].get("juicefs_mounts") or []
        for mount in mounts if isinstance(mounts, list) else []:
            volume = mount.get("volume") if isinstance(mount, dict) else None
            if volume and volume not in found:
                found[volume] = host
    return dict(sorted(found.items()))


def plan(groups: dict, hostvars, components: list[str] | None = None) -> dict[str, ComponentPlan]:
    """What each component backs up and where, from the inventory's groups and variables."""
    chosen = list(components or COMPONENTS)
    unknown = [name for name in chosen if name not in COMPONENTS]
    if unknown:
        raise InputError(
            f"unknown backup component(s): {', '.join(unknown)}",
            f"choose among {', '.join(COMPONENTS)}",
        )
    every_host = list(groups.get("all") or [])
    plans: dict[str, ComponentPlan] = {}
    for name in COMPONENTS:
        if name not in chosen:
            continue
        item = ComponentPlan(name)
        if name == "ledger":
            item.hosts = [CONTROLLER]
        elif name == "etcd":
            item.hosts = _first(groups, "k8s_control_plane")
            if not item.hosts:
                item.reason = "no host in k8s_control_plane"
            elif not _truthy(hostvars[item.hosts[0]].get("k8s_deploy"), True):
                item.reason = "k8s_deploy is false: ClusterForge runs no Kubernetes here"
        elif name in ("slurm", "slurmdbd"):
            item.hosts = _first(groups, "slurm_controller")
            if not item.hosts:
                item.reason = "no host in slurm_controller"
            elif name == "slurmdbd" and not _truthy(hostvars[item.hosts[0]].get("slurm_accounting"), False):
                item.reason = "slurm_accounting is false"
        elif name == "juicefs":
            item.volumes = juicefs_dumpers(hostvars, every_host)
            item.hosts = sorted(set(item.volumes.values()), key=every_host.index)
            if not item.volumes:
                item.reason = "no host mounts a JuiceFS volume (juicefs_mounts)"
        elif name == "ceph":
            item.hosts = _first(groups, "ceph_mon")
            if not item.hosts:
                item.reason = "no host in ceph_mon"
        elif name == "monitoring":
            item.hosts = list(groups.get("monitoring") or [])
            if not item.hosts:
                item.reason = "no host in monitoring"
        plans[name] = item
    return plans


def check_encryption_key(key) -> str:
    """The problem with `backup_encryption_key`, or "" when it is usable."""
    if key is None or key == "":
        return (
            "backup_encryption_key is not set: secret items (etcd, JuiceFS dumps, Ceph keys) are "
            "encrypted with it; put a random string of at least 32 characters in Vault (`openssl "
            "rand -base64 48 | ansible-vault encrypt_string --stdin-name vault_backup_encryption_key`)"
        )
    if not isinstance(key, str) or len(key) < MIN_KEY_LENGTH or "\n" in key:
        return f"backup_encryption_key must be one line of at least {MIN_KEY_LENGTH} characters"
    return ""


# ------------------------------------------------------------------- set ids ----


def new_set_id(now: float | None = None) -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(time.time() if now is None else now))


def is_set_id(name) -> bool:
    return plain_problem(name, SET_ID_FORM) is None


def partial_name(set_id: str) -> str:
    return f"{PARTIAL_PREFIX}{set_id}{PARTIAL_SUFFIX}"


# ------------------------------------------------------------------ manifest ----


def collect_items(staging_dir: str) -> list[dict]:
    """Every item file under `<component>/<host>/` of a set folder, with its sha256 and size."""
    found: list[tuple[str, str, str]] = []
    for component in sorted(os.listdir(staging_dir)):
        folder = os.path.join(staging_dir, component)
        if component not in COMPONENTS or not os.path.isdir(folder):
            continue
        for host in sorted(os.listdir(folder)):
            for name in sorted(os.listdir(os.path.join(folder, host))):
                found.append((component, host, name))

    def describe(entry: tuple[str, str, str]) -> dict:
        component, host, name = entry
        relpath = f"{component}/{host}/{name}"
        sha256, _, size = digests(os.path.join(staging_dir, relpath))
        return {
            "component": component,
            "host": host,
            "name": name,
            "path": relpath,
            "size": size,
            "sha256": sha256,
            "encrypted": name.endswith(ENCRYPTED_SUFFIX),
        }

    return parallel_map(describe, found)


def manifest(
    set_id: str,
    *,
    created: str,
    finished: str,
    version: str,
    inventory: dict,
    components: dict[str, dict],
    items: list[dict],
) -> dict:
    return {
        "schema": SCHEMA,
        "id": set_id,
        "created": created,
        "finished": finished,
        "clusterforge_version": version,
        "inventory": inventory,
        "encryption": CIPHER,
        "components": components,
        "items": items,
    }


def complete(data: dict) -> bool:
    """Every component that applied was taken."""
    return all(entry.get("status") in ("ok", "not applicable") for entry in data["components"].values())


def load_manifest(set_dir: str) -> dict:
    """The set's manifest, checked for shape; BackupSetError naming the file and key otherwise."""
    path = os.path.join(set_dir, MANIFEST_NAME)
    fix = "take a new backup, or restore from another set (`clusterforge backup list`)"
    if not os.path.lexists(path):
        raise BackupSetError(f"{set_dir}: no {MANIFEST_NAME}, so this is not a complete backup set", fix)
    try:
        data = read_json(path, MAX_MANIFEST_BYTES)
    except (UnsafeFile, OSError, ValueError) as err:  # ValueError: not UTF-8 JSON, or nested too deep
        raise BackupSetError(f"{path}: not a readable manifest ({err})", fix) from None
    issues = _manifest_issues(data)
    if issues:
        raise BackupSetError(f"{path}: {'; '.join(issues)}", fix)
    folder = os.path.basename(os.path.normpath(os.path.abspath(set_dir)))
    if data["id"] != folder:
        raise BackupSetError(
            f"{path}: id {data['id']!r} is not the set's folder name {folder!r}",
            "restore the set from the folder its backup made (named by its id), or from another set",
        )
    return data


def _manifest_issues(data) -> list[str]:
    if not isinstance(data, dict):
        return ["is not a JSON object"]
    if data.get("schema") != SCHEMA:
        return [f"schema is {data.get('schema')!r}, this ClusterForge reads {SCHEMA}"]
    issues = [f"{key} is missing" for key in ("id", "components", "items") if key not in data]
    if issues:
        return issues
    problem = plain_problem(data["id"], SET_ID_FORM)
    if problem:
        issues.append(f"id {data['id']!r} {problem} (a set id is YYYYmmddTHHMMSSZ)")
    if not isinstance(data["components"], dict):
        issues.append("components is not a mapping")
    if not isinstance(data["items"], list):
        return [*issues, "items is not a list"]
    seen: dict[str, int] = {}
    for index, item in enumerate(data["items"]):
        where = f"items[{index}]"
        if not isinstance(item, dict):
            issues.append(f"{where} is not a mapping")
            continue
        missing = [k for k in ("component", "host", "name", "path", "size", "sha256") if k not in item]
        if missing:
            issues.append(f"{where} lacks {', '.join(missing)}")
            continue
        try:
            path = safe_relpath(item["path"], "the set")
        except ValueError as err:
            issues.append(f"{where}.path: {err}")
        else:  # one file, one item: a second entry for it would be checked (or restored) once only
            if path in seen:
                issues.append(f"{where}.path {item['path']!r} is items[{seen[path]}]'s file again")
            seen.setdefault(path, index)
        if item["component"] not in COMPONENTS:
            issues.append(f"{where}.component: unknown component {item['component']!r}")
        if not re.fullmatch(r"[0-9a-f]{64}", str(item["sha256"])):
            issues.append(f"{where}.sha256 is not 64 hex digits")
        if not isinstance(item["size"], int) or item["size"] < 0:
            issues.append(f"{where}.size is not a byte count")
    return issues


def verify(set_dir: str, data: dict, components: list[str] | None = None) -> list[Problem]:
    """Each item (of `components`, or all) is in the set with its size and sha256."""
    expected = {
        item["path"]: (item["sha256"], item["size"])
        for item in data["items"]
        if components is None or item["component"] in components
    }
    return verify_files(set_dir, expected, "the set")


def items_of(data: dict, component: str) -> list[dict]:
    return [item for item in data["items"] if item["component"] == component]


# ----------------------------------------------------------------- retention ----


def complete_sets(target_dir: str) -> list[str]:
    """The ids of the sets in a target folder that have a manifest, oldest first."""
    try:
        names = os.listdir(target_dir)
    except FileNotFoundError:
        return []
    return sorted(
        name
        for name in names
        if is_set_id(name) and os.path.isfile(os.path.join(target_dir, name, MANIFEST_NAME))
    )


def beyond_retention(set_ids: list[str], keep: int, protect: str | None = None) -> list[str]:
    """The oldest sets beyond the newest `keep`; never `protect` (the set just made)."""
    if keep < 1:
        raise InputError(f"backup_keep is {keep}", "keep at least 1 set")
    ordered = sorted(set_ids)
    return [set_id for set_id in ordered[: max(0, len(ordered) - keep)] if set_id != protect]


def stale_partials(
    target_dir: str, now: float | None = None, max_age_s: float = STALE_PARTIAL_S
) -> list[str]:
    """Partial set folders (an interrupted backup) older than `max_age_s`."""
    now = time.time() if now is None else now
    try:
        names = os.listdir(target_dir)
    except FileNotFoundError:
        return []
    stale = []
    for name in names:
        if not (name.startswith(PARTIAL_PREFIX) and name.endswith(PARTIAL_SUFFIX)):
            continue
        try:
            if now - os.stat(os.path.join(target_dir, name)).st_mtime > max_age_s:
                stale.append(name)
        except OSError:
            continue
    return sorted(stale)


# -------------------------------------------------------------- finishing ----


def component_statuses(
    plans: dict[str, dict], taken: dict[str, list[str]], failures: dict[str, list[dict]] | None = None
) -> dict[str, dict]:
    """Each planned component's status in the set: `ok` when every one of its hosts took its items,
    `failed` (naming the hosts that did not, with the failed task and message where known), or
    `not applicable` (with the reason)."""
    statuses: dict[str, dict] = {}
    for name, item in plans.items():
        if not item.get("applies"):
            statuses[name] = {"status": "not applicable", "reason": item.get("reason", "")}
            continue
        hosts = list(item.get("hosts") or [])
        missing = [host for host in hosts if name not in (taken.get(host) or [])]
        entry = {"hosts": hosts, "status": "failed" if missing else "ok"}
        if missing:
            entry["reason"] = "; ".join(_why_missing(host, name, failures or {}) for host in missing)
        statuses[name] = entry
    return statuses


def _why_missing(host: str, component: str, failures: dict[str, list[dict]]) -> str:
    for failure in failures.get(host) or []:
        if failure.get("component") == component:
            return f"{host}: task '{failure.get('task', '?')}' failed: {failure.get('msg', '')}".strip()
    return f"{host}: no items (unreachable, or its play did not run)"


def finish(
    target_dir: str,
    set_id: str,
    *,
    created: str,
    finished: str,
    version: str,
    inventory: dict,
    components: dict[str, dict],
    keep: int,
) -> dict:
    """The staged set `<target>/.<id>.partial/` made whole: its manifest written, the folder renamed
    to `<target>/<id>/`, then the sets beyond retention and stale partial folders removed.
    Returns `{manifest, removed: [ids and partial folders]}`."""
    staging = os.path.join(target_dir, partial_name(set_id))
    final = os.path.join(target_dir, set_id)
    if os.path.exists(final):
        raise BackupSetError(f"{final} exists already", "wait a second and take the backup again")
    data = manifest(
        set_id,
        created=created,
        finished=finished,
        version=version,
        inventory=inventory,
        components=components,
        items=collect_items(staging),
    )
    write_atomic(os.path.join(staging, MANIFEST_NAME), (json.dumps(data, indent=1) + "\n").encode(), 0o600)
    os.rename(staging, final)
    removed = []
    for old in beyond_retention(complete_sets(target_dir), keep, protect=set_id):
        shutil.rmtree(os.path.join(target_dir, old))
        removed.append(old)
    for partial in stale_partials(target_dir):
        shutil.rmtree(os.path.join(target_dir, partial), ignore_errors=True)
        removed.append(partial)
    return {"manifest": data, "removed": removed}


# ------------------------------------------------------------------ restore ----


def restorable(plans: dict[str, ComponentPlan], data: dict) -> list[str]:
    """The components a restore places: planned by the inventory and held by the set (the ledger
    is the controller's, placed by the CLI)."""
    held = {item["component"] for item in data["items"]}
    return [name for name, item in plans.items() if item.applies and name in held and name != "ledger"]


def juicefs_dump_name(volume: str) -> str:
    return f"juicefs-{volume}.json.gz{ENCRYPTED_SUFFIX}"


def restored_volumes(plans: dict[str, ComponentPlan], components: list[str], data: dict) -> list[str]:
    """The JuiceFS volumes a restore loads: planned by the inventory, with a dump in the set."""
    if "juicefs" not in components:
        return []
    names = {item["name"] for item in items_of(data, "juicefs")}
    return sorted(volume for volume in plans["juicefs"].volumes if juicefs_dump_name(volume) in names)


def restore_groups(plans: dict[str, ComponentPlan], components: list[str], groups: dict, hostvars) -> dict:
    """The hosts of each restore play: `cf_restore_<component>` (etcd: every control-plane member,
    since each restores the snapshot as itself), and for JuiceFS the engine hosts
    (`cf_restore_juicefs_meta`) and every host that mounts a restored volume (`..._clients`)."""
    result: dict[str, list[str]] = {}
    for name in components:
        hosts = list(groups.get("k8s_control_plane") or []) if name == "etcd" else plans[name].hosts
        result[f"cf_restore_{name}"] = hosts
    if "juicefs" in components:
        volumes = set(plans["juicefs"].volumes)  # every volume planned: a client mounts them all or none
        result["cf_restore_juicefs_meta"] = list(groups.get("juicefs_meta") or [])
        result["cf_restore_juicefs_clients"] = [
            host
            for host in groups.get("all") or []
            if any(
                isinstance(mount, dict) and mount.get("volume") in volumes
                for mount in (hostvars[host].get("juicefs_mounts") or [])
            )
        ]
    return result
