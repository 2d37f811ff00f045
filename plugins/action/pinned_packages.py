"""Action of module clusterforge.cluster.pinned_packages (documentation: plugins/modules/pinned_packages.py).

One host-task where a role had a dozen: list what the repository offers, refuse a version it
lacks, install the packages at their versions with the package manager's own module (apt or
dnf, in check mode too), and hold them there. The rules are cfcore/package_pins.py's.
"""

from __future__ import annotations

import shlex

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore import os_family, package_pins

ARGUMENT_SPEC = {
    "wanted": {"type": "dict", "required": True},
    "specs": {"type": "list", "elements": "str"},
    "hold": {"type": "list", "elements": "str"},
    "remove": {"type": "list", "elements": "str", "default": []},
    "repository": {"type": "str", "default": "the CUDA repository"},
    "repo_pending": {"type": "bool", "default": False},
    "refusal": {"type": "str", "required": True},
    "fix": {"type": "str", "required": True},
    "pending_effects": {"type": "str", "default": ""},
    "install_recommends": {"type": "bool", "default": False},
    "versionlock_package": {"type": "str", "default": "python3-dnf-plugin-versionlock"},
    "manager": {"type": "str", "choices": ["auto", "apt", "dnf"], "default": "auto"},
}

LIST_VERSIONS = {
    "apt": ["apt-cache", "madison"],
    "dnf": ["dnf", "list", "--showduplicates", "--quiet"],
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
            manager = os_family.package_manager(args["manager"], facts, "pinned_packages")
        except ValueError as exc:
            raise AnsibleActionFail(str(exc)) from None
        wanted = {str(name): str(version) for name, version in args["wanted"].items()}
        hold = args["hold"] if args["hold"] is not None else list(wanted)
        check_mode = bool(self._task.check_mode)
        self._steps = []
        self._task_vars = task_vars

        listing = self._read(LIST_VERSIONS[manager] + list(wanted), ok_rcs=(0, 1))
        lacking = package_pins.unavailable(listing, wanted, args["repository"])
        # In check mode a repository this run adds or changes is not there yet: nothing it will
        # offer can be looked up, so the refusal waits for the real run.
        repo_missing = bool(check_mode and args["repo_pending"] and lacking)
        if lacking and not repo_missing:
            raise AnsibleActionFail(f"{args['refusal']}: {'; '.join(lacking)}. Fix: {args['fix']}")
        if args["specs"] is None:
            args["specs"] = package_pins.install_specs(package_pins.newest_offered(listing, wanted), manager)
        if repo_missing:
            offered = ", ".join(f"{name} {version}" for name, version in wanted.items())
            note = (
                f"check mode: {args['repository']} does not offer {offered} yet (a real run adds it),"
                " so they are looked up and installed in the real run"
            )
            effects = args["pending_effects"]
            result.update(changed=True, pending=True, repo_missing=True, steps=[], msg=note)
            result["warnings"] = [f"{note}{'; ' + effects if effects else ''}."]
            return result

        install = self._apt(args) if manager == "apt" else self._dnf(args, hold)
        pending = check_mode and install
        if not pending:
            self._hold(manager, hold)
        changed = any(step["changed"] for step in self._steps)
        result.update(
            changed=changed,
            pending=pending,
            repo_missing=False,
            steps=self._steps,
            msg="; ".join(step["msg"] for step in self._steps if step["changed"]) or "installed and held",
        )
        if pending and args["pending_effects"]:
            result["warnings"] = [
                f"check mode: the packages are not installed yet; {args['pending_effects']}."
            ]
        return result

    # --------------------------------------------------------------- the steps ----

    def _apt(self, args) -> bool:
        if args["remove"]:
            self._module(
                "ansible.legacy.apt",
                {
                    "name": args["remove"],
                    "state": "absent",
                    "purge": True,
                    "allow_change_held_packages": True,
                },
                f"purged {', '.join(args['remove'])}",
            )
        return self._module(
            "ansible.legacy.apt",
            {
                "name": args["specs"],
                "state": "present",
                "install_recommends": args["install_recommends"],
                # The BOM decides: a held package moves to the BOM's version, up or down.
                "allow_change_held_packages": True,
                "allow_downgrade": True,
            },
            f"installed {', '.join(args['specs'])}",
        )

    def _dnf(self, args, hold) -> bool:
        self._module(
            "ansible.legacy.dnf", {"name": [args["versionlock_package"]], "state": "present"}, "versionlock"
        )
        if args["remove"]:
            self._module(
                "community.general.dnf_versionlock", {"name": args["remove"], "state": "absent"}, "unlocked"
            )
            self._module("ansible.legacy.dnf", {"name": args["remove"], "state": "absent"}, "removed")
        installed = self._module(
            "ansible.legacy.dnf",
            {
                "name": args["specs"],
                "state": "present",
                "allow_downgrade": True,
                "disable_plugin": ["versionlock"],
            },
            f"installed {', '.join(args['specs'])}",
        )
        if installed:
            # The locks of the versions the install replaced.
            self._module(
                "community.general.dnf_versionlock", {"name": hold, "state": "absent"}, "old locks dropped"
            )
        return installed

    def _hold(self, manager, hold) -> None:
        if not hold:
            return
        if manager == "dnf":
            self._module("community.general.dnf_versionlock", {"name": hold, "state": "present"}, "locked")
            return
        selections = self._read(["dpkg-query", "-W", "-f=${Package} ${Status}\\n", *hold], ok_rcs=(0, 1))
        to_hold = package_pins.not_held(selections, hold)
        if to_hold and not self._task.check_mode:
            self._read(["apt-mark", "hold", *to_hold])
        self._steps.append({"step": "hold", "changed": bool(to_hold), "msg": f"held {', '.join(to_hold)}"})

    # ------------------------------------------------------------- on the node ----

    def _module(self, name, module_args, msg) -> bool:
        out = self._execute_module(module_name=name, module_args=module_args, task_vars=self._task_vars)
        if out.get("failed"):
            raise AnsibleActionFail(
                f"{name} {module_args.get('name')}: {out.get('msg', 'failed')}", result=out
            )
        self._steps.append({"step": name.rsplit(".", 1)[-1], "changed": bool(out.get("changed")), "msg": msg})
        return bool(out.get("changed"))

    def _read(self, argv, ok_rcs=(0,)) -> str:
        """Run a command that reads (or, for apt-mark, holds) directly: no module to transfer."""
        command = "LC_ALL=C " + " ".join(shlex.quote(str(arg)) for arg in argv)
        out = self._low_level_execute_command(command)
        if out.get("rc") not in ok_rcs:
            said = (out.get("stderr") or out.get("stdout") or "").strip()[-400:]
            raise AnsibleActionFail(f"{argv[0]} failed (rc {out.get('rc')}): {said}")
        return out.get("stdout") or ""
