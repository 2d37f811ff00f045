"""nvidia_driver_state: loaded module against installed userspace, on sample files and package lists."""

from __future__ import annotations

import sys
from pathlib import Path

import module_runner
import pytest
from cfcore import nvidia_packages as nv
from patience import HANG_S

ROOT = Path(__file__).resolve().parents[3]
PROPRIETARY_570 = (
    "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.133.20  Fri Feb 28 00:35:31 UTC 2025\n"
    "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n"
)
OPEN_590 = (
    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  590.48.01  Release Build  "
    "(dvs-builder@U22-I3-AF03-09-1)  Tue Nov 18 04:40:50 UTC 2025\nGCC version:  gcc version 12.2.0\n"
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (PROPRIETARY_570, ("570.133.20", "proprietary")),
        (OPEN_590, ("590.48.01", "open")),
        (
            "NVRM version: NVIDIA UNIX aarch64 Kernel Module  535.183.01  Sun May 12 ...\n",
            ("535.183.01", "proprietary"),
        ),
        ("", (None, None)),
        ("garbage\n", (None, None)),
    ],
)
def test_loaded_module_version_and_flavour(text, expected):
    assert nv.loaded_module(text) == expected


def test_mismatch_needs_a_reboot_and_gives_both_fixes():
    verdict = nv.driver_state("590.48.01", "570.133.20", "590.48.01", gpus_on_bus=8)
    assert verdict["mismatch"] is True
    assert verdict["reboot_required"] is True
    assert "kernel module 570.133.20 is loaded, userspace 590.48.01 is installed" in verdict["reasons"][0]
    assert "reboot" in verdict["fix"] and "modprobe -r" in verdict["fix"]


def test_matching_versions_are_no_mismatch():
    verdict = nv.driver_state("570.133.20", "570.133.20", "570.133.20", gpus_on_bus=8)
    assert verdict == {"mismatch": False, "reboot_required": False, "reasons": [], "fix": ""}


def test_installed_differs_from_the_bom():
    verdict = nv.driver_state("570.124.06", "570.124.06", "570.133.20", gpus_on_bus=8)
    assert verdict["mismatch"] is False
    assert verdict["reasons"] == [
        "installed userspace 570.124.06 is not the BOM's nvidia_driver_version 570.133.20"
    ]


def test_container_and_gpu_less_node_say_why_no_module_is_loaded():
    container = nv.driver_state("535.309.01", None, "535.309.01", in_container=True)
    assert container["mismatch"] is False and container["reboot_required"] is False
    assert "container, which shares the host's kernel" in container["reasons"][0]
    no_gpu = nv.driver_state("535.309.01", None, "535.309.01", in_container=False, gpus_on_bus=0)
    assert no_gpu["reasons"] == ["no NVIDIA kernel module is loaded: no NVIDIA GPU is on this node's PCI bus"]


def test_gpu_present_module_not_loaded_says_load_it():
    verdict = nv.driver_state("570.133.20", None, "570.133.20", gpus_on_bus=8)
    assert verdict["reboot_required"] is False
    assert "modprobe nvidia" in verdict["fix"]


def write_node(tmp_path, proc_text=None, lib_versions=(), gpus=0):
    proc = tmp_path / "proc-version"
    if proc_text is not None:
        proc.write_text(proc_text)
    lib = tmp_path / "lib"
    lib.mkdir()
    for version in lib_versions:
        (lib / f"libnvidia-ml.so.{version}").write_text("")
    (lib / "libnvidia-ml.so.1").write_text("")
    for index in range(gpus):
        device = tmp_path / "sys/bus/pci/devices" / f"0000:{0x18 + index:02x}:00.0"
        device.mkdir(parents=True)
        (device / "vendor").write_text("0x10de\n")
        (device / "class").write_text("0x030200\n")
    nic = tmp_path / "sys/bus/pci/devices/0000:01:00.0"
    nic.mkdir(parents=True)
    (nic / "vendor").write_text("0x15b3\n")
    (nic / "class").write_text("0x020700\n")
    return {
        "proc_version_path": str(proc),
        "library_dirs": [str(lib)],
        "sysfs_root": str(tmp_path),
        "in_container": False,
        "driver_version": "590.48.01",
    }


def run_module(args: dict) -> dict:
    return module_runner.run_module("nvidia_driver_state", args, timeout=HANG_S)


def test_module_reports_the_mismatch_from_the_library_file(tmp_path, watchdog):
    args = write_node(tmp_path, PROPRIETARY_570, ["590.48.01"], gpus=8)
    result = run_module({**args, "package_manager": "none"})
    assert result["changed"] is False
    assert (result["installed"], result["loaded"], result["loaded_flavour"]) == (
        "590.48.01",
        "570.133.20",
        "proprietary",
    )
    assert result["installed_source"].endswith("libnvidia-ml.so.590.48.01")
    assert result["mismatch"] is True and result["reboot_required"] is True
    assert result["gpus_on_bus"] == 8


def test_module_in_check_mode_with_no_driver(tmp_path, watchdog):
    args = write_node(tmp_path)
    result = run_module(
        {**args, "package_manager": "none", "_ansible_check_mode": True, "in_container": True}
    )
    assert result["installed"] is None and result["loaded"] is None
    assert result["mismatch"] is False
    assert "no NVIDIA driver userspace is installed" in result["reasons"]
    assert any("container" in reason for reason in result["reasons"])


def test_module_rejects_unknown_options(tmp_path, watchdog):
    result = run_module({"package_manager": "none", "proc_version": "/x"})
    assert result["failed"] is True and "proc_version" in result["msg"]


def load_module():
    sys.path.insert(0, str(ROOT / ".collections"))
    from ansible_collections.clusterforge.cluster.plugins.modules import nvidia_driver_state

    return nvidia_driver_state


def test_dpkg_listing_gives_versions_and_holds():
    module = load_module()
    installed, held = module.parse_dpkg(
        "nvidia-open-570\t570.133.20-1\thold ok installed\n"
        "libnvidia-compute-570\t570.133.20-1\tinstall ok installed\n"
        "nvidia-dkms-570\t570.124.06-1\tdeinstall ok config-files\n"
        "bash\t5.2.15-2+b7\tinstall ok installed\n"
    )
    assert installed == {
        "nvidia-open-570": "570.133.20-1",
        "libnvidia-compute-570": "570.133.20-1",
        "bash": "5.2.15-2+b7",
    }
    assert held == ["nvidia-open-570"]


def test_installed_version_from_packages_when_no_library_file(tmp_path):
    module = load_module()
    params = write_node(tmp_path, OPEN_590)
    result = module.state(
        params,
        {
            "nvidia-open": "590.48.01-1",
            "libnvidia-compute": "590.48.01-1",
            "nvidia-kernel-common": "590.48.01-1",
            "nvidia-fabricmanager": "590.48.01-1",
            "nvidia-container-toolkit": "1.17.8-1",
        },
        ["nvidia-open", "nvidia-fabricmanager", "bash"],
    )
    assert result["installed"] == "590.48.01" and result["installed_source"] == "packages"
    assert result["loaded"] == "590.48.01" and result["loaded_flavour"] == "open"
    assert result["mismatch"] is False
    assert "nvidia-container-toolkit" not in result["packages"]
    assert result["fabricmanager_packages"] == {"nvidia-fabricmanager": "590.48.01-1"}
    assert result["held"] == ["nvidia-open", "nvidia-fabricmanager"]
