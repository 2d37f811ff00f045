#!/usr/bin/python
"""Ansible module: what accelerators, HCAs and versions a node really has (ClusterForge)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: accelerator_facts
short_description: Discover a node's accelerators, HCAs and driver versions
description:
  - Sets C(ansible_facts.clusterforge_accelerators) from the vendor tools that exist on the
    node (nvidia-smi, npu-smi, ibstat or /sys/class/infiniband) and from the PCI bus, so
    playbooks can branch on the hardware a node really has, even before its driver is
    installed.
  - Needs no SKU; a missing tool is reported in C(tools), never an error. It only reads,
    so check mode runs it fully.
options:
  sysfs_root:
    description: Root under which C(sys/class/infiniband) and C(sys/bus/pci) are read.
    type: path
    default: /
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  facts:
    support: full
author:
  - ClusterForge
"""

EXAMPLES = r"""
- name: Discover accelerators
  accelerator_facts:

- name: Install the NVIDIA driver only where NVIDIA GPUs sit on the bus
  ansible.builtin.include_role:
    name: nvidia_driver
  when: ansible_facts.clusterforge_accelerators.vendor == 'nvidia'
"""

RETURN = r"""
ansible_facts:
  description: Facts to add to ansible_facts.
  returned: always
  type: dict
  contains:
    clusterforge_accelerators:
      description:
        - vendor (nvidia, huawei or null), accelerator_count, accelerator_models,
          driver_version, cuda_version, firmware_versions, kernel_module_flavour,
          gpus, npus, hca_count, hcas (with ports), pci_accelerators (count per
          vendor on the PCI bus), driver_loaded, tools (state of each tool), errors.
      type: dict
      sample:
        vendor: nvidia
        accelerator_count: 8
        accelerator_models: [NVIDIA H100 80GB HBM3]
        driver_version: 535.183.01
        cuda_version: "12.2"
        hca_count: 10
        pci_accelerators: {nvidia: 8}
        driver_loaded: true
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.collect import LiveSource
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.facts import discover


def main() -> None:
    module = AnsibleModule(
        argument_spec={"sysfs_root": {"type": "path", "default": "/"}},
        supports_check_mode=True,
    )
    facts = discover(LiveSource(), module.params["sysfs_root"])
    module.exit_json(changed=False, ansible_facts={"clusterforge_accelerators": facts})


if __name__ == "__main__":
    main()
