#!/usr/bin/python
"""Ansible module: does the training framework see every accelerator and all-reduce across them?"""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: framework_smoke
short_description: Run the framework readiness probe in the site's training environment and judge it
description:
  - The node side of C(clusterforge validate --level framework) (docs/design.md, "Framework readiness").
  - Ships one probe script to the node and runs it with the training environment's python (a venv on
    the node or shared storage, or a container image run with C(RUNTIME run --rm) and the accelerators
    passed through), under C(timeout_s).
  - The probe reports JSON (framework, CUDA/CANN and driver versions, the devices the framework sees, a
    single-node all-reduce over NCCL/HCCL, one process per device); checks C(framework.env),
    C(framework.devices), C(framework.allreduce) and C(framework.versions) judge it against the SKU and
    the BOM. Returns a C(node_result) like node_validate's, level C(framework).
  - C(error) only when the probe could not run (environment or python missing, crash, timeout, output
    that is not its JSON) or the all-reduce could not be attempted; what it measured wrong is C(fail).
  - Alibaba PPU nodes and nodes without accelerators get every check C(skip) with the reason.
options:
  node_sku:
    description: The node's SKU name (reported).
    type: str
  sku:
    description: The SKU's catalog entry (its accelerator vendor and count decide backend and world size).
    type: dict
    default: {}
  env:
    description:
      - The training environment (inventory variable C(framework_env)), C({kind: venv, path, python?,
        source?, framework?}) or C({kind: image, image, runtime?, python?, run_args?, source?, framework?}).
    type: dict
    required: true
  bom:
    description: The BOM versions compared with what the probe reports (pytorch_version, pytorch_cuda_version,
      torch_npu_version, mindspore_version, nvidia_driver_version, ascend_driver_version, cann_version).
    type: dict
    default: {}
  backend:
    description: The all-reduce's torch.distributed backend; unset, nccl on NVIDIA and hccl on Ascend
      (C(gloo) runs it on the CPU).
    type: str
    choices: [nccl, hccl, gloo]
  world_size:
    description: Ranks of the all-reduce; 0 is one per device of the SKU (with C(gloo), the devices seen).
    type: int
    default: 0
  timeout_s:
    description: Time limit of the whole probe run (imports, devices, all-reduce).
    type: int
    default: 300
  allreduce_timeout_s:
    description: How long the probe waits for the ranks of the all-reduce (set-up included).
    type: int
    default: 120
  allreduce_max_s:
    description: The all-reduce (slowest rank) fails above this many seconds.
    type: float
    default: 30
  allreduce_warn_s:
    description: The all-reduce warns above this many seconds.
    type: float
    default: 5
  sysfs_root:
    description: The root under which C(sys/module/nvidia/version) is read.
    type: path
    default: /
  cann_version_files:
    description: Files whose C(Version=) line is the CANN version, first readable wins; empty, the probe's
      own list (C(/usr/local/Ascend/cann/opp/version.info) and the ascend-toolkit/latest equivalents).
    type: list
    elements: str
    default: []
attributes:
  check_mode:
    support: full
    details: In check mode the probe does not run; every check is skipped with the reason.
  diff_mode:
    support: none
author:
  - ClusterForge
"""

EXAMPLES = r"""
- name: Framework readiness in the site's venv
  clusterforge.cluster.framework_smoke:
    node_sku: hgx-h100-8gpu
    sku: "{{ validate_expected.sku }}"
    env: {kind: venv, path: /opt/train/venv}
    bom:
      pytorch_version: "2.7.1"
      pytorch_cuda_version: "12.8"
      nvidia_driver_version: "570.133.20"
  register: framework

- name: The same in a container image, with CANN's environment
  clusterforge.cluster.framework_smoke:
    node_sku: atlas-800t-a2
    sku: "{{ validate_expected.sku }}"
    env:
      kind: image
      image: registry.example/train:cann8.5-torch2.6
      runtime: docker
      source: /usr/local/Ascend/cann/set_env.sh
"""

RETURN = r"""
status:
  description: The node's overall status (worst check).
  returned: always
  type: str
node_result:
  description: The node result (docs/design.md), level C(framework), checks C(framework.*), metrics
    C(framework.allreduce_s) and C(framework.devices_visible), facts C(framework_probe) (what it reported).
  returned: always
  type: dict
"""

import socket

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.framework_run import (
    SETTINGS,
    env_problem,
    run_framework,
    setting_problem,
)

ARGUMENT_SPEC = {
    "node_sku": {"type": "str"},
    "sku": {"type": "dict", "default": {}},
    "env": {"type": "dict", "required": True},
    "bom": {"type": "dict", "default": {}},
    "backend": {"type": "str", "choices": ["nccl", "hccl", "gloo"]},
    "world_size": {"type": "int", "default": 0},
    "timeout_s": {"type": "int", "default": 300},
    "allreduce_timeout_s": {"type": "int", "default": 120},
    "allreduce_max_s": {"type": "float", "default": 30.0},
    "allreduce_warn_s": {"type": "float", "default": 5.0},
    "sysfs_root": {"type": "path", "default": "/"},
    "cann_version_files": {"type": "list", "elements": "str", "default": []},
}


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    params = module.params
    problem = env_problem(params["env"])
    if problem:
        module.fail_json(msg=f"{problem} (inventory variable framework_env)")
    for variable, option, *_rest in SETTINGS:
        problem = setting_problem(variable, params[option])
        if problem:
            module.fail_json(msg=f"{problem} (module option {option})")
    node_result = run_framework(params, socket.gethostname(), check_mode=module.check_mode)
    module.exit_json(changed=False, status=node_result["status"], node_result=node_result)


if __name__ == "__main__":
    main()
