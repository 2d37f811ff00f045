"""plugins/filter/nvidia_driver.py, loaded as Ansible loads it: plans, version pick, fabric states, errors."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from ansible.plugins.loader import filter_loader, init_plugin_loader
from clusterforge.ansible_env import ensure_collection_link

init_plugin_loader([str(ensure_collection_link().parents[2])])


def flt(name):
    return filter_loader.get(f"clusterforge.cluster.{name}").j2_function


plan = flt("cf_nvidia_driver_plan")
fm_plan = flt("cf_nvidia_fabricmanager_plan")
apt_version = flt("cf_nvidia_apt_version")
fabric_states = flt("cf_nvidia_fabric_states")
at_version = flt("cf_nvidia_packages_at_version")
B200 = {"accelerator": {"model": "B200", "kernel_module_flavour": "open", "interconnect": "nvswitch"}}
H100 = {"accelerator": {"model": "H100", "kernel_module_flavour": "any", "interconnect": "nvswitch"}}


def test_plan_570_cuda_repo():
    result = plan("570.133.20", sku=H100, sku_name="hgx-h100-8gpu")
    assert result["branch"] == "570" and result["cuda_major"] == 12
    assert result["flavour"] == "open" and result["pinning_package"] is None
    assert result["packages"] == ["nvidia-open-570"] and result["versioned"] == ["nvidia-open-570"]
    assert result["version_probe"] == "nvidia-open-570"
    assert result["remove"] == [] and result["release"] == []


def test_plan_branch_change_to_590_releases_removes_and_pins():
    installed = {"nvidia-open-570": "570.133.20-1", "nvidia-dkms-570-open": "570.133.20-1"}
    result = plan("590.48.01", sku=B200, sku_name="hgx-b200-8gpu", installed=installed, held=list(installed))
    assert result["cuda_major"] == 13
    assert result["pinning_package"] == "nvidia-driver-pinning-590.48.01"
    assert result["packages"] == ["nvidia-open"]
    assert result["remove"] == ["nvidia-dkms-570-open", "nvidia-open-570"]
    assert result["release"] == ["nvidia-dkms-570-open", "nvidia-open-570"]


def test_plan_distro_keeps_persistenced_unversioned():
    result = plan("535.309.01", method="distro", compute_only=True, sku=H100)
    assert result["flavour"] == "proprietary"
    assert result["versioned"] == ["libcuda1", "nvidia-smi", "nvidia-kernel-dkms"]
    assert result["pin_patterns"] == ["src:nvidia-graphics-drivers", "src:nvidia-open-gpu-kernel-modules"]


def test_plan_rhel_uses_module_streams_before_10():
    assert plan("570.133.20", os_family="RedHat", major_release="9")["dnf_stream"] == "nvidia-driver:570-open"
    assert plan("570.133.20", os_family="RedHat", major_release="10")["dnf_stream"] is None


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        (
            {"version": "570.133.20", "flavour": "proprietary", "sku": B200, "sku_name": "hgx-b200-8gpu"},
            "SKU hgx-b200-8gpu requires the open GPU kernel modules, "
            "but nvidia_kernel_module_flavour is proprietary",
        ),
        ({"version": "570"}, "nvidia_driver_version '570' is not an NVIDIA driver version"),
        ({"version": 570.133}, "is not an NVIDIA driver version"),
        ({"version": "570.133.20", "method": "snap"}, "nvidia_driver_install_method 'snap'"),
        ({"version": "570.133.20", "os_family": "Suse"}, "Debian/Ubuntu and RHEL only"),
        ({"version": "570.133.20", "installed": ["nvidia-open-570"]}, "installed must be a mapping"),
    ],
)
def test_plan_errors_name_the_variable(kwargs, words):
    version = kwargs.pop("version")
    with pytest.raises(AnsibleFilterError, match=words.replace("(", r"\(")):
        plan(version, **kwargs)


def test_fabricmanager_plan_names_and_lock():
    assert fm_plan("570.133.20")["packages"] == ["nvidia-fabricmanager-570", "libnvidia-nscq-570"]
    assert fm_plan("590.48.01", "590.48.01")["packages"] == ["nvidia-fabricmanager", "libnvidia-nscq"]
    change = fm_plan(
        "590.48.01", installed={"nvidia-fabricmanager-570": "570.133.20-1"}, held=["nvidia-fabricmanager-570"]
    )
    assert change["remove"] == ["nvidia-fabricmanager-570"] and change["release"] == [
        "nvidia-fabricmanager-570"
    ]
    with pytest.raises(AnsibleFilterError, match="error 802"):
        fm_plan("570.133.20", "570.124.06")


MADISON = """\
nvidia-open |  590.48.01-1 | http://repo/compute/cuda/repos/debian12/x86_64  Packages
nvidia-open |  590.44.01-1 | http://repo/compute/cuda/repos/debian12/x86_64  Packages
"""


def test_apt_version_picks_the_bom_version_not_the_newest():
    assert apt_version(MADISON, "590.44.01", "nvidia-open") == "590.44.01-1"


def test_apt_version_refuses_a_missing_version_listing_what_exists():
    with pytest.raises(AnsibleFilterError) as err:
        apt_version(MADISON, "590.65.01", "nvidia-open")
    assert "available: 590.48.01-1, 590.44.01-1" in str(err.value)
    assert "nvidia_driver_version" in str(err.value)
    with pytest.raises(AnsibleFilterError, match="available: none"):
        apt_version("", "570.133.20", "nvidia-fabricmanager-570")


SMI_Q = """
==============NVSMI LOG==============

Driver Version                            : 570.133.20
Attached GPUs                             : 2
GPU 00000000:18:00.0
    Product Name                          : NVIDIA H100 80GB HBM3
    Fabric
        State                             : Completed
        Status                            : Success
    Processes                             : None

GPU 00000000:2A:00.0
    Product Name                          : NVIDIA H100 80GB HBM3
    Fabric
        State                             : In Progress
        Status                            : N/A
"""


def test_fabric_states_per_gpu_with_evidence_lines():
    states = fabric_states(SMI_Q)
    assert [(s["gpu"], s["state"], s["status"]) for s in states] == [
        ("GPU 00000000:18:00.0", "Completed", "Success"),
        ("GPU 00000000:2A:00.0", "In Progress", "N/A"),
    ]
    assert states[1]["lines"] == [
        "Fabric",
        "State                             : In Progress",
        "Status                            : N/A",
    ]
    assert fabric_states("") == []


def test_packages_at_version_by_family():
    installed = {"nvidia-open-570": "570.133.20-1", "nvidia-fabricmanager-570": "570.133.20-1"}
    assert at_version(installed, "570.133.20") == ["nvidia-open-570"]
    assert at_version(installed, "570.133.20", "fabricmanager") == ["nvidia-fabricmanager-570"]
    with pytest.raises(AnsibleFilterError, match="family 'nscq'"):
        at_version(installed, "570.133.20", "nscq")
