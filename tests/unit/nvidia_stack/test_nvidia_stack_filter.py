"""plugins/filter/nvidia_stack.py: the packaging rules of the NVIDIA stack roles."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from stack_plugins import load_plugin

stack = load_plugin("nvidia_stack")


# ------------------------------------------------------- CUDA major of a driver ----


@pytest.mark.parametrize(
    ("driver", "cuda_major"),
    [
        ("590.48.01", 13),
        ("580.65.06", 13),
        ("580", 13),
        ("575.51.03", 12),
        ("570.133.20", 12),
        ("535.183.01", 12),
        ("525.60.13", 12),
        ("520.61.05", 11),
        ("470.256.02", 11),
        (580, 13),
    ],
)
def test_cuda_major_from_driver_branch(driver, cuda_major):
    assert stack.nvidia_stack_cuda_major(driver) == cuda_major


@pytest.mark.parametrize("driver", ["", "latest", "58", "570.133.20\n", None, "570.1"])
def test_cuda_major_rejects_what_is_not_a_driver_version_naming_the_variable(driver):
    with pytest.raises(AnsibleFilterError, match=r"nvidia_driver_version .* is not an NVIDIA driver version"):
        stack.nvidia_stack_cuda_major(driver)


# ------------------------------------------------------------- CUDA names ----


@pytest.mark.parametrize(
    ("cuda", "xy", "dashed"), [("12.8", "12.8", "12-8"), ("12.8.1", "12.8", "12-8"), ("13.0", "13.0", "13-0")]
)
def test_cuda_release_names(cuda, xy, dashed):
    assert stack.nvidia_stack_cuda_xy(cuda) == xy
    assert stack.nvidia_stack_cuda_dashed(cuda) == dashed


@pytest.mark.parametrize("cuda", [12.8, "12", "12.8\n", "v12.8"])
def test_bad_cuda_version_fails_with_the_bom_message(cuda):
    with pytest.raises(AnsibleFilterError, match=r"cuda_version .*fix: set cuda_version in group_vars"):
        stack.nvidia_stack_cuda_xy(cuda)


def test_other_cuda_variables_are_named_in_the_error():
    with pytest.raises(AnsibleFilterError, match=r"nccl_cuda_version 'twelve' is not a CUDA version"):
        stack.nvidia_stack_cuda_xy("twelve", "nccl_cuda_version")


# ---------------------------------------------------------- package versions ----


@pytest.mark.parametrize(
    ("nccl", "cuda", "package"),
    [
        ("2.26.2", "12.8", "2.26.2-1+cuda12.8"),
        ("2.26.2", "12.8.1", "2.26.2-1+cuda12.8"),
        ("2.26.2-1", "13.0", "2.26.2-1+cuda13.0"),
        ("2.26.2-3+cuda12.8", "12.8", "2.26.2-3+cuda12.8"),
    ],
)
def test_nccl_package_version(nccl, cuda, package):
    assert stack.nvidia_stack_nccl_version(nccl, cuda) == package


def test_nccl_built_for_another_cuda_is_refused_with_the_fix():
    with pytest.raises(AnsibleFilterError) as err:
        stack.nvidia_stack_nccl_version("2.18.5-1+cuda12.2", "12.8")
    assert "names the build for CUDA 12.2, but the CUDA build wanted is 12.8" in str(err.value)
    assert 'nccl_version: "2.18.5"' in str(err.value)


def test_nccl_version_format_is_the_bom_one():
    with pytest.raises(AnsibleFilterError, match=r"nccl_version '2.26' is not a version"):
        stack.nvidia_stack_nccl_version("2.26", "12.8")


def test_nccl_rpm_separator_and_cuda_variable():
    assert stack.nvidia_stack_nccl_version("2.26.2", "12.9", "+", "nccl_cuda_version") == "2.26.2-1+cuda12.9"
    with pytest.raises(AnsibleFilterError, match="nccl_cuda_version"):
        stack.nvidia_stack_nccl_version("2.26.2", "x", "+", "nccl_cuda_version")


@pytest.mark.parametrize(
    ("trt", "separator", "package"),
    [
        ("10.9.0.34", "+", "10.9.0.34-1+cuda12.8"),
        ("10.9.0.34", ".", "10.9.0.34-1.cuda12.8"),
        ("10.9.0.34-1+cuda12.8", "+", "10.9.0.34-1+cuda12.8"),
    ],
)
def test_tensorrt_package_version(trt, separator, package):
    assert stack.nvidia_stack_tensorrt_version(trt, "12.8", separator) == package


@pytest.mark.parametrize("trt", ["10", "ten", "10.9.0.34+cuda"])
def test_bad_tensorrt_version_names_the_variable(trt):
    with pytest.raises(AnsibleFilterError, match=r"tensorrt_version .* is not a TensorRT version"):
        stack.nvidia_stack_tensorrt_version(trt, "12.8")


@pytest.mark.parametrize(
    ("dcgm", "epoch", "package"),
    [
        ("4.2.3", True, "1:4.2.3-*"),
        ("4.2.3-2", True, "1:4.2.3-2"),
        ("4.2.3", False, "4.2.3-*"),
        ("4.4.0-1", False, "4.4.0-1"),
    ],
)
def test_dcgm_package_version(dcgm, epoch, package):
    assert stack.nvidia_stack_dcgm_version(dcgm, epoch) == package


def test_dcgm_3_is_refused_with_the_fix():
    with pytest.raises(AnsibleFilterError) as err:
        stack.nvidia_stack_dcgm_version("3.3.9")
    assert "role dcgm installs DCGM 4" in str(err.value)
    assert 'dcgm_version: "4.2.3"' in str(err.value)


@pytest.mark.parametrize(("version", "package"), [("1.17.8", "1.17.8-1"), ("1.18.0-2", "1.18.0-2")])
def test_container_toolkit_package_version(version, package):
    assert stack.nvidia_stack_ctk_version(version) == package


def test_bad_container_toolkit_version_names_the_variable():
    with pytest.raises(AnsibleFilterError, match=r"nvidia_container_toolkit_version '1.17' is not"):
        stack.nvidia_stack_ctk_version("1.17")


# --------------------------------------------------------------- availability ----

MADISON = """\
  libnccl2 | 2.26.2-1+cuda13.0 | http://repo/compute/cuda/repos/debian12/x86_64  Packages
  libnccl2 | 2.26.2-1+cuda12.8 | http://repo/compute/cuda/repos/debian12/x86_64  Packages
libnccl-dev | 2.26.2-1+cuda12.8 | http://repo/compute/cuda/repos/debian12/x86_64  Packages
datacenter-gpu-manager-4-core | 1:4.2.3-1 | http://repo/compute/cuda/repos/debian12/x86_64  Packages
"""

DNF = """\
Last metadata expiration check: 0:01:02 ago on Mon 01 Dec 2026.
Installed Packages
libnccl.x86_64                   2.26.2-1+cuda12.8                 @cuda-rhel9-x86_64
Available Packages
libnccl.x86_64                   2.26.2-1+cuda12.8                 cuda-rhel9-x86_64
libnccl.x86_64                   2.26.2-1+cuda13.0                 cuda-rhel9-x86_64
datacenter-gpu-manager-4-core.x86_64   1:4.2.3-1                   cuda-rhel9-x86_64
"""


def test_versions_from_apt_cache_madison():
    assert stack.nvidia_stack_available_versions(MADISON) == {
        "libnccl2": ["2.26.2-1+cuda13.0", "2.26.2-1+cuda12.8"],
        "libnccl-dev": ["2.26.2-1+cuda12.8"],
        "datacenter-gpu-manager-4-core": ["1:4.2.3-1"],
    }


def test_versions_from_dnf_list_skip_headers_and_duplicates():
    assert stack.nvidia_stack_available_versions(DNF) == {
        "libnccl": ["2.26.2-1+cuda12.8", "2.26.2-1+cuda13.0"],
        "datacenter-gpu-manager-4-core": ["1:4.2.3-1"],
    }


def test_nothing_listed():
    assert stack.nvidia_stack_available_versions("") == {}
    assert stack.nvidia_stack_available_versions(None) == {}


def test_everything_wanted_is_available():
    wanted = {"libnccl2": "2.26.2-1+cuda12.8", "libnccl-dev": "2.26.2-1+cuda12.8"}
    assert stack.nvidia_stack_unavailable(MADISON, wanted) == []


def test_a_build_for_another_cuda_is_reported_with_what_is_offered():
    missing = stack.nvidia_stack_unavailable(MADISON, {"libnccl-dev": "2.26.2-1+cuda13.0"})
    assert missing == [
        "libnccl-dev 2.26.2-1+cuda13.0 is not in the CUDA repository (it offers: 2.26.2-1+cuda12.8)"
    ]


def test_an_unknown_package_is_reported():
    missing = stack.nvidia_stack_unavailable(
        MADISON, {"datacenter-gpu-manager-4-cuda13": "1:4.2.3-*"}, "repo X"
    )
    assert missing == [
        "datacenter-gpu-manager-4-cuda13 1:4.2.3-* is not in repo X (it offers: no version at all)"
    ]


@pytest.mark.parametrize(
    ("listing", "pattern", "ok"),
    [
        (MADISON, "1:4.2.3-*", True),
        (MADISON, "1:4.2.4-*", False),
        (DNF, "4.2.3-*", True),  # dnf specs carry no epoch: a pattern without one matches
        (DNF, "1:4.2.3-1", True),
        (DNF, "2:4.2.3-1", False),
    ],
)
def test_version_patterns_and_epochs(listing, pattern, ok):
    assert (stack.nvidia_stack_unavailable(listing, {"datacenter-gpu-manager-4-core": pattern}) == []) is ok


def test_toolkit_release_pattern():
    listing = " cuda-toolkit-12-8 | 12.8.1-1 | http://repo  Packages\n"
    assert stack.nvidia_stack_unavailable(listing, {"cuda-toolkit-12-8": "12.8.*"}) == []
    assert stack.nvidia_stack_unavailable(listing, {"cuda-toolkit-12-8": "12.9.*"}) != []


def test_wanted_must_be_a_dict():
    with pytest.raises(AnsibleFilterError, match="wanted must be a dict"):
        stack.nvidia_stack_unavailable(MADISON, ["libnccl2"])


# ------------------------------------------------------- container runtimes ----

CONTAINERD_V2 = """\
version = 2

[plugins]
  [plugins."io.containerd.grpc.v1.cri"]
    [plugins."io.containerd.grpc.v1.cri".containerd]
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes]
        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
          privileged_without_host_devices = false
          runtime_type = "io.containerd.runc.v2"
          [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
            BinaryName = "/usr/bin/nvidia-container-runtime"
"""

CONTAINERD_V3 = """\
version = 3
[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.nvidia]
  runtime_type = 'io.containerd.runc.v2'
"""

CONTAINERD_DEFAULT = """\
version = 2
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
# [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
"""


@pytest.mark.parametrize(
    ("texts", "configured"),
    [
        ([CONTAINERD_V2], True),
        ([CONTAINERD_V3], True),
        ([CONTAINERD_DEFAULT], False),  # a commented-out entry is not an entry
        ([CONTAINERD_DEFAULT, CONTAINERD_V3], True),  # the drop-in has it
        ([], False),
        ([""], False),
        (CONTAINERD_V2, True),
    ],
)
def test_containerd_nvidia_runtime(texts, configured):
    assert stack.nvidia_stack_runtime_configured(texts, "containerd") is configured


@pytest.mark.parametrize(
    ("texts", "configured"),
    [
        (['{"runtimes": {"nvidia": {"path": "nvidia-container-runtime", "args": []}}}'], True),
        (['{"runtimes": {"runc": {"path": "runc"}}}'], False),
        (['{"log-driver": "journald"}'], False),
        (["[]"], False),
        ([], False),
    ],
)
def test_docker_nvidia_runtime(texts, configured):
    assert stack.nvidia_stack_runtime_configured(texts, "docker") is configured


def test_broken_daemon_json_is_an_error_naming_the_file():
    with pytest.raises(AnsibleFilterError, match=r"/etc/docker/daemon.json is not valid JSON .*fix: repair"):
        stack.nvidia_stack_runtime_configured(["{oops"], "docker", "/etc/docker/daemon.json")


def test_unknown_runtime_is_an_error():
    with pytest.raises(AnsibleFilterError, match="unknown runtime 'crio'"):
        stack.nvidia_stack_runtime_configured([], "crio")


MARKERS = {
    "containerd": ["/etc/containerd/config.toml", "/usr/bin/containerd"],
    "docker": ["/usr/bin/dockerd"],
}
CONFIGS = {
    "containerd": ["/etc/containerd/config.toml", "/etc/containerd/conf.d/99-nvidia.toml"],
    "docker": ["/etc/docker/daemon.json"],
}


@pytest.mark.parametrize(
    ("existing", "present"),
    [
        (["/usr/bin/containerd"], ["containerd"]),
        (["/etc/containerd/config.toml", "/usr/bin/dockerd"], ["containerd", "docker"]),
        ([], []),
    ],
)
def test_runtimes_present(existing, present):
    assert stack.nvidia_stack_runtimes_present(["containerd", "docker"], MARKERS, existing) == present


def test_runtimes_present_keeps_to_the_wanted_ones():
    assert stack.nvidia_stack_runtimes_present(["docker"], MARKERS, ["/usr/bin/containerd"]) == []


def test_runtimes_unconfigured():
    contents = {"/etc/containerd/config.toml": CONTAINERD_DEFAULT, "/etc/docker/daemon.json": "{}"}
    assert stack.nvidia_stack_runtimes_unconfigured(["containerd", "docker"], CONFIGS, contents) == [
        "containerd",
        "docker",
    ]
    contents["/etc/containerd/conf.d/99-nvidia.toml"] = CONTAINERD_V3
    assert stack.nvidia_stack_runtimes_unconfigured(["containerd", "docker"], CONFIGS, contents) == ["docker"]
    # containerd installed without a config file: nvidia-ctk writes one
    assert stack.nvidia_stack_runtimes_unconfigured(["containerd"], CONFIGS, {}) == ["containerd"]
