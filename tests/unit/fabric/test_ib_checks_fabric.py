"""ib.link_layer, ib.ipoib and gpu.peermem on parsed inputs: each rule, its evidence and its remedy."""

from __future__ import annotations

import json

import pytest
from cfcore.checks import gpudirect, infiniband
from cfcore.ipoib import normalize_interfaces, parse_ip_addr
from cfcore.outputs import Output

IB = {"count": 8, "rate_gbps": 400, "link_layer": "InfiniBand"}
ROCE = {"count": 8, "rate_gbps": 400, "link_layer": "Ethernet", "devices": ["mlx5_[0-7]"]}


def ca(name, layer="InfiniBand", ca_type="MT4129", ports=1):
    entry = {"state": "Active", "physical_state": "LinkUp", "rate_gbps": 400, "link_layer": layer}
    return {
        "name": name,
        "type": ca_type,
        "firmware": "28.39.2048",
        "ports": [{"port": n + 1, **entry} for n in range(ports)],
    }


def hcas(layers: dict | None = None, front_end: int = 2) -> Output:
    layers = layers or {}
    cas = [ca(f"mlx5_{n}", layers.get(n, "InfiniBand")) for n in range(8)]
    cas += [ca(f"mlx5_{8 + n}", "Ethernet") for n in range(front_end)]
    return Output.from_data("ibstat", {"cas": cas})


# ------------------------------------------------------------------ ib.link_layer


def test_link_layer_passes_and_names_front_end_nics_when_the_sku_names_no_hca():
    result = infiniband.ib_link_layer(hcas(), IB)
    assert result["status"] == "pass"
    assert (
        result["message"]
        == "all 8 compute ports are InfiniBand; not compute (no InfiniBand port): mlx5_8, mlx5_9"
    )


def test_a_compute_port_set_to_ethernet_fails_link_layer_with_the_mlxconfig_fix():
    result = infiniband.ib_link_layer(hcas({2: "Ethernet"}, front_end=0), IB)
    assert result["status"] == "fail"
    assert result["message"].startswith("mlx5_2 port 1 is Ethernet, the SKU's compute fabric is InfiniBand")
    assert "mlxconfig -d mlx5_2 set LINK_TYPE_P1=1" in result["remedy"] and "reboot" in result["remedy"]
    assert "mlx5_2/ports/1/link_layer: Ethernet" in result["evidence"]["lines"]
    # It does not vanish: ib.hca_count counts 7 of 8, ib.port_state judges the 7 it sees.
    assert infiniband.ib_hca_count(hcas({2: "Ethernet"}, front_end=0), IB)["status"] == "fail"


def test_without_selectors_short_of_the_count_every_other_layer_ca_is_a_suspect():
    result = infiniband.ib_link_layer(hcas({2: "Ethernet"}), IB)
    assert result["status"] == "fail"
    for name in ("mlx5_2", "mlx5_8", "mlx5_9"):
        assert f"{name} port 1 is Ethernet" in result["message"]
    assert "front-end NIC, name the compute HCAs in hca.ca_types or hca.devices" in result["message"]


def test_selected_hcas_must_have_the_layer_on_every_port():
    spec = {**ROCE}
    cas = [ca(f"mlx5_{n}", "Ethernet") for n in range(8)]
    cas[5] = ca("mlx5_5", "InfiniBand")
    cas.append(ca("mlx5_bond_0", "InfiniBand"))  # not selected by hca.devices: never judged
    result = infiniband.ib_link_layer(Output.from_data("ibstat", {"cas": cas}), spec)
    assert result["status"] == "fail" and result["message"].startswith("mlx5_5 port 1 is InfiniBand")
    assert "(if mlx5_5 is a front-end NIC" not in result["message"]
    assert "LINK_TYPE_P1=2" in result["remedy"]


def test_second_port_of_a_dual_port_compute_hca_is_judged_too():
    dual = ca("mlx5_0", ports=2)
    dual["ports"][1]["link_layer"] = "Ethernet"
    spec = {**IB, "count": 1, "ca_types": ["MT4129"]}
    result = infiniband.ib_link_layer(Output.from_data("ibstat", {"cas": [dual]}), spec)
    assert result["status"] == "fail" and "mlx5_0 port 2 is Ethernet" in result["message"]
    assert "LINK_TYPE_P2=1" in result["remedy"]


def test_a_port_without_a_link_layer_is_an_error_not_a_pass():
    unknown = ca("mlx5_0")
    unknown["ports"][0]["link_layer"] = None
    result = infiniband.ib_link_layer(
        Output.from_data("ibstat", {"cas": [unknown]}), {**IB, "count": 1, "devices": ["mlx5_0"]}
    )
    assert result["status"] == "error" and "reports no link layer" in result["message"]


def test_link_layer_skips_without_hca_and_errs_without_input():
    assert infiniband.ib_link_layer(hcas(), None)["status"] == "skip"
    missing = Output("ibstat", "not_found", error="ibstat not found on PATH")
    assert infiniband.ib_link_layer(missing, IB)["status"] == "error"
    empty = Output.from_data("ibstat", {"cas": []})
    assert infiniband.ib_link_layer(empty, IB)["status"] == "fail"


def test_port_checks_keep_ignoring_other_layers():
    # The existing checks judge the compute ports of the SKU's layer only.
    faulty = hcas({2: "Ethernet"}, front_end=0)
    assert infiniband.ib_port_state(faulty, IB)["message"] == "all 7 compute ports Active / LinkUp"


# ------------------------------------------------------------------------ ib.ipoib

PLAN = normalize_interfaces(
    [
        {"name": "ib0", "address": "10.40.0.11/16"},
        {"parent": "ib0", "pkey": "0x0001", "address": "10.41.0.11/16", "mode": "connected"},
    ]
)


def link(name, address=None, prefix=16, operstate="UP", flags=None, mtu=2044):
    info = [{"family": "inet", "local": address, "prefixlen": prefix}] if address else []
    return {
        "ifname": name,
        "flags": flags or ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"],
        "mtu": mtu,
        "operstate": operstate,
        "link_type": "infiniband",
        "addr_info": [*info, {"family": "inet6", "local": "fe80::1", "prefixlen": 64}],
    }


def ip_addr(*links) -> Output:
    base = [
        {"ifname": "lo", "flags": ["LOOPBACK", "UP"], "mtu": 65536, "operstate": "UNKNOWN", "addr_info": []}
    ]
    return Output("ip -j addr show", "ok", text=json.dumps(base + list(links)))


def healthy():
    return [link("ib0", "10.40.0.11"), link("ib0.8001", "10.41.0.11", mtu=65520)]


def test_ipoib_passes_when_every_planned_interface_is_up_with_its_address_and_mtu():
    result = infiniband.ib_ipoib(ip_addr(*healthy()), PLAN)
    assert result["status"] == "pass"
    assert (
        result["message"] == "2 IPoIB interface(s) up as planned: ib0 10.40.0.11/16, ib0.8001 10.41.0.11/16"
    )


def test_unknown_operstate_with_carrier_counts_as_up():
    links = healthy()
    links[0]["operstate"] = "UNKNOWN"
    assert infiniband.ib_ipoib(ip_addr(*links), PLAN)["status"] == "pass"
    links[0]["flags"] = ["BROADCAST", "MULTICAST", "UP"]
    result = infiniband.ib_ipoib(ip_addr(*links), PLAN)
    assert result["status"] == "fail" and result["message"] == "ib0 is UNKNOWN, not up"


@pytest.mark.parametrize(
    ("change", "message", "remedy"),
    [
        (lambda links: links.pop(1), "ib0.8001 does not exist", "partition child needs its parent ib0"),
        (lambda links: links[0].update(operstate="DOWN"), "ib0 is DOWN, not up", "ib.port_state"),
        (
            lambda links: links[0].update(addr_info=[]),
            "ib0 should hold 10.40.0.11/16, does not hold it",
            "reload",
        ),
        (
            lambda links: links[0]["addr_info"][0].update(prefixlen=24),
            "ib0 should hold 10.40.0.11/16, holds 10.40.0.11/24",
            "ib_fabric",
        ),
        (
            lambda links: links[1].update(mtu=2044),
            "ib0.8001 MTU 2044, planned 65520 (connected mode)",
            "65520",
        ),
    ],
)
def test_each_ipoib_fault_fails_with_its_evidence_and_remedy(change, message, remedy):
    links = healthy()
    change(links)
    result = infiniband.ib_ipoib(ip_addr(*links), PLAN)
    assert result["status"] == "fail"
    assert result["message"] == message
    assert remedy in result["remedy"]
    assert result["evidence"]["command"] == "ip -j addr show"


def test_ipoib_skips_without_a_plan_and_errs_without_usable_output():
    assert infiniband.ib_ipoib(None, [])["status"] == "skip"
    missing = Output("ip -j addr show", "not_found", error="ip not found on PATH")
    assert infiniband.ib_ipoib(missing, PLAN)["status"] == "error"
    garbage = Output("ip -j addr show", "ok", text="1: lo: <LOOPBACK,UP> mtu 65536")
    result = infiniband.ib_ipoib(garbage, PLAN)
    assert result["status"] == "error" and "iproute2" in result["remedy"]


def test_parse_ip_addr_keeps_ipv4_addresses_and_skips_filtered_entries():
    parsed = parse_ip_addr(json.dumps([{}, link("ib0", "10.40.0.11")]))
    assert parsed["ib0"]["addresses"] == [("10.40.0.11", 16)]
    assert parsed["ib0"]["operstate"] == "UP" and parsed["ib0"]["mtu"] == 2044
    with pytest.raises(ValueError, match="expected a JSON list"):
        parse_ip_addr('{"ifname": "ib0"}')


# ---------------------------------------------------------------------- gpu.peermem


def module(present: bool, live: bool = True) -> Output:
    path = "/sys/module/nvidia_peermem"
    return Output(f"test -d {path}", "ok", data={"present": present, "path": path, "live": live})


PROC_LINE = "nvidia_peermem 16384 0 - Live 0x0000000000000000 (OE)"


def test_peermem_passes_on_the_module_directory_or_proc_modules():
    assert gpudirect.gpu_peermem(module(True), None, True)["status"] == "pass"
    proc = Output("/proc/modules", "ok", text=f"nvidia_uvm 1 0 - Live 0x0\n{PROC_LINE}\n")
    result = gpudirect.gpu_peermem(module(False), proc, True)
    assert result["status"] == "pass" and result["evidence"]["lines"] == [PROC_LINE]


def test_peermem_missing_fails_with_the_ofed_ordering_remedy():
    proc = Output("/proc/modules", "ok", text="nvidia 1 0 - Live 0x0\nnvidia_peermemx 1 0 - Live 0x0\n")
    result = gpudirect.gpu_peermem(module(False), proc, True)
    assert result["status"] == "fail"
    assert "modprobe nvidia-peermem" in result["remedy"] and "OFED" in result["remedy"]
    assert result["evidence"]["lines"] == [
        "/sys/module/nvidia_peermem: absent",
        "/proc/modules: no nvidia_peermem line",
    ]
    unreadable = Output("/proc/modules", "not_found", error="/proc/modules does not exist")
    assert gpudirect.gpu_peermem(module(False), unreadable, True)["status"] == "fail"


def test_peermem_in_a_capture_without_the_files_is_an_error():
    not_captured = Output("/proc/modules", "not_captured", error="proc-modules.txt is not in the capture")
    result = gpudirect.gpu_peermem(module(False, live=False), not_captured, True)
    assert result["status"] == "error" and "cf-capture.sh" in result["remedy"]


def test_peermem_skips_where_not_required():
    result = gpudirect.gpu_peermem(None, None, False, "SKU x has no compute-fabric HCAs")
    assert result["status"] == "skip" and result["message"] == "SKU x has no compute-fabric HCAs"
