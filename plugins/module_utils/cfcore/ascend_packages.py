"""Huawei Ascend packaging rules: which manifest file is which, installer command lines, CANN layout, plan.

One implementation, used by the filter plugins/filter/ascend.py (roles ascend_driver and cann),
the module plugins/modules/ascend_driver_state.py and the unit tests (tests/unit/ascend/).
Facts and their sources: ../shared/notes/vendor-packaging.md section 7; the contract:
docs/design.md, "Ascend NPU stack".

- File names are matched by pattern (`select_package`): chips case-insensitively, the x86
  architecture as both `x86-64` (HDK driver files) and `x86_64` (CANN files). The A3 (910C) HDK
  ships as `Atlas-A3-hdk-npu-{driver,firmware}_...` (seen in Huawei's and users' documents);
  the design's `Ascend-hdk-910c-...` is accepted too.
- Installer command lines (`installer_argv`) refuse the combinations the installers refuse:
  `--upgrade` with the running-user options, `--uninstall` with `--quiet` (driver, firmware),
  `--devel` for firmware, user options for firmware (it reuses the driver's user).
- CANN 8.5 changed the layout (`cann_layout`): the `kernels` package became the required
  `<chip>-ops` package and the toolkit home moved from `<prefix>/ascend-toolkit/latest` to
  `<prefix>/cann` (set_env.sh with it).
- Install order (`driver_plan`): driver then firmware on a fresh node, firmware then driver on an
  upgrade; firmware only on physical hosts (a container is not a virtual machine).

Stdlib only, Python 3.8: runs inside Ansible modules on the nodes.
"""

from __future__ import annotations

import re

from . import versions
from .inputs import InputError
from .virt import is_container, is_virtual_machine  # noqa: F401 (the rules of this module use them)

KINDS = ("driver", "firmware", "toolkit", "ops", "kernels", "nnal", "docker_runtime", "npu_exporter")
CANN_KINDS = ("toolkit", "ops", "kernels", "nnal")
HDK_KINDS = ("driver", "firmware")
ARCHES = ("x86_64", "aarch64")
MANIFEST_VARIABLE = "ascend_packages"
DEFAULT_PREFIX = "/usr/local/Ascend"
# CANN 8.5.0: kernels -> <chip>-ops, ascend-toolkit/latest -> cann, set_env.sh moved.
NEW_LAYOUT_FROM = "8.5.0"

# SKU accelerator model (the catalog's accelerator.model, lower case) -> (HDK chip, CANN ops chip).
CHIPS_BY_MODEL = {
    "910b": ("910b", "910b"),
    "ascend910": ("910c", "A3"),  # the A3 (910C): npu-smi names its dies "Ascend910"
    "910c": ("910c", "A3"),
    "910": ("910", "910"),
    "310p": ("310p", "310p"),
}

_VERSION_LINE = re.compile(r"^\s*version\s*=\s*(\S+)\s*$", re.IGNORECASE | re.MULTILINE)


# --------------------------------------------------------------- packages ----


def _arch_regex(arch):
    """`x86_64` matches `x86-64` and `x86_64`; `aarch64` (also given as `arm64`) matches itself."""
    text = str(arch or "").strip().lower()
    if text in ("x86_64", "x86-64", "amd64"):
        return "x86[-_]64", "x86_64"
    if text in ("aarch64", "arm64"):
        return "aarch64", "aarch64"
    raise InputError(
        f"architecture {arch!r} is not one Huawei ships Ascend packages for (x86_64, aarch64)",
        "run the role on an x86_64 or aarch64 node (ansible_facts.architecture)",
    )


def normalize_arch(arch):
    """`x86_64` or `aarch64` for the spellings the facts and the packages use."""
    return _arch_regex(arch)[1]


def _need(kind, value, what):
    if value is None or str(value).strip() == "":
        raise InputError(
            f"select_package({kind}): the {what} is not set",
            f"pass the {what} the {kind} file name carries",
        )
    return re.escape(str(value).strip())


def package_pattern(kind, version=None, chip=None, arch=None):
    """(compiled regex, human pattern) of a kind's file names (see docs/design.md's table)."""
    if kind not in KINDS:
        raise InputError(
            f"{kind!r} is not an Ascend package kind (known: {', '.join(KINDS)})",
            "use one of the kinds of docs/design.md, 'Ascend NPU stack'",
        )
    ver = _need(kind, version, "version")
    needs_arch = kind != "firmware"
    arch_re, arch_name = _arch_regex(arch) if needs_arch else ("", "")
    if kind in HDK_KINDS:
        chip_re = _need(kind, chip, "chip (ascend_hdk_chip)")
        # The A3 HDK is published as Atlas-A3-hdk-npu-*; the design's Ascend-hdk-910c-* is kept too.
        a3 = str(chip).strip().lower() == "910c"
        prefix = f"(?:Ascend-hdk-{chip_re}|Atlas-A3-hdk)" if a3 else f"Ascend-hdk-{chip_re}"
        shown = "Ascend-hdk-910c|Atlas-A3-hdk" if a3 else f"Ascend-hdk-{chip}"
        if kind == "driver":
            regex = f"{prefix}-npu-driver_{ver}_linux-{arch_re}\\.run"
            human = f"{shown}-npu-driver_{version}_linux-{arch_name}.run"
        else:
            regex = f"{prefix}-npu-firmware_{ver}\\.run"
            human = f"{shown}-npu-firmware_{version}.run"
    elif kind == "toolkit":
        regex = f"Ascend-cann-toolkit_{ver}_linux-{arch_re}\\.run"
        human = f"Ascend-cann-toolkit_{version}_linux-{arch_name}.run"
    elif kind == "ops":
        chip_re = _need(kind, chip, "chip (cann_ops_chip)")
        regex = f"Ascend-cann-{chip_re}-ops_{ver}_linux-{arch_re}\\.run"
        human = f"Ascend-cann-{chip}-ops_{version}_linux-{arch_name}.run"
    elif kind == "kernels":
        chip_re = _need(kind, chip, "chip (cann_ops_chip)")
        # some 8.0.RCx kernels packages carry no architecture: ..._linux.run
        regex = f"Ascend-cann-kernels-{chip_re}_{ver}_linux(?:-{arch_re})?\\.run"
        human = f"Ascend-cann-kernels-{chip}_{version}_linux[-{arch_name}].run"
    elif kind == "nnal":
        regex = f"Ascend-cann-nnal_{ver}_linux-{arch_re}\\.run"
        human = f"Ascend-cann-nnal_{version}_linux-{arch_name}.run"
    elif kind == "docker_runtime":
        regex = f"Ascend-docker-runtime_{ver}_linux-{arch_re}\\.run"
        human = f"Ascend-docker-runtime_{version}_linux-{arch_name}.run"
    else:
        regex = f"Ascend-mindxdl-npu-exporter_{ver}_linux-{arch_re}\\.zip"
        human = f"Ascend-mindxdl-npu-exporter_{version}_linux-{arch_name}.zip"
    return re.compile(regex, re.IGNORECASE), human


# The same kinds with any version, chip and architecture: which manifest names are candidates.
_LOOSE = {
    "driver": r"-npu-driver_",
    "firmware": r"-npu-firmware_",
    "toolkit": r"^Ascend-cann-toolkit_",
    "ops": r"^Ascend-cann-.+-ops_",
    "kernels": r"^Ascend-cann-kernels-",
    "nnal": r"^Ascend-cann-nnal_",
    "docker_runtime": r"^Ascend-docker-runtime_",
    "npu_exporter": r"^Ascend-mindxdl-npu-exporter_",
}


def select_package(kind, names, version=None, chip=None, arch=None):
    """The one manifest file name of `kind` at `version` (for `chip`, `arch`); InputError otherwise.

    `names` is the manifest (`ascend_packages`: file name -> sha256) or a list of file names. The
    error names the variable, the pattern and the candidates (the names of that kind, any version).
    """
    if isinstance(names, (dict, list, tuple)):
        pool = [str(name) for name in names]
    else:
        raise InputError(
            f"{MANIFEST_VARIABLE} must be a mapping of file name to sha256, got {type(names).__name__}",
            f"set {MANIFEST_VARIABLE}: {{<file name>: <sha256>, ...}} (the SHA256SUMS of the package folder)",
        )
    pattern, human = package_pattern(kind, version, chip, arch)
    matches = sorted(name for name in pool if pattern.fullmatch(name))
    if len(matches) == 1:
        return matches[0]
    loose = re.compile(_LOOSE[kind], re.IGNORECASE)
    candidates = sorted(name for name in pool if loose.search(name)) or sorted(pool)
    more = f" (and {len(candidates) - 20} more)" if len(candidates) > 20 else ""
    shown = ", ".join(candidates[:20]) + more
    if not matches:
        raise InputError(
            f"{MANIFEST_VARIABLE}: no file matches the {kind} pattern {human} "
            f"(candidates: {shown or 'the manifest is empty'})",
            f"add the {kind} package of that version to {MANIFEST_VARIABLE} (file name: its sha256) and to "
            "the package source, or correct the version/chip variables",
        )
    raise InputError(
        f"{MANIFEST_VARIABLE}: {len(matches)} files match the {kind} pattern {human}: {', '.join(matches)}",
        f"keep exactly one {kind} file of that version in {MANIFEST_VARIABLE}",
    )


def manifest_sha256(manifest, name):
    """The sha256 (lower case, without a `sha256:` prefix) of a manifest entry; InputError if malformed."""
    value = manifest.get(name) if isinstance(manifest, dict) else None
    text = str(value or "").strip().lower()
    if text.startswith("sha256:"):
        text = text[len("sha256:") :]
    if not re.fullmatch(r"[0-9a-f]{64}", text):
        raise InputError(
            f"{MANIFEST_VARIABLE}[{name!r}] is {value!r}, not a sha256 (64 hex digits)",
            f"set {MANIFEST_VARIABLE}[{name!r}] to the file's sha256 (sha256sum {name})",
        )
    return text


def chips_for_model(model):
    """(HDK chip, CANN ops chip) for the SKU's accelerator model; InputError naming the variables."""
    key = str(model or "").strip().lower()
    if key not in CHIPS_BY_MODEL:
        raise InputError(
            f"no Ascend chip default for the accelerator model {model!r} "
            f"(known: {', '.join(sorted(CHIPS_BY_MODEL))})",
            "set ascend_hdk_chip (e.g. 910b) and cann_ops_chip (e.g. 910b, A3) for these hosts",
        )
    return CHIPS_BY_MODEL[key]


# ------------------------------------------------------------ command lines ----

_MODES = {
    "driver": ("full", "upgrade", "uninstall", "devel", "check"),
    "firmware": ("full", "upgrade", "uninstall", "check"),
    "toolkit": ("install", "full", "upgrade", "uninstall", "check"),
    "ops": ("install", "upgrade", "uninstall", "check"),
    "kernels": ("install", "upgrade", "uninstall", "check"),
    "nnal": ("install", "upgrade", "uninstall", "check"),
    "docker_runtime": ("install", "upgrade", "uninstall"),
}


def installer_argv(
    kind,
    mode,
    user=None,
    group=None,
    for_all=False,
    install_path=None,
    quiet=None,
    install_scene=None,
):
    """The arguments after `bash <file>.run` for one installer step; InputError for a forbidden one.

    Driver: `--nox11 --full --quiet --install-username=U --install-usergroup=G [--install-for-all]`,
    upgrade `--nox11 --upgrade --quiet`. Firmware: `--nox11 --full|--upgrade --quiet`. CANN:
    `--install|--upgrade --quiet --install-path=P [--install-for-all]`. `quiet` None: the default of
    the mode (on, except for uninstalling driver or firmware, where the installers refuse it).
    """
    if kind not in _MODES:
        raise InputError(
            f"{kind!r} has no installer command line (known: {', '.join(_MODES)})",
            "use driver, firmware, toolkit, ops, kernels, nnal or docker_runtime",
        )
    if mode not in _MODES[kind]:
        if kind == "firmware" and mode == "devel":
            raise InputError(
                "the firmware installer has no --devel mode", "install the firmware with --full or --upgrade"
            )
        raise InputError(
            f"{kind} installer mode {mode!r} is not one of {', '.join(_MODES[kind])}",
            f"use one of {', '.join(_MODES[kind])}",
        )
    user_options = bool(user) or bool(group) or bool(for_all)
    if mode in ("upgrade", "uninstall") and user_options:
        raise InputError(
            f"{kind} --{mode} cannot be combined with --install-username, --install-usergroup or "
            "--install-for-all (the installer keeps the user of the first install)",
            "pass the running-user options only to a fresh (--full / --install) install",
        )
    if kind == "firmware" and (user or group):
        raise InputError(
            "the firmware installer takes no --install-username/--install-usergroup (it reuses the driver's)",
            "set the running user on the driver's fresh install only",
        )
    if kind in HDK_KINDS and mode == "uninstall" and quiet:
        raise InputError(
            f"{kind} --uninstall cannot be combined with --quiet (the installer refuses it)",
            f"uninstall the {kind} without --quiet",
        )
    if quiet is None:
        quiet = not (kind in HDK_KINDS and mode == "uninstall")
    argv = []
    if kind in HDK_KINDS:
        argv.append("--nox11")
    argv.append(f"--{mode}")
    if quiet:
        argv.append("--quiet")  # accepts the EULA: no prompt
    if kind == "driver" and mode in ("full", "devel"):
        if not user or not group:
            raise InputError(
                "a fresh driver install needs the running user and group "
                "(ascend_driver_install_user, ascend_driver_install_group)",
                "set both (HwHiAiUser by default); root needs ascend_driver_install_for_all: true too",
            )
        if user == "root" and not for_all:
            raise InputError(
                "the driver's running user root needs --install-for-all",
                "set ascend_driver_install_for_all: true, or use the HwHiAiUser user",
            )
        argv += [f"--install-username={user}", f"--install-usergroup={group}"]
    if (kind in CANN_KINDS or kind == "docker_runtime") and not install_path:
        raise InputError(
            f"the {kind} installer needs the install path (cann_install_path)",
            "set cann_install_path (default /usr/local/Ascend)",
        )
    if kind == "docker_runtime" and mode == "install":
        if not install_scene:
            raise InputError(
                "Ascend Docker Runtime --install needs the install scene (ascend_runtime_install_scene)",
                "set ascend_runtime_install_scene: containerd, docker, crio or isula",
            )
        argv.append(f"--install-scene={install_scene}")
    if install_path and (kind in CANN_KINDS or kind == "docker_runtime" or install_path != DEFAULT_PREFIX):
        argv.append(f"--install-path={install_path}")
    if for_all and mode in ("full", "install", "devel"):
        argv.append("--install-for-all")
    return argv


# ------------------------------------------------------------------- CANN ----


def is_new_layout(version):
    """CANN 8.5.0 or newer: `<chip>-ops` package, home `<prefix>/cann`."""
    return versions.at_least(versions.release_line(str(version)), NEW_LAYOUT_FROM)


def cann_layout(version, prefix=DEFAULT_PREFIX, arch="x86_64"):
    """Where a CANN release lives under `prefix` and which operator package it takes."""
    problem = versions.format_problem("cann_version", version)
    if problem:
        raise InputError(problem, 'set cann_version to the release, quoted, e.g. "8.2.RC1"')
    arch = normalize_arch(arch)
    prefix = str(prefix).rstrip("/") or "/"
    new = is_new_layout(version)
    home = f"{prefix}/cann" if new else f"{prefix}/ascend-toolkit/latest"
    return {
        "version": version,
        "new_layout": new,
        "ops_kind": "ops" if new else "kernels",
        "home": home,
        "set_env": f"{prefix}/cann/set_env.sh" if new else f"{prefix}/ascend-toolkit/set_env.sh",
        "install_info": f"{home}/{arch}-linux/ascend_toolkit_install.info",
        # the toolkit's own uninstall script (Huawei: <home>/<arch>-linux/script/uninstall.sh)
        "uninstall_script": f"{home}/{arch}-linux/script/uninstall.sh",
        "nnal_set_env": f"{prefix}/nnal/atb/set_env.sh",
    }


def installed_info_version(text):
    """The `version=` of an ascend_toolkit_install.info (or None)."""
    match = _VERSION_LINE.search(text or "")
    return match.group(1) if match else None


def cann_plan(installed, want, prefix=DEFAULT_PREFIX, arch="x86_64", installed_home=None):
    """What the cann role does: nothing, install, upgrade, or uninstall the old release then install.

    `installed` is the toolkit's version (None when none is installed), `installed_home` the folder
    its install info was read in. Crossing 8.5 in either direction uninstalls the installed release
    with its own uninstall script (`<its home>/<arch>-linux/script/uninstall.sh`) first.
    """
    target = cann_layout(want, prefix, arch)
    plan = {
        "action": "none",
        "mode": None,
        "installed": installed,
        "want": want,
        "crossing": False,
        "uninstall_script": None,
        "layout": target,
        "reason": "",
    }
    if installed and versions.same_version(installed, want):
        plan["reason"] = f"CANN {installed} is installed"
        return plan
    if not installed:
        plan.update(action="install", mode="install", reason=f"no CANN toolkit is installed under {prefix}")
        return plan
    if versions.format_problem("cann_version", installed) is None:
        installed_new = is_new_layout(installed)
    else:  # an odd version string: the folder it was found in tells the layout
        installed_new = str(installed_home or "").rstrip("/").endswith("/cann")
    if installed_new == target["new_layout"]:
        plan.update(
            action="upgrade",
            mode="upgrade",
            reason=f"CANN {installed} -> {want} on the same side of {NEW_LAYOUT_FROM}: --upgrade",
        )
        return plan
    home = installed_home or (f"{prefix}/cann" if installed_new else f"{prefix}/ascend-toolkit/latest")
    plan.update(
        action="reinstall",
        mode="install",
        crossing=True,
        uninstall_script=f"{str(home).rstrip('/')}/{normalize_arch(arch)}-linux/script/uninstall.sh",
        reason=(
            f"CANN {installed} -> {want} crosses {NEW_LAYOUT_FROM} (kernels -> ops, ascend-toolkit -> cann): "
            "the installed release is uninstalled with its uninstall script first"
        ),
    )
    return plan


_REPO_DEB_NAME = re.compile(r"^[a-z0-9][a-z0-9+.-]*$")


def repo_packages(version, ops_chip, family, nnal=True):
    """Package names of the 9.x CANN repositories, pinned to `version` (untested against the real ones).

    apt (https://ascend.devcloud.huaweicloud.com/cann/debian): `ascend-cann-toolkit=<v>`,
    `ascend-cann-<chip>-ops=<v>` (chip lower case: Debian names are), `ascend-cann-nnal=<v>`;
    yum: `Ascend-cann-toolkit-<v>`, `Ascend-cann-<chip>-ops-<v>`, `Ascend-cann-nnal-<v>`.
    """
    if not ops_chip:
        raise InputError("cann_ops_chip is not set", "set cann_ops_chip (e.g. 910b, A3)")
    if family == "Debian":
        names = ["ascend-cann-toolkit", f"ascend-cann-{str(ops_chip).lower()}-ops"]
        if nnal:
            names.append("ascend-cann-nnal")
        for name in names:
            if not _REPO_DEB_NAME.match(name):
                raise InputError(f"{name!r} is not a Debian package name", "check cann_ops_chip")
        return [f"{name}={version}" for name in names]
    if family == "RedHat":
        names = ["Ascend-cann-toolkit", f"Ascend-cann-{ops_chip}-ops"]
        names += ["Ascend-cann-nnal"] if nnal else []
        return [f"{name}-{version}" for name in names]
    raise InputError(
        f"OS family {family!r} has no CANN repository (Debian/Ubuntu apt, RHEL-family yum)",
        "use cann_source: run on this node",
    )


# --------------------------------------------------------- driver/firmware ----


def _same(installed, want):
    return installed is not None and want is not None and versions.same_version(str(installed), str(want))


def driver_plan(installed_driver, installed_firmware, want_driver, want_firmware, physical, vm_type=None):
    """The ordered installer steps: [{kind, mode, installed, want}], the skipped ones with the reason.

    Fresh node (no driver): driver (--full) then firmware. Upgrade (a driver is installed): firmware
    then driver (--upgrade). Only what differs; firmware never on a virtual machine.
    """
    if not want_driver:
        raise InputError(
            "ascend_driver_version is not set",
            'set it in the BOM (group_vars/all/versions.yml), quoted, e.g. "25.2.0"',
        )
    if physical and not want_firmware:
        raise InputError(
            "ascend_firmware_version is not set, and this host is physical (its firmware is managed)",
            'set it in the BOM to the firmware of the same HDK release, e.g. "7.7.0.6.236" for 25.2.0',
        )
    fresh = not installed_driver
    steps, skipped = [], []
    driver_step = None
    if not _same(installed_driver, want_driver):
        driver_step = {
            "kind": "driver",
            "mode": "full" if fresh else "upgrade",
            "installed": installed_driver or None,
            "want": want_driver,
        }
    firmware_step = None
    if not physical:
        skipped.append(
            {
                "kind": "firmware",
                "reason": f"this host is a virtual machine ({vm_type or 'guest'}): the firmware is flashed "
                "from the physical host, never from a VM",
            }
        )
    elif not _same(installed_firmware, want_firmware):
        firmware_step = {
            "kind": "firmware",
            "mode": "upgrade" if installed_firmware else "full",
            "installed": installed_firmware or None,
            "want": want_firmware,
        }
    order = [driver_step, firmware_step] if fresh else [firmware_step, driver_step]
    steps = [step for step in order if step]
    return {
        "fresh": fresh,
        "steps": steps,
        "skipped": skipped,
        "order": "driver then firmware (fresh node)" if fresh else "firmware then driver (upgrade)",
    }
