#!/usr/bin/python
"""Ansible module: run the performance benchmarks of perf validation on a node, or one side of a pair."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: perf_run
short_description: Run NCCL, HCCL, perftest, nvbandwidth and storage benchmarks and judge them
description:
  - The node side of C(clusterforge validate --level perf) (docs/design.md, "Multi-node performance
    validation"). Loads the accelerators and the fabric for minutes, so run it on idle or drained nodes only.
  - C(mode=local) runs the single-node tests and returns a C(node_result) like node_validate's (checks
    C(perf.busy), C(perf.nccl_local), C(perf.nvbandwidth), C(perf.ib_loopback), C(perf.hccl_local),
    C(perf.storage)). On a Slurm worker (C(slurm_node)) a node that runs jobs gets C(perf.busy) error and
    no benchmark.
  - C(mode=serve) starts one C(ib_write_bw) server per rail of a pair (port C(ib_base_port) + the rail's
    index in C(rails)), each serving one client, and returns their ends (run it asynchronously).
  - C(mode=pair) is the client side of a pair with C(peer), running C(ib_write_bw) per rail (retried while the
    server is not listening yet), NCCL across both nodes (rail C(nccl), through mpirun) and
    C(hccn_tool -ping) per NPU NIC (rails C(npuN)); returns C(pair_result).
  - A tool that is missing, times out or prints something else than its output makes its check or rail
    C(error) (could not run), never pass.
options:
  mode:
    description: Which step to run.
    type: str
    choices: [local, serve, pair]
    default: local
  node_sku:
    description: The node's SKU name (reported).
    type: str
  sku:
    description: The SKU's catalog entry (accelerator, hca), as for node_validate.
    type: dict
    default: {}
  expectations:
    description: The expected figures of the SKU (cfcore/perf_expectations.py, filter cf_perf_expectations).
    type: dict
    default: {}
  sysfs_root:
    description: The root under which C(sys/class/infiniband) is read to find the compute HCAs (the rails).
    type: path
    default: /
  bin_dirs:
    description: Folders (globs, newest match first) searched for the benchmarks before PATH.
    type: list
    elements: str
    default: [/opt/nccl-tests/*/bin, /usr/local/Ascend/ascend-toolkit/latest/tools/hccl_test/bin,
              /usr/local/nvbandwidth, /opt/nvbandwidth]
  timeout_s:
    description: Time limit of each benchmark command.
    type: int
    default: 600
  slurm_node:
    description: The node's Slurm name on a Slurm worker (C(perf.busy) asks C(scontrol show node -o)); unset
      on other nodes.
    type: str
  gpudirect:
    description: Loopback C(ib_write_bw) through GPU memory (C(--use_cuda=GPU), rail i with GPU i).
    type: bool
    default: true
  hccn_devices:
    description: The node's NPU NIC plan (ids become the rails C(npuN) of its pairs).
    type: list
    elements: dict
    default: []
  storage_mount:
    description: The JuiceFS mount point C(juicefs bench) writes to; unset, C(perf.storage) is skipped.
    type: path
  storage_bench:
    description: C(juicefs bench) sizes C({threads, big_file_mib, small_file_count}).
    type: dict
    default: {}
  nccl_max_bytes:
    description: The largest all-reduce size (nccl-tests C(-e)).
    type: str
    default: 8G
  hccl_max_bytes:
    description: The largest HCCL all-reduce size (hccl_test C(-e)).
    type: str
    default: 1G
  ib_duration_s:
    description: Seconds each C(ib_write_bw) runs (C(-D)).
    type: int
    default: 5
  ib_base_port:
    description: The TCP port of the first rail's perftest exchange; rail i uses this + i.
    type: int
    default: 18515
  rails:
    description: Serve and pair modes, the rails of the pair (HCA names, C(nccl), C(npuN)).
    type: list
    elements: str
    default: []
  gpudirect_gpus:
    description: Serve and pair modes, the GPUs C(ib_write_bw) uses in turn (0 is host memory).
    type: int
    default: 0
  gpus:
    description: Pair mode, GPUs per node for the two-node all-reduce.
    type: int
    default: 1
  serve_timeout_s:
    description: Serve mode, how long the servers wait for their clients.
    type: int
    default: 300
  peer:
    description: "Pair mode, the other node: C({name, address, npu_nics: {id: address}})."
    type: dict
  self:
    description: Pair mode, this node's inventory name (reported in pair_result).
    type: str
  self_address:
    description: Pair mode, this node's address as the peer and mpirun reach it.
    type: str
attributes:
  check_mode:
    support: full
    details: In check mode no benchmark runs; every check is skipped with the reason.
  diff_mode:
    support: none
author:
  - ClusterForge
"""

EXAMPLES = r"""
- name: Single-node benchmarks
  clusterforge.cluster.perf_run:
    node_sku: "{{ node_sku }}"
    sku: "{{ validate_expected.sku }}"
    expectations: "{{ node_sku | clusterforge.cluster.cf_perf_expectations(validate_expected.sku) }}"
    slurm_node: "{{ inventory_hostname if 'slurm_workers' in group_names else omit }}"
  register: perf_local

- name: Servers of the pair's rails
  clusterforge.cluster.perf_run:
    mode: serve
    rails: [mlx5_0, mlx5_1]
  async: 400
  poll: 0
  register: perf_servers
"""

RETURN = r"""
node_result:
  description: Local mode, the node result (docs/design.md), level C(perf).
  returned: mode local
  type: dict
served:
  description: Serve mode, per rail the server's C({rc, tail, command}).
  returned: mode serve
  type: dict
pair_result:
  description: Pair mode, C({a, b, results}) with per rail C({status, gbps, message, evidence}).
  returned: mode pair
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.collect import LiveSource
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.perf_run import (
    DEFAULT_BIN_DIRS,
    run_local,
    run_pair,
    serve_pairs,
)

ARGUMENT_SPEC = {
    "mode": {"type": "str", "choices": ["local", "serve", "pair"], "default": "local"},
    "node_sku": {"type": "str"},
    "sku": {"type": "dict", "default": {}},
    "expectations": {"type": "dict", "default": {}},
    "sysfs_root": {"type": "path", "default": "/"},
    "bin_dirs": {"type": "list", "elements": "str", "default": list(DEFAULT_BIN_DIRS)},
    "timeout_s": {"type": "int", "default": 600},
    "slurm_node": {"type": "str"},
    "gpudirect": {"type": "bool", "default": True},
    "hccn_devices": {"type": "list", "elements": "dict", "default": []},
    "storage_mount": {"type": "path"},
    "storage_bench": {"type": "dict", "default": {}},
    "nccl_max_bytes": {"type": "str", "default": "8G"},
    "hccl_max_bytes": {"type": "str", "default": "1G"},
    "ib_duration_s": {"type": "int", "default": 5},
    "ib_base_port": {"type": "int", "default": 18515},
    "rails": {"type": "list", "elements": "str", "default": []},
    "gpudirect_gpus": {"type": "int", "default": 0},
    "gpus": {"type": "int", "default": 1},
    "serve_timeout_s": {"type": "int", "default": 300},
    "peer": {"type": "dict"},
    "self": {"type": "str"},
    "self_address": {"type": "str"},
}


def main() -> None:
    module = AnsibleModule(
        argument_spec=ARGUMENT_SPEC,
        supports_check_mode=True,
        required_if=[("mode", "pair", ("peer", "self", "self_address"))],
    )
    params = module.params
    if params["mode"] == "pair" and not (params["peer"] or {}).get("address"):
        module.fail_json(msg="peer must name the other node's address: peer: {name, address}")
    source = LiveSource()
    if module.check_mode:
        module.exit_json(changed=False, skipped_reason="check mode: no benchmark runs", **_empty(params))
    if params["mode"] == "local":
        node_result = run_local(source, params)
        module.exit_json(changed=False, status=node_result["status"], node_result=node_result)
    if params["mode"] == "serve":
        module.exit_json(changed=False, served=serve_pairs(source, params))
    module.exit_json(changed=False, pair_result=run_pair(source, params))


def _empty(params: dict) -> dict:
    if params["mode"] == "serve":
        return {"served": {}}
    if params["mode"] == "pair":
        return {"pair_result": {"a": params["self"], "b": (params["peer"] or {}).get("name"), "results": {}}}
    return {"node_result": None}


if __name__ == "__main__":
    main()
