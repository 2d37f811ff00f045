"""Filters of roles nvidia_driver and nvidia_fabricmanager: what to install, pin, hold and remove.

    {{ nvidia_driver_version | clusterforge.cluster.cf_nvidia_driver_plan(method=..., sku=..., ...) }}
    {{ nvidia_driver_version | clusterforge.cluster.cf_nvidia_fabricmanager_plan(...) }}
    {{ apt_cache_madison_stdout | clusterforge.cluster.cf_nvidia_apt_version(version, package) }}
    {{ nvidia_smi_q_stdout | clusterforge.cluster.cf_nvidia_fabric_states }}
    {{ installed | clusterforge.cluster.cf_nvidia_packages_at_version(version, family) }}

The rules (package names by branch, flavour, other-branch packages) live once in
plugins/module_utils/cfcore/nvidia_packages.py; these filters only adapt them to Ansible and
turn the rules' input errors into task failures that name the variable and the fix.
"""

from __future__ import annotations

import re
from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore import nvidia_packages as nv
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.inputs import InputError


def _fail(err: InputError) -> AnsibleFilterError:
    return AnsibleFilterError(f"{err.message} (fix: {err.fix})" if err.fix else err.message)


def _mapping(value: Any, name: str) -> dict[str, str]:
    if value in (None, ""):
        return {}
    if not isinstance(value, dict):
        raise AnsibleFilterError(
            f"{name} must be a mapping of package name to version, got {type(value).__name__}"
        )
    return {str(k): str(v) for k, v in value.items()}


def cf_nvidia_driver_plan(
    version: Any,
    method: str = "cuda_repo",
    flavour: Any = None,
    sku: Any = None,
    sku_name: str = "",
    compute_only: bool = False,
    os_family: str = "Debian",
    major_release: Any = 12,
    distribution: str = "Debian",
    installed: Any = None,
    held: Any = None,
) -> dict[str, Any]:
    """Everything the role decides before it changes anything (errors stop the play first)."""
    if method not in nv.METHODS:
        raise AnsibleFilterError(
            f"nvidia_driver_install_method {method!r} is not one of {', '.join(nv.METHODS)} "
            "(fix: set nvidia_driver_install_method to cuda_repo, distro or runfile)"
        )
    if os_family not in ("Debian", "RedHat"):
        raise AnsibleFilterError(
            f"OS family {os_family!r}: roles nvidia_* support Debian/Ubuntu and RHEL only"
        )
    accelerator = (sku.get("accelerator") or {}) if isinstance(sku, dict) else {}
    installed_map = _mapping(installed, "installed")
    held_list = [str(name) for name in (held or [])]
    try:
        branch, version = nv.parse_driver_version(version)
        chosen, reason = nv.kernel_module_flavour(
            branch, flavour, accelerator.get("kernel_module_flavour"), sku_name or "(unnamed)"
        )
    except InputError as err:
        raise _fail(err) from None
    plan: dict[str, Any] = {
        "branch": str(branch),
        "version": version,
        "cuda_major": nv.cuda_major(branch),
        "flavour": chosen,
        "flavour_reason": reason,
        "method": method,
        "pinning_package": None,
        "packages": [],
        "pin_patterns": [],
        "remove": [],
        "release": nv.packages_to_release(installed_map, held_list, version),
        "dnf_stream": None,
        "versionlock": [],
        "versioned": [],
        "version_probe": None,
    }
    if method == "cuda_repo" and os_family == "Debian":
        plan["pinning_package"], plan["packages"] = nv.cuda_repo_apt_packages(
            branch, version, chosen, compute_only
        )
        plan["pin_patterns"] = nv.cuda_repo_apt_pin_patterns(branch)
        plan["remove"] = nv.other_branch_packages(installed_map, branch, version)
    elif method == "distro" and os_family == "Debian":
        plan["packages"] = nv.distro_apt_packages(chosen, compute_only, distribution, branch)
        plan["pin_patterns"] = nv.distro_apt_pin_patterns(distribution, branch)
    elif method in ("cuda_repo", "distro") and os_family == "RedHat":
        stream, packages, lock = nv.dnf_packages(branch, version, chosen, compute_only, major_release)
        plan.update(dnf_stream=stream, packages=packages, versionlock=lock)
    # apt: the packages installed as <name>=<exact version> (the others follow the pin)
    plan["versioned"] = [p for p in plan["packages"] if p not in nv.DISTRO_UNVERSIONED]
    # the package whose repository versions decide the exact version string
    plan["version_probe"] = plan["versioned"][0] if plan["versioned"] else None
    return plan


def cf_nvidia_fabricmanager_plan(
    driver_version: Any,
    fabricmanager_version: Any = None,
    os_family: str = "Debian",
    installed: Any = None,
    held: Any = None,
) -> dict[str, Any]:
    installed_map = _mapping(installed, "installed")
    try:
        branch, version = nv.fabricmanager_version(driver_version, fabricmanager_version)
    except InputError as err:
        raise _fail(err) from None
    family = nv.is_fabricmanager_package
    return {
        "branch": str(branch),
        "version": version,
        "packages": nv.fabricmanager_packages(branch, version, os_family),
        "remove": nv.other_branch_packages(installed_map, branch, version, family),
        "release": nv.packages_to_release(installed_map, [str(h) for h in (held or [])], version, family),
    }


def cf_nvidia_packages_at_version(installed: Any, version: str, family: str = "driver") -> list[str]:
    """Installed packages of the driver (or fabricmanager) family at the version: the ones to hold."""
    if family not in ("driver", "fabricmanager"):
        raise AnsibleFilterError(f"family {family!r} is not driver or fabricmanager")
    test = nv.is_driver_package if family == "driver" else nv.is_fabricmanager_package
    return nv.packages_at_version(_mapping(installed, "installed"), str(version), test)


_MADISON = re.compile(r"^\s*(\S+)\s*\|\s*(\S+)\s*\|")


def cf_nvidia_apt_version(madison: Any, version: str, package: str) -> str:
    """The repository version of `package` for the driver `version`, from `apt-cache madison` output."""
    available = []
    for line in str(madison or "").splitlines():
        match = _MADISON.match(line)
        if match and match.group(1) == package:
            available.append(match.group(2))
    matching = [v for v in available if nv.version_matches(v, version)]
    if not matching:
        seen = ", ".join(dict.fromkeys(available)) or "none"
        raise AnsibleFilterError(
            f"{package}: no version {version} in the configured repositories (available: {seen}) "
            "(fix: set nvidia_driver_version to an available version, or point the repository "
            "variables at a mirror that has it)"
        )
    return matching[0]


def cf_nvidia_fabric_states(text: Any) -> list[dict[str, Any]]:
    """Each GPU's Fabric State/Status from `nvidia-smi -q` text: [{gpu, state, status, lines}]."""
    gpus: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    in_fabric = False
    fabric_indent = 0
    for raw in str(text or "").splitlines():
        if raw.startswith("GPU ") and ":" in raw and not raw.startswith("GPU  "):
            current = {"gpu": raw.strip(), "state": None, "status": None, "lines": []}
            gpus.append(current)
            in_fabric = False
            continue
        if current is None:
            continue
        stripped = raw.strip()
        indent = len(raw) - len(raw.lstrip())
        if stripped == "Fabric":
            in_fabric, fabric_indent = True, indent
            current["lines"].append(stripped)
            continue
        if in_fabric:
            if not stripped or indent <= fabric_indent:
                in_fabric = False
                continue
            key, _, value = stripped.partition(":")
            current["lines"].append(stripped)
            if key.strip() == "State":
                current["state"] = value.strip()
            elif key.strip() == "Status":
                current["status"] = value.strip()
    return gpus


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "cf_nvidia_driver_plan": cf_nvidia_driver_plan,
            "cf_nvidia_fabricmanager_plan": cf_nvidia_fabricmanager_plan,
            "cf_nvidia_packages_at_version": cf_nvidia_packages_at_version,
            "cf_nvidia_apt_version": cf_nvidia_apt_version,
            "cf_nvidia_fabric_states": cf_nvidia_fabric_states,
        }
