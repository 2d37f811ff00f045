"""Filters of the NVIDIA stack roles (cuda_toolkit, nccl, tensorrt, dcgm, nvidia_container_toolkit).

One implementation of each packaging rule, unit-tested in tests/unit/nvidia_stack/:

    {{ nvidia_driver_version | clusterforge.cluster.nvidia_stack_cuda_major }}      "590.48.01" -> 13
    {{ cuda_version | clusterforge.cluster.nvidia_stack_cuda_xy }}                  "12.8.1" -> "12.8"
    {{ cuda_version | clusterforge.cluster.nvidia_stack_cuda_dashed }}              "12.8" -> "12-8"
    {{ nccl_version | clusterforge.cluster.nvidia_stack_nccl_version(cuda) }}  "2.26.2" -> "2.26.2-1+cuda12.8"
    {{ tensorrt_version | clusterforge.cluster.nvidia_stack_tensorrt_version(cuda) }}
    {{ dcgm_version | clusterforge.cluster.nvidia_stack_dcgm_version }}             "4.2.3" -> "1:4.2.3-*"
    {{ version | clusterforge.cluster.nvidia_stack_ctk_version }}                   "1.17.8" -> "1.17.8-1"
    {{ probe.stdout | clusterforge.cluster.nvidia_stack_unavailable(wanted) }}     packages not in the repo
    {{ texts | clusterforge.cluster.nvidia_stack_runtime_configured('containerd') }}
    {{ runtimes | clusterforge.cluster.nvidia_stack_runtimes_present(markers, existing_paths) }}
    {{ runtimes | clusterforge.cluster.nvidia_stack_runtimes_unconfigured(configs, contents) }}

Errors name the variable, the value and the fix, like `clusterforge inventory check`
(the version formats are cfcore/versions.py's FORMATS, the same the BOM check uses).
"""

from __future__ import annotations

import json
import re
from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore import (
    nvidia_packages,
    package_pins,
    versions,
)

# DCGM 4 is the first release with the per-CUDA-major packages (datacenter-gpu-manager-4-*).
DCGM_MIN_MAJOR = 4

_DRIVER = re.compile(r"[0-9]{3}(\.[0-9]{2,3}(\.[0-9]{2})?)?", re.ASCII)
_TENSORRT = re.compile(
    r"([0-9]+\.[0-9]+\.[0-9]+(?:\.[0-9]+)?)(?:-([0-9]+))?(?:\+cuda([0-9]+\.[0-9]+))?", re.ASCII
)
_NCCL = re.compile(r"([0-9]+\.[0-9]+\.[0-9]+)(?:-([0-9]+))?(?:\+cuda([0-9]+\.[0-9]+))?", re.ASCII)
_DCGM = re.compile(r"(?:1:)?([0-9]+)\.([0-9]+)\.([0-9]+)(?:-([0-9]+))?", re.ASCII)
_CTK = re.compile(r"([0-9]+\.[0-9]+\.[0-9]+)(?:-([0-9]+))?", re.ASCII)


def _fail(message: str, fix: str) -> AnsibleFilterError:
    return AnsibleFilterError(f"{message} (fix: {fix})")


def _check_bom(variable: str, value: Any) -> str:
    problem = versions.format_problem(variable, value)
    if problem:
        raise _fail(problem, f"set {variable} in group_vars/all/versions.yml")
    return value


def nvidia_stack_cuda_major(driver_version: Any, variable: str = "nvidia_driver_version") -> int:
    """The CUDA major a driver serves: 13 from branch 580 on, 12 from 525, 11 before."""
    text = str(driver_version) if isinstance(driver_version, int) else driver_version
    if not isinstance(text, str) or not _DRIVER.fullmatch(text):
        raise _fail(
            f"{variable} {driver_version!r} is not an NVIDIA driver version or branch",
            f'write e.g. {variable}: "570.133.20"',
        )
    return nvidia_packages.cuda_major(versions.major(text))  # the rule's one implementation


def nvidia_stack_cuda_xy(cuda_version: Any, variable: str = "cuda_version") -> str:
    """ "12.8" or "12.8.1" -> "12.8": the X.Y that names the toolkit and the library builds."""
    if variable == "cuda_version":
        _check_bom(variable, cuda_version)
    elif not isinstance(cuda_version, str) or not re.fullmatch(r"[0-9]+\.[0-9]+(\.[0-9]+)?", cuda_version):
        raise _fail(
            f"{variable} {cuda_version!r} is not a CUDA version X.Y", f'write e.g. {variable}: "12.8"'
        )
    cuda_major, cuda_minor = versions.major_minor(cuda_version)
    return f"{cuda_major}.{cuda_minor}"


def nvidia_stack_cuda_dashed(cuda_version: Any, variable: str = "cuda_version") -> str:
    """ "12.8" -> "12-8", as in the package names cuda-toolkit-12-8."""
    return nvidia_stack_cuda_xy(cuda_version, variable).replace(".", "-")


def _library_version(
    kind: str,
    variable: str,
    value: Any,
    pattern: re.Pattern,
    cuda_version: Any,
    separator: str,
    example: str,
    cuda_variable: str,
) -> str:
    cuda_xy = nvidia_stack_cuda_xy(cuda_version, cuda_variable)
    match = pattern.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise _fail(f"{variable} {value!r} is not a {kind} version", f'write e.g. {variable}: "{example}"')
    base, revision, built_for = match.groups()
    if built_for is not None and built_for != cuda_xy:
        raise _fail(
            f"{variable} {value!r} names the build for CUDA {built_for}, "
            f"but the CUDA build wanted is {cuda_xy}",
            f'write only the {kind} version, {variable}: "{base}": '
            f"the role adds -{revision or 1}+cuda{cuda_xy}",
        )
    return f"{base}-{revision or 1}{separator}cuda{cuda_xy}"


def nvidia_stack_nccl_version(
    nccl_version: Any, cuda_version: Any, separator: str = "+", cuda_variable: str = "cuda_version"
) -> str:
    """The libnccl2/libnccl-dev package version: "2.26.2" + "12.8" -> "2.26.2-1+cuda12.8".

    nccl_version may already be "2.26.2-1" or "2.26.2-1+cuda12.8" (then its CUDA must be the one wanted).
    """
    _check_bom("nccl_version", nccl_version)
    return _library_version(
        "NCCL", "nccl_version", nccl_version, _NCCL, cuda_version, separator, "2.26.2", cuda_variable
    )


def nvidia_stack_tensorrt_version(
    tensorrt_version: Any, cuda_version: Any, separator: str = "+", cuda_variable: str = "cuda_version"
) -> str:
    """The libnvinfer10 package version: "10.9.0.34" + "12.8" -> "10.9.0.34-1+cuda12.8".

    `separator` is what the packages put before "cuda": "+" in the .deb versions; the RPM release
    is taken from the OS family's vars file.
    """
    return _library_version(
        "TensorRT",
        "tensorrt_version",
        tensorrt_version,
        _TENSORRT,
        cuda_version,
        separator,
        "10.9.0.34",
        cuda_variable,
    )


def nvidia_stack_dcgm_version(dcgm_version: Any, epoch: bool = True) -> str:
    """The DCGM 4 package version pattern: "4.2.3" -> "1:4.2.3-*" ("1:4.2.3-1" when the revision is given).

    The .deb versions carry the epoch 1; dnf names a package by name-version without it (epoch=False).
    DCGM before 4 is refused: it has no datacenter-gpu-manager-4-* packages.
    """
    _check_bom("dcgm_version", dcgm_version)
    match = _DCGM.fullmatch(dcgm_version)
    if match is None:  # the BOM format accepts what _DCGM accepts; kept for a clear message anyway
        raise _fail(
            f"dcgm_version {dcgm_version!r} is not a DCGM version", 'write e.g. dcgm_version: "4.2.3"'
        )
    dcgm_major, dcgm_minor, dcgm_patch, revision = match.groups()
    if int(dcgm_major) < DCGM_MIN_MAJOR:
        raise _fail(
            f"dcgm_version {dcgm_version!r} is DCGM {dcgm_major}; role dcgm installs DCGM 4 "
            "(datacenter-gpu-manager-4-core and -4-cuda<major>) and removes the 3.x package",
            'set dcgm_version to a DCGM 4 release, e.g. dcgm_version: "4.2.3"',
        )
    version = f"{int(dcgm_major)}.{int(dcgm_minor)}.{int(dcgm_patch)}-{revision or '*'}"
    return f"1:{version}" if epoch else version


def nvidia_stack_ctk_version(version: Any, variable: str = "nvidia_container_toolkit_version") -> str:
    """The one version of the four container toolkit packages: "1.17.8" -> "1.17.8-1"."""
    match = _CTK.fullmatch(version) if isinstance(version, str) else None
    if match is None:
        raise _fail(
            f"{variable} {version!r} is not a container toolkit version", f'write e.g. {variable}: "1.17.8"'
        )
    return f"{match.group(1)}-{match.group(2) or 1}"


# ------------------------------------------------------------- availability ----


def nvidia_stack_available_versions(listing: Any) -> dict[str, list[str]]:
    """Package name -> versions, from `apt-cache madison P...` or `dnf list --showduplicates P...`."""
    return package_pins.available_versions(listing)


def nvidia_stack_unavailable(listing: Any, wanted: Any, repository: str = "the CUDA repository") -> list[str]:
    """What of `wanted` ({package: version or fnmatch pattern}) the listing does not offer, one line each."""
    try:
        return package_pins.unavailable(listing, wanted, repository)
    except TypeError as err:
        raise AnsibleFilterError(f"nvidia_stack_unavailable: {err}") from None


# ------------------------------------------------------ container runtimes ----

# The runtime table nvidia-ctk writes: containerd config v2 (CRI plugin "io.containerd.grpc.v1.cri")
# and v3 (containerd 2.x, "io.containerd.cri.v1.runtime"), quoted either way.
_CONTAINERD_NVIDIA = re.compile(
    r"""^[ \t]*\[[ \t]*plugins\.(["'])io\.containerd\.(?:grpc\.v1\.cri|cri\.v1\.runtime)\1"""
    r"""\.containerd\.runtimes\.(["']?)nvidia\2[ \t]*\]""",
    re.MULTILINE,
)


def nvidia_stack_runtime_configured(
    texts: Any, runtime: str, where: str = "the runtime's configuration"
) -> bool:
    """Whether a container runtime's configuration already has the `nvidia` runtime.

    texts: the configuration file contents (for containerd: config.toml and nvidia-ctk's drop-in);
    empty or missing files count as not configured. docker: /etc/docker/daemon.json with
    runtimes.nvidia.
    """
    if isinstance(texts, str):
        texts = [texts]
    texts = [text for text in (texts or []) if text and str(text).strip()]
    if runtime == "containerd":
        return any(_CONTAINERD_NVIDIA.search(str(text)) for text in texts)
    if runtime == "docker":
        for text in texts:
            try:
                config = json.loads(text)
            except ValueError as err:
                raise _fail(
                    f"{where} is not valid JSON ({err}), so dockerd cannot read it either",
                    "repair the file (or remove it to start from docker's defaults) and rerun",
                ) from None
            runtimes = config.get("runtimes") if isinstance(config, dict) else None
            if isinstance(runtimes, dict) and "nvidia" in runtimes:
                return True
        return False
    raise _fail(
        f"nvidia_container_toolkit_runtimes: unknown runtime {runtime!r}",
        "use containerd and/or docker",
    )


def nvidia_stack_runtimes_present(runtimes: Any, markers: Any, existing_paths: Any) -> list[str]:
    """The runtimes of `runtimes` installed on the node: one of their marker paths (config, binary) exists."""
    existing = set(existing_paths or [])
    return [runtime for runtime in runtimes or [] if existing.intersection((markers or {}).get(runtime, []))]


def nvidia_stack_runtimes_unconfigured(runtimes: Any, configs: Any, contents: Any) -> list[str]:
    """The runtimes of `runtimes` whose configuration files (`configs`: runtime -> paths, `contents`:
    path -> text of the files that exist) lack the nvidia runtime."""
    contents = contents or {}
    missing = []
    for runtime in runtimes or []:
        paths = (configs or {}).get(runtime, [])
        texts = [contents[path] for path in paths if path in contents]
        if not nvidia_stack_runtime_configured(texts, runtime, " / ".join(paths)):
            missing.append(runtime)
    return missing


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "nvidia_stack_cuda_major": nvidia_stack_cuda_major,
            "nvidia_stack_cuda_xy": nvidia_stack_cuda_xy,
            "nvidia_stack_cuda_dashed": nvidia_stack_cuda_dashed,
            "nvidia_stack_nccl_version": nvidia_stack_nccl_version,
            "nvidia_stack_tensorrt_version": nvidia_stack_tensorrt_version,
            "nvidia_stack_dcgm_version": nvidia_stack_dcgm_version,
            "nvidia_stack_ctk_version": nvidia_stack_ctk_version,
            "nvidia_stack_available_versions": nvidia_stack_available_versions,
            "nvidia_stack_unavailable": nvidia_stack_unavailable,
            "nvidia_stack_runtime_configured": nvidia_stack_runtime_configured,
            "nvidia_stack_runtimes_present": nvidia_stack_runtimes_present,
            "nvidia_stack_runtimes_unconfigured": nvidia_stack_runtimes_unconfigured,
        }
