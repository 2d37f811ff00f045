"""Action of module clusterforge.cluster.signed_repository (its documentation: plugins/modules/).

One host-task where a role had five to eight: the repository's key downloaded and checked
against the site's pinned sha256, sources that would conflict removed, the source trusting
only that key (apt signed-by, dnf gpgkey), and apt's index refreshed when any of it changed or
the repository's index is missing (a run that added the source but could not fetch it). Each
step is Ansible's own module (get_url, file, apt_repository, yum_repository, rpm_key, apt).
"""

from __future__ import annotations

import re
import shlex

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore import os_family

ARGUMENT_SPEC = {
    "name": {"type": "str", "required": True},
    "url": {"type": "str", "required": True},
    "suite": {"type": "str", "default": "/"},
    "components": {"type": "list", "elements": "str", "default": []},
    "key_url": {"type": "str", "required": True},
    "key_sha256": {"type": "str", "required": True, "no_log": False},
    "keyring": {"type": "path", "required": True},
    "remove": {"type": "list", "elements": "path", "default": []},
    "description": {"type": "str", "default": ""},
    "gpgcheck": {"type": "bool", "default": True},
    "repo_gpgcheck": {"type": "bool", "default": False},
    "import_key": {"type": "bool", "default": False},
    "manager": {"type": "str", "choices": ["auto", "apt", "dnf"], "default": "auto"},
}
SHA256 = re.compile(r"^(sha256:)?([0-9A-Fa-f]{64})$")


def flat_list_file(url: str) -> str:
    """apt's lists/ file of a flat repository's index: the URL without scheme, "_" as %5f, "/" as "_"."""
    bare = re.sub(r"^[a-z]+://", "", url.rstrip("/") + "/")
    return bare.replace("_", "%5f").replace("/", "_") + "Packages"


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = True
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        _, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        digest = SHA256.match(args["key_sha256"].strip())
        if digest is None:
            raise AnsibleActionFail(
                f"signed_repository {args['name']}: key_sha256 {args['key_sha256']!r} is not a sha256 digest."
                f" Fix: set it to the sha256 of {args['key_url']} (sha256sum of the key your site trusts)"
            )
        try:
            facts = task_vars.get("ansible_facts")
            manager = os_family.package_manager(args["manager"], facts, "signed_repository")
        except ValueError as exc:
            raise AnsibleActionFail(str(exc)) from None
        self._task_vars, self._steps = task_vars, []
        checksum = "sha256:" + digest.group(2).lower()
        self._module(
            "file", {"path": args["keyring"].rsplit("/", 1)[0] or "/", "state": "directory", "mode": "0755"}
        )
        key = self._module(
            "get_url",
            {"url": args["key_url"], "dest": args["keyring"], "checksum": checksum, "mode": "0644"},
        )
        # A list, not any(): every conflicting file is removed.
        removed = [self._module("file", {"path": path, "state": "absent"}) for path in args["remove"]]
        source = self._apt(args) if manager == "apt" else self._dnf(args, key)
        check_mode = bool(self._task.check_mode)
        if manager == "apt" and not check_mode:
            index_missing = args["suite"] == "/" and not self._lists_have(flat_list_file(args["url"]))
            if key or source or any(removed) or index_missing:
                self._module("apt", {"update_cache": True})
        result.update(
            changed=any(step["changed"] for step in self._steps),
            # Check mode runs ahead of the repository: the roles after this one cannot see its packages.
            pending=check_mode and (key or source),
            steps=self._steps,
        )
        return result

    def _apt(self, args) -> bool:
        suite = args["suite"]
        line = f"deb [signed-by={args['keyring']}] {args['url']} {suite}"
        if args["components"]:
            line += " " + " ".join(args["components"])
        return self._module(
            "apt_repository",
            {"repo": line, "filename": args["name"], "state": "present", "update_cache": False},
        )

    def _dnf(self, args, key_changed) -> bool:
        if args["import_key"] and not (self._task.check_mode and key_changed):
            self._module("rpm_key", {"key": args["keyring"], "state": "present"})
        return self._module(
            "yum_repository",
            {
                "name": args["name"],
                "description": args["description"] or args["name"],
                "baseurl": args["url"],
                "gpgkey": f"file://{args['keyring']}",
                "gpgcheck": args["gpgcheck"],
                "repo_gpgcheck": args["repo_gpgcheck"],
                "enabled": True,
                "mode": "0644",
            },
        )

    def _module(self, name, module_args) -> bool:
        module_args = {**module_args}
        if name in ("file", "get_url"):
            module_args.update(owner="root", group="root")
        out = self._execute_module(
            module_name=f"ansible.legacy.{name}", module_args=module_args, task_vars=self._task_vars
        )
        if out.get("failed"):
            what = module_args.get("dest") or module_args.get("path") or module_args.get("repo") or ""
            raise AnsibleActionFail(f"{name} {what}: {out.get('msg', 'failed')}", result=out)
        changed = bool(out.get("changed"))
        self._steps.append({"step": name, "changed": changed})
        return changed

    def _lists_have(self, prefix) -> bool:
        command = f"ls /var/lib/apt/lists/{shlex.quote(prefix)}* >/dev/null 2>&1"
        return self._low_level_execute_command(command).get("rc") == 0
