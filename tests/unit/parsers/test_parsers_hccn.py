"""hccn_tool -ip / -link / -net_health -g."""

from __future__ import annotations

import pytest
from cfcore.parsers import ParseError, parse
from cfcore.parsers.hccn import parse_hccn_ip, parse_hccn_link, parse_hccn_net_health


def test_ip_of_one_device(load):
    facts = parse("hccn-ip", load("ascend/hccn_ip.txt"), device=3)
    assert {key: facts[key] for key in ("device", "address", "netmask", "prefix_length")} == {
        "device": 3,
        "address": "29.1.137.205",
        "netmask": "255.255.0.0",
        "prefix_length": 16,
    }
    assert len(facts["devices"]) == 1


def test_ip_without_a_device_id_leaves_it_none(load):
    assert parse_hccn_ip(load("ascend/hccn_ip.txt"))["device"] is None


def test_ip_capture_of_eight_devices_with_echoed_commands(load):
    facts = parse("hccn-ip", load("ascend/hccn_ip_x8.txt"))
    assert facts["device"] is None and facts["address"] is None  # several devices: see `devices`
    assert [(entry["device"], entry["address"]) for entry in facts["devices"]] == [
        (i, f"10.20.0.{11 + i}") for i in range(8)
    ]
    assert {entry["prefix_length"] for entry in facts["devices"]} == {24}


def test_ip_echoed_command_names_the_device():
    facts = parse_hccn_ip("$ hccn_tool -i 5 -ip -g\nipaddr:192.168.100.105\nnetmask:255.255.255.0\n")
    assert (facts["device"], facts["address"]) == (5, "192.168.100.105")


def test_ip_refuses_a_bad_address_naming_the_line():
    with pytest.raises(ParseError, match=r"ipaddr '10\.xx\.xx\.10' is not an IP address") as caught:
        parse("hccn-ip", "ipaddr:10.xx.xx.10\nnetmask:255.255.255.0\n")
    assert caught.value.line == 1


def test_ip_refuses_empty_output_and_other_commands(load):
    with pytest.raises(ParseError, match="empty input"):
        parse("hccn-ip", "")
    with pytest.raises(ParseError, match="printed nothing for device 2"):
        parse("hccn-ip", "/usr/local/Ascend/driver/tools/hccn_tool -i 2 -ip -g\n\n")
    with pytest.raises(ParseError, match="holds `hccn_tool -link`"):
        parse("hccn-ip", "/usr/local/Ascend/driver/tools/hccn_tool -i 0 -link -g\nlink status: UP\n")
    with pytest.raises(ParseError, match="not hccn_tool -ip output"):
        parse("hccn-ip", load("ascend/hccn_link_up.txt"))


def test_link_up_and_down(load):
    up = parse_hccn_link(load("ascend/hccn_link_up.txt"), device=0)
    down = parse("hccn-link", load("ascend/hccn_link_down.txt"), device=1)
    assert (up["device"], up["link_status"], up["up"]) == (0, "UP", True)
    assert (down["device"], down["link_status"], down["up"]) == (1, "DOWN", False)


@pytest.mark.parametrize(
    ("name", "status", "healthy"),
    [
        ("ascend/hccn_net_health_success.txt", "Success", True),
        ("ascend/hccn_net_health_init.txt", "Init", False),
        ("ascend/hccn_net_health_socket_fail.txt", "Socket fail", False),
        ("ascend/hccn_net_health_receive_timeout.txt", "Receive timeout", False),
    ],
)
def test_net_health_words(load, name, status, healthy):
    facts = parse_hccn_net_health(load(name), device=4)
    assert (facts["device"], facts["net_health"], facts["healthy"]) == (4, status, healthy)


def test_device_prefix_lines_name_the_device():
    facts = parse("hccn-link", "[devid 6] link status: UP\n")
    assert (facts["device"], facts["up"]) == (6, True)


def test_tool_error_is_reported_as_such():
    with pytest.raises(ParseError, match="hccn_tool reported an error"):
        parse("hccn-net-health", "hccn_tool: get net health failed, ret = -8255\n")
