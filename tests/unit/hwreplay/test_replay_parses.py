"""Every replayed output parses with the parsers the validator uses on real tools (cfcore.parsers).

This is the replay tool's contract: what a lab node prints must be understood by
the same code that reads real nvidia-smi, npu-smi, hccn_tool, ibstat, lspci and
dmesg, with the hardware facts (8 GPUs, 8 NPUs, ...) and every fault visible.
"""

from __future__ import annotations

import pytest
from hwreplay_testlib import QUERY_GPU_ARGS
from replaylib import control
from replaylib import roce as replay_roce
from replaylib.profiles import resolve

parsers = pytest.importorskip("cfcore.parsers", reason="cfcore.parsers is not written yet")
if not hasattr(parsers, "parse"):
    pytest.skip("cfcore.parsers has no parse() yet", allow_module_level=True)
parse = parsers.parse

NVIDIA_PROFILES = (
    "h100-healthy",
    "h200-healthy",
    "h100-xid79",
    "h100-pcie-x8",
    "h100-ib-port-down",
    "h100-remapped-rows-pending",
    "h100-fabricmanager-failed",
    "h100-ib-wrong-rate",
    "h100-ib-link-layer-eth",
    "h100-peermem-missing",
    "roce-healthy",
)
ASCEND_PROFILES = ("910b-healthy", "910b-health-alarm", "910b-nic-net-health-fail")
GPU_FORMS = {
    "nvidia-smi-q": ["-q"],
    "nvidia-smi-q-xml": ["-q", "-x"],
    "nvidia-smi-csv": QUERY_GPU_ARGS,
}


def out(render, profile: str, tool: str, *args: str) -> str:
    result = render(profile, tool, *args)
    assert result.rc == 0, result.stderr
    return result.stdout


def gpus_of(render, profile: str, kind: str) -> list:
    return parse(kind, out(render, profile, "nvidia-smi", *GPU_FORMS[kind]))["gpus"]


@pytest.mark.parametrize("kind", sorted(GPU_FORMS))
@pytest.mark.parametrize("profile", NVIDIA_PROFILES)
def test_gpu_forms_parse_to_the_profile(ctx, render, profile, kind):
    expected = resolve(ctx, profile)["nvidia"]["gpus"]
    gpus = gpus_of(render, profile, kind)
    assert len(gpus) == 8
    for gpu, want in zip(gpus, expected, strict=True):
        assert gpu["index"] == want["index"]
        assert gpu["uuid"] == want["uuid"] and gpu["serial"] == want["serial"]
        assert gpu["name"] == want["name"]
        assert gpu["pci_bus_id"] == want["bus_id"].lower()[4:]
        assert (gpu["pcie_gen_max"], gpu["pcie_width_max"]) == (5, 16)
        assert gpu["pcie_width_current"] == want["pcie"]["width_current"]
        assert (gpu["persistence_mode"], gpu["ecc_mode"]) == ("Enabled", "Enabled")
        assert gpu["memory_total_mib"] == want["memory"]["total_mib"]
        assert gpu["retired_pages_pending"] is None  # Hopper: N/A
        assert gpu["remapped_rows_pending"] is want["remapped_rows"]["pending"]
        assert gpu["temperature_c"] == want["temperature"]["gpu_c"]


@pytest.mark.parametrize("kind", sorted(GPU_FORMS))
def test_gpu_faults_are_visible_in_every_form(render, kind):
    widths = [gpu["pcie_width_current"] for gpu in gpus_of(render, "h100-pcie-x8", kind)]
    assert widths == [16, 16, 16, 8, 16, 16, 16, 16]
    remapped = gpus_of(render, "h100-remapped-rows-pending", kind)
    assert [gpu["remapped_rows_pending"] for gpu in remapped] == [False] * 5 + [True] + [False] * 2
    assert [gpu["ecc_uncorrected_volatile"] for gpu in remapped] == [0] * 5 + [1] + [0] * 2


@pytest.mark.parametrize("kind", ["nvidia-smi-q", "nvidia-smi-q-xml"])
def test_fabric_state(render, kind):
    assert {gpu["fabric_state"] for gpu in gpus_of(render, "h100-healthy", kind)} == {"Completed"}
    assert {gpu["fabric_state"] for gpu in gpus_of(render, "h100-fabricmanager-failed", kind)} == {
        "In Progress"
    }


def test_driver_version_from_host_overrides(render, tmp_path):
    (tmp_path / "no-overrides.json").write_text('{"nvidia_driver_version": "550.127.05"}')
    for kind in GPU_FORMS:
        text = out(render, "h100-healthy", "nvidia-smi", *GPU_FORMS[kind])
        parsed = parse(kind, text)
        assert parsed["driver_version"] == "550.127.05"
        assert all(gpu["power_draw_w"] > 50 for gpu in parsed["gpus"])  # 550's average/instant draw


def test_topology_and_nvlink(render):
    topo = parse("nvidia-smi-topo", out(render, "h100-healthy", "nvidia-smi", "topo", "-m"))
    assert topo["devices"] == [f"GPU{i}" for i in range(8)] + [f"NIC{i}" for i in range(10)]
    assert [nic["device"] for nic in topo["nics"]] == [f"mlx5_{i}" for i in range(10)]
    assert topo["nics"][3]["links"]["GPU3"] == "PXB"
    nvlink = parse("nvidia-smi-nvlink", out(render, "h100-healthy", "nvidia-smi", "nvlink", "-s"))
    assert len(nvlink["gpus"]) == 8
    for gpu in nvlink["gpus"]:
        assert len(gpu["links"]) == 18
        assert {link["speed_gbps"] for link in gpu["links"]} == {26.562}


def test_xid79_in_the_kernel_log(render):
    for args in ([], ["-T"]):
        healthy = parse("xid", out(render, "h100-healthy", "dmesg", *args))
        assert healthy["events"] == []
        faulty = parse("xid", out(render, "h100-xid79", "dmesg", *args))
        assert [(event["xid"], event["pci_bus_id"]) for event in faulty["events"]] == [(79, "0000:52:00.0")]
    remapped = parse("xid", out(render, "h100-remapped-rows-pending", "dmesg"))
    assert [(event["xid"], event["pci_bus_id"]) for event in remapped["events"]] == [(63, "0000:c3:00.0")]


def test_lspci_links(render):
    for args in (["-vvv"], ["-vvv", "-nn", "-D"]):
        healthy = parse("lspci", out(render, "h100-healthy", "lspci", *args))["devices"]
        gpus = [device for device in healthy if device["class"] == "3D controller"]
        assert len(gpus) == 8 and not any(device["downgraded"] for device in healthy)
        faulty = parse("lspci", out(render, "h100-pcie-x8", "lspci", *args))["devices"]
        downgraded = [device for device in faulty if device["downgraded"]]
        assert [(d["bus_id"], d["link_sta_width"], d["link_cap_width"]) for d in downgraded] == [
            ("0000:61:00.0", 8, 16)
        ]
    numeric = parse("lspci", out(render, "910b-healthy", "lspci", "-vvv", "-nn", "-D"))["devices"]
    npus = [device for device in numeric if (device["vendor_id"], device["device_id"]) == ("19e5", "d802")]
    assert len(npus) == 8


def ib_ports(result: dict) -> dict:
    return {
        (ca["name"], port["port"]): (
            port["state"],
            port["physical_state"],
            port["rate_gbps"],
            port["link_layer"],
        )
        for ca in result["cas"]
        for port in ca["ports"]
    }


@pytest.mark.parametrize("profile", ["h100-healthy", "h100-ib-port-down", "h200-healthy"])
def test_ibstat_and_sysfs_agree(ctx, render, tmp_path, profile):
    from_tool = ib_ports(parse("ibstat", out(render, profile, "ibstat")))
    control.set_profile(ctx, profile)
    from_sysfs = ib_ports(parsers.read_sysfs_infiniband(str(tmp_path / "sysroot")))
    assert from_tool == from_sysfs
    assert len(from_tool) == 10
    fabric = {key: value for key, value in from_tool.items() if value[3] == "InfiniBand"}
    assert len(fabric) == 8
    down = sorted(key for key, value in fabric.items() if value[0] != "Active")
    assert down == ([("mlx5_3", 1)] if profile == "h100-ib-port-down" else [])
    if down:
        assert fabric[("mlx5_3", 1)][:3] == ("Down", "Polling", 40)


@pytest.mark.parametrize(
    "profile, odd_port",
    [
        ("h100-ib-wrong-rate", ("mlx5_5", 1, ("Active", "LinkUp", 200, "InfiniBand"))),
        ("h100-ib-link-layer-eth", ("mlx5_2", 1, ("Active", "LinkUp", 400, "Ethernet"))),
    ],
)
def test_ib_port_faults_agree_in_ibstat_and_sysfs(ctx, render, tmp_path, profile, odd_port):
    from_tool = ib_ports(parse("ibstat", out(render, profile, "ibstat")))
    control.set_profile(ctx, profile)
    assert from_tool == ib_ports(parsers.read_sysfs_infiniband(str(tmp_path / "sysroot")))
    healthy = ib_ports(parse("ibstat", out(render, "h100-healthy", "ibstat")))
    name, port, value = odd_port
    assert {key for key in from_tool if from_tool[key] != healthy[key]} == {(name, port)}
    assert from_tool[(name, port)] == value


@pytest.mark.parametrize("profile", ["roce-healthy", "roce-pfc-off"])
def test_mlnx_qos_parses_to_the_profile(ctx, render, profile):
    from cfcore.parsers.mlnx_qos import parse_mlnx_qos

    netdevs = replay_roce.netdevs(resolve(ctx, profile))
    assert len(netdevs) == 8
    for netdev in netdevs:
        qos = parse_mlnx_qos(out(render, profile, "mlnx_qos", "-i", netdev["name"]))
        assert qos["trust"] == netdev["trust"] == "dscp"
        assert qos["pfc"] == netdev["pfc"]
        assert qos["dscp2prio"][26] == 3 and qos["dscp2prio"][48] == 6  # the firmware's dscp >> 3
        assert qos["warnings"] == []
    pfc_on = [qos_pfc.index(1) for qos_pfc in (netdev["pfc"] for netdev in netdevs) if 1 in qos_pfc]
    assert pfc_on == ([] if profile == "roce-pfc-off" else [3] * 8)


@pytest.mark.parametrize("profile", ASCEND_PROFILES)
def test_npu_smi_parses(ctx, render, profile):
    hardware = resolve(ctx, profile)["ascend"]
    info = parse("npu-smi-info", out(render, profile, "npu-smi", "info"))
    assert (info["version"], info["npu_count"], info["chip_count"]) == ("24.1.rc2", 8, 8)
    assert [npu["bus_id"] for npu in info["npus"]] == [npu["bus_id"].lower() for npu in hardware["npus"]]
    assert [npu["health"] for npu in info["npus"]] == [npu["health"] for npu in hardware["npus"]]
    for npu in hardware["npus"]:
        board = parse(
            "npu-smi-board", out(render, profile, "npu-smi", "info", "-t", "board", "-i", str(npu["id"]))
        )
        assert (board["npu_id"], board["software_version"], board["firmware_version"]) == (
            npu["id"],
            "24.1.rc2",
            "7.5.0.1.129",
        )
        assert board["pci_device_id"] == "d802"
        health = parse(
            "npu-smi-health", out(render, profile, "npu-smi", "info", "-t", "health", "-i", str(npu["id"]))
        )
        assert health["health"] == npu["health"]
        assert health["error_codes"] == ([npu["error_code"]] if npu["error_code"] else [])


def test_npu_health_alarm_is_visible(render):
    info = parse("npu-smi-info", out(render, "910b-health-alarm", "npu-smi", "info"))
    assert [npu["npu_id"] for npu in info["npus"] if npu["health"] != "OK"] == [5]
    health = parse(
        "npu-smi-health", out(render, "910b-health-alarm", "npu-smi", "info", "-t", "health", "-i", "5")
    )
    assert (health["health"], health["error_codes"]) == ("Alarm", ["80E18402"])


@pytest.mark.parametrize("profile", ASCEND_PROFILES)
def test_hccn_tool_parses(ctx, render, profile):
    for npu in resolve(ctx, profile)["ascend"]["npus"]:
        device = str(npu["id"])
        ip = parse("hccn-ip", out(render, profile, "hccn_tool", "-i", device, "-ip", "-g"), device=npu["id"])
        assert (ip["address"], ip["netmask"], ip["prefix_length"]) == (
            npu["nic"]["address"],
            "255.255.255.0",
            24,
        )
        link = parse(
            "hccn-link", out(render, profile, "hccn_tool", "-i", device, "-link", "-g"), device=npu["id"]
        )
        assert link["up"] is True
        health = parse(
            "hccn-net-health",
            out(render, profile, "hccn_tool", "-i", device, "-net_health", "-g"),
            device=npu["id"],
        )
        failing = profile == "910b-nic-net-health-fail" and npu["id"] == 3
        assert health["healthy"] is not failing
        assert health["net_health"] == ("Receive timeout" if failing else "Success")


def test_nic_plan_from_host_overrides(render, tmp_path):
    (tmp_path / "no-overrides.json").write_text(
        '{"hccn_devices": [{"id": 0, "address": "172.16.8.20", "netmask": "255.255.252.0"}]}'
    )
    ip = parse("hccn-ip", out(render, "910b-healthy", "hccn_tool", "-i", "0", "-ip", "-g"), device=0)
    assert (ip["address"], ip["prefix_length"]) == ("172.16.8.20", 22)
