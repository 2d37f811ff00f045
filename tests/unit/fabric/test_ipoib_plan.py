"""The IPoIB plan (cfcore/ipoib.py) and its filter cf_ipoib_plan: defaults, names, and every refusal."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from cfcore.inputs import InputError
from cfcore.ipoib import normalize_interfaces
from fabric_plugins import load_plugin

ipoib_filter = load_plugin("filter", "ipoib")
cf_ipoib_plan = ipoib_filter.cf_ipoib_plan


def test_defaults_per_mode_and_the_kernel_name_of_a_partition_child():
    plan = normalize_interfaces(
        [
            {"name": "ib0", "address": "10.40.0.11/16"},
            {"parent": "ib0", "pkey": "0x0001", "address": "10.41.0.11/16", "mode": "connected"},
            {"name": "ib1.p2", "parent": "ib1", "pkey": 0x7FFF, "address": "10.42.0.11/24", "mtu": 4092},
        ]
    )
    assert plan[0] == {
        "name": "ib0",
        "address": "10.40.0.11",
        "prefix": 16,
        "mtu": 2044,
        "parent": None,
        "pkey": None,
        "mode": "datagram",
    }
    assert (plan[1]["name"], plan[1]["pkey"], plan[1]["mtu"]) == ("ib0.8001", "0x0001", 65520)
    assert (plan[2]["name"], plan[2]["pkey"], plan[2]["mtu"]) == ("ib1.p2", "0x7fff", 4092)


def test_normalizing_twice_changes_nothing():
    once = normalize_interfaces([{"parent": "ib0", "pkey": "0x12", "address": "10.41.0.11/16"}])
    assert normalize_interfaces(once) == once
    assert normalize_interfaces(None) == [] and normalize_interfaces([]) == []


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        ({"address": "10.40.0.11/16"}, "fabric_ipoib_interfaces[0].name is missing"),
        ({"name": "ib0"}, "fabric_ipoib_interfaces[0].address is missing"),
        ({"name": "ib0", "address": "10.40.0.11"}, "address '10.40.0.11' has no prefix length"),
        ({"name": "ib0", "address": "10.40.0.300/16"}, "is not IPv4/prefix"),
        ({"name": "ib0", "address": "10.40.0.0/16"}, "network or broadcast address"),
        ({"name": "ib0", "address": "224.0.0.1/4"}, "not a unicast host address"),
        ({"name": "ib0", "address": "10.40.0.11/16", "prefix": 24}, "prefix 24 disagrees"),
        ({"name": "ib0", "address": "10.40.0.11/16", "mode": "fast"}, "mode must be datagram or connected"),
        ({"name": "ib0", "address": "10.40.0.11/16", "mtu": 9000}, "mtu 9000 is outside 68-4092 in datagram"),
        ({"name": "ib0", "address": "10.40.0.11/16", "mtu": "big"}, "mtu must be a whole number"),
        ({"name": "ib0", "address": "10.40.0.11/16", "mtu": 70000, "mode": "connected"}, "outside 68-65520"),
        ({"name": "ib0", "address": "10.40.0.11/16", "pkey": "0x0001"}, "pkey 0x0001 needs parent"),
        ({"name": "ib0.1", "parent": "ib0", "address": "10.40.0.11/16"}, "parent is only for partition"),
        ({"parent": "ib0", "pkey": "0x8001", "address": "10.40.0.11/16"}, "full-membership bit set"),
        ({"parent": "ib0", "pkey": "0x0000", "address": "10.40.0.11/16"}, "outside 0x0001-0x7fff"),
        ({"parent": "ib0", "pkey": "one", "address": "10.40.0.11/16"}, "must be a hex P_Key"),
        (
            {"name": "an-interface-name-too-long", "address": "10.40.0.11/16"},
            "must be a Linux interface name",
        ),
        ({"name": "ib0", "address": "10.40.0.11/16", "netmask": "255.255.0.0"}, "unknown key(s) netmask"),
    ],
)
def test_bad_entries_name_the_entry_and_the_field(entry, words):
    with pytest.raises(InputError) as raised:
        normalize_interfaces([entry])
    assert words in raised.value.message
    assert raised.value.fix


def test_full_membership_fix_gives_the_pkey_without_the_bit():
    with pytest.raises(InputError) as raised:
        normalize_interfaces([{"parent": "ib0", "pkey": 0x8005, "address": "10.41.0.11/16"}])
    assert "pkey: '0x0005'" in raised.value.fix


def test_names_and_addresses_are_unique():
    with pytest.raises(InputError, match=r"\[1\]\.name ib0 is also fabric_ipoib_interfaces\[0\]'s"):
        normalize_interfaces(
            [{"name": "ib0", "address": "10.40.0.11/16"}, {"name": "ib0", "address": "10.40.0.12/16"}]
        )
    with pytest.raises(InputError, match=r"\[1\]\.address 10.40.0.11"):
        normalize_interfaces(
            [{"name": "ib0", "address": "10.40.0.11/16"}, {"name": "ib1", "address": "10.40.0.11/16"}]
        )


def test_a_plan_that_is_not_a_list_is_refused():
    with pytest.raises(InputError, match="fabric_ipoib_interfaces must be a list"):
        normalize_interfaces({"name": "ib0"})
    with pytest.raises(InputError, match=r"fabric_ipoib_interfaces\[0\] must be a mapping"):
        normalize_interfaces(["ib0"])


def test_filter_wraps_the_plan_and_reports_errors_with_the_fix():
    assert ipoib_filter.FilterModule().filters() == {"cf_ipoib_plan": cf_ipoib_plan}
    assert cf_ipoib_plan([{"name": "ib0", "address": "10.40.0.11/16"}])[0]["mtu"] == 2044
    with pytest.raises(AnsibleFilterError) as raised:
        cf_ipoib_plan([{"name": "ib0", "address": "10.40.0.11/16", "mtu": 9000}])
    assert str(raised.value).startswith("error: fabric_ipoib_interfaces[0].mtu 9000")
    assert "\n  fix: use mode: connected" in str(raised.value)
