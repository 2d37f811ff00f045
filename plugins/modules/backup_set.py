#!/usr/bin/python
"""Ansible module: finish a backup set on the controller (manifest, rename, retention)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: backup_set
short_description: Make a staged backup set whole, with its manifest, and apply the retention
description:
  - The last step of playbooks/backup.yml, on the controller (docs/design.md, "Backup and restore of
    cluster state"). The items were fetched into C(<target_dir>/.<set_id>.partial/<component>/<host>/).
  - Writes C(manifest.json) (each item's sha256 and size, each component's status), renames the folder to
    C(<target_dir>/<set_id>/), then removes the oldest complete sets beyond C(keep) and partial folders of
    interrupted backups older than a day.
  - A component that applied but whose items did not all arrive is C(failed) in the manifest; the set is
    still kept (its other items are good) and the module reports C(complete=false).
options:
  target_dir:
    description: The backup target folder on the controller.
    type: path
    required: true
  set_id:
    description: The set's id (UTC C(YYYYmmddTHHMMSSZ)).
    type: str
    required: true
  plan:
    description: What each component backs up and where (filter C(cf_backup_plan)).
    type: dict
    required: true
  taken:
    description: Per host, the components whose items it fetched into the set.
    type: dict
    default: {}
  failures:
    description: Per host, the components whose play failed there C([{component, task, msg}]).
    type: dict
    default: {}
  created:
    description: When the backup started (ISO 8601, UTC).
    type: str
    required: true
  inventory:
    description: The inventory's C({path, sha256}) as recorded in the manifest.
    type: dict
    default: {}
  tool_version:
    description: The ClusterForge version that took the set.
    type: str
    default: ""
  keep:
    description: The newest complete sets kept in C(target_dir).
    type: int
    default: 14
author: ClusterForge
"""

EXAMPLES = r"""
- name: Finish the set
  clusterforge.cluster.backup_set:
    target_dir: /srv/backups/cluster
    set_id: "{{ backup_set_id }}"
    plan: "{{ backup_plan }}"
    taken: "{{ backup_taken_by_host }}"
    created: "{{ backup_started }}"
    keep: 14
"""

RETURN = r"""
set_dir:
  description: The finished set's folder.
  returned: success
  type: str
complete:
  description: Every component that applied was taken.
  returned: success
  type: bool
components:
  description: Each component's status (ok, failed, not applicable), hosts and reason.
  returned: success
  type: dict
item_count:
  description: How many items the set holds.
  returned: success
  type: int
removed:
  description: Sets and partial folders removed by the retention.
  returned: success
  type: list
"""

import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore import backup_set
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.inputs import InputError

ARGUMENT_SPEC = {
    "target_dir": {"type": "path", "required": True},
    "set_id": {"type": "str", "required": True},
    "plan": {"type": "dict", "required": True},
    "taken": {"type": "dict", "default": {}},
    "failures": {"type": "dict", "default": {}},
    "created": {"type": "str", "required": True},
    "inventory": {"type": "dict", "default": {}},
    "tool_version": {"type": "str", "default": ""},
    "keep": {"type": "int", "default": 14},
}


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    params = module.params
    if not backup_set.is_set_id(params["set_id"]):
        module.fail_json(msg=f"set_id {params['set_id']!r} is not a UTC stamp YYYYmmddTHHMMSSZ")
    components = backup_set.component_statuses(params["plan"], params["taken"], params["failures"])
    if module.check_mode:
        module.exit_json(
            changed=False, set_dir="", complete=False, components=components, item_count=0, removed=[]
        )
    try:
        done = backup_set.finish(
            params["target_dir"],
            params["set_id"],
            created=params["created"],
            finished=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            version=params["tool_version"],
            inventory=params["inventory"],
            components=components,
            keep=params["keep"],
        )
    except (InputError, OSError) as err:
        module.fail_json(msg=f"cannot finish backup set {params['set_id']} in {params['target_dir']}: {err}")
    data = done["manifest"]
    module.exit_json(
        changed=True,
        set_dir=os.path.join(params["target_dir"], params["set_id"]),
        complete=backup_set.complete(data),
        components=components,
        item_count=len(data["items"]),
        removed=done["removed"],
    )


if __name__ == "__main__":
    main()
