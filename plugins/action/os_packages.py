"""Action of module clusterforge.cluster.os_packages (documentation: plugins/modules/os_packages.py).

One host-task where a role had three or four: refresh apt's index where it is stale (in check
mode too: the index is a cache, and without it a fresh node's check run cannot tell what it
would install), install the role's packages in one transaction with the node's package
manager's own module (apt or dnf), and say in check mode what cannot be previewed before them.
"""

from __future__ import annotations

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore import os_family

ARGUMENT_SPEC = {
    "name": {"type": "list", "elements": "str", "required": True},
    "refresh": {"type": "bool", "default": True},
    "cache_valid_time": {"type": "int", "default": 3600},
    "refresh_retries": {"type": "int", "default": 2},
    "install_recommends": {"type": "bool", "default": False},
    "pending_effects": {"type": "str", "default": ""},
    "manager": {"type": "str", "choices": ["auto", "apt", "dnf"], "default": "auto"},
}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = True
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        _, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        try:
            facts = task_vars.get("ansible_facts")
            manager = os_family.package_manager(args["manager"], facts, "os_packages")
        except ValueError as exc:
            raise AnsibleActionFail(str(exc)) from None
        refreshed = False
        if manager == "apt" and args["refresh"]:
            refreshed = self._refresh(args, task_vars)
        if not args["name"]:
            result.update(changed=False, pending=False, refreshed=refreshed, msg="no packages asked for")
            return result
        module_args = {"name": args["name"], "state": "present"}
        if manager == "apt":
            module_args["install_recommends"] = args["install_recommends"]
        out = self._execute_module(
            module_name=f"ansible.legacy.{manager}", module_args=module_args, task_vars=task_vars
        )
        if out.get("failed"):
            raise AnsibleActionFail(
                f"{manager} {', '.join(args['name'])}: {out.get('msg', 'failed')}", result=out
            )
        changed = bool(out.get("changed"))
        pending = bool(self._task.check_mode and changed)
        result.update(changed=changed, pending=pending, refreshed=refreshed, msg=out.get("msg", ""))
        if pending and args["pending_effects"]:
            result["warnings"] = [
                f"check mode: the packages are not installed yet; {args['pending_effects']}."
            ]
        return result

    def _refresh(self, args, task_vars) -> bool:
        """apt's index refreshed where older than cache_valid_time, check mode or not."""
        update = {"update_cache": True, "cache_valid_time": args["cache_valid_time"]}
        check_mode = self._task.check_mode
        self._task.check_mode = False  # a cache, not a change: refreshed in check mode too
        try:
            for _attempt in range(args["refresh_retries"] + 1):
                # Parallel apt runs on fresh nodes now and then fail once on a GPG error.
                out = self._execute_module(
                    module_name="ansible.legacy.apt", module_args=dict(update), task_vars=task_vars
                )
                if not out.get("failed"):
                    return bool(out.get("cache_updated"))
        finally:
            self._task.check_mode = check_mode
        raise AnsibleActionFail(
            f"apt could not refresh its package index: {out.get('msg', 'failed')}", result=out
        )
