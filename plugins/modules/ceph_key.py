#!/usr/bin/python
"""Ansible module: one cephx identity in the cluster, and optionally its keyring file (ClusterForge)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: ceph_key
short_description: Create or update a cephx entity (key and caps) in a Ceph cluster, read-compare-write
description:
  - Reads the entity with C(ceph auth get <name> -f json) using the admin keyring, compares its key and
    caps with the wanted ones (caps compared with whitespace normalised), and runs
    C(ceph auth import -i -) only when they differ. C(ceph auth import) replaces the entity's key and
    all of its caps, so caps not given here are removed.
  - Without O(key), an entity that exists keeps its key (only caps are corrected) and a missing one gets
    a new random key in C(ceph-authtool --gen-print-key) format (the daemon keys of mgr, mds, rgw and
    bootstrap-osd).
  - With O(dest), also writes the keyring file (read-compare-write, atomic) with the file attributes given
    (O(owner), O(group), O(mode); default mode 0600).
  - Check mode reads the cluster and reports what would change; it writes nothing.
  - The key is never printed; differences name what differs, not the secret. Run the task with
    C(no_log) anyway when O(return_key) is true.
options:
  name:
    description: The entity, C(type.id), e.g. C(client.fsuser), C(mgr.node1), C(client.bootstrap-osd).
    type: str
    required: true
  key:
    description: The base64 cephx key (C(ceph-authtool --gen-print-key)); from Vault. Omit to keep the
      cluster's key (or generate one for a new entity).
    type: str
  caps:
    description: Caps by daemon type (C(mon), C(mgr), C(osd), C(mds)); empty values are dropped.
    type: dict
    default: {}
  cluster:
    description: The cluster name (C(/etc/ceph/<cluster>.conf)).
    type: str
    default: ceph
  conf:
    description: The ceph.conf to use; default C(/etc/ceph/<cluster>.conf).
    type: path
  admin_name:
    description: The entity the module authenticates as.
    type: str
    default: client.admin
  admin_keyring:
    description: Keyring of O(admin_name); default C(/etc/ceph/<cluster>.<admin_name>.keyring).
    type: path
  dest:
    description: Also write the entity's keyring here (the file attributes apply to it).
    type: path
  return_key:
    description: Return the entity's key as RV(key) (to write it on another host; use C(no_log)).
    type: bool
    default: false
  timeout:
    description: Seconds the ceph CLI waits for the monitors (C(--connect-timeout)).
    type: int
    default: 30
extends_documentation_fragment:
  - ansible.builtin.files
notes:
  - Needs the ceph CLI (ceph-common) and a reachable monitor quorum.
author:
  - ClusterForge
"""

EXAMPLES = r"""
- name: Create the CephFS client fsuser (key from Vault)
  clusterforge.cluster.ceph_key:
    name: client.fsuser
    key: "{{ vault_ceph_fsuser_key }}"
    caps:
      mon: allow r
      mds: allow rw fsname=cephfs
      osd: allow rw tag cephfs data=cephfs
  no_log: true

- name: Manager key, written to the manager's keyring
  clusterforge.cluster.ceph_key:
    name: mgr.node1
    caps: {mon: allow profile mgr, osd: allow *, mds: allow *}
    dest: /var/lib/ceph/mgr/ceph-node1/keyring
    owner: ceph
    group: ceph
    mode: "0600"
  no_log: true
"""

RETURN = r"""
entity:
  description: The entity name.
  returned: always
  type: str
created:
  description: The entity did not exist (and was, or in check mode would be, created).
  returned: always
  type: bool
differences:
  description: What differed in the cluster (secret-free), e.g. C(caps mon 'allow r' -> 'allow rw').
  returned: always
  type: list
  elements: str
file_changed:
  description: O(dest) was (or would be) rewritten.
  returned: always
  type: bool
key:
  description: The entity's key; only with O(return_key), null in check mode for an entity not yet created.
  returned: when return_key
  type: str
"""

import json
import os
import tempfile
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore import ceph
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.inputs import InputError


def _ceph(module, params, args, data=None):
    cmd = [
        module.get_bin_path("ceph", required=True),
        "--cluster",
        params["cluster"],
        "--conf",
        params["conf"],
        "--name",
        params["admin_name"],
        "--keyring",
        params["admin_keyring"],
        "--connect-timeout",
        str(params["timeout"]),
        *args,
    ]
    return module.run_command(cmd, data=data, binary_data=True)


def _absent(rc, err):
    # ENOENT: "Error ENOENT: failed to find client.x in keyring"
    return rc == 2 or "ENOENT" in (err or "")


def _write_file(module, dest, content):
    """True when dest changed (content only; attributes are applied by the caller)."""
    try:
        with open(dest) as handle:
            if handle.read() == content:
                return False
    except FileNotFoundError:
        pass
    except OSError as exc:
        module.fail_json(msg=f"cannot read {dest}: {exc}", entity=module.params["name"])
    if module.check_mode:
        return True
    directory = os.path.dirname(dest) or "."
    if not os.path.isdir(directory):
        module.fail_json(msg=f"the directory of dest {dest} does not exist (fix: create it first)")
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".ceph_key.")
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(content)
        module.atomic_move(tmp, dest)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return True


def main():
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type="str", required=True),
            key=dict(type="str", no_log=True),
            caps=dict(type="dict", default={}),
            cluster=dict(type="str", default="ceph"),
            conf=dict(type="path"),
            admin_name=dict(type="str", default="client.admin"),
            admin_keyring=dict(type="path", no_log=False),
            dest=dict(type="path"),
            return_key=dict(type="bool", default=False, no_log=False),
            timeout=dict(type="int", default=30),
        ),
        add_file_common_args=True,
        supports_check_mode=True,
    )
    p = module.params
    p["conf"] = p["conf"] or f"/etc/ceph/{p['cluster']}.conf"
    p["admin_keyring"] = p["admin_keyring"] or f"/etc/ceph/{p['cluster']}.{p['admin_name']}.keyring"
    try:
        entity = ceph.check_entity(p["name"], "name")
        caps = ceph.normalise_caps(p["caps"], "caps")
        key = ceph.check_cephx_key(p["key"], "key") if p["key"] is not None else None
    except InputError as err:
        module.fail_json(msg=str(err))
    for path, what in ((p["conf"], "conf"), (p["admin_keyring"], "admin_keyring")):
        if not os.path.exists(path):
            module.fail_json(
                msg=f"{what} {path} does not exist (fix: run this on a monitor host, or set {what})",
                entity=entity,
            )

    rc, out, err = _ceph(module, p, ["auth", "get", entity, "--format", "json"])
    if rc != 0 and not _absent(rc, err):
        module.fail_json(
            msg=f"`ceph auth get {entity}` failed (rc {rc}): {err.strip() or out.strip()} "
            "(fix: check that the monitors are in quorum and the admin keyring is valid)",
            entity=entity,
        )
    current = ceph.parse_auth_get(out, entity) if rc == 0 else None
    created = current is None
    if key is None:
        if current is not None:
            key = current.get("key")
        elif not module.check_mode:
            key = ceph.make_cephx_key(*_now(), os.urandom(ceph.CEPHX_SECRET_LEN))
    differences = ceph.compare_auth(current, key, caps) if key is not None else ["entity missing"]
    changed = bool(differences)
    if changed and not module.check_mode:
        rc, out, err = _ceph(
            module, p, ["auth", "import", "-i", "-"], data=ceph.render_keyring(entity, key, caps)
        )
        if rc != 0:
            module.fail_json(
                msg=f"`ceph auth import` of {entity} failed (rc {rc}): {err.strip() or out.strip()}",
                entity=entity,
            )

    file_changed = False
    if p["dest"]:
        if key is None:
            file_changed = True  # check mode, entity still to be created: the file would be written
        else:
            file_changed = _write_file(module, p["dest"], ceph.render_keyring(entity, key, caps))
        if os.path.exists(p["dest"]):
            file_args = module.load_file_common_arguments(p, path=p["dest"])
            if file_args.get("mode") is None:
                file_args["mode"] = "0600"
            file_changed = module.set_fs_attributes_if_different(file_args, file_changed)
    result = dict(
        changed=changed or file_changed,
        entity=entity,
        created=created,
        differences=differences,
        file_changed=file_changed,
        diff=dict(
            before=json.dumps((current or {}).get("caps", {}), sort_keys=True, indent=1) + "\n"
            if current
            else "",
            after=json.dumps(caps, sort_keys=True, indent=1) + "\n",
            before_header=f"{entity} caps",
            after_header=f"{entity} caps",
        ),
    )
    if p["return_key"]:
        result["key"] = key
    module.exit_json(**result)


def _now():
    now = time.time()
    return int(now), int((now % 1) * 1e9)


if __name__ == "__main__":
    main()
