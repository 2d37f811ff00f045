"""cfcore.hccn_plan: the NPU NIC plan rules (one implementation for inventory check and the roles)."""

from __future__ import annotations

import copy

import pytest
from cfcore import hccn_plan as hp

A2 = {"count": 8, "rate_gbps": 200, "subnet_rule": "single-subnet"}
A3 = {"count": 16, "rate_gbps": 200, "subnet_rule": "die-pairs-split"}
ATLAS9000 = {"count": 8, "rate_gbps": 100, "subnet_rule": "four-subnet-pairs"}


def plan(addresses, netmask="255.255.255.0", gateway_last=1):
    return [
        {
            "id": device,
            "address": address,
            "netmask": netmask,
            "gateway": ".".join([*address.split(".")[:3], str(gateway_last)]),
            "netdetect": ".".join([*address.split(".")[:3], str(gateway_last)]),
        }
        for device, address in enumerate(addresses)
    ]


def a2_plan():
    return plan([f"10.30.2.{11 + d}" for d in range(8)])


def a3_plan():
    # die 2k on 10.30.<plane 0>.x, die 2k+1 on 10.31.x: the two dies of an NPU on different planes
    return plan([f"10.3{d % 2}.2.{100 + d}" for d in range(16)])


def rules(findings, severity=None):
    return [(f["rule"], f["variable"]) for f in findings if severity is None or f["severity"] == severity]


def test_a_good_plan_has_no_finding():
    assert hp.plan_findings(a2_plan(), A2, "atlas-800t-a2", "10.30.0.0/16") == []
    assert hp.plan_findings(a3_plan(), A3, "atlas-800t-a3", "10.30.0.0/15") == []


def test_check_plan_returns_the_interfaces_with_their_index():
    devices = list(reversed(a2_plan()))
    findings, interfaces = hp.check_plan(devices, A2, "atlas-800t-a2")
    assert findings == []
    index, entry, iface = interfaces[0]
    assert index == 7 and entry is devices[7] and str(iface) == "10.30.2.11/24"


def test_not_a_list_and_not_a_mapping():
    assert rules(hp.plan_findings({"id": 0}, A2, "atlas-800t-a2")) == [("hccn.shape", "hccn_devices")]
    found = hp.plan_findings(["oops", *a2_plan()[1:]], A2, "atlas-800t-a2")
    assert ("hccn.shape", "hccn_devices[0]") in rules(found)
    assert ("hccn.count", "hccn_devices") in rules(found)
    assert next(f for f in found if f["rule"] == "hccn.shape")["value"] == "oops"


def test_missing_entry_names_the_missing_ids():
    found = hp.plan_findings(a2_plan()[:6], A2, "atlas-800t-a2")
    assert rules(found) == [("hccn.count", "hccn_devices")]
    assert "no entry for device id 6, 7 (6 entries)" in found[0]["message"]
    assert found[0]["fix"] == "plan every NPU NIC: ids 0..7"


def test_entry_lacking_keys_unknown_keys_and_bad_id():
    devices = a2_plan()
    del devices[1]["netdetect"]
    devices[2]["vlan"] = 12
    devices[3]["id"] = 9
    found = hp.plan_findings(devices, A2, "atlas-800t-a2")
    assert ("hccn.shape", "hccn_devices[1]") in rules(found, "error")
    assert ("hccn.unknown_key", "hccn_devices[2]") in rules(found, "warning")
    assert ("hccn.id", "hccn_devices[3].id") in rules(found, "error")
    assert "lacks netdetect" in next(f["message"] for f in found if f["rule"] == "hccn.shape")


def test_duplicate_id_skips_the_subnet_rule():
    devices = a2_plan()
    devices[5]["id"] = 4
    devices[5]["address"] = "10.30.9.16"
    found = hp.plan_findings(devices, A2, "atlas-800t-a2")
    assert ("hccn.duplicate_id", "hccn_devices[5].id") in rules(found)
    assert "hccn.subnet_rule" not in {f["rule"] for f in found}
    assert "(hccn_devices[4] too)" in next(f["message"] for f in found if f["rule"] == "hccn.duplicate_id")


@pytest.mark.parametrize(
    ("key", "value", "rule"),
    [
        ("address", "10.30.2.300", "ip.malformed"),
        ("gateway", "gw", "ip.malformed"),
        ("netdetect", "10.30.2", "ip.malformed"),
        ("netmask", "255.0.255.0", "ip.netmask"),
    ],
)
def test_malformed_values_name_the_variable(key, value, rule):
    devices = a2_plan()
    devices[3][key] = value
    found = hp.plan_findings(devices, A2, "atlas-800t-a2")
    hit = next(f for f in found if f["rule"] == rule)
    assert hit["variable"] == f"hccn_devices[3].{key}" and hit["value"] == value
    assert hit["severity"] == "error" and hit["fix"]


def test_network_or_broadcast_address_and_gateway_consistency():
    devices = a2_plan()
    devices[0]["address"] = "10.30.2.0"
    devices[1]["gateway"] = "10.31.0.1"
    devices[2]["gateway"] = devices[2]["address"]
    found = hp.plan_findings(devices, A2, "atlas-800t-a2")
    assert ("hccn.address", "hccn_devices[0].address") in rules(found)
    gateways = [f for f in found if f["rule"] == "hccn.gateway"]
    assert [g["variable"] for g in gateways] == ["hccn_devices[1].gateway", "hccn_devices[2].gateway"]
    assert "outside the NIC's subnet 10.30.2.0/24" in gateways[0]["message"]
    assert "is the NIC's own address" in gateways[1]["message"]


def test_single_subnet_rule():
    devices = plan([f"10.30.2.{21 + d}" for d in range(7)] + ["10.30.3.28"])
    found = hp.plan_findings(devices, A2, "atlas-800t-a2")
    assert rules(found) == [("hccn.subnet_rule", "hccn_devices[7].address")]
    assert "atlas-800t-a2 needs all NPU NIC addresses in one subnet" in found[0]["message"]
    assert found[0]["value"] == "10.30.3.28"


def test_four_subnet_pairs_rule():
    addresses = [
        *("192.168.1.11", "192.168.2.11", "192.168.3.11", "192.168.4.11"),
        *("192.168.1.12", "192.168.2.12", "192.168.3.12", "192.168.4.12"),
    ]
    assert hp.plan_findings(plan(addresses), ATLAS9000, "atlas-800-9000") == []
    addresses[4] = "192.168.2.13"
    found = hp.plan_findings(plan(addresses), ATLAS9000, "atlas-800-9000")
    assert rules(found) == [("hccn.subnet_rule", "hccn_devices[4].address")]
    assert "devices 0 and 4 must share a subnet" in found[0]["message"]


def test_four_subnet_pairs_needs_four_distinct_subnets():
    addresses = [f"192.168.{1 + (d % 4) // 2}.{11 + d}" for d in range(8)]  # pairs (0,1) and (2,3) share
    found = hp.plan_findings(plan(addresses), ATLAS9000, "atlas-800-9000")
    assert ("hccn.subnet_rule", "hccn_devices[1].address") in rules(found)
    assert any("needs four subnets" in f["message"] for f in found)


def test_die_pairs_split_rule():
    devices = a3_plan()
    devices[5].update(address="10.30.2.199", gateway="10.30.2.1", netdetect="10.30.2.1")
    found = hp.plan_findings(devices, A3, "atlas-800t-a3")
    assert rules(found) == [("hccn.subnet_rule", "hccn_devices[5].address")]
    assert "the two dies of NPU 2" in found[0]["message"]


def test_subnet_rule_waits_for_a_complete_plan():
    devices = a3_plan()[:15]
    devices[5].update(address="10.30.2.199", gateway="10.30.2.1", netdetect="10.30.2.1")
    assert rules(hp.plan_findings(devices, A3, "atlas-800t-a3")) == [("hccn.count", "hccn_devices")]


def test_addresses_must_lie_inside_fabric_npu_network():
    found = hp.plan_findings(a2_plan(), A2, "atlas-800t-a2", "10.40.0.0/16")
    assert [f["variable"] for f in found] == [f"hccn_devices[{i}].address" for i in range(8)]
    assert {f["rule"] for f in found} == {"hccn.outside_network"}
    assert "outside fabric_npu_network 10.40.0.0/16" in found[0]["message"]


@pytest.mark.parametrize("network", ["10.30.0.1/16", "not a network", 42])
def test_malformed_fabric_npu_network_is_its_own_rule(network):
    found = hp.plan_findings(a2_plan(), A2, "atlas-800t-a2", network)
    assert rules(found) == [(hp.NPU_NETWORK_RULE, "fabric_npu_network")]


def test_the_plan_is_not_modified():
    devices = a3_plan()
    before = copy.deepcopy(devices)
    hp.plan_findings(devices, A3, "atlas-800t-a3", "10.30.0.0/15")
    assert devices == before


# --- device state against the plan ---------------------------------------------------------


def test_gateway_and_netdetect_readers():
    assert hp.parse_gateway("default gateway:10.30.2.1, Iface:eth0\n") == "10.30.2.1"
    assert hp.parse_gateway("default gateway:, Iface:eth3\n") is None
    assert hp.parse_netdetect("netdetect address: 10.30.2.1\n") == "10.30.2.1"
    assert hp.parse_netdetect("netdetect address: \n") is None
    with pytest.raises(hp.ReadError, match=r"not hccn_tool -gateway -g output: 'Invalid command\.'"):
        hp.parse_gateway("Invalid command.\n")
    with pytest.raises(hp.ReadError, match="is not an IPv4 address"):
        hp.parse_netdetect("netdetect address: 10.30.2\n")


def test_conf_reader_and_lines():
    conf = hp.parse_conf(
        "# hccn\naddress_0=10.30.2.11\nnetmask_0 = 255.255.255.0\ngarbage\ngateway_0=10.30.2.1\n"
    )
    assert conf == {"address_0": "10.30.2.11", "netmask_0": "255.255.255.0", "gateway_0": "10.30.2.1"}
    assert hp.conf_state(conf, 0) == {
        "address": "10.30.2.11",
        "netmask": "255.255.255.0",
        "gateway": "10.30.2.1",
        "netdetect": None,
    }
    assert hp.conf_lines(0, hp.conf_state(conf, 0)).splitlines()[-1] == "netdetect_0="


def test_items_to_write_compares_live_state_and_conf():
    planned = hp.planned_state(a2_plan()[0])
    live = dict(planned)
    assert hp.items_to_write(planned, live) == []
    assert hp.items_to_write(planned, live, conf=dict(planned)) == []
    assert hp.items_to_write(planned, {**live, "netmask": "255.255.0.0"}) == ["ip"]
    assert hp.items_to_write(planned, {**live, "gateway": None, "netdetect": "10.30.2.9"}) == [
        "gateway",
        "netdetect",
    ]
    # live right but not kept in /etc/hccn.conf: set again so hccn_tool records it
    assert hp.items_to_write(planned, live, conf={**planned, "netdetect": None}) == ["netdetect"]


def test_set_argv():
    planned = hp.planned_state(a2_plan()[3])
    tool = "/usr/local/Ascend/driver/tools/hccn_tool"
    assert hp.set_argv(tool, 3, "ip", planned) == [
        *(tool, "-i", "3", "-ip", "-s", "address", "10.30.2.14", "netmask", "255.255.255.0"),
    ]
    assert hp.set_argv(tool, 3, "gateway", planned)[3:] == ["-gateway", "-s", "gateway", "10.30.2.1"]
    assert hp.set_argv(tool, 3, "netdetect", planned)[3:] == ["-netdetect", "-s", "address", "10.30.2.1"]
    with pytest.raises(ValueError, match="unknown hccn_tool item"):
        hp.set_argv(tool, 3, "tls", planned)
