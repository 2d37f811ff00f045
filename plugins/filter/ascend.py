"""Filters of roles ascend_driver and cann: which manifest file is which, the steps and their command lines.

    {{ node_sku_model | clusterforge.cluster.cf_ascend_chips(hdk_chip, ops_chip) }}
    {{ ascend_packages | clusterforge.cluster.cf_ascend_select(kind, version=, chip=, arch=) }}
    {{ state | clusterforge.cluster.cf_ascend_driver_plan(...) }}
    {{ state.cann | clusterforge.cluster.cf_cann_plan(...) }}
    {{ cann_version | clusterforge.cluster.cf_cann_repo_packages(ops_chip, os_family) }}

The rules live once in plugins/module_utils/cfcore/ascend_packages.py; these filters only adapt
them to Ansible and turn input errors into task failures that name the variable and the fix.
"""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore import ascend_packages as ap
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.inputs import InputError


def _fail(err: InputError) -> AnsibleFilterError:
    return AnsibleFilterError(f"{err.message} (fix: {err.fix})" if err.fix else err.message)


def _manifest(value: Any) -> dict[str, str]:
    if not isinstance(value, dict) or not value:
        raise AnsibleFilterError(
            f"{ap.MANIFEST_VARIABLE} must be a non-empty mapping of file name to sha256 "
            f"(fix: set {ap.MANIFEST_VARIABLE} to the SHA256SUMS of the package folder as YAML)"
        )
    return {str(k): str(v) for k, v in value.items()}


def _file(manifest: dict, kind: str, version: str, chip: Any, arch: str, cache_dir: str) -> dict[str, str]:
    name = ap.select_package(kind, manifest, version=version, chip=chip, arch=arch)
    return {
        "kind": kind,
        "name": name,
        "sha256": ap.manifest_sha256(manifest, name),
        "path": f"{str(cache_dir).rstrip('/')}/{name}",
    }


def cf_ascend_chips(model: Any, hdk_chip: Any = "", ops_chip: Any = "") -> dict[str, str]:
    """The HDK and CANN ops chips: the variables when set, else the SKU model's defaults."""
    if hdk_chip and ops_chip:
        return {"hdk": str(hdk_chip), "ops": str(ops_chip)}
    try:
        hdk, ops = ap.chips_for_model(model)
    except InputError as err:
        raise _fail(err) from None
    return {"hdk": str(hdk_chip or hdk), "ops": str(ops_chip or ops)}


def cf_ascend_select(
    manifest: Any, kind: str, version: Any = None, chip: Any = None, arch: Any = None
) -> str:
    try:
        return ap.select_package(kind, _manifest(manifest), version=version, chip=chip, arch=arch)
    except InputError as err:
        raise _fail(err) from None


def cf_ascend_driver_plan(
    state: Any,
    driver_version: Any,
    firmware_version: Any = None,
    physical: bool = True,
    vm_type: Any = None,
    manifest: Any = None,
    chip: Any = None,
    arch: Any = None,
    user: str = "HwHiAiUser",
    group: str = "HwHiAiUser",
    for_all: bool = False,
    cache_dir: str = "/var/cache/clusterforge/ascend",
    install_path: str = ap.DEFAULT_PREFIX,
) -> dict[str, Any]:
    """Ordered steps, each with its file (name, sha256, cached path) and argv; the files to fetch."""
    state = state if isinstance(state, dict) else {}
    try:
        manifest_map = _manifest(manifest)
        plan = ap.driver_plan(
            state.get("installed"),
            state.get("firmware"),
            str(driver_version) if driver_version else None,
            str(firmware_version) if firmware_version else None,
            bool(physical),
            vm_type,
        )
        files = [_file(manifest_map, "driver", str(driver_version), chip, arch, cache_dir)]
        if physical:
            files.append(_file(manifest_map, "firmware", str(firmware_version), chip, arch, cache_dir))
        by_kind = {entry["kind"]: entry for entry in files}
        for step in plan["steps"]:
            fresh_driver = step["kind"] == "driver" and step["mode"] == "full"
            step["file"] = by_kind[step["kind"]]
            step["argv"] = ap.installer_argv(
                step["kind"],
                step["mode"],
                user=user if fresh_driver else None,
                group=group if fresh_driver else None,
                for_all=bool(for_all) if fresh_driver else False,
                install_path=install_path if step["kind"] == "driver" else None,
            )
            step["command"] = ["bash", step["file"]["path"], *step["argv"]]
    except InputError as err:
        raise _fail(err) from None
    plan["files"] = files
    return plan


def cf_cann_plan(
    cann_state: Any,
    version: Any,
    prefix: str = ap.DEFAULT_PREFIX,
    arch: Any = "x86_64",
    manifest: Any = None,
    ops_chip: Any = None,
    for_all: bool = False,
    nnal: bool = True,
    cache_dir: str = "/var/cache/clusterforge/ascend",
    source: str = "run",
) -> dict[str, Any]:
    """The CANN action (none/install/upgrade/reinstall) with its ordered steps and files."""
    cann_state = cann_state if isinstance(cann_state, dict) else {}
    try:
        plan = ap.cann_plan(
            cann_state.get("version"), str(version), prefix, arch, installed_home=cann_state.get("home")
        )
        layout = plan["layout"]
        plan["files"], plan["steps"] = [], []
        if source != "run":
            return plan
        manifest_map = _manifest(manifest)
        kinds = ["toolkit", layout["ops_kind"]] + (["nnal"] if nnal else [])
        for kind in kinds:
            chip = ops_chip if kind in ("ops", "kernels") else None
            plan["files"].append(_file(manifest_map, kind, str(version), chip, arch, cache_dir))
        if plan["action"] == "none":
            return plan
        for entry in plan["files"]:
            mode = plan["mode"]
            if entry["kind"] == "nnal":
                # NNAL lives apart (<prefix>/nnal) and is not removed by the toolkit's uninstall script:
                # upgraded when one is there, installed otherwise.
                mode = "upgrade" if cann_state.get("nnal") else "install"
            argv = ap.installer_argv(
                entry["kind"],
                mode,
                for_all=bool(for_all) if mode == "install" else False,
                install_path=prefix,
            )
            plan["steps"].append(
                {
                    "kind": entry["kind"],
                    "mode": mode,
                    "file": entry,
                    "argv": argv,
                    "command": ["bash", entry["path"], *argv],
                    # NNAL installs against the toolkit's environment: its set_env.sh is sourced first
                    "source_env": layout["set_env"] if entry["kind"] == "nnal" else None,
                }
            )
    except InputError as err:
        raise _fail(err) from None
    return plan


def cf_cann_repo_packages(version: Any, ops_chip: Any, os_family: str, nnal: bool = True) -> list[str]:
    try:
        return ap.repo_packages(str(version), ops_chip, os_family, nnal)
    except InputError as err:
        raise _fail(err) from None


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "cf_ascend_chips": cf_ascend_chips,
            "cf_ascend_select": cf_ascend_select,
            "cf_ascend_driver_plan": cf_ascend_driver_plan,
            "cf_cann_plan": cf_cann_plan,
            "cf_cann_repo_packages": cf_cann_repo_packages,
        }
