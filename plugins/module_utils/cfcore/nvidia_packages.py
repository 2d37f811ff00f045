"""NVIDIA driver packaging rules: package names by branch, kernel-module flavour, pins and holds.

One implementation, used by the filter plugins/filter/nvidia_driver.py (roles nvidia_driver and
nvidia_fabricmanager), the module plugins/modules/nvidia_driver_state.py and the unit tests
(tests/unit/nvidia/). Facts and their sources: ../shared/notes/vendor-packaging.md sections 1-2.

- CUDA repository, apt: up to branch 580 the driver packages carry the branch in their names
  (`nvidia-open-570`, `cuda-drivers-570`, compute-only `libnvidia-compute-570` +
  `nvidia-dkms-570-open` + `nvidia-compute-utils-570`); from 590 the names are unversioned and
  `nvidia-driver-pinning-<version>` is installed first to lock the branch.
- Fabric manager and NSCQ: branch-named up to 575 (`nvidia-fabricmanager-570`,
  `libnvidia-nscq-570`), unversioned from 580 (`nvidia-fabricmanager`, `libnvidia-nscq`).
- Kernel modules: open from branch 560 by default, proprietary before; a SKU may require one.
- RHEL 8/9: DNF module streams `nvidia-driver:<br>-open` / `<br>-dkms`; RHEL 10: versionlock.

Stdlib only, Python 3.8: runs inside Ansible modules on the nodes.
"""

from __future__ import annotations

import re

from .inputs import InputError

# The first branch of each packaging convention.
OPEN_MODULES_FROM = 515  # first branch with the open GPU kernel modules
OPEN_DEFAULT_FROM = 560  # open modules are the installer's default
UNVERSIONED_DRIVER_FROM = 590  # driver package names lose the branch; pinning packages appear
UNVERSIONED_FABRICMANAGER_FROM = 580  # fabric manager / nscq names lose the branch
CUDA13_FROM = 580  # the driver serves CUDA 13 from this branch on
CUDA12_FROM = 525

FLAVOURS = ("open", "proprietary")
METHODS = ("cuda_repo", "distro", "runfile")

_DRIVER_VERSION = re.compile(r"[0-9]{3}\.[0-9]{1,3}(\.[0-9]{1,3})?")

# Driver packages of the CUDA repository that carry no branch from 590 on. A branch change
# to one before 590 removes them (the branch-named ones replace them). Includes names of
# the full (desktop) install that the metapackages pull in.
UNVERSIONED_DRIVER_NAMES = (
    "cuda-drivers",
    "libnvidia-cfg1",
    "libnvidia-compute",
    "libnvidia-decode",
    "libnvidia-encode",
    "libnvidia-extra",
    "libnvidia-fbc1",
    "libnvidia-gl",
    "nvidia-compute-utils",
    "nvidia-dkms",
    "nvidia-dkms-open",
    "nvidia-driver",
    "nvidia-driver-open",
    "nvidia-firmware",
    "nvidia-headless",
    "nvidia-headless-no-dkms",
    "nvidia-headless-no-dkms-open",
    "nvidia-headless-open",
    "nvidia-kernel-common",
    "nvidia-kernel-source",
    "nvidia-kernel-source-open",
    "nvidia-open",
    "nvidia-utils",
    "xserver-xorg-video-nvidia",
)

# Names that start like driver packages but belong to other roles (container toolkit,
# fabric manager, CUDA from Debian): never pinned, held, released or removed by the driver.
_NOT_DRIVER = re.compile(
    r"^(nvidia-container|libnvidia-container|nvidia-fabricmanager|nvidia-fabric-manager|libnvidia-nscq"
    r"|libnvsdm|nvidia-imex|nvidia-cuda-|nvidia-peermem-loader|nvidia-persistenced$)"
)
_DRIVER_FAMILY = re.compile(
    r"^(nvidia-|libnvidia-|cuda-drivers|libcuda1|xserver-xorg-video-nvidia|firmware-nvidia-gsp|kmod-nvidia)"
)
_FABRIC_FAMILY = re.compile(
    r"^(nvidia-fabricmanager|nvidia-fabric-manager|libnvidia-nscq)(-[0-9]{3})?(-dev)?$"
)
# A branch inside a package name: nvidia-dkms-570-open, libnvidia-compute-570, cuda-drivers-570.
_BRANCH_IN_NAME = re.compile(r"-([0-9]{3})(?=-|$)")
_PINNING = re.compile(r"^nvidia-driver-pinning-(.+)$")


def parse_driver_version(version, variable="nvidia_driver_version"):
    """(branch, version) of a driver version like "570.133.20"; InputError naming the variable otherwise."""
    text = version if isinstance(version, str) else None
    if text is None or not _DRIVER_VERSION.fullmatch(text):
        raise InputError(
            f"{variable} {version!r} is not an NVIDIA driver version",
            f'set {variable} to the full driver version, quoted, e.g. "570.133.20"',
        )
    return int(text.split(".")[0]), text


def cuda_major(branch):
    """The CUDA major a driver branch serves (13 from 580, 12 from 525, else 11)."""
    if branch >= CUDA13_FROM:
        return 13
    if branch >= CUDA12_FROM:
        return 12
    return 11


def kernel_module_flavour(branch, requested=None, sku_flavour=None, sku_name=None):
    """(flavour, reason): the variable, else what the SKU requires, else open from 560.

    Refuses (InputError) a flavour the SKU or the branch cannot run, naming the SKU and the
    variable, so that the role stops before it changes anything.
    """
    requested = requested or None
    sku_flavour = sku_flavour or "any"
    if requested is not None and requested not in FLAVOURS:
        raise InputError(
            f"nvidia_kernel_module_flavour {requested!r} is not one of open, proprietary",
            "set nvidia_kernel_module_flavour to open or proprietary, or leave it unset",
        )
    if sku_flavour not in (*FLAVOURS, "any"):
        raise InputError(
            f"SKU {sku_name}: accelerator.kernel_module_flavour {sku_flavour!r} is not one of "
            "open, proprietary, any",
            "fix accelerator.kernel_module_flavour in clusterforge_sku_catalog",
        )
    if requested is not None and sku_flavour != "any" and requested != sku_flavour:
        raise InputError(
            f"SKU {sku_name} requires the {sku_flavour} GPU kernel modules, but "
            f"nvidia_kernel_module_flavour is {requested}",
            f"set nvidia_kernel_module_flavour: {sku_flavour} for this host (or unset it)",
        )
    if requested is not None:
        flavour, reason = requested, "nvidia_kernel_module_flavour"
    elif sku_flavour != "any":
        flavour, reason = sku_flavour, f"SKU {sku_name} requires it (accelerator.kernel_module_flavour)"
    elif branch >= OPEN_DEFAULT_FROM:
        flavour, reason = "open", f"default of branch {branch} (open from {OPEN_DEFAULT_FROM})"
    else:
        flavour, reason = "proprietary", f"default of branch {branch} (open only from {OPEN_DEFAULT_FROM})"
    if flavour == "open" and branch < OPEN_MODULES_FROM:
        raise InputError(
            f"branch {branch} has no open GPU kernel modules (they start at {OPEN_MODULES_FROM}); "
            f"the flavour comes from {reason}",
            f"use a driver of branch {OPEN_MODULES_FROM} or later, "
            "or nvidia_kernel_module_flavour: proprietary",
        )
    return flavour, reason


def cuda_repo_apt_packages(branch, version, flavour, compute_only):
    """Packages of the CUDA repository (Debian/Ubuntu): pinning package (or None) and the install list."""
    open_ = flavour == "open"
    if branch < UNVERSIONED_DRIVER_FROM:
        if compute_only:
            dkms = f"nvidia-dkms-{branch}-open" if open_ else f"nvidia-dkms-{branch}"
            install = [f"libnvidia-compute-{branch}", dkms, f"nvidia-compute-utils-{branch}"]
        else:
            install = [f"nvidia-open-{branch}" if open_ else f"cuda-drivers-{branch}"]
        return None, install
    if compute_only:
        install = [
            "libnvidia-compute",
            "nvidia-dkms-open" if open_ else "nvidia-dkms",
            "nvidia-compute-utils",
        ]
    else:
        install = ["nvidia-open" if open_ else "cuda-drivers"]
    return f"nvidia-driver-pinning-{version}", install


def cuda_repo_apt_pin_patterns(branch):
    """Package patterns of our apt preferences file (Pin: version <version>-*)."""
    if branch < UNVERSIONED_DRIVER_FROM:
        return [
            f"nvidia-*-{branch}",
            f"nvidia-*-{branch}-*",
            f"libnvidia-*-{branch}",
            f"cuda-drivers-{branch}",
        ]
    return list(UNVERSIONED_DRIVER_NAMES)


def distro_apt_packages(flavour, compute_only, distribution="Debian", branch=None):
    """The distribution's own packages: Debian non-free (Debian 12: 535.x) or Canonical's archive.

    Debian 12 has no compute-only metapackage: compute is libcuda1 + nvidia-smi (NVML) +
    nvidia-persistenced, and the module comes through DKMS: nvidia-kernel-dkms (proprietary,
    non-free) or nvidia-open-kernel-dkms (contrib). Ubuntu: the -server (datacenter) builds,
    nvidia-driver-<br>-server[-open] or, compute-only, nvidia-headless-<br>-server[-open] +
    nvidia-utils-<br>-server.
    """
    open_ = flavour == "open"
    if distribution == "Ubuntu":
        suffix = "-open" if open_ else ""
        if compute_only:
            return [f"nvidia-headless-{branch}-server{suffix}", f"nvidia-utils-{branch}-server"]
        return [f"nvidia-driver-{branch}-server{suffix}"]
    dkms = "nvidia-open-kernel-dkms" if open_ else "nvidia-kernel-dkms"
    base = ["libcuda1", "nvidia-smi", "nvidia-persistenced"] if compute_only else ["nvidia-driver"]
    return [*base, dkms]


def distro_apt_pin_patterns(distribution="Debian", branch=None):
    """Debian: the driver's and the open modules' source packages; Ubuntu: the branch's -server builds."""
    if distribution == "Ubuntu":
        return [
            f"nvidia-*-{branch}-server*",
            f"libnvidia-*-{branch}-server*",
            f"xserver-xorg-video-nvidia-{branch}-server",
        ]
    return ["src:nvidia-graphics-drivers", "src:nvidia-open-gpu-kernel-modules"]


# Packages of the distro method versioned apart from the driver (Debian's nvidia-persistenced is
# 535.171.04 next to a 535.261.03 driver): installed without "=<version>" and never pinned.
DISTRO_UNVERSIONED = ("nvidia-persistenced",)


def dnf_packages(branch, version, flavour, compute_only, major_release):
    """RHEL: (module stream or None, install list, versionlock patterns)."""
    open_ = flavour == "open"
    if compute_only:
        kmod = "kmod-nvidia-open-dkms" if open_ else "kmod-nvidia-latest-dkms"
        install = [f"nvidia-driver-cuda-{version}", f"{kmod}-{version}"]
    else:
        install = [f"nvidia-open-{version}" if open_ else f"cuda-drivers-{version}"]
    stream = None
    if int(major_release) < 10:
        stream = f"nvidia-driver:{branch}-open" if open_ else f"nvidia-driver:{branch}-dkms"
    return stream, install, [f"*nvidia*-{version}*", f"cuda-drivers-{version}*"]


def fabricmanager_packages(branch, version, os_family="Debian"):
    """The fabric manager and NSCQ package names (apt) or name-version specs (dnf)."""
    if os_family == "RedHat":
        fm = "nvidia-fabric-manager" if branch < UNVERSIONED_FABRICMANAGER_FROM else "nvidia-fabricmanager"
        return [f"{fm}-{version}", f"libnvidia-nscq-{version}"]
    if branch < UNVERSIONED_FABRICMANAGER_FROM:
        names = [f"nvidia-fabricmanager-{branch}", f"libnvidia-nscq-{branch}"]
    else:
        names = ["nvidia-fabricmanager", "libnvidia-nscq"]
    return names


def fabricmanager_version(driver_version, fabricmanager_version=None):
    """The fabric manager version: the driver's. Refuses a different one (CUDA error 802)."""
    branch, driver = parse_driver_version(driver_version)
    if fabricmanager_version in (None, ""):
        return branch, driver
    _, fm = parse_driver_version(fabricmanager_version, "nvidia_fabricmanager_version")
    if fm != driver:
        raise InputError(
            f"nvidia_fabricmanager_version {fm} differs from nvidia_driver_version {driver}: fabric manager "
            "refuses to start on another driver version, and CUDA then fails with error 802 "
            "'system not yet initialized'",
            "remove nvidia_fabricmanager_version (it defaults to nvidia_driver_version) or set it equal",
        )
    return branch, fm


def is_driver_package(name):
    return bool(_DRIVER_FAMILY.match(name)) and not _NOT_DRIVER.match(name)


def is_fabricmanager_package(name):
    return bool(_FABRIC_FAMILY.match(name))


def version_matches(installed, version):
    """An installed package version ("570.133.20-1", "1:570.133.20-1.el9") is the driver `version`."""
    bare = installed.split(":", 1)[1] if ":" in installed.split("-", 1)[0] else installed
    return bare == version or bare.startswith(version + "-")


def other_branch_packages(installed, branch, version, family=is_driver_package):
    """Installed packages (name -> version) of the family that the wanted branch replaces (to remove).

    A name carrying another branch (nvidia-dkms-570-open when 590 is wanted), a pinning package of
    another branch or version, and, when a branch before 590 is wanted, the unversioned 590+ names.
    Packages of the wanted branch at another version are upgraded in place, not removed.
    """
    remove = []
    for name, pkg_version in sorted(installed.items()):
        if not family(name) or version_matches(pkg_version, version):
            continue
        pinning = _PINNING.match(name)
        if pinning:
            if pinning.group(1) not in (str(branch), version):
                remove.append(name)
            continue
        in_name = _BRANCH_IN_NAME.search(name)
        if in_name:
            if int(in_name.group(1)) != branch:
                remove.append(name)
        elif family is is_fabricmanager_package:
            if branch < UNVERSIONED_FABRICMANAGER_FROM:
                remove.append(name)
        elif branch < UNVERSIONED_DRIVER_FROM and name in UNVERSIONED_DRIVER_NAMES:
            remove.append(name)
    return remove


def packages_at_version(installed, version, family=is_driver_package):
    """Installed packages of the family at exactly the driver version: the ones to hold."""
    return sorted(name for name, v in installed.items() if family(name) and version_matches(v, version))


def packages_to_release(installed, held, version, family=is_driver_package):
    """Held packages of the family not at the wanted version: their hold is released before the change."""
    return sorted(
        name
        for name in held
        if family(name) and name in installed and not version_matches(installed[name], version)
    )


# /proc/driver/nvidia/version, first line:
#   NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.133.20  Fri Feb 28 ...
#   NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.133.20  Release Build ...
_NVRM = re.compile(r"NVRM version: NVIDIA .*?\b(Open )?Kernel Module\b.*?\s([0-9]{3}\.[0-9]+(?:\.[0-9]+)?)\b")


def loaded_module(text):
    """(version, flavour) of the loaded kernel module from /proc/driver/nvidia/version, or (None, None)."""
    for line in (text or "").splitlines():
        match = _NVRM.search(line)
        if match:
            return match.group(2), "open" if match.group(1) else "proprietary"
    return None, None


def driver_state(installed_version, loaded_version, wanted=None, in_container=False, gpus_on_bus=0):
    """installed vs loaded: {mismatch, reboot_required, reasons, fix} (the rules of nvidia_driver_state)."""
    reasons = []
    fix = ""
    mismatch = bool(installed_version and loaded_version and installed_version != loaded_version)
    reboot = False
    if mismatch:
        reboot = True
        reasons.append(
            f"driver/library version mismatch: kernel module {loaded_version} is loaded, userspace "
            f"{installed_version} is installed (NVML fails with 'Driver/library version mismatch')"
        )
        fix = (
            "drain the node and reboot it (nvidia_driver_allow_reboot: true lets the role do it); or, when "
            "no process uses a GPU (nvidia-smi --query-compute-apps=pid --format=csv,noheader is empty), "
            "stop nvidia-persistenced, nvidia-fabricmanager and nvidia-dcgm, unload the modules "
            "(modprobe -r nvidia_peermem nvidia_uvm nvidia_drm nvidia_modeset nvidia) and load them "
            "again (modprobe nvidia)"
        )
    if wanted and installed_version and installed_version != wanted:
        reasons.append(
            f"installed userspace {installed_version} is not the BOM's nvidia_driver_version {wanted}"
        )
    if not installed_version:
        reasons.append("no NVIDIA driver userspace is installed")
    if not loaded_version:
        if in_container:
            reasons.append(
                "no NVIDIA kernel module is loaded: this node is a container, which shares the host's "
                "kernel, so the module can be neither built nor loaded here"
            )
        elif not gpus_on_bus:
            reasons.append("no NVIDIA kernel module is loaded: no NVIDIA GPU is on this node's PCI bus")
        elif installed_version:
            reasons.append("the NVIDIA kernel module is not loaded although a GPU is present")
            fix = fix or "load it (modprobe nvidia) or reboot; check dmesg and dkms status if it fails"
    return {"mismatch": mismatch, "reboot_required": reboot, "reasons": reasons, "fix": fix}
