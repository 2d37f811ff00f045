"""Filters of roles ceph and ceph_client: the monitors' addresses, one implementation.

    {{ groups['ceph_mon'] | map('extract', hostvars) | list | clusterforge.cluster.cf_ceph_mon_host }}
      -> "[v2:10.0.0.1:3300,v1:10.0.0.1:6789],[v2:10.0.0.2:3300,v1:10.0.0.2:6789]"
    {{ groups['ceph_mon'] | map('extract', hostvars) | list | clusterforge.cluster.cf_ceph_mon_addresses }}
      -> [{"name": "mon1", "address": "10.0.0.1"}, ...]
    {{ ceph_mon_secret | clusterforge.cluster.cf_ceph_key_problems('ceph_mon_secret') }}  -> [] or [why]
    {{ key | clusterforge.cluster.cf_ceph_keyring('client.admin', {'mon': 'allow *'}) }}  -> keyring text

Each monitor's address is ceph_mon_address, else fabric_storage_address, else ansible_host; the
name is its inventory_hostname. The rules live in plugins/module_utils/cfcore/ceph.py.
"""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore import ceph
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.inputs import InputError


def _fail(err: InputError) -> AnsibleFilterError:
    return AnsibleFilterError(f"{err.message} (fix: {err.fix})" if err.fix else err.message)


def cf_ceph_mon_host(monitors: Any) -> str:
    """The mon_host string for ceph.conf."""
    try:
        return ceph.mon_host(list(monitors or []))
    except InputError as err:
        raise _fail(err) from None


def cf_ceph_mon_addresses(monitors: Any) -> list[dict[str, str]]:
    """[{name, address}] of the monitors, in group order."""
    try:
        return ceph.mon_addresses(list(monitors or []))
    except InputError as err:
        raise _fail(err) from None


def cf_ceph_monmaptool_args(monitors: Any) -> list[str]:
    """['--addv', name, '[v2:IP:3300,v1:IP:6789]', ...] for `monmaptool --create`."""
    try:
        return ceph.monmaptool_add_args(list(monitors or []))
    except InputError as err:
        raise _fail(err) from None


def cf_ceph_key_problems(key: Any, variable: str) -> list[str]:
    """[] for a valid cephx key, else one secret-free sentence naming the variable and the fix."""
    try:
        ceph.check_cephx_key(key, variable)
    except InputError as err:
        return [str(err)]
    return []


def cf_ceph_clients_problems(clients: Any) -> list[str]:
    """Secret-free sentences for what is wrong in ceph_clients (names, key format, cap types)."""
    return ceph.clients_problems(clients)


def cf_ceph_keyring(key: Any, entity: str, caps: Any = None) -> str:
    """Keyring text for one entity (caps sorted and normalised), as ceph-authtool writes it."""
    try:
        return ceph.render_keyring(
            ceph.check_entity(entity, "entity"),
            ceph.check_cephx_key(key, f"the key of {entity}"),
            ceph.normalise_caps(caps, f"the caps of {entity}"),
        )
    except InputError as err:
        raise _fail(err) from None


def cf_ceph_conf_sections(base: Any, overrides: Any = None) -> list[list[Any]]:
    """[[section, [[key, value], ...]], ...]: the role's ceph.conf merged with ceph_conf_overrides."""
    try:
        return [
            [section, [list(kv) for kv in options]] for section, options in ceph.merge_conf(base, overrides)
        ]
    except InputError as err:
        raise _fail(err) from None


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "cf_ceph_mon_host": cf_ceph_mon_host,
            "cf_ceph_mon_addresses": cf_ceph_mon_addresses,
            "cf_ceph_key_problems": cf_ceph_key_problems,
            "cf_ceph_monmaptool_args": cf_ceph_monmaptool_args,
            "cf_ceph_keyring": cf_ceph_keyring,
            "cf_ceph_clients_problems": cf_ceph_clients_problems,
            "cf_ceph_conf_sections": cf_ceph_conf_sections,
        }
