"""ibstat and the /sys/class/infiniband tree, read into one shape."""

from __future__ import annotations

import pytest
from cfcore.parsers import ParseError, parse, read_sysfs_infiniband

IB_CAS = ["mlx5_0", "mlx5_10", "mlx5_11", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9"]


def test_ibstat_all_ports_active(load):
    cas = parse("ibstat", load("ib/ibstat_h100_all_active.txt"))["cas"]
    assert len(cas) == 10
    ib = [ca for ca in cas if ca["type"] == "MT4129"]
    assert sorted(ca["name"] for ca in ib) == sorted(IB_CAS)
    first = cas[0]
    assert (first["name"], first["type"], first["firmware"], first["port_count"]) == (
        "mlx5_0",
        "MT4129",
        "28.39.2048",
        1,
    )
    assert first["node_guid"] == "0x946dae0300d7a12c"
    port = first["ports"][0]
    assert {key: port[key] for key in ("port", "state", "physical_state", "rate_gbps", "link_layer")} == {
        "port": 1,
        "state": "Active",
        "physical_state": "LinkUp",
        "rate_gbps": 400,
        "link_layer": "InfiniBand",
    }
    assert (port["base_lid"], port["sm_lid"]) == (101, 1)
    roce = [ca for ca in cas if ca["ports"][0]["link_layer"] == "Ethernet"]
    assert [(ca["name"], ca["ports"][0]["rate_gbps"]) for ca in roce] == [("mlx5_1", 200), ("mlx5_2", 200)]


def test_ibstat_down_polling_and_initializing_ports(load):
    cas = parse("ibstat", load("ib/ibstat_h100_down_polling.txt"))["cas"]
    bad = {
        ca["name"]: (ca["ports"][0]["state"], ca["ports"][0]["physical_state"], ca["ports"][0]["rate_gbps"])
        for ca in cas
        if ca["ports"][0]["state"] != "Active"
    }
    assert bad == {"mlx5_5": ("Down", "Polling", 10), "mlx5_9": ("Initializing", "LinkUp", 400)}


def test_ibstat_keeps_ibpanic_lines(load):
    text = (
        load("ib/ibstat_h100_all_active.txt")
        + "ibpanic: [41823] main: stat of IB device 'mlx5_12' failed: No such file or directory\n"
    )
    facts = parse("ibstat", text)
    assert len(facts["cas"]) == 10
    assert facts["tool_messages"] == [
        "ibpanic: [41823] main: stat of IB device 'mlx5_12' failed: No such file or directory"
    ]


def test_ibstat_fractional_rate():
    text = (
        "CA 'mlx4_0'\n\tCA type: MT4099\n\tPort 1:\n"
        "\t\tState: Active\n\t\tPhysical state: LinkUp\n\t\tRate: 2.5\n"
    )
    assert parse("ibstat", text)["cas"][0]["ports"][0]["rate_gbps"] == 2.5


def test_ibstat_refuses_ibstatus_empty_and_truncated(load):
    ibstatus = (
        "Infiniband device 'mlx5_0' port 1 status:\n"
        "\tdefault gid:\t fe80:0000:0000:0000:946d:ae03:00d7:a12c\n"
    )
    with pytest.raises(ParseError, match="this is ibstatus output"):
        parse("ibstat", ibstatus)
    with pytest.raises(ParseError, match="empty input"):
        parse("ibstat", "\n")
    lines = load("ib/ibstat_h100_all_active.txt").splitlines()
    with pytest.raises(ParseError, match="truncated ibstat output: mlx5_0 port 1"):
        parse("ibstat", "\n".join(lines[:8]))


def _tree(root, cas):
    """Write a /sys/class/infiniband tree under root: {ca: ({file: text}, {port: {file: text}})}."""
    base = root / "sys" / "class" / "infiniband"
    for name, (attributes, ports) in cas.items():
        ca_dir = base / name
        (ca_dir / "ports").mkdir(parents=True)
        for file, text in attributes.items():
            (ca_dir / file).write_text(text + "\n")
        for port, files in ports.items():
            port_dir = ca_dir / "ports" / str(port)
            port_dir.mkdir()
            for file, text in files.items():
                (port_dir / file).write_text(text + "\n")
    return root


def _port(state="4: ACTIVE", phys="5: LinkUp", rate="400 Gb/sec (4X NDR)", layer="InfiniBand"):
    return {
        "state": state,
        "phys_state": phys,
        "rate": rate,
        "link_layer": layer,
        "lid": "0x65",
        "sm_lid": "0x1",
    }


def _ca(fw="28.39.2048", port=None):
    attributes = {
        "fw_ver": fw,
        "hca_type": "MT4129",
        "board_id": "MT_0000000838",
        "node_guid": "946d:ae03:00d7:a12c",
    }
    return attributes, {1: port or _port()}


def test_sysfs_tree_reads_into_the_ibstat_shape(tmp_path):
    root = _tree(
        tmp_path, {"mlx5_10": _ca(), "mlx5_2": _ca(port=_port("1: DOWN", "2: Polling", "10 Gb/sec (4X SDR)"))}
    )
    facts = read_sysfs_infiniband(str(root))
    assert [ca["name"] for ca in facts["cas"]] == ["mlx5_2", "mlx5_10"]  # natural order
    ca = facts["cas"][1]
    assert (ca["type"], ca["firmware"], ca["board_id"], ca["node_guid"], ca["port_count"]) == (
        "MT4129",
        "28.39.2048",
        "MT_0000000838",
        "0x946dae0300d7a12c",
        1,
    )
    port = ca["ports"][0]
    assert (port["state"], port["physical_state"], port["rate_gbps"], port["link_layer"]) == (
        "Active",
        "LinkUp",
        400,
        "InfiniBand",
    )
    assert (port["base_lid"], port["sm_lid"]) == (101, 1)
    down = facts["cas"][0]["ports"][0]
    assert (down["state"], down["physical_state"], down["rate_gbps"]) == ("Down", "Polling", 10)


def test_sysfs_and_ibstat_agree_on_the_contract_keys(tmp_path, load):
    ibstat = parse("ibstat", load("ib/ibstat_h100_all_active.txt"))
    cas = {}
    for ca in ibstat["cas"]:
        port = ca["ports"][0]
        rate = f"{port['rate_gbps']} Gb/sec (4X NDR)"
        cas[ca["name"]] = (
            {"fw_ver": ca["firmware"], "hca_type": ca["type"]},
            {1: _port(rate=rate, layer=port["link_layer"])},
        )
    sysfs = read_sysfs_infiniband(str(_tree(tmp_path, cas)))
    keys = ("port", "state", "physical_state", "rate_gbps", "link_layer")

    def view(facts):
        return sorted(
            (
                ca["name"],
                ca["type"],
                ca["firmware"],
                [tuple(port[key] for key in keys) for port in ca["ports"]],
            )
            for ca in facts["cas"]
        )

    assert view(sysfs) == view(ibstat)


def test_sysfs_missing_or_malformed_tree_is_an_error(tmp_path):
    with pytest.raises(ParseError, match="no RDMA device"):
        read_sysfs_infiniband(str(tmp_path))
    (tmp_path / "sys" / "class" / "infiniband").mkdir(parents=True)
    with pytest.raises(ParseError, match="is empty"):
        read_sysfs_infiniband(str(tmp_path))
    (tmp_path / "sys" / "class" / "infiniband" / "mlx5_0").mkdir()
    with pytest.raises(ParseError, match="has no ports/ directory"):
        read_sysfs_infiniband(str(tmp_path))
    (tmp_path / "sys" / "class" / "infiniband" / "mlx5_0" / "ports" / "1").mkdir(parents=True)
    with pytest.raises(ParseError, match="no readable state/phys_state") as caught:
        read_sysfs_infiniband(str(tmp_path))
    assert caught.value.kind == "sysfs-infiniband"
