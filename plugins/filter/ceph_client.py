"""Filters of role ceph_client: what a host plans (keyrings, CephFS mounts), checked before any change.

    {{ ceph_client_keyrings | clusterforge.cluster.cf_ceph_client_plan(
         client_names=ceph_clients | map(attribute='name', default='') | list,
         mounts=ceph_cephfs_mounts, default_fs=ceph_cephfs_name) }}
      -> {"keyrings": ["fsuser"], "secrets": [], "fuse": true,
          "mounts": [{"path": "/mnt/cephfs", "unit": "mnt-cephfs.mount", "client": "fsuser",
                      "fs": "cephfs", "subpath": "/", "type": "fuse", "options": []}]}
    {{ ceph_clients | clusterforge.cluster.cf_ceph_client_problems(ceph_client_keyrings) }}   (under no_log)
      -> ["ceph_clients[0].key (client fsuser) is not base64 ... (fix: ...)"]   never a key; [] when fine
    {{ ceph_clients | clusterforge.cluster.cf_ceph_client_keyring('fsuser') }}   (under no_log)
      -> "[client.fsuser]\\n\\tkey = AQ...\\n\\tcaps mds = \\"allow rw\\"\\n..." (as `ceph auth get` does)
    {{ '/mnt/cephfs' | clusterforge.cluster.cf_systemd_path_unit }}  -> "mnt-cephfs.mount"

The plan never sees a key; the keys are checked by cf_ceph_client_problems, which returns
secret-free sentences instead of raising (its task runs under no_log, an assert shows them), and the
keyring filter is used where the key is written, under no_log. Errors name the variable and the fix,
never a key. Key format, caps and the
keyring text are cfcore/ceph.py's (one implementation, shared with role ceph's ceph_key module).
"""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.ceph_client import (
    client_keyring,
    client_plan,
    client_problems,
)
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.inputs import InputError
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.systemd import path_unit


def _fail(err: InputError) -> AnsibleFilterError:
    return AnsibleFilterError(f"{err.message} (fix: {err.fix})" if err.fix else err.message)


# --------------------------------------------------------------------------- systemd unit names


def cf_systemd_path_unit(path: Any, suffix: str = "mount") -> str:
    try:
        return path_unit(path, suffix)
    except InputError as err:
        raise _fail(err) from None


def cf_ceph_client_plan(
    keyrings: Any, client_names: Any = None, mounts: Any = None, default_fs: str = "cephfs"
) -> dict:
    try:
        return client_plan(keyrings, client_names, mounts, default_fs)
    except InputError as err:
        raise _fail(err) from None


def cf_ceph_client_problems(clients: Any, keyrings: Any = None) -> list:
    return client_problems(clients, keyrings)


def cf_ceph_client_keyring(clients: Any, name: str) -> str:
    try:
        return client_keyring(clients, name)
    except InputError as err:
        raise _fail(err) from None


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "cf_systemd_path_unit": cf_systemd_path_unit,
            "cf_ceph_client_plan": cf_ceph_client_plan,
            "cf_ceph_client_problems": cf_ceph_client_problems,
            "cf_ceph_client_keyring": cf_ceph_client_keyring,
        }
