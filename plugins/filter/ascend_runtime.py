"""Filters of role ascend_runtime: the node's Ascend labels and the runtime/exporter files of the manifest.

    {{ node_sku | clusterforge.cluster.cf_ascend_labels(clusterforge_sku_catalog | default({}),
                                                        ansible_facts.architecture) }}
    {{ ascend_packages | clusterforge.cluster.cf_ascend_runtime_files(ascend_docker_runtime_version,
                           npu_exporter_version, ansible_facts.architecture, ascend_package_cache_dir) }}
    {{ info_text | clusterforge.cluster.cf_ascend_runtime_installed }}

The rules live in cfcore (ascend_labels.py, ascend_packages.py); input errors become task
failures that name the variable and the fix.
"""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore import (
    ascend_labels,
    ascend_packages,
    catalog,
)
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.inputs import InputError


def _fail(err: InputError) -> AnsibleFilterError:
    return AnsibleFilterError(f"{err.message} (fix: {err.fix})" if err.fix else err.message)


def cf_ascend_labels(node_sku: Any, overrides: Any = None, architecture: Any = None) -> dict[str, Any]:
    try:
        return ascend_labels.node_labels(catalog.sku_spec(str(node_sku), overrides or None), architecture)
    except InputError as err:
        raise AnsibleFilterError(f"node_sku {node_sku}: {err.message} (fix: {err.fix})") from None


def cf_ascend_runtime_files(
    manifest: Any, runtime_version: Any, exporter_version: Any, architecture: Any, cache_dir: Any
) -> dict[str, dict[str, str]]:
    """{docker_runtime: {name, sha256, path}, npu_exporter: {...}} picked from `ascend_packages`.

    A version None or "": that part is not installed (ascend_docker_runtime_enabled false,
    npu_exporter_enabled false) and no file is picked for it.
    """
    if not isinstance(manifest, dict) or not manifest:
        raise AnsibleFilterError(
            "ascend_packages must be a non-empty mapping of file name to sha256 "
            "(fix: set ascend_packages to the SHA256SUMS of the package folder as YAML)"
        )
    files = {}
    wanted = [("docker_runtime", runtime_version), ("npu_exporter", exporter_version)]
    for kind, version in wanted:
        if version in (None, ""):
            continue
        try:
            name = ascend_packages.select_package(kind, manifest, version=version, arch=architecture)
            sha256 = ascend_packages.manifest_sha256(manifest, name)
        except InputError as err:
            raise _fail(err) from None
        files[kind] = {"name": name, "sha256": sha256, "path": f"{str(cache_dir).rstrip('/')}/{name}"}
    return files


def cf_ascend_runtime_installed(text: Any) -> str:
    return ascend_labels.installed_runtime_version(text)


def cf_ascend_strip_v(version: Any) -> str:
    return ascend_labels.strip_v(version)


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "cf_ascend_labels": cf_ascend_labels,
            "cf_ascend_runtime_files": cf_ascend_runtime_files,
            "cf_ascend_runtime_installed": cf_ascend_runtime_installed,
            "cf_ascend_strip_v": cf_ascend_strip_v,
        }
