#!/usr/bin/python
"""Ansible module: what is on a block device meant for a Ceph OSD, and (explicitly) wipe it (ClusterForge)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: ceph_osd_device
short_description: Inspect a device for a Ceph OSD (empty, this cluster's, another's, in use); zap on request
description:
  - Reads C(blkid -p -o export), the partitions and holders in C(/sys/class/block), C(/proc/self/mounts),
    C(pvs), C(ceph-bluestore-tool show-label) and (for an LVM physical volume) C(ceph-volume lvm list)
    and decides, with the rules of C(cfcore/ceph.py), the device's RV(state).
  - C(empty) - no partition, no signature, not mounted, not an LVM PV, no BlueStore label;
    C(osd) - a finished BlueStore OSD of the cluster O(fsid) (RV(osd_id), RV(osd_uuid));
    C(foreign_osd) - an OSD of another cluster; C(in_use) - anything else found (RV(evidence)).
  - With O(zap), a C(foreign_osd) or C(in_use) device is wiped (C(wipefs -a) and the first 10 MiB
    zeroed; with O(method=lvm) or an LVM OSD, C(ceph-volume lvm zap --destroy)). An OSD of this
    cluster is never zapped (remove it from the cluster first with C(ceph osd purge)); a mounted device
    is refused.
  - The label's C(osd_key) is never read into the result.
  - Without O(zap) it only reads; check mode never wipes (it reports the change).
options:
  device:
    description: The device path; prefer C(/dev/disk/by-id/...) names, which survive renumbering.
    type: path
    required: true
  fsid:
    description: This cluster's fsid (C(ceph_fsid)).
    type: str
    required: true
  method:
    description: How the OSD is (to be) built; C(lvm) zaps with ceph-volume.
    type: str
    choices: [raw, lvm]
    default: raw
  zap:
    description: Wipe a C(foreign_osd) or C(in_use) device (it is listed in C(ceph_osd_zap_devices)).
    type: bool
    default: false
author:
  - ClusterForge
"""

EXAMPLES = r"""
- name: Inspect the OSD device
  clusterforge.cluster.ceph_osd_device:
    device: /dev/disk/by-id/nvme-SAMSUNG_MZ1L21T9_S6XXXX
    fsid: "{{ ceph_fsid }}"
  register: osd_device

- name: Wipe a device explicitly listed for zapping
  clusterforge.cluster.ceph_osd_device:
    device: /dev/vdb
    fsid: "{{ ceph_fsid }}"
    zap: true
"""

RETURN = r"""
state:
  description: C(empty), C(osd), C(foreign_osd) or C(in_use) (after a zap, the state found after it).
  returned: always
  type: str
previous_state:
  description: The state before a zap (same as RV(state) without one).
  returned: always
  type: str
osd_id:
  description: The OSD id of a BlueStore label or LVM OSD, else null.
  returned: always
  type: int
osd_uuid:
  description: The OSD's uuid (C(osd_uuid) / C(ceph.osd_fsid)), else null.
  returned: always
  type: str
ceph_fsid:
  description: The cluster fsid of the label found, else null.
  returned: always
  type: str
evidence:
  description: What was found on the device.
  returned: always
  type: list
  elements: str
real_path:
  description: The device node the path resolves to.
  returned: always
  type: str
zapped:
  description: The device was (or in check mode would be) wiped.
  returned: always
  type: bool
"""

import os
import stat

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore import ceph

ZERO_BYTES = 10 * 1024 * 1024


def _run(module, args, tool):
    path = module.get_bin_path(tool)
    if path is None:
        return None, "", ""
    return module.run_command([path, *args])


def inspect(module, device, fsid, warnings):
    real = os.path.realpath(device)
    try:
        st = os.stat(real)
    except OSError as exc:
        module.fail_json(msg=f"device {device} of ceph_osd_devices: {exc} (fix: list existing devices)")
    if not stat.S_ISBLK(st.st_mode):
        module.fail_json(msg=f"{device} of ceph_osd_devices is not a block device (fix: list a disk)")
    name = ceph.sysfs_block_name(os.major(st.st_rdev), os.minor(st.st_rdev))
    paths = {device, real}
    partitions, holders = [], []
    if name:
        paths.add(f"/dev/{name}")
        partitions, holders = ceph.sysfs_partitions_and_holders(name)
    else:
        warnings.append(f"{device}: not found in /sys/class/block; partitions and holders not checked")

    rc, blkid_out, blkid_err = _run(module, ["-p", "-o", "export", real], "blkid")
    if rc not in (0, 2):  # 2: nothing found
        module.fail_json(msg=f"blkid -p {real} failed (rc {rc}): {blkid_err.strip()}")
    try:
        with open("/proc/self/mounts") as handle:
            mounts = handle.read()
    except OSError:
        mounts = ""
    rc, pvs_out, pvs_err = _run(module, ["--noheadings", "-o", "pv_name,vg_name"], "pvs")
    if rc not in (None, 0):
        warnings.append(f"pvs failed (rc {rc}): {pvs_err.strip()}")
        pvs_out = ""
    rc, label_out, _err = _run(module, ["show-label", "--dev", real], "ceph-bluestore-tool")
    label_out = label_out if rc == 0 else ""
    lvm_out = ""
    if ceph.pvs_of(pvs_out, paths):
        rc, lvm_out, _err = _run(module, ["lvm", "list", "--format", "json"], "ceph-volume")
        lvm_out = lvm_out if rc == 0 else ""
    result = ceph.inspect_device(
        device,
        fsid,
        paths=sorted(paths),
        blkid_text=blkid_out,
        partitions=partitions,
        holders=holders,
        mounts_text=mounts,
        pvs_text=pvs_out,
        label_text=label_out,
        lvm_list_json=lvm_out,
    )
    result["real_path"] = real
    return result


def zap(module, found, real, method):
    if method == "lvm" or any(e.startswith(("ceph-volume LVM", "LVM physical")) for e in found["evidence"]):
        rc, _out, err = _run(module, ["lvm", "zap", "--destroy", real], "ceph-volume")
        if rc is None:
            module.fail_json(msg=f"zap of {real} needs ceph-volume (package ceph-osd): install it first")
        if rc != 0:
            module.fail_json(msg=f"ceph-volume lvm zap --destroy {real} failed (rc {rc}): {err.strip()}")
        return
    rc, _out, err = _run(module, ["-a", real], "wipefs")
    if rc is None or rc != 0:
        module.fail_json(msg=f"wipefs -a {real} failed (rc {rc}): {err.strip() if err else 'no wipefs'}")
    try:
        with open(real, "r+b", buffering=0) as handle:
            block = b"\0" * (1024 * 1024)
            for _ in range(ZERO_BYTES // len(block)):
                handle.write(block)
            os.fsync(handle.fileno())
    except OSError as exc:
        module.fail_json(msg=f"zeroing the first 10 MiB of {real} failed: {exc}")


def main():
    module = AnsibleModule(
        argument_spec=dict(
            device=dict(type="path", required=True),
            fsid=dict(type="str", required=True),
            method=dict(type="str", choices=["raw", "lvm"], default="raw"),
            zap=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    device, fsid = module.params["device"], module.params["fsid"]
    warnings = []
    found = inspect(module, device, fsid, warnings)
    previous = found["state"]
    zapped = False
    if module.params["zap"] and previous in ("foreign_osd", "in_use"):
        mounted = [e for e in found["evidence"] if " mounted on " in e]
        if mounted:
            module.fail_json(
                msg=f"{device} is mounted ({'; '.join(mounted)}): unmount it before zapping",
                **found,
            )
        zapped = True
        if not module.check_mode:
            zap(module, found, found["real_path"], module.params["method"])
            found = inspect(module, device, fsid, warnings)
    for warning in warnings:
        module.warn(warning)
    module.exit_json(changed=zapped, previous_state=previous, zapped=zapped, **found)


if __name__ == "__main__":
    main()
