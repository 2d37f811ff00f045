"""Lookup clusterforge.cluster.validation_expected: a host's node_validate parameters.

The host's node_validate parameters (all but `level`) from its variables. The variables it
reads, and their defaults, are named once, in cfcore/expected.py (INPUT_VARIABLES,
build_expected): the CLI's pre-flight and `--from-capture` read the same list, so the playbook
and the CLI never disagree on what a node should look like. A lookup, not an action: its
result is kept by set_fact, in memory for the run, never in the fact cache (it may hold a
volume's meta URL).
"""

from __future__ import annotations

DOCUMENTATION = r"""
---
name: validation_expected
author: ClusterForge
short_description: What node validation expects of the host, from its variables
description:
  - Reads the host's variables named in cfcore/expected.py (C(INPUT_VARIABLES) - node_sku, the site's
    SKU overrides, the BOM, os_release, validate_required_mounts, validate_skip_checks, the fabric and
    storage plans, the metrics directory), templated as Ansible resolves them, and builds
    C(node_validate)'s parameters with C(build_expected), the function the CLI's pre-flight and
    C(clusterforge validate --from-capture) call, with the defaults written there once.
  - Where the host mounts JuiceFS, a volume without its own meta URL uses C(juicefs_meta_url), else the
    Redis of the first C(juicefs_meta) host; the JuiceFS site variables are read only then.
  - A malformed value fails with C(error:) and C(fix:) naming the host and the variable.
options:
  extra_skip_checks:
    description: The run's own check ids to skip, added to the host's C(validate_skip_checks).
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
- name: Work out what the node should look like
  ansible.builtin.set_fact:
    validate_expected: >-
      {{ lookup('clusterforge.cluster.validation_expected',
                extra_skip_checks=validate_extra_skip_checks | default([])) }}
"""

RETURN = r"""
_raw:
  description: node_validate's parameters but C(level) - node_sku, sku (the catalog entry with the
    site's overrides), bom, required_mounts, hccn_devices, sysfs_root, skip_checks, os_release,
    root_min_free_gib, ipoib_interfaces, roce, peermem_required, only_checks, juicefs_mounts,
    ceph_health, metrics_textfile_dir.
  type: list
  elements: dict
"""

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore import expected as exp
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore import juicefs as jfs

_resolver = exp.SkuResolver()  # one per controller process: the catalog is merged once per override set


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        variables = variables or {}
        self.set_options(var_options=variables, direct=kwargs)
        host = variables.get("inventory_hostname", "?")
        mounts_juicefs = bool(self._var(variables, "juicefs_mounts"))
        # The JuiceFS site variables (often templated or vaulted) are read only where they are used.
        names = [n for n in exp.HOST_VARIABLES if mounts_juicefs or n not in exp.JUICEFS_SITE_VARIABLES]
        inputs = {name: self._var(variables, name) for name in names if name in variables}
        if mounts_juicefs:
            inputs[exp.JUICEFS_DEFAULT_META_URL] = self._juicefs_default_meta_url(variables)
        try:
            inputs = exp.with_run_skips(exp.inputs_of(inputs), self.get_option("extra_skip_checks"))
            inputs["group_names"] = list(variables.get("group_names") or [])
            return [exp.build_expected(host, inputs, _resolver)]
        except exp.InvalidExpectation as err:
            said = f"error: {err.message}\n  fix: {err.fix}" if err.fix else err.message
            raise AnsibleLookupError(said) from None

    def _var(self, variables, name):
        return self._templar.template(variables[name]) if name in variables else None

    def _juicefs_default_meta_url(self, variables) -> str:
        """`juicefs_meta_url`, else the Redis of the first juicefs_meta host (cfcore/juicefs.py)."""
        meta_url = self._var(variables, "juicefs_meta_url") or ""
        meta_hosts = (variables.get("groups") or {}).get("juicefs_meta") or []
        # The meta host's variables are read key by key: a whole hostvars would template all of them.
        meta_host_vars = variables["hostvars"][meta_hosts[0]] if meta_hosts else {}
        return jfs.default_meta_url(meta_url, meta_host_vars)
