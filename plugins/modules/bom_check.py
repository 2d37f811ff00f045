#!/usr/bin/python
"""Documentation of action clusterforge.cluster.bom_check (the code: plugins/action/)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: bom_check
short_description: Fail a host whose version bill of materials does not work on its SKU
description:
  - Runs on the controller only; nothing reaches the node. Judges the host's BOM (the versions
    C(nvidia_driver_version), C(cuda_version), C(nccl_version), C(dcgm_version),
    C(ascend_driver_version), C(cann_version) and the others of cfcore/versions.py, and
    C(nvidia_kernel_module_flavour)) on its C(node_sku), with the site's C(clusterforge_sku_catalog),
    by the rules C(clusterforge inventory check) applies (cfcore/bom.py, one implementation, so both
    say the same thing in the same words).
  - The variables it reads are named once, in cfcore (C(bom.input_variables)); the playbook lists none.
  - Fails when a finding has severity error, naming each variable, what is wrong and the fix; returns
    every finding.
options:
  planned:
    description: Versions to judge instead of the host's (an upgrade's target), by variable name.
    type: dict
    default: {}
  findings:
    description: More findings of the same form (rule, variable, message, fix, severity) judged with these,
      such as C(clusterforge.cluster.cf_hccn_findings) of the NPU NIC plan.
    type: list
    elements: dict
    default: []
  refusal:
    description: The failure's first words, before the SKU and the findings.
    type: str
    default: the version bill of materials does not work on this SKU
attributes:
  action:
    support: full
  check_mode:
    support: full
  diff_mode:
    support: none
  platform:
    platforms: posix
author:
  - ClusterForge
"""

EXAMPLES = r"""
- name: Check the host's BOM before anything is installed
  clusterforge.cluster.bom_check:

- name: Check the BOM with the upgrade's target version
  clusterforge.cluster.bom_check:
    planned: {cuda_version: "12.8"}
    refusal: "precheck: cuda_version 12.8 does not work with this node's BOM"
"""

RETURN = r"""
findings:
  description: Every finding, C({rule, variable, message, fix, severity, source, of_value}).
  type: list
  elements: dict
  returned: always
"""
