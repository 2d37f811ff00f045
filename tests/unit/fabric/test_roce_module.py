"""The roce_qos module on a replayed RoCE node: fix, read back, idempotence, check mode, honest failures."""

from __future__ import annotations

import os
import stat

from cfcore import roce
from roce_testlib import IFACES, replay_node, run_module

PLAN = roce.normalize_plan({"interfaces": IFACES})
# Two ports are enough where the test is not about every port (each replayed mlnx_qos is a Python start).
PLAN2 = roce.normalize_plan({"interfaces": IFACES[:2]})


def args(ctx, plan=PLAN2) -> dict:
    return {"plan": plan, "sysfs_root": ctx.sysroot}


def test_pfc_off_is_fixed_read_back_and_then_unchanged(tmp_path, watchdog):
    ctx, env = replay_node(tmp_path, "roce-pfc-off")
    first = run_module(args(ctx, PLAN), env)
    assert first["changed"] is True, first
    assert {(d["interface"], d["setting"]) for d in first["differences"]} == {(i, "pfc") for i in IFACES}
    assert first["applied"][0]["command"].endswith("/mlnx_qos -i enp24s0np0 --pfc 0,0,0,1,0,0,0,0")
    assert all(a["rc"] == 0 for a in first["applied"]) and len(first["applied"]) == 8
    assert first["remaining"] == []
    assert first["ibdevs"] == {iface: f"mlx5_{n}" for n, iface in enumerate(IFACES)}
    second = run_module(args(ctx, PLAN), env)
    assert second["changed"] is False and second["differences"] == [] and second["applied"] == []


def test_check_mode_reports_with_a_diff_and_applies_nothing(tmp_path, watchdog):
    ctx, env = replay_node(tmp_path, "roce-pfc-off")
    checked = run_module(args(ctx), env, check_mode=True, diff=True)
    assert checked["changed"] is True and checked["applied"] == []
    assert checked["diff"]["before"] == "enp24s0np0 pfc: 0,0,0,0,0,0,0,0\nenp64s0np0 pfc: 0,0,0,0,0,0,0,0\n"
    assert "enp24s0np0 pfc: 0,0,0,1,0,0,0,0\n" in checked["diff"]["after"]
    again = run_module(args(ctx), env, check_mode=True)
    assert again["changed"] is True  # nothing was applied


def test_healthy_node_is_unchanged(tmp_path, watchdog):
    ctx, env = replay_node(tmp_path, "roce-healthy")
    result = run_module(args(ctx), env)
    assert result["changed"] is False and result["differences"] == [], result


def test_sysfs_and_configfs_writes_land_and_read_back(tmp_path, watchdog):
    ctx, env = replay_node(tmp_path, "roce-healthy")
    net = os.path.join(ctx.sysroot, "sys/class/net/enp64s0np0")
    with open(os.path.join(net, "ecn/roce_np/enable/3"), "w") as handle:
        handle.write("0\n")
    with open(os.path.join(net, "ecn/roce_np/cnp_dscp"), "w") as handle:
        handle.write("46\n")
    tos = os.path.join(ctx.sysroot, "sys/kernel/config/rdma_cm/mlx5_1/ports/1/default_roce_tos")
    os.unlink(tos)  # never written since boot (a real configfs shows it once the directory is made)
    result = run_module(args(ctx), env)
    assert {d["setting"] for d in result["differences"]} == {"ecn_np", "cnp_dscp", "roce_tos"}
    assert result["remaining"] == [], result
    commands = [a["command"] for a in result["applied"]]
    assert commands[-2:] == [
        f"mkdir -p {ctx.sysroot}/sys/kernel/config/rdma_cm/mlx5_1",
        f"echo 104 > {ctx.sysroot}/sys/kernel/config/rdma_cm/mlx5_1/ports/1/default_roce_tos",
    ]
    with open(tos) as handle:
        assert handle.read() == "104\n"
    with open(os.path.join(net, "ecn/roce_np/cnp_dscp")) as handle:
        assert handle.read() == "48\n"


def test_mtu_goes_through_ip_link_and_a_failed_write_fails_honestly(tmp_path, watchdog):
    ctx, env = replay_node(tmp_path, "roce-healthy")
    mtu = os.path.join(ctx.sysroot, "sys/class/net/enp24s0np0/mtu")
    with open(mtu, "w") as handle:
        handle.write("1500\n")
    fake_ip = tmp_path / "bin" / "ip"
    log = tmp_path / "ip.log"
    # Stands in for the kernel: `ip link set dev IF mtu N` changes <sys>/class/net/IF/mtu.
    fake_ip.write_text(
        "#!/bin/sh\n"
        f'echo "$*" >> {log}\n'
        f'[ "$1 $2 $3" = "link set dev" ] && [ "$5" = mtu ] && '
        f'echo "$6" > {ctx.sysroot}/sys/class/net/$4/mtu\n'
    )
    fake_ip.chmod(fake_ip.stat().st_mode | stat.S_IEXEC)
    result = run_module(args(ctx), env)
    assert result["changed"] is True and result["remaining"] == [], result
    assert log.read_text() == "link set dev enp24s0np0 mtu 9000\n"
    with open(mtu) as handle:
        assert handle.read() == "9000\n"
    # A kernel that refuses the MTU (a switch port without jumbo frames is not the node's problem,
    # but a device that cannot take it is): the module fails naming it, it does not claim a change worked.
    fake_ip.write_text('#!/bin/sh\necho "Error: mtu greater than device maximum." >&2\nexit 2\n')
    with open(mtu, "w") as handle:
        handle.write("1500\n")
    failed = run_module(args(ctx), env)
    assert failed["failed"] is True and failed["changed"] is True
    assert [d["setting"] for d in failed["remaining"]] == ["mtu"]
    assert "mtu planned 9000, found 1500" in failed["msg"]
    assert "device maximum" in failed["msg"] and failed["fix"] == "ip link set dev enp24s0np0 mtu 9000"


def test_missing_interface_fails_before_applying_anything(tmp_path, watchdog):
    ctx, env = replay_node(tmp_path, "roce-pfc-off")
    plan = roce.normalize_plan({"interfaces": ["enp24s0np0", "eth9"]})
    result = run_module({"plan": plan, "sysfs_root": ctx.sysroot}, env)
    assert result["failed"] is True and result["applied"] == []
    assert "eth9: interface planned present, found absent" in result["msg"]


def test_without_mlnx_qos_check_mode_reports_and_a_real_run_fails_with_the_fix(tmp_path, watchdog):
    ctx, env = replay_node(tmp_path, "roce-healthy")
    os.unlink(tmp_path / "bin" / "mlnx_qos")
    env["PATH"] = str(tmp_path / "bin") + ":/usr/bin:/bin"  # no mlnx_qos anywhere on it
    if any(os.path.exists(os.path.join(d, "mlnx_qos")) for d in ("/usr/sbin", "/usr/local/sbin", "/sbin")):
        return  # a host with the real tool: nothing to prove here
    checked = run_module(args(ctx), env, check_mode=True)
    assert checked.get("failed") is not True and checked["changed"] is True
    assert {d["found"] for d in checked["differences"] if d["setting"] == "trust"} == {
        "unknown (mlnx_qos is not installed)"
    }
    real = run_module(args(ctx), env)
    assert real["failed"] is True and "mlnx-tools" in real["fix"]


def test_a_bad_plan_fails_naming_the_variable(tmp_path, watchdog):
    ctx, env = replay_node(tmp_path, "roce-healthy")
    result = run_module({"plan": {**PLAN, "pfc_priority": 9}, "sysfs_root": ctx.sysroot}, env)
    assert result["failed"] is True
    assert result["msg"] == "plan: fabric_roce_pfc_priority must be 0-7, got 9"
