#!/usr/bin/python
"""Ansible module of role base: apply kernel tunables to the running kernel."""

from __future__ import annotations

DOCUMENTATION = r"""
module: base_sysctl_live
short_description: Apply sysctl settings to the running kernel, or say why they cannot be
description:
  - Compares each setting with its live value under /proc/sys and writes the ones that differ.
  - Persisting the settings for the next boot is the job of a sysctl.d file; this module only
    covers the running kernel.
  - In a container the kernel belongs to the host and /proc/sys is read-only (or a key is not
    namespaced), so a setting that cannot be written is reported in C(not_applicable) with the
    reason instead of failing. On a physical or virtual machine every setting must apply.
options:
  settings:
    description: Sysctl names (dotted, e.g. C(vm.max_map_count)) and their values.
    type: dict
    required: true
  in_container:
    description: The node is a container; unwritable settings are not applicable instead of errors.
    type: bool
    default: false
  proc_sys:
    description: Where the kernel's sysctl tree is mounted.
    type: path
    default: /proc/sys
"""

RETURN = r"""
applied:
  description: Settings written, with the value before and after.
  type: dict
  returned: always
unchanged:
  description: Settings whose live value already matched.
  type: list
  returned: always
not_applicable:
  description: Settings this node cannot change (containers only), with the reason.
  type: dict
  returned: always
"""

import errno
import os

from ansible.module_utils.basic import AnsibleModule

# errno values that mean "this kernel/namespace does not let this node change the key".
_READ_ONLY_ERRNOS = (errno.EROFS, errno.EACCES, errno.EPERM)
# Same text in check mode and in a real run, so that the recorded fact is stable.
_READ_ONLY_IN_CONTAINER = "read-only in this container (the host's kernel owns it)"


class SysctlError(Exception):
    """A setting that must apply but cannot (message names the key and the fix)."""


def normalise(value):
    """Compare values the way the kernel prints them: whitespace-separated fields."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise SysctlError(f"value {value!r} is not a number or a string")
    return " ".join(str(value).split())


def key_path(proc_sys, key):
    if not key or key.startswith(".") or key.endswith(".") or "/" in key or ".." in key:
        raise SysctlError(f"{key!r} is not a sysctl name like vm.max_map_count")
    return os.path.join(proc_sys, *key.split("."))


def _read(path):
    with open(path) as handle:
        return " ".join(handle.read().split())


def _write(path, value):
    with open(path, "w") as handle:
        handle.write(value + "\n")


def apply_settings(settings, proc_sys="/proc/sys", in_container=False, check_mode=False, write=_write):
    """Bring the live kernel in line with `settings`; returns (applied, unchanged, not_applicable)."""
    applied, unchanged, not_applicable = {}, [], {}
    for key in sorted(settings):
        try:
            wanted = normalise(settings[key])
        except SysctlError as err:
            raise SysctlError(f"sysctl {key}: {err}") from None
        path = key_path(proc_sys, key)
        if not os.path.exists(path):
            reason = "this kernel has no such key"
            if in_container:
                not_applicable[key] = f"{reason} (container: the host's kernel decides)"
                continue
            raise SysctlError(
                f"sysctl {key}: {reason} ({path} is missing): load the kernel module that provides it, "
                "or drop the key with base_sysctls_site: {" + key + ": null}"
            )
        before = _read(path)
        if before == wanted:
            unchanged.append(key)
            continue
        if check_mode:
            if os.access(path, os.W_OK):
                applied[key] = {"before": before, "after": wanted}
            elif in_container:
                not_applicable[key] = _READ_ONLY_IN_CONTAINER
            else:
                raise SysctlError(f"sysctl {key}: {path} is not writable on this node")
            continue
        try:
            write(path, wanted)
        except OSError as err:
            if in_container and err.errno in _READ_ONLY_ERRNOS:
                not_applicable[key] = _READ_ONLY_IN_CONTAINER
                continue
            raise SysctlError(f"sysctl {key}: writing {wanted!r} to {path} failed: {err}") from None
        after = _read(path)
        if after != wanted:
            raise SysctlError(
                f"sysctl {key}: the kernel accepted {wanted!r} but reports {after!r} "
                "(value out of range for this kernel?)"
            )
        applied[key] = {"before": before, "after": after}
    return applied, unchanged, not_applicable


def main():
    module = AnsibleModule(
        argument_spec={
            "settings": {"type": "dict", "required": True},
            "in_container": {"type": "bool", "default": False},
            "proc_sys": {"type": "path", "default": "/proc/sys"},
        },
        supports_check_mode=True,
    )
    try:
        applied, unchanged, not_applicable = apply_settings(
            module.params["settings"],
            proc_sys=module.params["proc_sys"],
            in_container=module.params["in_container"],
            check_mode=module.check_mode,
        )
    except SysctlError as err:
        module.fail_json(msg=str(err))
    diff = {
        "before": "".join(f"{k} = {v['before']}\n" for k, v in applied.items()),
        "after": "".join(f"{k} = {v['after']}\n" for k, v in applied.items()),
    }
    module.exit_json(
        changed=bool(applied),
        applied=applied,
        unchanged=unchanged,
        not_applicable=not_applicable,
        diff=diff,
    )


if __name__ == "__main__":
    main()
