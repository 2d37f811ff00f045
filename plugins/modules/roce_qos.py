#!/usr/bin/python
"""Ansible module: lossless RoCE QoS of netdevs, read, compared, applied and read back (ClusterForge)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: roce_qos
short_description: Put RoCE netdevs into the lossless plan (trust, PFC, ECN, traffic class, MTU) and prove it
description:
  - Reads each planned netdev with C(mlnx_qos -i IF) (trust state, PFC, DSCP to priority mapping) and its
    sysfs/configfs attributes (ECN notification and reaction points on the PFC priority, CNP DSCP, the
    IB device's RoCE traffic class, rdma_cm's C(default_roce_tos), the MTU, the RoCE v2 IPv4 GID at
    the planned index), compares them with the plan and applies only what differs, with the same
    commands the boot-time C(clusterforge-roce-apply) runs (cfcore/roce.py, one implementation).
  - Reads everything back afterwards and fails, naming each setting still different and the command
    that fixes it, when the node did not take the plan (an honest result - a write that did not stick is
    a failure, not a change).
  - The GID cannot be written; a missing RoCE v2 IPv4 GID is reported (the netdev needs its IPv4 address).
  - In check mode it reads and reports the differences as would-change (with a diff), and applies nothing.
    Where C(mlnx_qos) is not installed yet (its package is installed by the same run), check mode reports
    trust and PFC as unknown instead of failing.
options:
  plan:
    description:
      - The normalized RoCE plan (the filter C(clusterforge.cluster.cf_roce_plan) of the C(fabric_roce_*)
        variables) - interfaces, trust, pfc_priority, dscp, cnp_dscp, ecn, mtu, gid_index (traffic_class and
        roce_tos are derived again here).
    type: dict
    required: true
  sysfs_root:
    description: Root under which C(sys/class/net), C(sys/class/infiniband) and C(sys/kernel/config) are read
      and written (the hardware replay's tree in tests).
    type: path
    default: /
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
author:
  - ClusterForge
"""

EXAMPLES = r"""
- name: Apply and verify the lossless RoCE plan
  clusterforge.cluster.roce_qos:
    plan: "{{ roce_plan }}"
  register: roce_state
"""

RETURN = r"""
differences:
  description: What differed from the plan before anything was applied (empty when the node was as planned).
  type: list
  elements: dict
  returned: always
  sample: [{interface: enp24s0np0, setting: pfc, planned: "0,0,0,1,0,0,0,0", found: "0,0,0,0,0,0,0,0",
            fix: "mlnx_qos -i enp24s0np0 --pfc 0,0,0,1,0,0,0,0"}]
remaining:
  description: What still differs after applying (the module fails when this is not empty).
  type: list
  elements: dict
  returned: always
applied:
  description: The commands run, each with its exit status (empty in check mode).
  type: list
  elements: dict
  returned: always
ibdevs:
  description: The IB device of each planned netdev (null where it has none), for the boot-time script.
  type: dict
  returned: always
  sample: {enp24s0np0: mlx5_0}
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore import roce
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.inputs import InputError

TOOL_DIRS = ["/usr/sbin", "/usr/local/sbin", "/usr/bin", "/usr/local/bin", "/sbin", "/bin"]
UNFIXABLE = ("interface", "ibdev", "gid")
ATTRIBUTE_LIMIT = 4096
INSTALL_FIX = (
    "install mlnx_qos: NVIDIA's mlnx-tools package (DOCA-OFED; role rdma with rdma_install_method: doca, "
    "or roce_packages naming a package of your mirror)"
)


def read_file(path):
    try:
        with open(path, errors="replace") as handle:
            return handle.read(ATTRIBUTE_LIMIT)
    except OSError:
        return None


def list_dir(path):
    try:
        return sorted(os.listdir(path))
    except OSError:
        return None


def observe_all(module, plan, sysfs_root, mlnx_qos):
    state = {}
    for iface in plan["interfaces"]:
        sysfs = roce.read_sysfs(iface, plan, sysfs_root, read_file, list_dir)
        text = None
        if mlnx_qos and sysfs["present"]:
            rc, out, err = module.run_command([mlnx_qos, "-i", iface], environ_update={"LC_ALL": "C"})
            text = out if rc == 0 else None
            seen = roce.observe(text, sysfs)
            if rc != 0:
                seen["errors"]["mlnx_qos"] = f"mlnx_qos -i {iface} exited {rc}: {(err or out).strip()[:300]}"
        else:
            seen = roce.observe(None, sysfs)
            if not mlnx_qos:
                seen["errors"]["mlnx_qos"] = "mlnx_qos is not installed"
        state[iface] = seen
    return state


def diff_text(differences, key):
    return "".join(f"{d['interface']} {d['setting']}: {d[key]}\n" for d in differences)


def public(differences):
    return [{key: d[key] for key in ("interface", "setting", "planned", "found", "fix")} for d in differences]


def run_module():
    module = AnsibleModule(
        argument_spec={
            "plan": {"type": "dict", "required": True},
            "sysfs_root": {"type": "path", "default": "/"},
        },
        supports_check_mode=True,
    )
    sysfs_root = module.params["sysfs_root"]
    given = {
        key: value for key, value in module.params["plan"].items() if key not in ("traffic_class", "roce_tos")
    }
    try:
        plan = roce.normalize_plan(given)
    except InputError as err:
        module.fail_json(msg=f"plan: {err.message}", fix=err.fix)
    result = {"changed": False, "differences": [], "remaining": [], "applied": [], "ibdevs": {}}
    if plan is None:
        module.exit_json(msg="no RoCE interface planned", **result)
    mlnx_qos = module.get_bin_path("mlnx_qos", opt_dirs=TOOL_DIRS)
    state = observe_all(module, plan, sysfs_root, mlnx_qos)
    result["ibdevs"] = {iface: seen.get("ibdev") for iface, seen in state.items()}
    differences = roce.compare(plan, state, sysfs_root)
    result["differences"] = public(differences)
    if module._diff:
        result["diff"] = {
            "before": diff_text(differences, "found"),
            "after": diff_text(differences, "planned"),
        }
    absent = [d for d in differences if d["setting"] in ("interface", "ibdev")]
    if absent:
        module.fail_json(
            msg="planned RoCE interface(s) missing or not RDMA ports: "
            + "; ".join(roce.describe(d) for d in absent),
            fix="; ".join(d["fix"] for d in absent),
            **result,
        )
    if module.check_mode:
        result["changed"] = bool(differences)
        module.exit_json(**result)
    if not mlnx_qos and any(d["setting"] in ("trust", "pfc", "dscp2prio") for d in differences):
        module.fail_json(
            msg="mlnx_qos is not installed: trust and PFC cannot be read or set", fix=INSTALL_FIX, **result
        )
    for iface in plan["interfaces"]:
        settings = {d["setting"] for d in differences if d["interface"] == iface}
        commands = roce.setting_commands(plan, iface, state[iface]["ibdev"], sysfs_root)
        for setting in roce.SETTINGS:
            if setting not in settings or setting in UNFIXABLE:
                continue
            for argv in commands[setting]:
                if argv[0] == "mlnx_qos":
                    argv = [mlnx_qos, *argv[1:]]
                rc, _out, err = module.run_command(argv, environ_update={"LC_ALL": "C"})
                result["applied"].append(
                    {"command": roce.fix_text([argv]), "rc": rc, "stderr": (err or "").strip()[:500]}
                )
                if rc != 0:
                    break  # the setting's later commands need this one (mkdir before the write)
    result["changed"] = bool(result["applied"])
    remaining = roce.compare(plan, observe_all(module, plan, sysfs_root, mlnx_qos), sysfs_root)
    result["remaining"] = public(remaining)
    if remaining:
        failed_commands = [
            a["command"] + f" (rc {a['rc']}: {a['stderr']})" for a in result["applied"] if a["rc"]
        ]
        module.fail_json(
            msg="the node did not take the RoCE plan: "
            + "; ".join(roce.describe(d) for d in remaining)
            + (("; failed: " + "; ".join(failed_commands)) if failed_commands else ""),
            fix="; ".join(d["fix"] for d in remaining),
            **result,
        )
    module.exit_json(**result)


def main():
    run_module()


if __name__ == "__main__":
    main()
