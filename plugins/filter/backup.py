"""Filters of the backup and restore playbooks (roles backup and restore).

    {{ groups | clusterforge.cluster.cf_backup_plan(hostvars, backup_components) }}
      -> {component: {hosts, applies, reason, volumes}}   what each component backs up, and where
    {{ groups | clusterforge.cluster.cf_restore_groups(hostvars, manifest, restore_components) }}
      -> {components, groups: {cf_restore_<component>: [hosts], ...}, volumes}   what a restore places, where
    {{ backup_encryption_key | clusterforge.cluster.cf_backup_key_problem }}
      -> "" or what is wrong with the key
    {{ snapshot | clusterforge.cluster.cf_etcd_snapshot_argv(backup_etcd) }}
      -> the `etcdctl snapshot save` argv
    {{ snapshot | clusterforge.cluster.cf_etcd_restore_steps(member_host, members, set_id, backup_etcd) }}
      -> [{what, argv}] the restore on one member, in order

One implementation each, in cfcore/backup_set.py and cfcore/etcd_backup.py (the CLI uses the same).
"""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore import backup_set, etcd_backup
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.inputs import InputError


def cf_backup_plan(groups: Any, hostvars: Any, components: Any = None) -> dict[str, Any]:
    try:
        plans = backup_set.plan(dict(groups), hostvars, list(components) if components else None)
    except InputError as err:
        raise AnsibleFilterError(f"cf_backup_plan: {err}") from None
    return {name: item.as_dict() for name, item in plans.items()}


def cf_restore_groups(groups: Any, hostvars: Any, manifest: Any, components: Any = None) -> dict[str, Any]:
    """{components, groups: {group: [hosts]}, volumes} of a restore of the set `manifest`."""
    try:
        plans = backup_set.plan(dict(groups), hostvars, list(components) if components else None)
    except InputError as err:
        raise AnsibleFilterError(f"cf_restore_groups: {err}") from None
    chosen = backup_set.restorable(plans, manifest)
    return {
        "components": chosen,
        "groups": backup_set.restore_groups(plans, chosen, dict(groups), hostvars),
        "volumes": backup_set.restored_volumes(plans, chosen, manifest),
    }


def cf_backup_key_problem(key: Any) -> str:
    return backup_set.check_encryption_key(key)


def cf_etcd_snapshot_argv(snapshot: Any, settings: Any = None) -> list[str]:
    try:
        return etcd_backup.snapshot_save_argv(str(snapshot), settings or None)
    except InputError as err:
        raise AnsibleFilterError(f"cf_etcd_snapshot_argv: {err}") from None


def cf_etcd_snapshot_status_argv(snapshot: Any, settings: Any = None) -> list[str]:
    try:
        return etcd_backup.snapshot_status_argv(str(snapshot), settings or None)
    except InputError as err:
        raise AnsibleFilterError(f"cf_etcd_snapshot_status_argv: {err}") from None


def cf_etcd_members(control_plane: Any, hostvars: Any) -> list[dict[str, str]]:
    addresses = {host: str(hostvars[host].get("ansible_host") or host) for host in control_plane or []}
    try:
        return etcd_backup.members(list(control_plane or []), addresses)
    except InputError as err:
        raise AnsibleFilterError(f"cf_etcd_members: {err}") from None


def cf_etcd_restore_steps(
    snapshot: Any, host: Any, members: Any, set_id: Any, settings: Any = None
) -> list[dict[str, Any]]:
    member = next((m for m in members or [] if m.get("host") == host), None)
    if member is None:
        raise AnsibleFilterError(f"cf_etcd_restore_steps: {host} is not one of the etcd members")
    try:
        return etcd_backup.restore_steps(str(snapshot), member, list(members), str(set_id), settings or None)
    except InputError as err:
        raise AnsibleFilterError(f"cf_etcd_restore_steps: {err}") from None


class FilterModule:
    def filters(self):
        return {
            "cf_backup_plan": cf_backup_plan,
            "cf_backup_key_problem": cf_backup_key_problem,
            "cf_restore_groups": cf_restore_groups,
            "cf_etcd_snapshot_argv": cf_etcd_snapshot_argv,
            "cf_etcd_snapshot_status_argv": cf_etcd_snapshot_status_argv,
            "cf_etcd_members": cf_etcd_members,
            "cf_etcd_restore_steps": cf_etcd_restore_steps,
        }
