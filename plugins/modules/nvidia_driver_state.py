#!/usr/bin/python
"""Ansible module: the NVIDIA driver installed on a node against the one loaded (ClusterForge)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: nvidia_driver_state
short_description: Compare the installed NVIDIA driver userspace with the loaded kernel module
description:
  - Reads the version of the loaded kernel module from C(/proc/driver/nvidia/version) (absent when
    no module is loaded) and the installed userspace version from C(libnvidia-ml.so.<version>)
    in the library directories, else from the package manager's installed driver packages.
  - A loaded module that differs from the installed userspace is the NVML "Driver/library version
    mismatch" state (typically after an upgrade of the packages while the old module stays
    loaded). It is reported as C(mismatch) with C(reboot_required) and the fix.
  - Also lists the installed driver and fabric manager packages with their versions and which of
    them are held (dpkg), for the roles' pin/hold/branch-change logic.
  - Only reads; check mode runs it fully and it never reports a change.
options:
  driver_version:
    description: The version the node should run (the BOM's C(nvidia_driver_version)); adds a reason when the
      installed userspace differs.
    type: str
  in_container:
    description: The node is a container (it shares the host's kernel), so no module can be built or loaded
      here; the reasons say so instead of calling it a fault.
    type: bool
    default: false
  proc_version_path:
    description: Where the loaded module reports its version.
    type: path
    default: /proc/driver/nvidia/version
  sysfs_root:
    description: Root under which C(sys/bus/pci/devices) is read to count NVIDIA GPUs on the bus.
    type: path
    default: /
  library_dirs:
    description: Directories searched for C(libnvidia-ml.so.<version>).
    type: list
    elements: path
    default: [/usr/lib/x86_64-linux-gnu, /usr/lib/aarch64-linux-gnu, /usr/lib64, /usr/lib]
  package_manager:
    description: How installed packages are listed; C(auto) picks dpkg-query or rpm, whichever exists.
    type: str
    choices: [auto, dpkg, rpm, none]
    default: auto
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
author:
  - ClusterForge
"""

EXAMPLES = r"""
- name: Compare the installed driver with the loaded module
  clusterforge.cluster.nvidia_driver_state:
    driver_version: "{{ nvidia_driver_version }}"
    in_container: "{{ ansible_facts.virtualization_role | default('') == 'guest' }}"
  register: driver_state

- name: Stop on a driver/library mismatch
  ansible.builtin.fail:
    msg: "{{ driver_state.reasons | join('; ') }}: {{ driver_state.fix }}"
  when: driver_state.mismatch
"""

RETURN = r"""
installed:
  description: Installed userspace version, or null when none is installed.
  type: str
  returned: always
  sample: 570.133.20
installed_source:
  description: Where C(installed) was read (the libnvidia-ml file or "packages"), or null.
  type: str
  returned: always
loaded:
  description: Version of the loaded kernel module, or null when none is loaded.
  type: str
  returned: always
  sample: 570.133.20
loaded_flavour:
  description: open or proprietary (the loaded module's banner), or null.
  type: str
  returned: always
mismatch:
  description: A module is loaded and differs from the installed userspace.
  type: bool
  returned: always
reboot_required:
  description: The node needs a reboot (or a module reload) to run the installed driver.
  type: bool
  returned: always
reasons:
  description: Why, in words (also why nothing is loaded, e.g. in a container or without a GPU).
  type: list
  elements: str
  returned: always
fix:
  description: What to do about a mismatch or a module that is not loaded; empty when nothing.
  type: str
  returned: always
packages:
  description: Installed driver packages, name to version.
  type: dict
  returned: always
fabricmanager_packages:
  description: Installed fabric manager and NSCQ packages, name to version.
  type: dict
  returned: always
held:
  description: Installed packages (driver and fabric manager) on hold (dpkg); empty with rpm.
  type: list
  elements: str
  returned: always
gpus_on_bus:
  description: NVIDIA display/3D controllers on the PCI bus.
  type: int
  returned: always
"""

import glob
import os
import re
from collections import Counter

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore import nvidia_packages as nv

_LIBNVML = re.compile(r"^libnvidia-ml\.so\.([0-9]{3}\.[0-9]+(?:\.[0-9]+)?)$")
_DRIVER_LIKE = re.compile(r"^(?:[0-9]+:)?([0-9]{3}\.[0-9]+(?:\.[0-9]+)?)(?:-|$)")
_PROC_LIMIT = 64 * 1024


def read_loaded(path):
    """(version, flavour) of the loaded module; (None, None) when the file is absent."""
    try:
        with open(path, errors="replace") as handle:
            return nv.loaded_module(handle.read(_PROC_LIMIT))
    except FileNotFoundError:
        return None, None


def library_version(library_dirs):
    """(version, path) of the newest libnvidia-ml.so.<version> found, or (None, None)."""
    found = []
    for directory in library_dirs:
        for path in glob.glob(os.path.join(directory, "libnvidia-ml.so.*")):
            match = _LIBNVML.match(os.path.basename(path))
            if match:
                found.append((tuple(int(p) for p in match.group(1).split(".")), match.group(1), path))
    if not found:
        return None, None
    _, version, path = max(found)
    return version, path


def packages_version(packages):
    """The driver version most installed driver packages carry, or None."""
    versions = Counter()
    for version in packages.values():
        match = _DRIVER_LIKE.match(version)
        if match:
            versions[match.group(1)] += 1
    return versions.most_common(1)[0][0] if versions else None


def gpus_on_bus(sysfs_root):
    count = 0
    for device in glob.glob(os.path.join(sysfs_root, "sys/bus/pci/devices/*")):
        try:
            with open(os.path.join(device, "vendor")) as handle:
                vendor = handle.read().strip()
            with open(os.path.join(device, "class")) as handle:
                klass = handle.read().strip()
        except OSError:
            continue
        if vendor == "0x10de" and klass.startswith("0x03"):
            count += 1
    return count


def parse_dpkg(text):
    """dpkg-query lines (package, version, status; tab-separated) -> ({name: version}, held names)."""
    installed, held = {}, []
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) != 3:
            continue
        name, version, status = parts
        words = status.split()
        if len(words) == 3 and words[2] in ("installed", "half-configured", "unpacked"):
            installed[name] = version
            if words[0] == "hold":
                held.append(name)
    return installed, sorted(held)


def parse_rpm(text):
    installed = {}
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) == 2:
            installed[parts[0]] = parts[1]
    return installed


def list_packages(module, manager):
    if manager == "auto":
        manager = (
            "dpkg" if module.get_bin_path("dpkg-query") else "rpm" if module.get_bin_path("rpm") else "none"
        )
    if manager == "none":
        return {}, []
    if manager == "dpkg":
        argv = [
            module.get_bin_path("dpkg-query", required=True),
            "-W",
            "-f",
            "${Package}\t${Version}\t${Status}\n",
        ]
        rc, out, err = module.run_command(argv)
        if rc != 0:
            module.fail_json(msg=f"dpkg-query failed (rc {rc}): {err.strip()}")
        return parse_dpkg(out)
    argv = [module.get_bin_path("rpm", required=True), "-qa", "--qf", "%{NAME}\t%{VERSION}-%{RELEASE}\n"]
    rc, out, err = module.run_command(argv)
    if rc != 0:
        module.fail_json(msg=f"rpm -qa failed (rc {rc}): {err.strip()}")
    return parse_rpm(out), []


def state(params, all_packages, held):
    """The module's result from what it read (separate from AnsibleModule for the unit tests)."""
    driver = {n: v for n, v in all_packages.items() if nv.is_driver_package(n)}
    fabric = {n: v for n, v in all_packages.items() if nv.is_fabricmanager_package(n)}
    installed, source = library_version(params["library_dirs"])
    if installed is None:
        installed = packages_version(driver)
        source = "packages" if installed else None
    loaded, flavour = read_loaded(params["proc_version_path"])
    gpus = gpus_on_bus(params["sysfs_root"])
    verdict = nv.driver_state(installed, loaded, params.get("driver_version"), params["in_container"], gpus)
    return dict(
        changed=False,
        installed=installed,
        installed_source=source,
        loaded=loaded,
        loaded_flavour=flavour,
        packages=driver,
        fabricmanager_packages=fabric,
        held=[n for n in held if n in driver or n in fabric],
        gpus_on_bus=gpus,
        **verdict,
    )


def main():
    module = AnsibleModule(
        argument_spec=dict(
            driver_version=dict(type="str"),
            in_container=dict(type="bool", default=False),
            proc_version_path=dict(type="path", default="/proc/driver/nvidia/version"),
            sysfs_root=dict(type="path", default="/"),
            library_dirs=dict(
                type="list",
                elements="path",
                default=["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib"],
            ),
            package_manager=dict(type="str", choices=["auto", "dpkg", "rpm", "none"], default="auto"),
        ),
        supports_check_mode=True,
    )
    packages, held = list_packages(module, module.params["package_manager"])
    module.exit_json(**state(module.params, packages, held))


if __name__ == "__main__":
    main()
