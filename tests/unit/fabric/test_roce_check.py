"""The roce.qos check: collected from a replayed node (live source) and from a capture, then judged."""

from __future__ import annotations

import os
import shutil

from cfcore import roce
from cfcore.checks import roce as roce_check
from cfcore.collect import CaptureSource, Collector, LiveSource
from cfcore.outputs import Output
from roce_testlib import IFACES, fixture, replay_node

PLAN = roce.normalize_plan({"interfaces": IFACES[:3]})


def observed_live(tmp_path, profile: str, plan=PLAN):
    ctx, env = replay_node(tmp_path, profile)
    source = LiveSource(extra_dirs=[env["HWREPLAY_BIN_DIR"]], env=env)
    return ctx, roce_check.collect(Collector(source), plan, ctx.sysroot)


def test_healthy_node_passes_naming_what_was_checked(tmp_path, watchdog):
    _ctx, observed = observed_live(tmp_path, "roce-healthy")
    assert observed.ok, observed.error
    result = roce_check.roce_qos(observed, PLAN)
    assert result["status"] == "pass", result
    assert result["message"].startswith("3 RoCE interface(s) enp24s0np0, enp64s0np0, enp79s0np0 as planned")
    assert "PFC on priority 3 only" in result["message"]
    assert "enp24s0np0: enabled     0   0   0   1   0   0   0   0" in result["evidence"]["lines"]


def test_pfc_off_fails_with_the_evidence_line_and_the_fix(tmp_path, watchdog):
    _ctx, observed = observed_live(tmp_path, "roce-pfc-off")
    result = roce_check.roce_qos(observed, PLAN)
    assert result["id"] == "roce.qos" and result["status"] == "fail"
    assert result["message"].startswith(
        "enp24s0np0: pfc planned 0,0,0,1,0,0,0,0, found 0,0,0,0,0,0,0,0; enp64s0np0: pfc planned"
    )
    assert (
        "enp24s0np0 (mlnx_qos -i enp24s0np0): enabled     0   0   0   0   0   0   0   0"
        in (result["evidence"]["lines"])
    )
    assert result["evidence"]["command"].startswith("mlnx_qos -i enp24s0np0; mlnx_qos -i enp64s0np0")
    assert result["remedy"] == "; ".join(f"mlnx_qos -i {i} --pfc 0,0,0,1,0,0,0,0" for i in IFACES[:3])


def test_sysfs_differences_show_the_file_and_its_value(tmp_path, watchdog):
    ctx, env = replay_node(tmp_path, "roce-healthy")
    path = os.path.join(ctx.sysroot, "sys/class/infiniband/mlx5_0/tc/1/traffic_class")
    with open(path, "w") as handle:
        handle.write("Global tclass=106\n")
    source = LiveSource(extra_dirs=[env["HWREPLAY_BIN_DIR"]], env=env)
    plan = roce.normalize_plan({"interfaces": IFACES[:1]})
    result = roce_check.roce_qos(roce_check.collect(Collector(source), plan, ctx.sysroot), plan)
    assert result["status"] == "fail"
    assert result["message"] == "enp24s0np0: traffic_class planned 104, found 106"
    assert result["evidence"]["lines"] == [f"{path}: Global tclass=106"]
    assert result["remedy"] == f"echo 104 > {path}"


def test_no_plan_is_skipped_and_no_tool_is_an_error(tmp_path, watchdog):
    assert roce_check.roce_qos(None, None)["status"] == "skip"
    ctx, env = replay_node(tmp_path, "roce-healthy")
    os.unlink(os.path.join(env["HWREPLAY_BIN_DIR"], "mlnx_qos"))
    env["PATH"] = "/nonexistent"
    source = LiveSource(extra_dirs=[env["HWREPLAY_BIN_DIR"]], env=env)
    observed = roce_check.collect(Collector(source), PLAN, ctx.sysroot)
    result = roce_check.roce_qos(observed, PLAN)
    if shutil.which("mlnx_qos", path="/usr/sbin:/usr/local/sbin:/usr/bin:/sbin:/bin"):
        return  # a host with the real tool installed
    assert result["status"] == "error"
    assert result["message"] == "could not check: mlnx_qos not found on PATH"
    assert "install mlnx_qos" in result["remedy"]


def test_an_absent_interface_fails_rather_than_errs(tmp_path, watchdog):
    plan = roce.normalize_plan({"interfaces": ["enp24s0np0", "eth7"]})
    _ctx, observed = observed_live(tmp_path, "roce-healthy", plan)
    assert observed.ok
    result = roce_check.roce_qos(observed, plan)
    assert result["status"] == "fail" and result["message"] == "eth7: interface planned present, found absent"


def test_unusable_output_on_an_existing_interface_is_an_error():
    observed = Output(
        "mlnx_qos -i enp24s0np0", "unparsable", error="mlnx_qos -i enp24s0np0 printed no usable output"
    )
    result = roce_check.roce_qos(observed, PLAN)
    assert result["status"] == "error" and "printed no usable output" in result["message"]


def make_capture(tmp_path, sysroot: str, qos_files: dict) -> str:
    capture = tmp_path / "capture"
    for subtree in ("sys/class/net", "sys/class/infiniband", "sys/kernel/config"):
        shutil.copytree(os.path.join(sysroot, subtree), capture / subtree)
    for name, text in qos_files.items():
        (capture / name).write_text(text)
    (capture / "meta.json").write_text('{"hostname": "roce-node-7"}')
    return str(capture)


def test_a_capture_is_judged_like_the_live_node(tmp_path, watchdog):
    ctx, _env = replay_node(tmp_path, "roce-healthy")
    plan = roce.normalize_plan({"interfaces": IFACES[:2]})
    capture = make_capture(
        tmp_path,
        ctx.sysroot,
        {
            "mlnx_qos-enp24s0np0.txt": fixture("mlnx_qos-doca-dscp-pfc3.txt"),
            "mlnx_qos-enp64s0np0.txt": fixture("mlnx_qos-doca-pcp-pfc-off.txt"),
        },
    )
    observed = roce_check.collect(Collector(CaptureSource(capture)), plan, "/")
    assert observed.ok and observed.file == "mlnx_qos-enp24s0np0.txt, mlnx_qos-enp64s0np0.txt"
    result = roce_check.roce_qos(observed, plan)
    assert result["status"] == "fail"
    assert result["message"] == (
        "enp64s0np0: trust planned dscp, found pcp; "
        "enp64s0np0: pfc planned 0,0,0,1,0,0,0,0, found 0,0,0,0,0,0,0,0"
    )
    # Fixes name the node's paths, not the capture's.
    assert (
        result["remedy"]
        == "mlnx_qos -i enp64s0np0 --trust dscp; mlnx_qos -i enp64s0np0 --pfc 0,0,0,1,0,0,0,0"
    )


def test_a_capture_without_mlnx_qos_is_an_error_and_a_failed_run_says_so(tmp_path, watchdog):
    ctx, _env = replay_node(tmp_path, "roce-healthy")
    plan = roce.normalize_plan({"interfaces": IFACES[:1]})
    capture = make_capture(tmp_path, ctx.sysroot, {})
    result = roce_check.roce_qos(roce_check.collect(Collector(CaptureSource(capture)), plan, "/"), plan)
    assert (
        result["status"] == "error" and "mlnx_qos-enp24s0np0.txt is not in the capture" in result["message"]
    )
    assert "cf-capture.sh" in result["remedy"]
    with open(os.path.join(capture, "mlnx_qos-enp24s0np0.txt.err"), "w") as handle:
        handle.write("rc: 127\nmlnx_qos: command not found\n")
    result = roce_check.roce_qos(roce_check.collect(Collector(CaptureSource(capture)), plan, "/"), plan)
    assert result["status"] == "error" and "exited 127" in result["message"]
    assert result["remedy"].startswith("install mlnx_qos")


def test_a_capture_link_out_of_it_is_refused(tmp_path, watchdog):
    ctx, _env = replay_node(tmp_path, "roce-healthy")
    plan = roce.normalize_plan({"interfaces": IFACES[:1]})
    capture = make_capture(
        tmp_path, ctx.sysroot, {"mlnx_qos-enp24s0np0.txt": fixture("mlnx_qos-doca-dscp-pfc3.txt")}
    )
    mtu = os.path.join(capture, "sys/class/net/enp24s0np0/mtu")
    os.unlink(mtu)
    os.symlink("/etc/passwd", mtu)
    result = roce_check.roce_qos(roce_check.collect(Collector(CaptureSource(capture)), plan, "/"), plan)
    assert result["status"] == "fail"
    assert "enp24s0np0: mtu planned 9000, found absent (/sys/class/net/enp24s0np0/mtu)" in result["message"]
