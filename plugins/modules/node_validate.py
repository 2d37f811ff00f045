#!/usr/bin/python
"""Ansible module: validate one node against its SKU's expected state (ClusterForge)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: node_validate
short_description: Check a GPU/NPU node against its SKU's expected state
description:
  - Runs the vendor tools of the node's SKU once each (nvidia-smi, dmesg, lspci, ibstat,
    npu-smi, hccn_tool, systemctl) and checks accelerator count and model, driver version
    against the BOM, PCIe links, NVLink, fabric manager, persistence mode, fatal Xids,
    ECC/retired pages/remapped rows, MIG, C(nvidia_peermem), HCA link layers, ports and rates,
    planned IPoIB interfaces (C(ip -j addr show)), the RoCE QoS plan, NPU health, firmware
    compatibility and NIC state; and on every node (with accelerators or not) required
    mounts (present, of their type, writable), time synchronisation, free space on C(/) and the
    OS release; and shared storage (C(storage.*)), that is the JuiceFS sessions of the host's mounts
    (C(juicefs status)) and the Ceph cluster's health (C(ceph health --format json)).
  - Each check result has an C(id), a C(status) (pass, warn, fail, error, skip), a
    C(message), C(evidence) (the command and its decisive lines) and a C(remedy).
    C(error) means the check could not run and is never counted as a pass.
  - An unhealthy node is a result, not a module failure; the module fails only on
    malformed parameters. It only reads, so check mode runs every check except the
    active stress test of C(level=full) (C(dcgmi diag -r 2)), which it reports as skipped.
options:
  node_sku:
    description: The node's SKU name (a key of the SKU catalog).
    type: str
    required: true
  sku:
    description: The SKU's catalog spec (accelerator, hca, npu_nics), as docs/design.md describes.
    type: dict
    required: true
  bom:
    description: >-
      Version bill of materials (nvidia_driver_version, cuda_version, ascend_driver_version, cann_version,
      ppu_sdk_version, ...).
    type: dict
    default: {}
  required_mounts:
    description:
      - Mount points the node must have (C(node.mounts)), each a path (present only) or a mapping
        C({path, fstype, writable}); C(fstype) is compared with C(/proc/self/mounts) (C(fuse.juicefs),
        C(fuse.ceph-fuse), C(ceph)); where C(writable), a probe file
        C(<path>/.clusterforge-probe-<host>-<pid>) is written, read back and removed (in check mode
        too, since it leaves nothing), bounded by 10 s (a hung mount is C(error), "mount not responding").
      - From a capture only presence and type are checked.
    type: list
    elements: raw
    default: []
  juicefs_mounts:
    description:
      - The host's JuiceFS mounts for C(storage.juicefs_session), one C({path, meta_url, env_file})
        each; C(juicefs status <meta_url>) must list a live session of this host at C(path).
      - C(env_file) (0600) gives C(META_PASSWORD) (and any other C(KEY=VALUE)) to C(juicefs) through its
        environment; its values never appear in the result.
      - Empty, C(storage.juicefs_session) is skipped.
    type: list
    elements: dict
    default: []
  ceph_health:
    description:
      - The Ceph client that reads the cluster's health (C(storage.ceph_health)),
        C({cluster, client, conf, keyring}); HEALTH_OK passes, HEALTH_WARN warns, HEALTH_ERR fails.
      - Unset, C(storage.ceph_health) is skipped.
    type: dict
  hccn_devices:
    description: The NPU NIC plan, one C({id, address, netmask, gateway, netdetect}) per device.
    type: list
    elements: dict
    default: []
  level:
    description: C(quick) takes seconds; C(full) adds C(dcgmi diag -r 2) (minutes).
    type: str
    choices: [quick, full]
    default: quick
  sysfs_root:
    description: Root under which C(sys/class/infiniband) is read.
    type: path
    default: /
  skip_checks:
    description: Check ids to report as skipped.
    type: list
    elements: str
    default: []
  os_release:
    description:
      - The planned OS, ID and VERSION_ID of C(/etc/os-release) (e.g. C(debian 12)).
      - Unset, C(node.os_release) is skipped.
    type: str
  root_min_free_gib:
    description: Free space on C(/) below which C(node.root_fs) fails (below twice this it warns).
    type: float
    default: 10.0
  ipoib_interfaces:
    description:
      - The IPoIB plan (C(fabric_ipoib_interfaces)), one C({name, address, mtu, parent, pkey, mode}) per
        interface; C(address) is IPv4/prefix, C(mtu) defaults to 2044 (datagram) or 65520 (connected),
        C(pkey) (0x0001-0x7fff, with C(parent)) makes a partition child named C(<parent>.<pkey|0x8000>).
      - Empty, C(ib.ipoib) is skipped.
    type: list
    elements: dict
    default: []
  roce:
    description:
      - The RoCE plan as the raw C(fabric_roce_*) values C({interfaces, trust, pfc_priority, dscp, cnp_dscp,
        ecn, mtu, gid_index}), normalized on the node by C(cfcore.roce.normalize_plan).
      - Unset, C(roce.qos) is skipped.
    type: dict
  peermem_required:
    description:
      - Whether C(nvidia_peermem) (GPUDirect RDMA) must be loaded (C(gpu.peermem)).
      - Unset, it is required on NVIDIA SKUs with compute-fabric HCAs.
    type: bool
  only_checks:
    description:
      - Run only these check ids (C(area.*) names an area, e.g. C(ib.*), C(storage.*)); the others are
        reported as skipped, and an area with none of them is not collected at all.
      - Unset, every check runs.
    type: list
    elements: str
  capture_dir:
    description:
      - Validate a directory written by C(tools/cf-capture.sh) instead of running the tools.
      - Nothing runs on the node; the directory must exist where the module runs.
    type: path
  metrics_textfile_dir:
    description:
      - node_exporter's textfile-collector directory (C(monitoring_textfile_dir)); after validating, the
        result is written there as C(clusterforge_validation_<level>.prom) (cfcore/validation_metrics.py,
        C(clusterforge_validation_check_status), C(clusterforge_validation_status), ...), atomically
        (temporary file in the same directory, fsync, rename; mode 0644). A full run does not replace
        the quick file.
      - Written only for a complete live run, not in check mode, not from C(capture_dir), not with
        C(only_checks); and only where the directory exists (role exporters makes it). C(metrics_file) and
        C(metrics_note) say what happened; a file that cannot be written is a warning, never a failure.
      - The file is a report of the run, like a log, so the module still returns C(changed=false).
      - Unset, no metrics file is written.
    type: path
attributes:
  check_mode:
    support: full
    details: At level full, C(dcgmi diag -r 2) does not run in check mode (C(gpu.dcgm_diag) is skipped).
  diff_mode:
    support: none
author:
  - ClusterForge
"""

EXAMPLES = r"""
- name: Quick validation of a GPU node
  node_validate:
    node_sku: "{{ node_sku }}"
    sku: "{{ node_sku_spec }}"  # the SKU's entry of the catalog (plugins/module_utils/cfcore/data/skus.yml)
    bom:
      nvidia_driver_version: "{{ nvidia_driver_version }}"
      cuda_version: "{{ cuda_version }}"
    required_mounts: "{{ validate_required_mounts }}"
    level: quick
  register: validation

- name: Check the shared storage of a JuiceFS and CephFS client
  node_validate:
    node_sku: "{{ node_sku }}"
    sku: "{{ node_sku_spec }}"
    required_mounts:
      - {path: /mnt/jfs, fstype: fuse.juicefs, writable: true}
      - {path: /mnt/cephfs, fstype: fuse.ceph-fuse, writable: true}
    juicefs_mounts:
      - {path: /mnt/jfs, meta_url: "redis://10.0.3.10:6379/1", env_file: /etc/juicefs/jfs.env}
    ceph_health: {cluster: ceph, client: fsuser, conf: /etc/ceph/ceph.conf,
                  keyring: /etc/ceph/ceph.client.fsuser.keyring}
    only_checks: [node.mounts, "storage.*"]

- name: Validate a support capture on the controller
  node_validate:
    node_sku: hgx-h100-8gpu
    sku: "{{ node_sku_spec }}"
    capture_dir: /tmp/capture-gpu-r1-n01
  delegate_to: localhost
"""

RETURN = r"""
status:
  description: Overall status of the node (fail > error > warn > pass; skip only if every check skipped).
  returned: always
  type: str
  sample: fail
node_result:
  description: The node result of docs/design.md.
  returned: always
  type: dict
  contains:
    host:
      description: The node's hostname (the capture's for capture_dir).
      type: str
    node_sku:
      description: The SKU validated against.
      type: str
    level:
      description: quick or full.
      type: str
    status:
      description: Overall status.
      type: str
    checks:
      description: One result per check id with id, status, message, evidence, remedy.
      type: list
      elements: dict
    metrics:
      description: Numeric figures for fleet outlier detection (e.g. gpu.pcie_width_min).
      type: dict
    facts:
      description: Accelerators, HCAs and versions found.
      type: dict
    collected_at:
      description: UTC time the validation started.
      type: str
    duration_s:
      description: Seconds the validation took.
      type: float
metrics_file:
  description: The metrics file written (metrics_textfile_dir), or null when none was.
  returned: always
  type: str
  sample: /var/lib/prometheus/node-exporter/clusterforge_validation_quick.prom
metrics_note:
  description: >-
    Why no metrics file was written (check mode, a capture, only_checks, no directory, an error);
    null when one was.
  returned: always
  type: str
  sample: "check mode: the metrics file is not written"
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.collect import (
    CaptureSource,
    LiveSource,
)
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.expected import InvalidExpectation
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.validate import validate_node
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.validation_metrics import (
    incomplete_reason,
)
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.validation_metrics import (
    write as write_metrics,
)

ARGUMENT_SPEC = {
    "node_sku": {"type": "str", "required": True},
    "sku": {"type": "dict", "required": True},
    "bom": {"type": "dict", "default": {}},
    "required_mounts": {"type": "list", "elements": "raw", "default": []},
    "hccn_devices": {"type": "list", "elements": "dict", "default": []},
    "level": {"type": "str", "choices": ["quick", "full"], "default": "quick"},
    "sysfs_root": {"type": "path", "default": "/"},
    "skip_checks": {"type": "list", "elements": "str", "default": []},
    "capture_dir": {"type": "path"},
    "os_release": {"type": "str"},
    "root_min_free_gib": {"type": "float", "default": 10.0},
    "ipoib_interfaces": {"type": "list", "elements": "dict", "default": []},
    "roce": {"type": "dict"},
    "peermem_required": {"type": "bool"},
    "only_checks": {"type": "list", "elements": "str"},
    "juicefs_mounts": {"type": "list", "elements": "dict", "default": []},
    "ceph_health": {"type": "dict"},
    "metrics_textfile_dir": {"type": "path"},
}
EXPECTED_KEYS = (
    "node_sku",
    "sku",
    "bom",
    "required_mounts",
    "hccn_devices",
    "sysfs_root",
    "skip_checks",
    "os_release",
    "root_min_free_gib",
    "ipoib_interfaces",
    "roce",
    "peermem_required",
    "only_checks",
    "juicefs_mounts",
    "ceph_health",
)


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    params = module.params
    if params["capture_dir"]:
        try:
            source = CaptureSource(params["capture_dir"])
        except (OSError, ValueError) as exc:
            module.fail_json(msg=f"capture_dir: {exc}")
    else:
        # cfcore runs the tools itself rather than through module.run_command: run_command
        # has no timeout, and one hung nvidia-smi must not hang a play over the whole fleet.
        source = LiveSource()
    expected = {key: params[key] for key in EXPECTED_KEYS}
    try:
        node_result = validate_node(source, expected, params["level"], check_mode=module.check_mode)
    except InvalidExpectation as exc:
        module.fail_json(msg=str(exc))
    metrics_file, metrics_note = _metrics(module, node_result)
    # changed stays false: the metrics file is a report of the run, like a log line.
    module.exit_json(
        changed=False,
        status=node_result["status"],
        node_result=node_result,
        metrics_file=metrics_file,
        metrics_note=metrics_note,
    )


def _metrics(module: AnsibleModule, node_result: dict) -> tuple:
    """(path written or None, why not or None)."""
    directory = module.params["metrics_textfile_dir"]
    if not directory:
        return None, "metrics_textfile_dir is not set"
    reason = incomplete_reason(node_result, module.check_mode, module.params["only_checks"])
    if reason:
        return None, reason
    try:
        path = write_metrics(directory, node_result)
    except OSError as exc:
        note = f"cannot write the metrics file in {directory}: {exc}"
        module.warn(note)
        return None, note
    if path is None:
        return None, f"{directory} does not exist (role exporters creates node_exporter's textfile directory)"
    return path, None


if __name__ == "__main__":
    main()
