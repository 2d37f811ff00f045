#!/usr/bin/python
"""Ansible module: the Huawei Ascend driver, firmware and CANN toolkit installed on a node (ClusterForge)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: ascend_driver_state
short_description: Read the installed Ascend driver and firmware, the NPU boards' compatibility and DKMS
description:
  - Reads C(<install_path>/driver/version.info) and C(<install_path>/firmware/version.info) (C(Version=)),
    lists the cards with C(npu-smi info -l) (else the C(npu-smi info) table), reads
    C(npu-smi info -t board -i <id>) of every card (Software Version, Firmware Version, Compatibility),
    and C(dkms status) for the running kernel (not in a container, which shares the host's kernel).
  - Reports C(reboot_required) while the reboot marker the role writes after an install holds the current
    boot id, or while a card still runs another driver than the installed one.
  - With C(cann_install_path), also reads the CANN toolkit's C(ascend_toolkit_install.info) under
    C(<prefix>/cann) (CANN 8.5 and later) or C(<prefix>/ascend-toolkit/latest) (before 8.5).
  - Only reads, except C(fact_file) (the local fact, written when its content differs; never in check mode).
options:
  install_path:
    description: The HDK prefix (the driver's and firmware's install path).
    type: path
    default: /usr/local/Ascend
  driver_version:
    description: The BOM's C(ascend_driver_version); a reason when the installed driver differs.
    type: str
  firmware_version:
    description:
      - The BOM's C(ascend_firmware_version); a reason when the installed firmware differs (not on VMs).
    type: str
  in_container:
    description: The node is a container; DKMS and reboots do not apply to it (said in the reasons).
    type: bool
    default: false
  virtual_machine:
    description: The node is a virtual machine; its firmware is the host's business and not judged.
    type: bool
    default: false
  kernel:
    description: The running kernel (C(ansible_facts.kernel)); default C(uname -r).
    type: str
  read_boards:
    description: Run npu-smi (false before any driver exists, e.g. in check mode of a fresh node).
    type: bool
    default: true
  npu_smi_path:
    description: The npu-smi binary; default the one on PATH or C(/usr/local/bin/npu-smi).
    type: path
  dkms_module_pattern:
    description: Regular expression of the Ascend driver's DKMS module names.
    type: str
    default: "(?i)ascend|davinci|npu|drv_"
  reboot_marker:
    description:
      - JSON C({"boot_id", "reason"}) the role writes after an install.
      - A reboot is due while its boot id is the current one.
    type: path
    default: /var/lib/clusterforge/reboot-required.d/ascend_driver.json
  cann_install_path:
    description: Also read the CANN toolkit installed under this prefix (role cann).
    type: path
  arch:
    description: The CPU architecture for the CANN paths (C(ansible_facts.architecture)); default C(uname -m).
    type: str
  fact_file:
    description:
      - Write the local fact here (installed, firmware, compatible, reboot_required, reasons, fix, ...).
    type: path
  fact_extra:
    description: Extra keys merged into the fact file.
    type: dict
    default: {}
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
author:
  - ClusterForge
"""

EXAMPLES = r"""
- name: Read the installed Ascend driver, firmware and the boards
  clusterforge.cluster.ascend_driver_state:
    driver_version: "{{ ascend_driver_version }}"
    firmware_version: "{{ ascend_firmware_version }}"
    kernel: "{{ ansible_facts.kernel }}"
  register: ascend_state

- name: Stop on an incompatible driver/firmware pair
  ansible.builtin.fail:
    msg: "{{ ascend_state.reasons | join('; ') }}: {{ ascend_state.fix }}"
  when: ascend_state.compatible is false
"""

RETURN = r"""
installed:
  description: The installed driver's version (driver/version.info C(Version=)), or null.
  type: str
  returned: always
  sample: 25.2.0
firmware:
  description: The installed firmware's version (firmware/version.info), or null.
  type: str
  returned: always
  sample: 7.7.0.6.236
driver_info:
  description: Every key of the driver's version.info.
  type: dict
  returned: always
npus:
  description: Card ids npu-smi lists.
  type: list
  elements: int
  returned: always
boards:
  description: Each card's board view (npu_id, software_version, firmware_version, compatibility, ...).
  type: list
  elements: dict
  returned: always
compatible:
  description: Every card says Compatibility OK (null when no card could be read).
  type: bool
  returned: always
versions_match:
  description: Every card runs the installed driver and firmware (null when no card could be read).
  type: bool
  returned: always
npu_smi_error:
  description: Why the boards could not be read, or null.
  type: str
  returned: always
dkms:
  description: C({checked, built, reason, modules}) for the running kernel.
  type: dict
  returned: always
reboot_required:
  description: A reboot is due to run the installed driver/firmware.
  type: bool
  returned: always
reasons:
  description: What differs from the BOM or is not right, in words.
  type: list
  elements: str
  returned: always
fix:
  description: What to do; empty when nothing.
  type: str
  returned: always
cann:
  description:
    - The installed CANN toolkit, C({version, home, install_info, set_env, uninstall_script, nnal}), or null.
  type: dict
  returned: always
"""

import json
import os
import re

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore import ascend_packages as ap
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.parsers import ascend as npu_parsers
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.parsers import ascend_board as board
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.parsers.common import ParseError

_LIMIT = 1024 * 1024
BOOT_ID = "/proc/sys/kernel/random/boot_id"


def read_small(path):
    """A small regular file's text, or None when absent."""
    try:
        if not os.path.isfile(path):
            return None
        with open(path, errors="replace") as handle:
            return handle.read(_LIMIT)
    except OSError:
        return None


def version_info(path):
    text = read_small(path)
    if text is None:
        return None, {}
    parsed = board.parse_version_info(text)
    return parsed["version"], parsed["fields"]


def read_cards(run, npu_smi):
    """(ids, boards, error) from npu-smi; `run(argv) -> (rc, out, err)`."""
    rc, out, err = run([npu_smi, "info", "-l"])
    ids = None
    if rc == 0:
        try:
            ids = [npu["npu_id"] for npu in board.parse_npu_smi_list(out)["npus"]]
        except ParseError:
            ids = None
    if ids is None:  # older npu-smi or a replay without -l: the table lists the cards too
        rc, out, err = run([npu_smi, "info"])
        if rc != 0:
            return [], [], f"npu-smi info failed (rc {rc}): {(err or out).strip()[:300]}"
        try:
            ids = sorted({npu["npu_id"] for npu in npu_parsers.parse_npu_smi_info(out)["npus"]})
        except ParseError as exc:
            return [], [], f"npu-smi info: {exc}"
    boards = []
    for npu_id in ids:
        rc, out, err = run([npu_smi, "info", "-t", "board", "-i", str(npu_id)])
        if rc != 0:
            return (
                ids,
                boards,
                f"npu-smi info -t board -i {npu_id} failed (rc {rc}): {(err or out).strip()[:300]}",
            )
        try:
            parsed = npu_parsers.parse_npu_smi_board(out)
        except ParseError as exc:
            return ids, boards, f"npu-smi info -t board -i {npu_id}: {exc}"
        parsed.pop("fields", None)
        boards.append(parsed)
    return ids, boards, None


def marker_reason(path, boot_id):
    """The marker's reason while it was written in this boot, else None."""
    text = read_small(path)
    if not text:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return f"the reboot marker {path} is not JSON: reboot to be sure"
    if isinstance(data, dict) and boot_id and data.get("boot_id") == boot_id:
        return str(data.get("reason") or "the Ascend driver or firmware was installed since boot")
    return None


def cann_state(prefix, arch):
    """The installed CANN toolkit under `prefix`: the new layout (<prefix>/cann) first, then the old one."""
    arch = ap.normalize_arch(arch)
    prefix = prefix.rstrip("/") or "/"
    for home, set_env in (
        (f"{prefix}/cann", f"{prefix}/cann/set_env.sh"),
        (f"{prefix}/ascend-toolkit/latest", f"{prefix}/ascend-toolkit/set_env.sh"),
    ):
        info = f"{home}/{arch}-linux/ascend_toolkit_install.info"
        text = read_small(info)
        if text is None:
            continue
        return {
            "version": ap.installed_info_version(text),
            "home": home,
            "install_info": info,
            "set_env": set_env,
            "uninstall_script": f"{home}/{arch}-linux/script/uninstall.sh",
            "nnal": os.path.isfile(f"{prefix}/nnal/atb/set_env.sh"),
        }
    return {
        "version": None,
        "home": None,
        "install_info": None,
        "set_env": None,
        "uninstall_script": None,
        "nnal": os.path.isfile(f"{prefix}/nnal/atb/set_env.sh"),
    }


def state(params, run, npu_smi, dkms_bin, boot_id):
    """The module's result from what it read (apart from AnsibleModule for the unit tests)."""
    prefix = params["install_path"].rstrip("/") or "/"
    installed, driver_fields = version_info(f"{prefix}/driver/version.info")
    firmware, firmware_fields = version_info(f"{prefix}/firmware/version.info")
    want_driver, want_firmware = params.get("driver_version"), params.get("firmware_version")
    in_container, vm = params["in_container"], params["virtual_machine"]
    reasons, fixes = [], []
    if installed is None:
        reasons.append(f"no Ascend driver is installed ({prefix}/driver/version.info is absent)")
        fixes.append("run role ascend_driver")
    elif want_driver and installed.lower() != want_driver.lower():
        reasons.append(f"installed driver {installed} is not the BOM's ascend_driver_version {want_driver}")
        fixes.append("run role ascend_driver (it upgrades firmware, then driver)")
    if vm:
        pass  # a VM's firmware is flashed from its physical host
    elif firmware is None and installed is not None:
        reasons.append(f"no Ascend firmware is installed ({prefix}/firmware/version.info is absent)")
        fixes.append("run role ascend_driver on the physical host")
    elif firmware and want_firmware and firmware.lower() != want_firmware.lower():
        reasons.append(
            f"installed firmware {firmware} is not the BOM's ascend_firmware_version {want_firmware}"
        )
        fixes.append("run role ascend_driver (it upgrades firmware, then driver)")

    ids, boards, npu_error = [], [], None
    if not params["read_boards"]:
        npu_error = "npu-smi not run (read_boards: false)"
    elif npu_smi is None:
        npu_error = "npu-smi is not installed (the driver package installs /usr/local/bin/npu-smi)"
    else:
        ids, boards, npu_error = read_cards(run, npu_smi)
    verdict = board.board_verdict(boards, installed, firmware, check_firmware=not vm)
    if npu_error:
        verdict = {"compatible": None, "versions_match": None, "reasons": [npu_error]}
    reasons += verdict["reasons"] if (installed is not None or not npu_error) else []
    if verdict["compatible"] is False:
        fixes.append(
            "install driver and firmware of the same Ascend HDK release (ascend_driver_version, "
            "ascend_firmware_version) and reboot"
        )

    kernel = params.get("kernel") or os.uname().release
    if in_container:
        dkms = {
            "checked": False,
            "built": None,
            "modules": [],
            "reason": f"not checked: this node is a container, which runs the host's kernel {kernel}",
        }
    elif dkms_bin is None:
        dkms = {
            "checked": False,
            "built": None,
            "modules": [],
            "reason": f"dkms is not installed: the driver built against /lib/modules/{kernel}/build, "
            "and a kernel update will not rebuild it",
        }
    else:
        rc, out, err = run([dkms_bin, "status"])
        if rc != 0:
            dkms = {
                "checked": True,
                "built": False,
                "modules": [],
                "reason": f"dkms status failed: {err.strip()}",
            }
        else:
            dkms = {
                "checked": True,
                **board.dkms_verdict(board.parse_dkms_status(out), kernel, params["dkms_module_pattern"]),
            }
        if installed is not None and not dkms["built"]:
            reasons.append(dkms["reason"])
            fixes.append(
                f"install the headers of {kernel} and dkms, then reinstall the driver "
                "(or run dkms autoinstall)"
            )

    reboot_reasons = []
    if not in_container:
        marked = marker_reason(params["reboot_marker"], boot_id)
        if marked:
            reboot_reasons.append(marked)
        if verdict["versions_match"] is False:
            reboot_reasons.append("an NPU still runs another driver or firmware than the installed one")
    reboot_required = bool(reboot_reasons)
    if reboot_required:
        reasons += [f"reboot required: {why}" for why in reboot_reasons]
        fixes.append(
            "drain the node and reboot it (the role reboots only with ascend_driver_allow_reboot: true)"
        )
    elif in_container and installed is not None:
        reasons.append(
            "this node is a container: it shares the host's kernel and NPUs, so no reboot applies here"
        )

    cann = None
    if params.get("cann_install_path"):
        cann = cann_state(params["cann_install_path"], params.get("arch") or os.uname().machine)
    return {
        "changed": False,
        "installed": installed,
        "firmware": firmware,
        "driver_info": driver_fields,
        "firmware_info": firmware_fields,
        "npus": ids,
        "boards": boards,
        "compatible": verdict["compatible"],
        "versions_match": verdict["versions_match"],
        "npu_smi_error": npu_error,
        "dkms": dkms,
        "reboot_required": reboot_required,
        "reasons": reasons,
        "fix": "; ".join(dict.fromkeys(fixes)),
        "cann": cann,
    }


def fact_content(result, extra):
    fact = {
        key: result[key]
        for key in ("installed", "firmware", "compatible", "reboot_required", "reasons", "fix", "npus")
    }
    fact["dkms_built"] = result["dkms"]["built"]
    fact.update(extra or {})
    return json.dumps(fact, indent=4, sort_keys=True) + "\n"


def write_fact(module, path, content):
    """Write the fact file when it differs; (changed)."""
    if read_small(path) == content:
        return False
    if module.check_mode:
        return True
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        os.makedirs(directory, 0o755)
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w") as handle:
        handle.write(content)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)
    return True


def main():
    module = AnsibleModule(
        argument_spec=dict(
            install_path=dict(type="path", default=ap.DEFAULT_PREFIX),
            driver_version=dict(type="str"),
            firmware_version=dict(type="str"),
            in_container=dict(type="bool", default=False),
            virtual_machine=dict(type="bool", default=False),
            kernel=dict(type="str"),
            read_boards=dict(type="bool", default=True),
            npu_smi_path=dict(type="path"),
            dkms_module_pattern=dict(type="str", default="(?i)ascend|davinci|npu|drv_"),
            reboot_marker=dict(
                type="path", default="/var/lib/clusterforge/reboot-required.d/ascend_driver.json"
            ),
            cann_install_path=dict(type="path"),
            arch=dict(type="str"),
            fact_file=dict(type="path"),
            fact_extra=dict(type="dict", default={}),
        ),
        supports_check_mode=True,
    )
    params = module.params
    try:
        re.compile(params["dkms_module_pattern"])
    except re.error as exc:
        module.fail_json(msg=f"dkms_module_pattern is not a regular expression: {exc}")
    npu_smi = params.get("npu_smi_path") or module.get_bin_path("npu-smi", opt_dirs=["/usr/local/bin"])
    if npu_smi and not os.path.isfile(npu_smi):
        npu_smi = None
    dkms_bin = module.get_bin_path("dkms")

    def run(argv):
        return module.run_command(argv)

    try:
        result = state(params, run, npu_smi, dkms_bin, (read_small(BOOT_ID) or "").strip())
    except ap.InputError as exc:
        module.fail_json(msg=str(exc))
    if params.get("fact_file"):
        result["changed"] = write_fact(
            module, params["fact_file"], fact_content(result, params["fact_extra"])
        )
    module.exit_json(**result)


if __name__ == "__main__":
    main()
