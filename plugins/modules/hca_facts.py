#!/usr/bin/python
"""Ansible module: the node's RDMA HCAs, their firmware and ports, and the OFED release (ClusterForge)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: hca_facts
short_description: Read the node's RDMA HCAs (firmware, GUID, ports) and the installed OFED release
description:
  - Reads C(<sysfs_root>/sys/class/infiniband) once (ClusterForge's one reader of that tree,
    C(cfcore/parsers/infiniband.py)) and returns each HCA's type, board id, firmware, node GUID and
    ports (state, physical state, rate, link layer), in the shape of the local fact
    C(ansible_local.clusterforge_rdma).
  - A node without the tree (no HCA, the RDMA modules not loaded, a container) gets an empty C(hcas)
    and the reason in C(message); a malformed tree fails with the path and the fix.
  - For the vendor install methods (C(doca), C(mlnx_ofed)) it reads the release from C(ofed_info -s)
    where that command exists; C(ofed_version) is null for C(distro) or when it is absent.
  - Only reads; check mode runs it fully and it never reports a change.
options:
  sysfs_root:
    description: Root under which C(sys/class/infiniband) is read (a replayed tree in tests).
    type: path
    default: /
  install_method:
    description: The role's C(rdma_install_method); it decides whether C(ofed_info -s) is read.
    type: str
    choices: [distro, doca, mlnx_ofed]
    default: distro
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
author:
  - ClusterForge
"""

EXAMPLES = r"""
- name: Read the HCAs and the OFED release
  clusterforge.cluster.hca_facts:
    sysfs_root: "{{ sysfs_root | default('/') }}"
    install_method: "{{ rdma_install_method }}"
  register: hca

- name: Name the firmware of each HCA
  ansible.builtin.debug:
    msg: "{{ hca.hcas | dict2items | map(attribute='value.firmware') | list }}"
"""

RETURN = r"""
hcas:
  description: Each HCA by name; ports by number (a string, as in JSON).
  type: dict
  returned: always
  sample:
    mlx5_0:
      type: MT4129
      board_id: MT_0000000838
      firmware: 28.39.1002
      node_guid: "0xa088c20300e3142a"
      ports:
        "1": {state: Active, physical_state: LinkUp, rate_gbps: 400, link_layer: InfiniBand}
install_method:
  description: The install method given.
  type: str
  returned: always
ofed_version:
  description: The DOCA-OFED / MLNX_OFED release from C(ofed_info -s), or null (distro, or no ofed_info).
  type: str
  returned: always
  sample: 24.10-1.1.4.0
fact:
  description: What the role writes to C(/etc/ansible/facts.d/clusterforge_rdma.fact) (install_method,
    ofed_version, hcas).
  type: dict
  returned: always
message:
  description: Why C(hcas) is empty (no tree, an empty tree), or empty.
  type: str
  returned: always
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore import rdma_packages as rdma
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.parsers.common import ParseError
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.parsers.infiniband import (
    read_sysfs_infiniband,
)


def read_hcas(sysfs_root):
    """(hcas, message): an absent or empty tree is no HCA (with the reason); a malformed one raises."""
    base = os.path.join(sysfs_root, "sys", "class", "infiniband")
    if not os.path.isdir(base):
        return {}, f"no {base}: no RDMA device, or the RDMA kernel modules (mlx5_ib) are not loaded"
    if not os.listdir(base):
        return {}, f"{base} is empty: no RDMA device"
    return rdma.hcas_from_sysfs(read_sysfs_infiniband(sysfs_root)), ""


def main():
    module = AnsibleModule(
        argument_spec={
            "sysfs_root": {"type": "path", "default": "/"},
            "install_method": {"type": "str", "default": "distro", "choices": list(rdma.METHODS)},
        },
        supports_check_mode=True,
    )
    method = module.params["install_method"]
    try:
        hcas, message = read_hcas(module.params["sysfs_root"])
    except ParseError as err:
        module.fail_json(msg=str(err))
    ofed_version = None
    if method != "distro":
        ofed_info = module.get_bin_path("ofed_info")
        if ofed_info:
            rc, out, _err = module.run_command([ofed_info, "-s"])
            ofed_version = rdma.parse_ofed_info(out) if rc == 0 else None
    fact = {"install_method": method, "ofed_version": ofed_version, "hcas": hcas}
    module.exit_json(changed=False, message=message, **fact, fact=fact)


if __name__ == "__main__":
    main()
