"""Bad input costs one check, never the node: crashes, hostile capture files, huge outputs, check mode."""

from __future__ import annotations

import os
import shutil
import stat

import pytest
from cfcore import validate as validate_module
from cfcore.checks import nvidia
from cfcore.collect import RC_REFUSED, CaptureSource, Collector, LiveSource
from cfcore.outputs import Output
from cfcore.parsers import MAX_INPUT_BYTES
from cfcore.validate import validate_node
from chkdata import CAPTURES, H100_SKU, h100_expected
from patience import HANG_S


def copy_capture(tmp_path, name: str = "h100-healthy"):
    target = tmp_path / name
    shutil.copytree(CAPTURES / name, target, symlinks=True)
    return target


def by_id(result: dict) -> dict:
    return {check["id"]: check for check in result["checks"]}


def test_an_exception_inside_one_check_becomes_its_error_and_the_rest_still_runs(tmp_path, monkeypatch):
    def broken(smi, accel, lspci=None):
        raise KeyError("pcie_width_max")

    monkeypatch.setattr(nvidia, "gpu_pcie_link", broken)
    result = validate_node(CaptureSource(str(copy_capture(tmp_path))), h100_expected())
    checks = by_id(result)
    pcie = checks["gpu.pcie_link"]
    assert pcie["status"] == "error" and "KeyError: 'pcie_width_max'" in pcie["message"]
    assert pcie["evidence"]["command"] == "nvidia-smi -q -x; lspci -vvv -nn -D -d 10de:"
    assert pcie["evidence"]["file"] == "nvidia-smi-q-x.xml, lspci-vvv-10de.txt"
    assert pcie["evidence"]["lines"] == ["KeyError: 'pcie_width_max'"]
    assert "ClusterForge bug" in pcie["remedy"]
    others = {c: s["status"] for c, s in checks.items() if c != "gpu.pcie_link" and s["status"] != "skip"}
    assert set(others.values()) == {"pass"}, others
    assert result["status"] == "error"


def test_an_exception_outside_the_checks_errs_its_group_only(tmp_path, monkeypatch):
    monkeypatch.setattr(validate_module._NodeRun, "_fabric_checks", lambda self: 1 / 0)
    checks = by_id(validate_node(CaptureSource(str(copy_capture(tmp_path))), h100_expected()))
    assert {checks[c]["status"] for c in ("ib.hca_count", "ib.port_state", "ib.port_rate")} == {"error"}
    assert "ZeroDivisionError" in checks["ib.port_state"]["message"]
    assert checks["gpu.count"]["status"] == "pass" and checks["node.mounts"]["status"] == "pass"


def test_a_parser_crash_is_an_unparsable_output(monkeypatch, tmp_path):
    import cfcore.collect as collect

    def crashing(kind, text):
        raise IndexError("list index out of range")

    monkeypatch.setattr(collect, "parse", crashing)
    output = Collector(CaptureSource(str(copy_capture(tmp_path)))).run(["ibstat"], "ibstat")
    assert output.state == "unparsable"
    assert "the ibstat parser failed on this output (IndexError: list index out of range)" in output.error


def test_garbled_nvlink_line_is_an_error_of_that_gpu_only(tmp_path):
    capture = copy_capture(tmp_path)
    nvlink = capture / "nvidia-smi-nvlink-s.txt"
    nvlink.write_text(nvlink.read_text().replace("Link 0: 26.562 GB/s", "Link 0: . GB/s", 1))
    result = validate_node(CaptureSource(str(capture)), h100_expected())
    check = by_id(result)["gpu.nvlink"]
    assert check["status"] == "error"
    assert check["message"] == "GPU 0: could not read link 0: '. GB/s'"
    assert "Link 0: . GB/s" in "\n".join(check["evidence"]["lines"])
    assert result["metrics"]["gpu.count"] == 8


def test_npu_header_missing_a_bar_still_validates(tmp_path):
    from chkdata import atlas_expected

    capture = copy_capture(tmp_path, "ascend-910b-healthy")
    info = capture / "npu-smi-info.txt"
    text = info.read_text()
    header = next(line for line in text.splitlines() if line.startswith("| Chip"))
    info.write_text(text.replace(header, header.replace("| Bus-Id", "  Bus-Id", 1)))
    checks = by_id(validate_node(CaptureSource(str(capture)), atlas_expected()))
    assert checks["npu.count"]["status"] == "pass" and checks["npu.health"]["status"] == "pass"


# --- captures: only regular files inside the capture --------------------------------------------


def test_a_symlink_out_of_the_capture_is_refused_and_never_quoted(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("CA 'root-password-hunter2'\n")
    capture = copy_capture(tmp_path)
    (capture / "ibstat.txt").unlink()
    (capture / "ibstat.txt").symlink_to(secret)
    shutil.rmtree(capture / "sys")
    result = validate_node(CaptureSource(str(capture)), h100_expected())
    check = by_id(result)["ib.hca_count"]
    assert check["status"] == "error"
    assert "points outside" in check["message"] and "refusing to read it" in check["message"]
    assert "hunter2" not in repr(result)
    assert "tools/cf-capture.sh again" in check["remedy"]


def test_a_fifo_in_a_capture_is_refused_without_blocking(tmp_path):
    capture = copy_capture(tmp_path)
    (capture / "dmesg.txt").unlink()
    os.mkfifo(capture / "dmesg.txt")
    check = by_id(validate_node(CaptureSource(str(capture)), h100_expected()))["gpu.xid"]
    assert check["status"] == "error" and "is a FIFO, not a regular file" in check["message"]


def test_a_link_to_dev_zero_is_refused(tmp_path):
    capture = copy_capture(tmp_path)
    (capture / "proc-mounts.txt").unlink()
    (capture / "proc-mounts.txt").symlink_to("/dev/zero")
    check = by_id(validate_node(CaptureSource(str(capture)), h100_expected()))["node.mounts"]
    assert check["status"] == "error" and "refusing to read it" in check["message"]


def test_a_capture_file_over_the_limit_is_refused(tmp_path):
    capture = copy_capture(tmp_path)
    with open(capture / "nvidia-smi-nvlink-s.txt", "wb") as handle:
        handle.truncate(MAX_INPUT_BYTES + 1)  # sparse: no real disk use
    check = by_id(validate_node(CaptureSource(str(capture)), h100_expected()))["gpu.nvlink"]
    assert check["status"] == "error" and "over the limit" in check["message"]


def test_a_sysfs_link_out_of_the_capture_is_refused(tmp_path):
    capture = copy_capture(tmp_path)
    (capture / "ibstat.txt").unlink()
    state = capture / "sys/class/infiniband/mlx5_0/ports/1/state"
    state.unlink()
    outside = tmp_path / "state"
    outside.write_text("4: ACTIVE\n")
    state.symlink_to(outside)
    check = by_id(validate_node(CaptureSource(str(capture)), h100_expected()))["ib.port_state"]
    assert check["status"] == "error" and "points outside" in check["message"]


def test_a_fifo_meta_json_is_refused(tmp_path):
    os.mkfifo(tmp_path / "meta.json")
    with pytest.raises(ValueError, match="is a FIFO"):
        CaptureSource(str(tmp_path))


# --- live: the output of a tool is capped ---------------------------------------------------------


def test_a_tool_printing_past_the_limit_is_stopped_and_refused(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "nvidia-smi"
    # Endless output: without a cap this would fill memory until the timeout.
    tool.write_text("#!/bin/sh\nwhile :; do cat /dev/zero; done\n")
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    source = LiveSource(extra_dirs=(), env={"PATH": f"{bin_dir}:/usr/bin:/bin"})
    rc, out, err = source.run(["nvidia-smi", "nvlink", "-s"], timeout=HANG_S)
    assert (rc, out) == (RC_REFUSED, "")
    assert err == "nvidia-smi nvlink -s: output over 16 MiB, not the tool's normal output"
    output = Collector(source).run(["nvidia-smi", "nvlink", "-s"], "nvidia-smi-nvlink")
    assert output.state == "refused" and "over 16 MiB" in output.error


# --- gpu.kernel_modules: unknown is error ----------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["cat: /proc/driver/nvidia/version: Input/output error\n", "\x8f\x01\xfe\xff random bytes \x00\n"],
)
def test_garbage_driver_version_file_is_error_never_proprietary(text):
    proc = Output("/proc/driver/nvidia/version", "ok", text=text)
    for flavour in ("any", "proprietary", "open"):
        result = nvidia.gpu_kernel_modules(
            proc, None, {**H100_SKU["accelerator"], "kernel_module_flavour": flavour}
        )
        assert result["status"] == "error", flavour
        assert "names no NVIDIA kernel module flavour" in result["message"]
    assert nvidia.kernel_module_flavour(proc, None)[0] is None


@pytest.mark.parametrize("licence", ["modinfo: ERROR: Module nvidia not found.", "Proprietary?", "\x00\x01"])
def test_garbage_modinfo_licence_is_error(licence):
    modinfo = Output("modinfo -F license nvidia", "ok", text=licence + "\n")
    result = nvidia.gpu_kernel_modules(None, modinfo, H100_SKU["accelerator"])
    assert result["status"] == "error"


def test_real_module_texts_still_name_their_flavour():
    proprietary = Output(
        "/proc/driver/nvidia/version",
        "ok",
        text="NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.01  Sun May 12 19:39:15 UTC 2024\n",
    )
    open_modules = Output(
        "/proc/driver/nvidia/version",
        "ok",
        text="NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.133.20  Release Build\n",
    )
    assert nvidia.kernel_module_flavour(proprietary, None)[0] == "proprietary"
    assert nvidia.kernel_module_flavour(open_modules, None)[0] == "open"
    dual = Output("modinfo -F license nvidia", "ok", text="Dual MIT/GPL\n")
    assert nvidia.kernel_module_flavour(None, dual)[0] == "open"
    assert nvidia.kernel_module_flavour(None, Output("modinfo", "ok", text="NVIDIA\n"))[0] == "proprietary"


# --- check mode: nothing that loads the GPUs ------------------------------------------------------


class RecordingSource:
    """A capture that records the commands validation asks for."""

    def __init__(self, inner):
        self.inner = inner
        self.ran = []

    def run(self, argv, timeout: float = 30):
        self.ran.append(tuple(argv))
        return self.inner.run(argv, timeout)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def test_check_mode_skips_dcgm_diag_at_level_full_and_runs_nothing_of_it(tmp_path):
    source = RecordingSource(CaptureSource(str(copy_capture(tmp_path))))
    result = validate_node(source, h100_expected(), "full", check_mode=True)
    diag = by_id(result)["gpu.dcgm_diag"]
    assert diag["status"] == "skip"
    assert "not run in check mode" in diag["message"] and "stress test" in diag["message"]
    assert not [argv for argv in source.ran if argv[0] == "dcgmi"]
    assert result["status"] == "pass"
    normal = RecordingSource(CaptureSource(str(copy_capture(tmp_path / "again"))))
    assert by_id(validate_node(normal, h100_expected(), "full"))["gpu.dcgm_diag"]["status"] == "error"
    assert ("dcgmi", "diag", "-r", "2", "-j") in normal.ran
