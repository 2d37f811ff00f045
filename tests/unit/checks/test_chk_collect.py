"""Sources: a live node (real processes, fake tools) and capture directories."""

from __future__ import annotations

import json
import os
import stat
import time

import pytest
from cfcore.collect import (
    CAPTURE_LAYOUT,
    RC_NOT_CAPTURED,
    RC_NOT_FOUND,
    RC_TIMEOUT,
    CaptureSource,
    Collector,
    LiveSource,
    capture_name,
)
from cfcore.versions import at_least, same_version, version_key
from patience import HANG_S


def tool(bin_dir, name: str, body: str) -> None:
    path = bin_dir / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


@pytest.fixture
def live(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    # Only the fake tools: a real dmesg/nvidia-smi on the test machine must not leak in.
    source = LiveSource(extra_dirs=(), env={"PATH": f"{bin_dir}:/usr/bin:/bin"})
    return source, bin_dir


def test_live_source_runs_tools_and_reports_missing_ones(live):
    source, bin_dir = live
    tool(bin_dir, "ibstat", "echo \"CA 'mlx5_0'\"; echo oops >&2; exit 3")
    assert source.run(["ibstat"]) == (3, "CA 'mlx5_0'\n", "oops\n")
    rc, out, err = source.run(["nvidia-smi-not-here", "-q"])
    assert rc == RC_NOT_FOUND and out == "" and err == "nvidia-smi-not-here not found on PATH"


def test_live_source_kills_a_hung_tool(live):
    source, bin_dir = live
    tool(bin_dir, "hung-smi", f"sleep {HANG_S}")
    started = time.monotonic()
    rc, _out, err = source.run(["hung-smi"], timeout=0.5)
    assert rc == RC_TIMEOUT and "timed out after 0.5 s" in err
    assert time.monotonic() - started < HANG_S / 2  # killed, not waited for


def test_live_source_finds_vendor_tools_outside_path(tmp_path):
    ascend_tools = tmp_path / "Ascend" / "driver" / "tools"
    ascend_tools.mkdir(parents=True)
    tool(ascend_tools, "hccn_tool", "echo 'link status: UP'")
    source = LiveSource(extra_dirs=(str(ascend_tools),), env={"PATH": "/usr/bin:/bin"})
    assert source.run(["hccn_tool", "-i", "0", "-link", "-g"])[1] == "link status: UP\n"


def test_live_source_uses_the_c_locale(live):
    source, bin_dir = live
    tool(bin_dir, "show-locale", 'echo "$LC_ALL"')
    assert source.run(["show-locale"])[1] == "C\n"


def test_capture_names_follow_the_layout():
    assert capture_name(["nvidia-smi", "-q", "-x"]) == "nvidia-smi-q-x.xml"
    assert capture_name(["npu-smi", "info", "-t", "board", "-i", "7"]) == "npu-smi-board-7.txt"
    assert capture_name(["hccn_tool", "-i", "12", "-net_health", "-g"]) == "hccn-12-net_health.txt"
    assert capture_name(["hccn_tool", "-i", "x", "-ip", "-g"]) is None
    assert capture_name(["rm", "-rf", "/"]) is None
    assert len({name for _argv, name in CAPTURE_LAYOUT}) == len(CAPTURE_LAYOUT)


def test_capture_source_reads_outputs_errors_and_gaps(tmp_path):
    (tmp_path / "meta.json").write_text(json.dumps({"hostname": "gpu-r1-n01", "node_sku": "hgx-h100-8gpu"}))
    (tmp_path / "ibstat.txt").write_text("CA 'mlx5_0'\n")
    (tmp_path / "dmesg.txt").write_text("")
    (tmp_path / "dmesg.txt.err").write_text(
        "rc: 1\ndmesg: read kernel buffer failed: Operation not permitted\n"
    )
    (tmp_path / "nvidia-smi-q-x.xml.err").write_text("rc: 127\nnvidia-smi not found on PATH\n")
    (tmp_path / "proc-mounts.txt").write_text("/dev/md0 / ext4 rw 0 0\n")
    source = CaptureSource(str(tmp_path))
    assert source.hostname() == "gpu-r1-n01"
    assert source.run(["ibstat"]) == (0, "CA 'mlx5_0'\n", "")
    assert source.run(["dmesg"]) == (1, "", "dmesg: read kernel buffer failed: Operation not permitted\n")
    assert source.run(["nvidia-smi", "-q", "-x"])[0] == RC_NOT_FOUND
    rc, _out, err = source.run(["npu-smi", "info"])
    assert rc == RC_NOT_CAPTURED and "npu-smi-info.txt is not in the capture" in err
    assert source.read("/proc/self/mounts") == "/dev/md0 / ext4 rw 0 0\n"
    assert source.read("/proc/driver/nvidia/version") is None


def test_capture_source_refuses_a_missing_dir_or_bad_meta(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        CaptureSource(str(tmp_path / "nope"))
    (tmp_path / "meta.json").write_text("{not json")
    with pytest.raises(ValueError, match=r"meta\.json is not valid JSON"):
        CaptureSource(str(tmp_path))


def test_collector_runs_each_command_once_and_classifies_outcomes(live):
    source, bin_dir = live
    counter = bin_dir.parent / "calls"
    tool(bin_dir, "ibstat", f"echo x >> {counter}; printf \"CA 'mlx5_0'\\n\\tCA type: MT4129\\n\"")
    tool(bin_dir, "dmesg", "echo 'dmesg: read kernel buffer failed: Operation not permitted' >&2; exit 1")
    tool(bin_dir, "lspci", "echo '<html>proxy error</html>'")
    collector = Collector(source)
    collector.prefetch([(("ibstat",), "ibstat"), (("dmesg",), "xid"), (("lspci", "-vvv"), "lspci")])
    first = collector.run(["ibstat"], "ibstat")
    assert first is collector.run(["ibstat"], "ibstat")
    assert counter.read_text().count("x") == 1
    assert first.state == "ok" and first.data["cas"][0]["name"] == "mlx5_0"
    denied = collector.run(["dmesg"], "xid")
    assert denied.state == "failed" and "Operation not permitted" in denied.error
    garbage = collector.run(["lspci", "-vvv"], "lspci")
    assert garbage.state == "unparsable" and "printed no usable output" in garbage.error
    assert collector.run(["npu-smi", "info"], "npu-smi-info").state == "not_found"


def test_empty_kernel_log_is_no_events(live):
    source, bin_dir = live
    tool(bin_dir, "dmesg", "true")
    log = Collector(source).run(["dmesg"], "xid")
    assert log.ok and log.data == {"events": []}


def test_sysfs_infiniband_absent_on_a_live_node_and_in_a_capture(tmp_path):
    live = Collector(LiveSource()).sysfs_infiniband(str(tmp_path))
    assert live.state == "not_found"
    capture = Collector(CaptureSource(str(tmp_path))).sysfs_infiniband(str(tmp_path))
    assert capture.state == "not_captured"


def test_versions_compare_like_vendors_release_them():
    assert version_key("24.1.rc2") < version_key("24.1.rc3") < version_key("24.1.0")
    assert at_least("535.183.01", "525") and not at_least("470.82.01", "525")
    assert at_least("24.1.rc2", "23.0.0") and not at_least("23.0.rc3", "23.0.0")
    assert same_version("8.0.RC2", "8.0.rc2") and not same_version("535.183.01", "535.183.06")


def test_cfcore_runs_on_python_38_syntax():
    """cfcore ships to nodes with Python >= 3.8: its files must parse as 3.8 code."""
    import ast

    import cfcore

    root = os.path.dirname(cfcore.__file__)
    for folder, _dirs, files in os.walk(root):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8") as handle:
                    ast.parse(handle.read(), path, feature_version=(3, 8))
