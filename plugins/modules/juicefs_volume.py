#!/usr/bin/python
"""Ansible module: a JuiceFS volume formatted once, its mutable settings kept as desired (ClusterForge)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: juicefs_volume
short_description: Format a JuiceFS volume once, then keep its mutable settings as desired
description:
  - Reads the volume with C(juicefs status META-URL). A meta engine that holds no volume
    ("database is not formatted") gets C(juicefs format --no-update); any other failure stops with
    juicefs's message (secrets masked).
  - An existing volume is compared with the desired settings. Mutable ones (C(storage), C(bucket),
    C(format.trash_days), C(format.capacity), C(format.inodes)) that differ are applied with one
    C(juicefs config --yes), never C(--force) (it would skip juicefs's check that the new storage is
    reachable). Immutable ones (C(name), C(format.block_size), C(format.compress),
    C(format.hash_prefix), C(format.shards)) that differ stop the run naming the setting, both values
    and why; the module never re-formats.
  - Secrets reach juicefs only through its environment (C(META_PASSWORD), C(ACCESS_KEY), C(SECRET_KEY));
    C(juicefs config) takes new object-store keys only as command-line flags, so a changed
    C(access_key) is refused with the command to run by hand instead.
  - Nothing it returns holds a secret; juicefs's output is returned with the secrets masked.
options:
  name:
    description: The volume name (3-63 lowercase letters, digits, hyphens).
    type: str
    required: true
  meta_url:
    description: The metadata engine URL, without a password (e.g. C(redis://meta1:6379/1)).
    type: str
    required: true
  meta_password:
    description: The metadata engine's password, passed as C(META_PASSWORD).
    type: str
  storage:
    description: The object storage type as C(juicefs format --storage) takes it (C(s3), C(file), ...).
    type: str
    required: true
  bucket:
    description: The bucket URL (a directory for C(file)).
    type: str
    required: true
  access_key:
    description: The object store's access key, passed as C(ACCESS_KEY) at format time.
    type: str
  secret_key:
    description: The object store's secret key, passed as C(SECRET_KEY) at format time (never compared
      afterwards, C(juicefs status) prints it as "removed").
    type: str
  region:
    description: The region, passed as C(AWS_REGION) (C(default) for Ceph RGW).
    type: str
  format:
    description: Format options; unset ones keep juicefs's default at format time and are not compared.
    type: dict
    suboptions:
      block_size:
        description: Block size in KiB, or with a unit (C(4M)). Immutable.
        type: raw
      compress:
        description: Compression. Immutable.
        type: str
        choices: [none, lz4, zstd]
      trash_days:
        description: Days removed files stay in the trash (0 none).
        type: int
      capacity:
        description: Hard quota in GiB (0 none).
        type: int
      inodes:
        description: Hard quota of inodes (0 none).
        type: int
      hash_prefix:
        description: Hash prefix on object names. Immutable.
        type: bool
      shards:
        description: Number of buckets the blocks are spread over (0 one). Immutable.
        type: int
  binary:
    description: The juicefs executable.
    type: path
    default: /usr/local/bin/juicefs
  state:
    description: Only C(present); a volume is never destroyed by this module.
    type: str
    choices: [present]
    default: present
  timeout:
    description: Seconds each juicefs command may take.
    type: int
    default: 120
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
author:
  - ClusterForge
"""

EXAMPLES = r"""
- name: Format the volume once, keep its quota and trash as set
  clusterforge.cluster.juicefs_volume:
    name: jfs
    meta_url: redis://meta1:6379/1
    meta_password: "{{ vault_juicefs_meta_password }}"
    storage: s3
    bucket: http://rgw1:7480/jfs
    access_key: "{{ vault_juicefs_access_key }}"
    secret_key: "{{ vault_juicefs_secret_key }}"
    region: default
    format:
      trash_days: 7
      capacity: 1024
  no_log: true
"""

RETURN = r"""
action:
  description: What was (or in check mode would be) done; C(unknown) only in check mode before the
    binary is installed (the volume cannot be read yet).
  type: str
  returned: always
  sample: configured
  choices: [formatted, configured, none, unknown]
setting:
  description: The volume's settings as C(juicefs status) prints them after the change (keys masked);
    empty when a check run would format.
  type: dict
  returned: always
differences:
  description: Each setting that differed, with C(setting), C(status_key), C(desired), C(current), C(mutable).
  type: list
  elements: dict
  returned: always
command:
  description: The juicefs command run (or that would run), secrets are never in it.
  type: list
  elements: str
  returned: when a change is made or would be made
stderr_tail:
  description: The last lines of juicefs's output of the change, secrets masked.
  type: str
  returned: when a change is made
"""

import os
import subprocess

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore import juicefs as jfs
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.inputs import InputError
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.parsers.common import ParseError
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.parsers.storage import (
    parse_juicefs_status,
)

TAIL_LINES = 15


class JuicefsError(Exception):
    pass


class Runner:
    def __init__(self, module, volume: dict):
        self.module = module
        self.volume = volume
        self.secrets = [volume.get(k) for k in ("meta_password", "access_key", "secret_key")]
        env = dict(os.environ)
        for key in ("META_PASSWORD", "ACCESS_KEY", "SECRET_KEY", "AWS_REGION"):
            env.pop(key, None)
        env.update(jfs.secret_env(volume))
        self.env = env

    def run(self, argv, timeout: int):
        try:
            proc = subprocess.run(
                argv, env=self.env, capture_output=True, text=True, timeout=timeout, check=False
            )
        except subprocess.TimeoutExpired:
            raise JuicefsError(
                f"`{' '.join(self.scrub(a) for a in argv)}` took longer than {timeout} s"
            ) from None
        except OSError as exc:
            raise JuicefsError(f"cannot run {argv[0]}: {exc}") from None
        return proc.returncode, proc.stdout or "", proc.stderr or ""

    def scrub(self, text: str) -> str:
        return jfs.scrub(text, self.secrets)

    def tail(self, text: str) -> str:
        return self.scrub("\n".join((text or "").strip().splitlines()[-TAIL_LINES:]))


def read_status(runner: Runner, binary: str, timeout: int):
    """(setting or None when the meta engine holds no volume)."""
    rc, out, err = runner.run([binary, "status", runner.volume["meta_url"]], timeout)
    if rc != 0:
        if jfs.is_not_formatted(err + out):
            return None
        raise JuicefsError(
            f"juicefs status {jfs.scrub_url(runner.volume['meta_url'])} failed (rc {rc}): "
            f"{runner.tail(err + out)} "
            "(fix: check that the meta engine answers and meta_password is its password)"
        )
    try:
        return parse_juicefs_status(out)["setting"]
    except ParseError as exc:
        raise JuicefsError(f"cannot read juicefs status: {runner.scrub(str(exc))}") from None


def main():
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type="str", required=True),
            meta_url=dict(type="str", required=True),
            meta_password=dict(type="str", no_log=True),
            storage=dict(type="str", required=True),
            bucket=dict(type="str", required=True),
            access_key=dict(type="str", no_log=True),
            secret_key=dict(type="str", no_log=True),
            region=dict(type="str"),
            format=dict(
                type="dict",
                options=dict(
                    block_size=dict(type="raw"),
                    compress=dict(type="str", choices=["none", "lz4", "zstd"]),
                    trash_days=dict(type="int"),
                    capacity=dict(type="int"),
                    inodes=dict(type="int"),
                    hash_prefix=dict(type="bool"),
                    shards=dict(type="int"),
                ),
            ),
            binary=dict(type="path", default="/usr/local/bin/juicefs"),
            state=dict(type="str", choices=["present"], default="present"),
            timeout=dict(type="int", default=120),
        ),
        supports_check_mode=True,
    )
    p = module.params
    entry = {k: p[k] for k in ("name", "meta_url", "meta_password", "storage", "bucket", "region")}
    entry.update(access_key=p["access_key"], secret_key=p["secret_key"], format=p["format"] or {})
    result = {"changed": False, "action": "none", "setting": {}, "differences": []}
    try:
        volume = jfs.plan_volume(entry)
    except InputError as err:
        module.fail_json(msg=str(err).replace("juicefs_volumes[0]", "juicefs_volume"), **result)
    runner = Runner(module, volume)
    binary, timeout = p["binary"], p["timeout"]
    if not os.access(binary, os.X_OK):
        if module.check_mode:
            # The role installs the binary in an earlier task, which check mode did not run.
            module.exit_json(
                msg=f"{binary} is not installed yet: check mode cannot read volume {volume['name']}",
                **dict(result, changed=True, action="unknown"),
            )
        module.fail_json(
            msg=f"{binary} is not executable (fix: install juicefs, role juicefs does)", **result
        )
    try:
        setting = read_status(runner, binary, timeout)
        if setting is None:
            argv = jfs.format_argv(binary, volume)
            result.update(changed=True, action="formatted", command=argv)
            if module.check_mode:
                module.exit_json(msg=f"would format volume {volume['name']}", **result)
            rc, out, err = runner.run(argv, timeout)
            result["stderr_tail"] = runner.tail(err + out)
            if rc != 0:
                module.fail_json(
                    msg=f"juicefs format of {volume['name']} failed (rc {rc}): {result['stderr_tail']}",
                    **result,
                )
            result["setting"] = jfs.scrub_setting(read_status(runner, binary, timeout) or {})
            module.exit_json(msg=f"formatted volume {volume['name']}", **result)
        found = jfs.compare(volume, setting)
        result.update(setting=jfs.scrub_setting(setting), differences=found["differences"])
        if found["immutable"]:
            module.fail_json(msg=jfs.refusal(volume, found["immutable"]), **result)
        if not found["mutable"]:
            module.exit_json(msg=f"volume {volume['name']} is as desired", **result)
        argv = jfs.config_argv(binary, volume, found["mutable"])
        changes = ", ".join(f"{d['setting']} {d['current']} -> {d['desired']}" for d in found["mutable"])
        result.update(changed=True, action="configured", command=argv)
        if module.check_mode:
            module.exit_json(msg=f"would configure volume {volume['name']}: {changes}", **result)
        rc, out, err = runner.run(argv, timeout)
        result["stderr_tail"] = runner.tail(err + out)
        if rc != 0:
            module.fail_json(
                msg=f"juicefs config of {volume['name']} ({changes}) failed (rc {rc}): "
                f"{result['stderr_tail']}",
                **result,
            )
        result["setting"] = jfs.scrub_setting(read_status(runner, binary, timeout) or {})
        module.exit_json(msg=f"configured volume {volume['name']}: {changes}", **result)
    except JuicefsError as exc:
        module.fail_json(msg=str(exc), **result)


if __name__ == "__main__":
    main()
