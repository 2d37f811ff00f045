"""Action of module clusterforge.cluster.role_arguments (documentation: plugins/modules/).

The argument specs of several of this collection's roles checked in one host-task, before the
first of them runs: what Ansible's own "Validating arguments against arg spec" task does once
per role, with the same validator and the same templating of the host's variables. A play
that runs it imports its roles with `rolespec_validate: false`, so each spec is checked once,
and a host with a bad variable for its last role fails before its first role changed anything.
"""

from __future__ import annotations

from pathlib import Path

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.plugins.action import ActionBase

ARGUMENT_SPEC = {
    "roles": {"type": "list", "elements": "str", "required": True},
    "entry_point": {"type": "str", "default": "main"},
}
COLLECTION = "clusterforge.cluster."
ROLES_DIR = Path(__file__).resolve().parents[2] / "roles"


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        _, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        errors: dict[str, list[str]] = {}
        for role in args["roles"]:
            options = self._options(role, args["entry_point"])
            provided = self._templar.template(
                {name: task_vars[name] for name in options if name in task_vars}
            )
            found = ArgumentSpecValidator(options).validate(provided, validate_role_argument_spec=True)
            if found.error_messages:
                errors[role] = list(found.error_messages)
        result.update(changed=False, roles=list(args["roles"]), argument_errors=errors)
        if errors:
            lines = [f"role {role}: {message}" for role, messages in errors.items() for message in messages]
            result.update(failed=True, msg="Validation of arguments failed:\n" + "\n".join(lines))
        return result

    def _options(self, role: str, entry_point: str) -> dict:
        name = role.removeprefix(COLLECTION)
        path = ROLES_DIR / name / "meta" / "argument_specs.yml"
        if "." in name or not path.is_file():
            raise AnsibleActionFail(f"role {role} has no argument specs in this collection ({path})")
        specs = (self._loader.load_from_file(str(path)) or {}).get("argument_specs") or {}
        if entry_point not in specs:
            raise AnsibleActionFail(f"role {role} has no entry point {entry_point!r} in {path}")
        return specs[entry_point].get("options") or {}
