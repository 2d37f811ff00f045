"""cfcore/roce.py: the plan and its errors, the commands, observing and comparing a port."""

from __future__ import annotations

import pytest
from cfcore import roce
from cfcore.inputs import InputError
from roce_testlib import fixture

PLAN = roce.normalize_plan({"interfaces": ["enp24s0np0"]})
ROOT = "/opt/hwreplay/sysroot"


def test_defaults_and_derived_values():
    assert PLAN == {
        "interfaces": ["enp24s0np0"],
        "trust": "dscp",
        "pfc_priority": 3,
        "dscp": 26,
        "cnp_dscp": 48,
        "ecn": True,
        "mtu": 9000,
        "gid_index": 3,
        "traffic_class": 104,
        "roce_tos": 104,
    }


def test_values_as_an_ini_inventory_gives_them():
    plan = roce.normalize_plan(
        {"interfaces": ["eth2", "eth3"], "trust": "PCP", "pfc_priority": "4", "dscp": "24", "ecn": "no"}
    )
    assert (plan["trust"], plan["pfc_priority"], plan["dscp"], plan["ecn"]) == ("pcp", 4, 24, False)
    assert plan["traffic_class"] == plan["roce_tos"] == 96


@pytest.mark.parametrize("interfaces", [None, []])
def test_no_interface_is_no_plan(interfaces):
    assert roce.normalize_plan({"interfaces": interfaces, "pfc_priority": 3}) is None
    assert roce.normalize_plan(None) is None


@pytest.mark.parametrize(
    ("values", "message", "fix"),
    [
        ({"pfc_priority": 9}, "fabric_roce_pfc_priority must be 0-7, got 9", "the one lossless priority"),
        ({"pfc_priority": True}, "fabric_roce_pfc_priority must be 0-7, got True", "default 3"),
        ({"dscp": 64}, "fabric_roce_dscp must be 0-63, got 64", "DSCP of RoCE data"),
        ({"cnp_dscp": -1}, "fabric_roce_cnp_dscp must be 0-63, got -1", "congestion notifications"),
        ({"mtu": 12000}, "fabric_roce_mtu must be 1280-9978, got 12000", "netdev MTU"),
        ({"gid_index": "three"}, "fabric_roce_gid_index must be 0-255, got 'three'", "show_gids"),
        ({"trust": "l2"}, "fabric_roce_trust must be dscp or pcp, got 'l2'", "fabric_roce_trust: dscp"),
        ({"ecn": "sometimes"}, "fabric_roce_ecn must be true or false", "fabric_roce_ecn: true"),
        ({"interfaces": "eth2"}, "fabric_roce_interfaces must be a list", "YAML list"),
        ({"interfaces": ["eth2", "eth2"]}, "fabric_roce_interfaces lists eth2 twice", "once"),
        ({"interfaces": ["eth 2"]}, "fabric_roce_interfaces[0] is not a netdev name", "ip -br link"),
        ({"interfaces": ["a-very-long-netdev-name"]}, "is not a netdev name", "15 characters"),
        ({"priority": 3}, "unknown RoCE plan key(s) priority", "fabric_roce_* variables"),
    ],
)
def test_errors_name_the_variable_and_the_fix(values, message, fix):
    with pytest.raises(InputError) as exc:
        roce.normalize_plan({"interfaces": ["eth2"], **values})
    assert message in exc.value.message
    assert fix in exc.value.fix


def test_apply_commands_in_order_with_sysfs_root():
    commands = roce.apply_commands(PLAN, "enp24s0np0", "mlx5_0", ROOT)
    assert commands[:3] == [
        ["mlnx_qos", "-i", "enp24s0np0", "--trust", "dscp"],
        ["mlnx_qos", "-i", "enp24s0np0", "--pfc", "0,0,0,1,0,0,0,0"],
        ["mlnx_qos", "-i", "enp24s0np0", "--dscp2prio", "set,26,3"],
    ]
    writes = [(argv[4], argv[5]) for argv in commands if argv[0] == "sh"]
    assert writes == [
        ("1", f"{ROOT}/sys/class/net/enp24s0np0/ecn/roce_np/enable/3"),
        ("1", f"{ROOT}/sys/class/net/enp24s0np0/ecn/roce_rp/enable/3"),
        ("48", f"{ROOT}/sys/class/net/enp24s0np0/ecn/roce_np/cnp_dscp"),
        ("104", f"{ROOT}/sys/class/infiniband/mlx5_0/tc/1/traffic_class"),
        ("104", f"{ROOT}/sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos"),
    ]
    mkdir = commands.index(["mkdir", "-p", f"{ROOT}/sys/kernel/config/rdma_cm/mlx5_0"])
    assert commands[mkdir + 1][5].endswith("default_roce_tos")  # the configfs dir before its attribute
    assert commands[-1] == ["ip", "link", "set", "dev", "enp24s0np0", "mtu", "9000"]


def test_pcp_trust_sets_no_dscp_mapping_and_ecn_off_writes_zero():
    plan = roce.normalize_plan({"interfaces": ["eth2"], "trust": "pcp", "ecn": False})
    commands = roce.apply_commands(plan, "eth2", "mlx5_2")
    assert not [argv for argv in commands if "--dscp2prio" in argv]
    assert [
        "sh",
        "-c",
        'printf "%s\\n" "$1" > "$2"',
        "sh",
        "0",
        "/sys/class/net/eth2/ecn/roce_np/enable/3",
    ] in commands


def test_apply_commands_refuse_an_unplanned_interface_or_no_ibdev():
    with pytest.raises(InputError, match="eth9 is not in fabric_roce_interfaces"):
        roce.apply_commands(PLAN, "eth9", "mlx5_0")
    with pytest.raises(InputError, match="no IB device given for enp24s0np0"):
        roce.apply_commands(PLAN, "enp24s0np0", None)


def test_write_values_are_never_parsed_by_a_shell():
    argv = roce.setting_commands(PLAN, "enp24s0np0", "mlx5_0", "/x; rm -rf /")["cnp_dscp"][0]
    assert argv[:4] == ["sh", "-c", 'printf "%s\\n" "$1" > "$2"', "sh"]
    assert argv[5] == "/x; rm -rf /sys/class/net/enp24s0np0/ecn/roce_np/cnp_dscp"  # one argument
    assert roce.fix_text([argv]) == "echo 48 > '/x; rm -rf /sys/class/net/enp24s0np0/ecn/roce_np/cnp_dscp'"


def healthy_sysfs(**changes) -> dict:
    sysfs = {
        "present": True,
        "ibdev": "mlx5_0",
        "ibdevs": ["mlx5_0"],
        "mtu": "9000\n",
        "ecn_np": "1\n",
        "ecn_rp": "1\n",
        "cnp_dscp": "48\n",
        "traffic_class": "Global tclass=104\n",
        "roce_tos": "104\n",
        "gid_type": "RoCE v2\n",
        "gid": "0000:0000:0000:0000:0000:ffff:0a28:000b\n",
        "paths": roce.paths("enp24s0np0", "mlx5_0", PLAN, "/"),
    }
    sysfs.update(changes)
    return sysfs


def test_a_port_as_planned_has_no_difference():
    state = {"enp24s0np0": roce.observe(fixture("mlnx_qos-doca-dscp-pfc3.txt"), healthy_sysfs())}
    assert state["enp24s0np0"]["traffic_class"] == 104
    assert roce.compare(PLAN, state) == []


def test_every_difference_names_what_was_found_and_the_fix():
    sysfs = healthy_sysfs(
        mtu="1500\n", ecn_rp="0\n", cnp_dscp=None, traffic_class="\n", roce_tos=None, gid_type="IB/RoCE v1\n"
    )
    state = {"enp24s0np0": roce.observe(fixture("mlnx_qos-doca-pcp-pfc-off.txt"), sysfs)}
    found = {d["setting"]: d for d in roce.compare(PLAN, state)}
    assert list(found) == ["trust", "pfc", "ecn_rp", "cnp_dscp", "traffic_class", "roce_tos", "mtu", "gid"]
    assert found["trust"]["found"] == "pcp" and found["trust"]["fix"] == "mlnx_qos -i enp24s0np0 --trust dscp"
    assert found["pfc"]["planned"] == "0,0,0,1,0,0,0,0" and found["pfc"]["found"] == "0,0,0,0,0,0,0,0"
    assert found["ecn_rp"]["fix"] == "echo 1 > /sys/class/net/enp24s0np0/ecn/roce_rp/enable/3"
    assert found["cnp_dscp"]["found"] == "absent (/sys/class/net/enp24s0np0/ecn/roce_np/cnp_dscp)"
    assert found["traffic_class"]["found"] == "absent (/sys/class/infiniband/mlx5_0/tc/1/traffic_class)"
    assert found["roce_tos"]["fix"] == (
        "mkdir -p /sys/kernel/config/rdma_cm/mlx5_0; "
        "echo 104 > /sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos"
    )
    assert found["mtu"] == {
        "interface": "enp24s0np0",
        "setting": "mtu",
        "planned": 9000,
        "found": 1500,
        "fix": "ip link set dev enp24s0np0 mtu 9000",
    }
    assert "give enp24s0np0 its IPv4 address" in found["gid"]["fix"]


def test_the_rdma_priority_must_be_where_the_rdma_dscp_maps():
    plan = roce.normalize_plan({"interfaces": ["enp24s0np0"], "pfc_priority": 4, "dscp": 26})
    pfc4 = fixture("mlnx_qos-doca-dscp-pfc3.txt").replace(
        "enabled     0   0   0   1   0   0   0   0", "enabled     0   0   0   0   1   0   0   0"
    )
    sysfs = healthy_sysfs(ecn_np="1", ecn_rp="1", paths=roce.paths("enp24s0np0", "mlx5_0", plan, "/"))
    differences = roce.compare(plan, {"enp24s0np0": roce.observe(pfc4, sysfs)})
    assert [d["setting"] for d in differences] == ["dscp2prio"]
    assert differences[0]["found"] == "dscp 26 -> prio 3"
    assert differences[0]["fix"] == "mlnx_qos -i enp24s0np0 --dscp2prio set,26,4"


def test_an_older_mlnx_qos_without_the_mapping_is_not_guessed_at():
    state = {"enp24s0np0": roce.observe(fixture("mlnx_qos-ofed3-trust-mode-lldpad.txt"), healthy_sysfs())}
    assert state["enp24s0np0"]["qos_warnings"]
    assert roce.compare(PLAN, state) == []


def test_unknown_is_never_as_planned():
    state = {"enp24s0np0": roce.observe("garbage\n", healthy_sysfs())}
    found = {d["setting"]: d["found"] for d in roce.compare(PLAN, state)}
    assert found["trust"].startswith("unknown (not mlnx_qos output")
    assert found["pfc"].startswith("unknown (")


def test_absent_interface_and_non_rdma_netdev():
    missing = roce.compare(PLAN, {})
    assert [(d["setting"], d["found"]) for d in missing] == [("interface", "absent")]
    assert "ip -br link" in missing[0]["fix"]
    plain = roce.observe(fixture("mlnx_qos-doca-dscp-pfc3.txt"), healthy_sysfs(ibdev=None, ibdevs=[]))
    settings = [d["setting"] for d in roce.compare(PLAN, {"enp24s0np0": plain})]
    assert settings == ["ibdev"]


def test_summary_names_every_setting():
    text = roce.summary(PLAN)
    for words in (
        "trust dscp",
        "DSCP 26 -> priority 3",
        "PFC on priority 3 only",
        "ECN (DCQCN) on",
        "CNP DSCP 48",
        "default_roce_tos 104",
        "MTU 9000",
        "GID 3 RoCE v2 IPv4",
    ):
        assert words in text
