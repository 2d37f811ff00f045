"""Action of module clusterforge.cluster.bom_check (documentation: plugins/modules/bom_check.py).

The version bill of materials of this host judged by the rules of `clusterforge inventory
check` (cfcore/bom.py, one implementation), before anything is installed or upgraded. The
variables it reads are named once, in cfcore (`bom.input_variables`): a playbook lists none.
Runs on the controller only; nothing reaches the node.
"""

from __future__ import annotations

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore import bom, catalog
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.inputs import InputError

ARGUMENT_SPEC = {
    "planned": {"type": "dict", "default": {}},
    "findings": {"type": "list", "elements": "dict", "default": []},
    "refusal": {"type": "str", "default": "the version bill of materials does not work on this SKU"},
}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        _, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        host = task_vars.get("inventory_hostname", "?")
        node_sku = str(self._var(task_vars, "node_sku") or "")
        rules = bom.load_rules()
        values = {name: self._var(task_vars, name) for name in bom.input_variables(rules)}
        values.update(args["planned"])
        values = {name: value for name, value in values.items() if value not in (None, "")}
        try:
            sku = catalog.sku_spec(node_sku, self._var(task_vars, catalog.OVERRIDE_VARIABLE) or None)
        except InputError as err:
            raise AnsibleActionFail(f"{host}: node_sku: {err.message} (fix: {err.fix})") from None
        findings = bom.bom_findings(values.get, node_sku, sku, rules) + args["findings"]
        errors = [found for found in findings if found.get("severity") == bom.ERROR]
        result.update(changed=False, findings=findings)
        if errors:
            said = " ".join(f"{f['variable']}: {f['message']} (fix: {f['fix']})." for f in errors)
            result.update(
                failed=True, msg=f"{host}: {args['refusal']} ({node_sku}), nothing was changed: {said}"
            )
        return result

    def _var(self, task_vars, name):
        return self._templar.template(task_vars[name]) if name in task_vars else None
