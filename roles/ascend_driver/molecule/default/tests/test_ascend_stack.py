"""The Ascend and PPU stacks on real Debian 12 nodes with replayed NPUs/PPUs, after
side_effect.yml moved the BOM to the newer set: what the installers left (version
files, install records, the firmware flash record), the CANN layout, the users'
environment and the Python packages, the NIC plan as hccn_tool keeps it, the
container runtime, npu-exporter, the labels facts, and what the replayed
hardware reports. Every check reads real node state; none of it would hold on a
node the roles did not touch.
"""

from __future__ import annotations

import json

import cfmol_testinfra as cfmol
import pytest

# side_effect.yml's upgrade (inventory file upgrade.yml).
DRIVER, FIRMWARE, CANN, RUNTIME = "25.5.0", "7.8.0.5.216", "8.5.0", "7.0.0"
FIRST_FIRMWARE = "7.7.0.6.236"
PPU_SDK = "2.2.0"
# The A2's NIC 5 was re-addressed by the upgrade run.
A2_NIC5 = "192.168.200.56"
ASCEND = "/usr/local/Ascend"


def ascend_only(host):
    if "npu_ascend" not in cfmol.node_vars(host)["group_names"]:
        pytest.skip("an Ascend node's check")


def ppu_only(host):
    if "npu_ppu" not in cfmol.node_vars(host)["group_names"]:
        pytest.skip("a PPU node's check")


def info(host, path: str) -> dict[str, str]:
    """key=value lines of a vendor info file."""
    text = host.file(path).content_string
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def test_driver_and_firmware_are_the_bom_versions(host):
    ascend_only(host)
    assert info(host, f"{ASCEND}/driver/version.info")["Version"] == DRIVER
    assert info(host, f"{ASCEND}/firmware/version.info")["Version"] == FIRMWARE
    install = info(host, "/etc/ascend_install.info")
    # Installed fresh for HwHiAiUser; the upgrade (no user options allowed) kept it.
    assert install["UserName"] == "HwHiAiUser"
    assert "--upgrade" in install["Driver_Install_Command"]
    assert host.user("HwHiAiUser").group == "HwHiAiUser"


def test_firmware_was_flashed_once_per_version_in_order(host):
    """Fresh: driver, then firmware 7.7; the idempotence and check runs flashed nothing;
    the upgrade flashed 7.8 before the driver moved (the test driver refuses otherwise)."""
    ascend_only(host)
    flashes = host.file("/var/lib/hwreplay-pkgs/ascend-firmware-flashed.log").content_string.splitlines()
    versions = [
        field.split("=", 1)[1] for line in flashes for field in line.split() if field.startswith("version=")
    ]
    assert versions == [FIRST_FIRMWARE, FIRMWARE], flashes


def test_the_replay_reports_the_installed_versions_and_compatibility(host):
    ascend_only(host)
    header = host.check_output("npu-smi info").splitlines()[1]
    assert DRIVER in header, header
    board = host.check_output("npu-smi info -t board -i 0")
    assert "Compatibility" in board and "NOK" not in board, board
    fact = json.loads(host.file("/etc/ansible/facts.d/clusterforge_ascend_driver.fact").content_string)
    assert fact["installed"] == DRIVER and fact["firmware"] == FIRMWARE, fact
    assert fact["compatible"] is True, fact


def test_cann_is_the_85_layout_and_the_old_release_is_gone(host):
    ascend_only(host)
    home = f"{ASCEND}/cann"
    assert host.file(home).is_symlink and host.file(home).linked_to == f"{ASCEND}/cann-{CANN}"
    assert info(host, f"{home}/x86_64-linux/ascend_toolkit_install.info")["version"] == CANN
    assert host.file(f"{home}/x86_64-linux/ascend_ops_install.info").exists  # the required <chip>-ops
    assert host.file(f"{home}/set_env.sh").exists
    assert not host.file(f"{ASCEND}/ascend-toolkit/8.2.RC1").exists  # uninstalled before 8.5
    assert host.file(f"{ASCEND}/nnal/atb/set_env.sh").exists


def test_login_shells_get_cann_and_the_python_packages_are_in_the_named_venv(host):
    ascend_only(host)
    env = host.check_output("bash -lc 'echo $ASCEND_TOOLKIT_HOME'")
    assert env.rstrip("/").endswith("cann") or CANN in env, env
    packages = cfmol.node_vars(host)["cann_python_packages"]
    frozen = host.check_output("/opt/clusterforge/cann-venv/bin/python -m pip freeze").lower().split()
    assert {p.lower() for p in packages} <= set(frozen), frozen
    system = host.run("python3 -c 'import attrs'")
    assert system.rc != 0, "CANN's packages went into the system interpreter"


def test_nic_plan_is_what_hccn_tool_keeps(host):
    ascend_only(host)
    plan = {d["id"]: dict(d) for d in cfmol.node_vars(host)["hccn_devices"]}
    if cfmol.node_name(host) == "cfmol-ascend-a2":
        plan[5]["address"] = A2_NIC5
    conf = info(host, "/etc/hccn.conf")
    for device, entry in plan.items():
        assert conf[f"address_{device}"] == entry["address"], device
        assert conf[f"netmask_{device}"] == entry["netmask"], device
        assert conf[f"gateway_{device}"] == entry["gateway"], device
        assert conf[f"netdetect_{device}"] == entry["netdetect"], device
        ip = host.check_output(f"hccn_tool -i {device} -ip -g")
        assert entry["address"] in ip, (device, ip)


def test_runtime_is_registered_with_containerd(host):
    ascend_only(host)
    runtime = info(host, f"{ASCEND}/Ascend-Docker-Runtime/ascend_docker_runtime_install.info")
    assert runtime["version"].lstrip("v") == RUNTIME
    config = host.file("/etc/containerd/config.toml").content_string
    assert "ascend-docker-runtime" in config
    assert host.service("containerd").is_running


def test_npu_exporter_serves_metrics_as_hwhiaiuser(host):
    ascend_only(host)
    service = host.service("npu-exporter")
    assert service.is_running and service.is_enabled
    user = host.check_output("systemctl show -p User --value npu-exporter")
    assert user == "HwHiAiUser"
    port = cfmol.node_vars(host).get("npu_exporter_port", 8082)
    fetch = (
        'python3 -c "import urllib.request as u; '
        f"print(u.urlopen('http://127.0.0.1:{port}/metrics').read().decode())\""
    )
    served = cfmol.wait_for(lambda: host.run(fetch).rc == 0, timeout=20)
    assert served, host.run(fetch).stderr
    metrics = host.check_output(fetch)
    version = cfmol.node_vars(host)["npu_exporter_version"]
    assert f'npu_exporter_version_info{{exporterVersion="v{version}"}} 1' in metrics
    # one health gauge per NPU chip, read from the (replayed) devices
    chips = 16 if cfmol.node_name(host) == "cfmol-ascend-a3" else 8
    health = [line for line in metrics.splitlines() if line.startswith("npu_chip_info_health_status{")]
    assert len(health) == chips, health


def test_device_plugin_labels_fact(host):
    ascend_only(host)
    fact = json.loads(host.file("/etc/ansible/facts.d/clusterforge_ascend_labels.fact").content_string)
    labels = fact["labels"]
    assert labels["workerselector"] == "dls-worker-node"
    assert labels["host-arch"] == "huawei-x86"
    assert labels["accelerator"] == "huawei-Ascend910"
    assert fact["resource"] == "huawei.com/Ascend910"


def test_ppu_sdk_is_installed_and_on_path(host):
    ppu_only(host)
    record = json.loads(host.file("/etc/clusterforge/ppu.json").content_string)
    assert record["version"] == PPU_SDK, record
    assert host.file("/usr/local/bin/ppu-smi").is_symlink
    listing = host.check_output("bash -lc 'ppu-smi -L'")
    assert listing.count("PPU ") == 16, listing
    labels = json.loads(host.file("/etc/ansible/facts.d/clusterforge_ppu_labels.fact").content_string)
    assert labels["resource"] == "alibabacloud.com/ppu"
    assert labels["labels"]["aliyun.accelerator/xpu_type"] == "ppu"
    assert labels["labels"]["aliyun.accelerator/ppu_count"] == "16"
