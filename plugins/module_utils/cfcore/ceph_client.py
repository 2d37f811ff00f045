"""Rules of role ceph_client: what a host plans (keyrings, CephFS mounts), checked before any
change; the filters of plugins/filter/ceph_client.py adapt them to Ansible (usage there).

The plan never sees a key; the keys are checked by client_problems, which returns secret-free
sentences instead of raising, and client_keyring renders a keyring as `ceph auth get` prints it.
Key format, caps and the keyring text are cfcore/ceph.py's (shared with role ceph's ceph_key).

Stdlib only, Python 3.8-safe.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any

from . import ceph
from .inputs import InputError
from .systemd import path_unit

MOUNT_TYPES = ("fuse", "kernel")
MOUNT_KEYS = ("path", "client", "fs", "subpath", "type", "options")
# ceph-fuse's mount helper (mount.fuse.ceph) builds a shell command line from the options and the
# mount point: no whitespace, quotes or shell metacharacters in either.
_SAFE_PATH = re.compile(r"^/[A-Za-z0-9._@%+=:/-]*$")
_SAFE_OPTION = re.compile(r"^[A-Za-z0-9._@%+=:/-]+$")
_CLIENT_NAME = re.compile(r"^[A-Za-z0-9_.@-]+$")


# --------------------------------------------------------------------------- the host's plan


def client_problems(clients: Any, keyrings: Any = None) -> list:
    """The problems of ceph_clients as secret-free sentences (empty: all good); never raises.

    Run under no_log (it reads the keys); a later task without no_log shows what it returns.
    Only the entries this host writes (`keyrings`) are checked when given, else all.
    """
    try:
        entries = _client_entries_lenient(clients)
    except InputError as err:
        return [str(err)]
    wanted = [str(name) for name in (keyrings or [])] if keyrings is not None else list(entries)
    problems = []
    for name in wanted:
        if name not in entries:
            continue  # client_plan names it
        index, entry = entries[name]
        where = f"ceph_clients[{index}]"
        try:
            ceph.check_cephx_key(entry.get("key"), f"{where}.key (client {name})")
            ceph.normalise_caps(entry.get("caps"), f"{where}.caps (client {name})")
        except InputError as err:
            problems.append(str(err))
    return problems


def _client_entries_lenient(clients: Any) -> dict:
    """{name: (index, entry)}: the names checked, not the keys."""
    if clients is None:
        clients = []
    if not isinstance(clients, list):
        raise InputError(
            "ceph_clients must be a list of {name, key, caps}",
            "write ceph_clients as [{name: fsuser, key: '{{ vault_ceph_fsuser_key }}', caps: {...}}]",
        )
    entries: dict = {}
    for index, entry in enumerate(clients):
        where = f"ceph_clients[{index}]"
        if not isinstance(entry, dict) or not entry.get("name"):
            raise InputError(f"{where} has no name", f"give {where} a name (without 'client.')")
        name = str(entry["name"])
        if name.startswith("client."):
            raise InputError(
                f"{where}.name is {name!r}: the name goes without 'client.'", f"set it to {name[7:]!r}"
            )
        if not _CLIENT_NAME.match(name):
            raise InputError(
                f"{where}.name {name!r} is not a valid client id", "use letters, digits, _ . @ -"
            )
        if name in entries:
            raise InputError(f"ceph_clients names {name!r} twice", "keep one entry per client name")
        entries[name] = (index, entry)
    return entries


def _mount(index: int, item: Any, keyrings: list, default_fs: str) -> dict:
    where = f"ceph_cephfs_mounts[{index}]"
    if not isinstance(item, dict):
        raise InputError(
            f"{where} is not a mapping", f"write {where} as {{path: /mnt/cephfs, client: fsuser}}"
        )
    unknown = sorted(set(item) - set(MOUNT_KEYS))
    if unknown:
        raise InputError(f"{where} has unknown keys {unknown}", f"use only {', '.join(MOUNT_KEYS)}")
    path = item.get("path")
    if not isinstance(path, str) or not path.startswith("/"):
        raise InputError(
            f"{where}.path is {path!r}: not an absolute path", f"set {where}.path to e.g. /mnt/cephfs"
        )
    path = posixpath.normpath(path)
    if path.startswith("//"):
        path = "/" + path.lstrip("/")
    if path == "/" or not _SAFE_PATH.match(path) or "/../" in path + "/":
        raise InputError(
            f"{where}.path {item['path']!r} cannot be a mount point here",
            "use an absolute path other than /, of letters, digits and . _ @ % + = : - only",
        )
    client = item.get("client")
    if not client:
        raise InputError(f"{where} ({path}) has no client", "set client to one of ceph_client_keyrings")
    client = str(client)
    if client not in keyrings:
        raise InputError(
            f"{where} ({path}) mounts as client {client!r}, which is not in this host's ceph_client_keyrings "
            f"({', '.join(keyrings) or 'empty'})",
            f"add {client!r} to ceph_client_keyrings of this host (and to ceph_clients)",
        )
    kind = item.get("type") or "fuse"
    if kind not in MOUNT_TYPES:
        raise InputError(f"{where}.type is {kind!r}", f"set it to one of {', '.join(MOUNT_TYPES)}")
    fs = str(item.get("fs") or default_fs or "")
    if not fs or not _SAFE_OPTION.match(fs) or "," in fs:
        raise InputError(
            f"{where}.fs {fs!r} is not a CephFS name", "set fs (or ceph_cephfs_name), e.g. cephfs"
        )
    subpath = item.get("subpath") or "/"
    if not isinstance(subpath, str) or not subpath.startswith("/") or not _SAFE_PATH.match(subpath):
        raise InputError(
            f"{where}.subpath is {subpath!r}: not an absolute path inside the file system",
            "set subpath to e.g. / or /datasets",
        )
    subpath = posixpath.normpath(subpath)
    if subpath.startswith("//"):
        subpath = "/" + subpath.lstrip("/")
    options = item.get("options") or []
    if isinstance(options, str) or not isinstance(options, list):
        raise InputError(f"{where}.options must be a list of strings", "write options as [noatime, ...]")
    for option in options:
        if not isinstance(option, str) or not _SAFE_OPTION.match(option) or "," in option:
            raise InputError(
                f"{where}.options has {option!r}: one mount option per item, no spaces, commas or quotes",
                "split it into separate list items",
            )
    return {
        "path": path,
        "unit": path_unit(path),
        "client": client,
        "fs": fs,
        "subpath": subpath,
        "type": kind,
        "options": list(options),
    }


def client_plan(
    keyrings: Any, client_names: Any = None, mounts: Any = None, default_fs: str = "cephfs"
) -> dict:
    """{keyrings, secrets, fuse, mounts}: the host's keyrings and mounts, checked.

    `client_names` are the names of ceph_clients (`ceph_clients | map(attribute='name')`): the plan
    never sees a key, so its task needs no no_log and its errors are shown (client_problems checks
    the keys under no_log).
    """
    if keyrings is None:
        keyrings = []
    if isinstance(keyrings, str) or not isinstance(keyrings, list):
        raise InputError("ceph_client_keyrings must be a list of client names", "write it as [fsuser]")
    if client_names is None:
        client_names = []
    if isinstance(client_names, str) or not isinstance(client_names, list):
        raise InputError(
            "ceph_clients must be a list of {name, key, caps}", "write it as [{name: fsuser, ...}]"
        )
    entries = [str(name) for name in client_names]
    names: list = []
    for name in keyrings:
        name = str(name)
        if name.startswith("client."):
            raise InputError(
                f"ceph_client_keyrings has {name!r}: names go without 'client.'", f"write {name[7:]!r}"
            )
        if name not in entries:
            raise InputError(
                f"ceph_client_keyrings names client {name!r}, which is not in ceph_clients "
                f"(names there: {', '.join(sorted(entries)) or 'none'})",
                f"add {{name: {name}, key: ..., caps: ...}} to ceph_clients, or remove {name!r}",
            )
        if name not in names:
            names.append(name)
    if mounts is None:
        mounts = []
    if not isinstance(mounts, list):
        raise InputError(
            "ceph_cephfs_mounts must be a list", "write it as [{path: /mnt/cephfs, client: fsuser}]"
        )
    planned = [_mount(index, item, names, default_fs) for index, item in enumerate(mounts)]
    seen: dict = {}
    for mount in planned:
        if mount["path"] in seen:
            raise InputError(f"ceph_cephfs_mounts mounts {mount['path']} twice", "keep one entry per path")
        seen[mount["path"]] = True
    secrets = []
    for mount in planned:
        if mount["type"] == "kernel" and mount["client"] not in secrets:
            secrets.append(mount["client"])
    return {
        "keyrings": names,
        "secrets": secrets,
        "fuse": any(mount["type"] == "fuse" for mount in planned),
        "mounts": planned,
    }


def client_keyring(clients: Any, name: str) -> str:
    """The keyring text of client `name` from ceph_clients (key and caps, as `ceph auth get` prints them)."""
    entries = _client_entries_lenient(clients)
    if name not in entries:
        raise InputError(f"client {name!r} is not in ceph_clients", f"add {name!r} to ceph_clients")
    _index, entry = entries[name]
    key = ceph.check_cephx_key(entry.get("key"), f"ceph_clients key of client {name}")
    caps = ceph.normalise_caps(entry.get("caps"), f"ceph_clients caps of client {name}")
    return ceph.render_keyring(f"client.{name}", key, caps)


# --------------------------------------------------------------------------- Ansible entry points
