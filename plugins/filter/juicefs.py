"""Filters of role juicefs: the volume and mount plans, checked before anything changes.

    {{ meta_host_vars | clusterforge.cluster.cf_juicefs_default_meta_url(juicefs_meta_url) }}
    {{ juicefs_volumes | clusterforge.cluster.cf_juicefs_volume_plan(default_meta_url, default_password) }}
    {{ juicefs_mounts | clusterforge.cluster.cf_juicefs_mount_plan(volume_plan, binary, common_options) }}
    {{ hostvars | clusterforge.cluster.cf_juicefs_play_volumes(ansible_play_hosts) }}
    {{ env | clusterforge.cluster.cf_juicefs_env_file }}

The rules live once in plugins/module_utils/cfcore/juicefs.py (also used by the module
juicefs_volume); these filters adapt them to Ansible. The volume plan they return carries no
secret (has_meta_password / has_keys say whether one is set): the secrets stay in the
variables and reach only no_log tasks.
"""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore import juicefs as jfs
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.inputs import InputError
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.parsers.storage import (
    parse_juicefs_status,
)


def _fail(err: InputError) -> AnsibleFilterError:
    return AnsibleFilterError(f"{err.message} (fix: {err.fix})" if err.fix else err.message)


def _public(volume: dict) -> dict:
    public = {k: v for k, v in volume.items() if k not in ("meta_password", "access_key", "secret_key")}
    public["has_meta_password"] = bool(volume["meta_password"])
    public["has_keys"] = bool(volume["access_key"])
    return public


def cf_juicefs_default_meta_url(meta_host_vars: Any, meta_url: Any = "") -> str:
    """`juicefs_meta_url`, else the Redis URL of the juicefs_meta host whose variables are given."""
    # Read key by key: turning a host's hostvars into a dict would template all of them.
    return jfs.default_meta_url(meta_url, meta_host_vars or {})


def cf_juicefs_volume_plan(volumes: Any, default_meta_url: str = "", default_meta_password: str = "") -> list:
    """Every juicefs_volumes entry checked, defaults filled in, secrets left out."""
    try:
        planned = jfs.plan_volumes(volumes, str(default_meta_url or ""), str(default_meta_password or ""))
    except InputError as err:
        raise _fail(err) from None
    return [_public(v) for v in planned]


def cf_juicefs_volume_secrets(volumes: Any, name: str, default_meta_password: str = "") -> dict:
    """The secrets of one volume (for a no_log task): meta_password, access_key, secret_key."""
    try:
        planned = jfs.plan_volumes(volumes, "redis://unused", str(default_meta_password or ""))
    except InputError as err:
        raise _fail(err) from None
    for volume in planned:
        if volume["name"] == name:
            return {k: volume[k] for k in ("meta_password", "access_key", "secret_key")}
    raise AnsibleFilterError(f"juicefs_volumes has no volume {name!r} (fix: add it to juicefs_volumes)")


def cf_juicefs_mount_plan(
    mounts: Any, volumes: Any, binary: str = "/usr/local/bin/juicefs", common_options=None
):
    """The host's juicefs_mounts with defaults, unit name, env file and the ExecStart line."""
    volumes = volumes or []
    try:
        planned = jfs.plan_mounts(mounts, volumes)
    except InputError as err:
        raise _fail(err) from None
    by_name = {v["name"]: v for v in volumes}
    result = []
    for mount in planned:
        volume = by_name[mount["volume"]]
        argv = jfs.mount_argv(binary, mount, volume, common_options or [])
        result.append(
            dict(
                mount,
                unit=f"juicefs-{mount['volume']}.service",
                env_file=f"/etc/juicefs/{mount['volume']}.env",
                meta_url=volume["meta_url"],
                region=volume["region"],
                argv=argv,
                exec_start=jfs.systemd_command(argv),
                exec_stop=jfs.systemd_command([binary, "umount", mount["path"]]),
                exec_start_pre=jfs.systemd_command(["/bin/umount", "-l", mount["path"]]),
            )
        )
    return result


def cf_juicefs_play_volumes(hostvars: Any, play_hosts: Any) -> dict:
    """Which play hosts mount JuiceFS (in play order) and the volumes at least one of them mounts."""
    hosts, names = [], []
    for host in play_hosts or []:
        mounts = hostvars[host].get("juicefs_mounts") or []
        if not isinstance(mounts, list) or not mounts:
            continue
        hosts.append(host)
        for mount in mounts:
            name = mount.get("volume") if isinstance(mount, dict) else None
            if name and name not in names:
                names.append(name)
    return {"hosts": hosts, "volumes": sorted(names)}


def cf_juicefs_env_file(env: Any) -> str:
    """An EnvironmentFile= body: NAME="value" lines, values escaped as systemd reads them."""
    if not isinstance(env, dict):
        raise AnsibleFilterError("cf_juicefs_env_file takes a mapping of variable names to values")
    lines = ["# Managed by ClusterForge (role juicefs): the secrets of `juicefs mount`; mode 0600."]
    for key in sorted(env):
        value = env[key]
        if value in (None, ""):
            continue
        text = str(value).replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$")
        if "\n" in text:
            raise AnsibleFilterError(f"{key} holds a newline: an environment file cannot carry it")
        lines.append(f'{key}="{text}"')
    return "\n".join(lines) + "\n"


def cf_juicefs_status_uuid(text: Any) -> str:
    """The volume UUID in `juicefs status` output ("" when it shows none)."""
    try:
        setting = parse_juicefs_status(str(text or "")).get("setting") or {}
    except InputError:
        return ""
    return str(setting.get("UUID") or "")


class FilterModule:
    def filters(self):
        return {
            "cf_juicefs_default_meta_url": cf_juicefs_default_meta_url,
            "cf_juicefs_volume_plan": cf_juicefs_volume_plan,
            "cf_juicefs_volume_secrets": cf_juicefs_volume_secrets,
            "cf_juicefs_mount_plan": cf_juicefs_mount_plan,
            "cf_juicefs_play_volumes": cf_juicefs_play_volumes,
            "cf_juicefs_status_uuid": cf_juicefs_status_uuid,
            "cf_juicefs_env_file": cf_juicefs_env_file,
        }
