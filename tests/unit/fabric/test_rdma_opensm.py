"""cfcore.opensm: partitions.conf lines and the port GUIDs OpenSM binds (role ib_fabric)."""

from __future__ import annotations

import pytest
from cfcore.opensm import OpensmError, partitions_lines, pkey_value, port_guids


def test_partitions_are_rendered_one_line_each():
    lines = partitions_lines(
        [
            {"name": "Default", "pkey": "0x7fff", "members": "ALL=full", "ipoib": True},
            {"name": "storage", "pkey": "0x2"},
            {"name": "compute", "pkey": 3, "members": "0x0002c903000e0b72=full, ALL=limited", "ipoib": False},
        ]
    )
    assert lines == [
        "Default=0x7fff, ipoib : ALL=full ;",
        "storage=0x0002 : ALL=full ;",
        "compute=0x0003 : 0x0002c903000e0b72=full, ALL=limited ;",
    ]


def test_an_empty_list_renders_nothing():
    assert partitions_lines([]) == []


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"name": "x", "pkey": "0x8001"}, r"\[0\] \(x\): pkey '0x8001' is not a P_Key in 0x0001-0x7fff"),
        ({"name": "x", "pkey": "0x0000"}, "not a P_Key"),
        ({"name": "x", "pkey": "8001"}, "not a P_Key"),
        ({"name": "x", "pkey": True}, "not a P_Key"),
        ({"name": "x"}, "pkey None"),
        ({"name": "bad name", "pkey": "0x1"}, r"\[0\]: name 'bad name' must be"),
        ({"name": "x", "pkey": "0x1", "members": "ALL=full ; y"}, "members"),
        ({"name": "x", "pkey": "0x1", "members": "ALL"}, "members"),
        ({"name": "x", "pkey": "0x1", "ipoib": "yes"}, "ipoib must be true or false"),
        ({"name": "x", "pkey": "0x1", "mtu": 4}, r"unknown keys \['mtu'\]"),
        ("Default=0x7fff", "must be a mapping"),
    ],
)
def test_bad_entries_name_the_variable_and_the_entry(entry, message):
    with pytest.raises(OpensmError, match=r"ib_fabric_opensm_partitions.*" + message):
        partitions_lines([entry])


def test_duplicate_names_and_keys_are_refused():
    with pytest.raises(OpensmError, match=r"\[1\] \(a\): the name a is also .*\[0\]"):
        partitions_lines([{"name": "a", "pkey": "0x1"}, {"name": "a", "pkey": "0x2"}])
    with pytest.raises(OpensmError, match=r"pkey 0x0001 is also .*\[0\]"):
        partitions_lines([{"name": "a", "pkey": "0x1"}, {"name": "b", "pkey": 1}])


def test_not_a_list_is_refused():
    with pytest.raises(OpensmError, match="must be a list"):
        partitions_lines({"name": "a"})


def test_pkey_values():
    assert pkey_value("0x7FFF", "w") == 0x7FFF
    assert pkey_value(1, "w") == 1


def test_port_guids():
    assert port_guids([]) == [] and port_guids(None) == []
    assert port_guids(["0x0002C903000E0B72", "0x0002c903000e0b72", "0x0002c903000e0b73"]) == [
        "0x0002c903000e0b72",
        "0x0002c903000e0b73",
    ]
    with pytest.raises(OpensmError, match=r"ib_fabric_opensm_guids\[0\] is '0x12', not a port GUID"):
        port_guids(["0x12"])
    with pytest.raises(OpensmError, match="must be a list"):
        port_guids("0x0002c903000e0b72")
