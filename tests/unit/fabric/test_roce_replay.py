"""The hardware replay's RoCE parts: mlnx_qos answers and writes, the sysfs tree, profile switches."""

from __future__ import annotations

import difflib
import os
import subprocess

from cfcore.parsers.mlnx_qos import parse_mlnx_qos

# isort: off
from roce_testlib import IFACES, replay_env, replay_node  # first: puts tests/hwreplay on sys.path
from replaylib import control
from replaylib.common import Context
from replaylib.profiles import resolve
from replaylib.tools import run_tool
from patience import HANG_S

# isort: on


def qos(ctx, profile_name: str, *args: str):
    return run_tool(ctx, "mlnx_qos", list(args), resolve(ctx, profile_name))


def test_pfc_off_differs_from_healthy_only_in_the_pfc_rows(tmp_path):
    ctx = Context(env=replay_env(tmp_path))
    for iface in IFACES:
        healthy = qos(ctx, "roce-healthy", "-i", iface)
        faulty = qos(ctx, "roce-pfc-off", "-i", iface)
        assert (healthy.rc, faulty.rc) == (0, 0)
        changed = [
            line
            for line in difflib.ndiff(healthy.stdout.splitlines(), faulty.stdout.splitlines())
            if line[:1] in "+-"
        ]
        assert sorted(changed) == [
            "+ \tbuffer      0   0   0   0   0   0   0   0   ",
            "+ \tenabled     0   0   0   0   0   0   0   0   ",
            "- \tbuffer      0   0   0   1   0   0   0   0   ",
            "- \tenabled     0   0   0   1   0   0   0   0   ",
        ]
    assert resolve(ctx, "roce-pfc-off")["profile"]["base"] == "roce-healthy"


def test_healthy_answers_parse_as_planned(tmp_path):
    ctx = Context(env=replay_env(tmp_path))
    parsed = parse_mlnx_qos(qos(ctx, "roce-healthy", "-i", "enp24s0np0").stdout)
    assert parsed["trust"] == "dscp" and parsed["pfc"] == [0, 0, 0, 1, 0, 0, 0, 0]
    assert parsed["dscp2prio"][26] == 3 and parsed["prio_tc"][0] == 1


def test_writes_persist_for_the_profile_and_a_switch_starts_again(tmp_path):
    ctx, _env = replay_node(tmp_path, "roce-pfc-off")
    wrote = run_tool(ctx, "mlnx_qos", ["-i", "enp24s0np0", "--pfc", "0,0,0,1,0,0,0,0"])
    assert (
        wrote.rc == 0 and "enabled     0   0   0   1" in wrote.stdout
    )  # prints the new state, as the tool does
    run_tool(ctx, "mlnx_qos", ["-i", "enp24s0np0", "--trust=pcp"])
    run_tool(ctx, "mlnx_qos", ["--interface", "enp64s0np0", "--dscp2prio", "set,26,5"])
    again = parse_mlnx_qos(run_tool(ctx, "mlnx_qos", ["-i", "enp24s0np0"]).stdout)
    assert again["pfc"] == [0, 0, 0, 1, 0, 0, 0, 0] and again["trust"] == "pcp"
    assert parse_mlnx_qos(run_tool(ctx, "mlnx_qos", ["-i", "enp64s0np0"]).stdout)["dscp2prio"][26] == 5
    other = parse_mlnx_qos(run_tool(ctx, "mlnx_qos", ["-i", "enp79s0np0"]).stdout)
    assert other["pfc"] == [0] * 8  # only the port written to changed
    # The same profile again (install.yml on every play, the apt hook's refresh): the writes stay.
    ecn = os.path.join(ctx.sysroot, "sys/class/net/enp24s0np0/ecn/roce_np/enable/3")
    with open(ecn, "w") as handle:
        handle.write("0\n")
    _previous, changes = control.set_profile(ctx, "roce-pfc-off")
    assert changes == []
    assert parse_mlnx_qos(run_tool(ctx, "mlnx_qos", ["-i", "enp24s0np0"]).stdout)["pfc"][3] == 1
    with open(ecn) as handle:
        assert handle.read() == "0\n"
    # Another profile is other hardware: its own state, from its profile.
    control.set_profile(ctx, "roce-healthy")
    assert parse_mlnx_qos(run_tool(ctx, "mlnx_qos", ["-i", "enp24s0np0"]).stdout)["trust"] == "dscp"
    with open(ecn) as handle:
        assert handle.read() == "1\n"
    control.set_profile(ctx, "roce-pfc-off")
    assert parse_mlnx_qos(run_tool(ctx, "mlnx_qos", ["-i", "enp24s0np0"]).stdout)["pfc"] == [0] * 8


def test_the_sysfs_tree_has_the_roce_parts_and_leaves_with_the_profile(tmp_path):
    ctx, _env = replay_node(tmp_path, "roce-healthy")
    root = ctx.sysroot

    def read(rel):
        with open(os.path.join(root, rel)) as handle:
            return handle.read()

    assert os.listdir(os.path.join(root, "sys/class/net/enp24s0np0/device/infiniband")) == ["mlx5_0"]
    assert read("sys/class/net/enp24s0np0/mtu") == "9000\n"
    assert read("sys/class/net/enp24s0np0/ecn/roce_rp/enable/3") == "1\n"
    assert read("sys/class/net/enp24s0np0/ecn/roce_np/cnp_dscp") == "48\n"
    assert read("sys/class/infiniband/mlx5_0/tc/1/traffic_class") == "Global tclass=104\n"
    assert read("sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos") == "104\n"
    assert read("sys/class/infiniband/mlx5_0/ports/1/gid_attrs/types/3") == "RoCE v2\n"
    assert read("sys/class/infiniband/mlx5_0/ports/1/gid_attrs/types/2") == "IB/RoCE v1\n"
    assert read("sys/class/infiniband/mlx5_0/ports/1/gids/3") == "0000:0000:0000:0000:0000:ffff:0a28:000b\n"
    assert read("sys/class/infiniband/mlx5_0/ports/1/link_layer") == "Ethernet\n"
    assert os.path.exists(os.path.join(ctx.bin_dir, "mlnx_qos"))
    control.set_profile(ctx, "h100-healthy")
    assert not os.path.exists(os.path.join(root, "sys/class/net"))
    assert not os.path.exists(os.path.join(root, "sys/kernel/config/rdma_cm"))
    assert not os.path.exists(os.path.join(root, "sys/class/infiniband/mlx5_0/tc"))
    assert not os.path.exists(os.path.join(ctx.bin_dir, "mlnx_qos"))


def test_mlnx_qos_is_answered_live_through_its_shim(tmp_path):
    ctx, env = replay_node(tmp_path, "roce-pfc-off")
    assert not os.path.exists(os.path.join(ctx.state_dir, "answers", "mlnx_qos.sh"))  # stateful: never cached
    done = subprocess.run(
        ["mlnx_qos", "-i", "enp94s0np0", "-f", "0,0,0,1,0,0,0,0"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=HANG_S,
    )
    assert done.returncode == 0, done.stderr
    seen = subprocess.run(
        ["mlnx_qos", "-i", "enp94s0np0"], env=env, capture_output=True, text=True, check=False, timeout=HANG_S
    )
    assert parse_mlnx_qos(seen.stdout)["pfc"][3] == 1


def test_errors_look_like_the_tool(tmp_path):
    ctx = Context(env=replay_env(tmp_path))
    missing = qos(ctx, "roce-healthy")
    assert missing.rc == 1 and missing.stdout.startswith("Interface name is required\nUsage: mlnx_qos")
    unknown = qos(ctx, "roce-healthy", "-i", "eth9")
    assert unknown.rc == 1 and "eth9" in unknown.stdout
    short = qos(ctx, "roce-healthy", "-i", "enp24s0np0", "--pfc", "0,0,1")
    assert (short.rc, short.stdout) == (1, "pfc list must have 8 items\n")
    bad = qos(ctx, "roce-healthy", "-i", "enp24s0np0", "--pfc", "0,0,0,2,0,0,0,0")
    assert bad.rc == 1 and bad.stdout.startswith("Bad value for PFC: 2 is not in the range 0..1")
    trust = qos(ctx, "roce-healthy", "-i", "enp24s0np0", "--trust", "l3")
    assert trust.stdout == "Invalid trust state command. Refer to the help.\n"
    both = qos(ctx, "roce-healthy", "-i", "enp24s0np0", "--trust", "dscp", "--dscp2prio", "set,26,3")
    assert both.stdout == "trust and dscp2prio commands cannot be used at the same time.\n"
    other = qos(ctx, "roce-healthy", "-i", "enp24s0np0", "--prio_tc", "0,0,0,0,1,1,1,1")
    assert other.rc == 2 and "not replayed" in other.stderr
    assert run_tool(ctx, "mlnx_qos", ["-i", "x"], resolve(ctx, "h100-healthy")).rc == 127  # no RoCE hardware
