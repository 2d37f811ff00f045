"""ascend_driver_state and its parsers: version.info, npu-smi -l / board, dkms status, the verdict."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import module_runner
import pytest
from cfcore.parsers import ascend_board as board
from cfcore.parsers.common import ParseError

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures" / "parsers" / "ascend"
LIST_2 = """\tTotal Count                    : 2

\tNPU ID                         : 0
\tProduct Name                   : IT21DMDA
\tSerial Number                  : 102xxxxx
\tChip Count                     : 1

\tNPU ID                         : 1
\tProduct Name                   : IT21DMDA
\tSerial Number                  : 103xxxxx
\tChip Count                     : 1
"""


def board_text(npu, software="25.2.0", firmware="7.7.0.6.236", compatibility="OK"):
    rows = [
        ("NPU ID", npu),
        ("Software Version", software),
        ("Firmware Version", firmware),
        ("Compatibility", compatibility),
        ("Board ID", "0x66"),
        ("PCIe Bus Info", "0000:C1:00.0"),
        ("Chip Count", 1),
    ]
    return "".join(f"\t{k:<31}: {v}\n" for k, v in rows)


def test_npu_smi_list():
    parsed = board.parse_npu_smi_list(LIST_2)
    assert parsed["total"] == 2
    assert [n["npu_id"] for n in parsed["npus"]] == [0, 1]
    assert parsed["npus"][0]["product_name"] == "IT21DMDA" and parsed["npus"][1]["chip_count"] == 1


def test_npu_smi_list_refuses_other_output():
    with pytest.raises(ParseError):
        board.parse_npu_smi_list("Invalid command.\n")
    with pytest.raises(ParseError, match="Total Count says 3"):
        board.parse_npu_smi_list(LIST_2.replace(": 2", ": 3", 1))


def test_version_info():
    parsed = board.parse_version_info("Version=24.1.rc1\nascendhal_version=7.35.19\naicpu_version=1.0\n")
    assert parsed["version"] == "24.1.rc1" and parsed["fields"]["ascendhal_version"] == "7.35.19"
    assert board.parse_version_info("")["version"] is None


def test_dkms_status_both_formats_and_the_running_kernel():
    text = (
        "davinci_ascend/25.2.0, 6.1.0-18-amd64, x86_64: installed\n"
        "nvidia, 535.183.01, 6.1.0-18-amd64, x86_64: installed\n"
        "davinci_ascend/25.2.0: added\n"
    )
    entries = board.parse_dkms_status(text)
    assert [e["module"] for e in entries] == ["davinci_ascend", "nvidia", "davinci_ascend"]
    verdict = board.dkms_verdict(entries, "6.1.0-18-amd64", "(?i)ascend|davinci")
    assert verdict["built"] is True and "davinci_ascend/25.2.0" in verdict["reason"]
    other = board.dkms_verdict(entries, "6.1.0-20-amd64", "(?i)ascend|davinci")
    assert other["built"] is False and "not for the running kernel 6.1.0-20-amd64" in other["reason"]
    none = board.dkms_verdict(board.parse_dkms_status(""), "6.1.0-18-amd64", "(?i)ascend")
    assert none["built"] is False and "no Ascend driver module" in none["reason"]


def test_board_verdict():
    from cfcore.parsers.ascend import parse_npu_smi_board

    ok = [parse_npu_smi_board(board_text(0)), parse_npu_smi_board(board_text(1))]
    assert board.board_verdict(ok, "25.2.0", "7.7.0.6.236") == {
        "compatible": True,
        "versions_match": True,
        "reasons": [],
    }
    nok = [parse_npu_smi_board(board_text(0, compatibility="NOK"))]
    verdict = board.board_verdict(nok, "25.2.0", "7.7.0.6.236")
    assert verdict["compatible"] is False and "NPU 0" in verdict["reasons"][0]
    old = [parse_npu_smi_board(board_text(0, software="24.1.rc2"))]
    assert board.board_verdict(old, "25.2.0", "7.7.0.6.236")["versions_match"] is False
    assert board.board_verdict([], "25.2.0", None)["compatible"] is None


def test_board_fixture_of_the_parsers_has_compatibility():
    from cfcore.parsers.ascend import parse_npu_smi_board

    parsed = parse_npu_smi_board((FIXTURES / "npu_smi_board_910b.txt").read_text())
    assert board.board_verdict([parsed], "24.1.rc2", "7.5.0.1.129")["compatible"] is True


# ------------------------------------------------------------------ module ----


def load_module():
    sys.path.insert(0, str(ROOT / ".collections"))
    from ansible_collections.clusterforge.cluster.plugins.modules import ascend_driver_state

    return ascend_driver_state


def node(tmp_path, driver="25.2.0", firmware="7.7.0.6.236"):
    prefix = tmp_path / "Ascend"
    if driver:
        (prefix / "driver").mkdir(parents=True)
        (prefix / "driver" / "version.info").write_text(f"Version={driver}\nascendhal_version=7.35.23\n")
    if firmware:
        (prefix / "firmware").mkdir(parents=True)
        (prefix / "firmware" / "version.info").write_text(f"Version={firmware}\n")
    return prefix


def params(prefix, **extra):
    base = {
        "install_path": str(prefix),
        "driver_version": "25.2.0",
        "firmware_version": "7.7.0.6.236",
        "in_container": False,
        "virtual_machine": False,
        "kernel": "6.1.0-18-amd64",
        "read_boards": True,
        "dkms_module_pattern": "(?i)ascend|davinci|npu|drv_",
        "reboot_marker": str(prefix / "marker.json"),
        "cann_install_path": None,
        "arch": "x86_64",
    }
    base.update(extra)
    return base


def fake_run(boards, list_ok=True, dkms="davinci_ascend/25.2.0, 6.1.0-18-amd64, x86_64: installed\n"):
    calls = []

    def run(argv):
        calls.append(argv[1:])
        if argv[1:] == ["info", "-l"]:
            return (0, LIST_2, "") if list_ok else (1, "", "Invalid parameter.")
        if argv[1:] == ["info"]:
            return 0, (FIXTURES / "npu_smi_info_910b_x8.txt").read_text(), ""
        if argv[1:4] == ["info", "-t", "board"]:
            npu = int(argv[-1])
            return 0, boards.get(npu, board_text(npu)), ""
        if argv[1:] == ["status"]:
            return 0, dkms, ""
        raise AssertionError(argv)

    run.calls = calls
    return run


def test_state_all_good(tmp_path):
    module = load_module()
    prefix = node(tmp_path)
    result = module.state(params(prefix), fake_run({}), "/usr/local/bin/npu-smi", "/usr/sbin/dkms", "b1")
    assert (result["installed"], result["firmware"]) == ("25.2.0", "7.7.0.6.236")
    assert result["npus"] == [0, 1] and result["compatible"] is True
    assert result["dkms"]["built"] is True and result["reboot_required"] is False
    assert result["reasons"] == [] and result["fix"] == ""


def test_state_falls_back_to_the_table_when_list_is_missing(tmp_path):
    module = load_module()
    run = fake_run({}, list_ok=False)
    result = module.state(params(node(tmp_path)), run, "/npu-smi", "/dkms", "b1")
    assert result["npus"] == list(range(8))
    assert ["info"] in run.calls


def test_state_incompatible_board_and_bom_differences(tmp_path):
    module = load_module()
    prefix = node(tmp_path, driver="25.2.0", firmware="7.5.0.1.129")
    boards = {
        1: board_text(1, firmware="7.5.0.1.129", compatibility="NOK"),
        0: board_text(0, firmware="7.5.0.1.129"),
    }
    result = module.state(params(prefix), fake_run(boards), "/npu-smi", "/dkms", "b1")
    assert result["compatible"] is False
    assert any("firmware 7.5.0.1.129 is not the BOM's" in r for r in result["reasons"])
    assert any("NPU 1: npu-smi board Compatibility is NOK" in r for r in result["reasons"])
    assert "same Ascend HDK release" in result["fix"]


def test_state_reboot_marker_of_this_boot_only(tmp_path):
    module = load_module()
    prefix = node(tmp_path)
    (prefix / "marker.json").write_text(json.dumps({"boot_id": "b1", "reason": "driver 25.2.0 installed"}))
    now = module.state(params(prefix), fake_run({}), "/npu-smi", "/dkms", "b1")
    assert now["reboot_required"] is True and "reboot required: driver 25.2.0 installed" in now["reasons"]
    later = module.state(params(prefix), fake_run({}), "/npu-smi", "/dkms", "b2")
    assert later["reboot_required"] is False


def test_state_old_driver_still_running_needs_a_reboot(tmp_path):
    module = load_module()
    boards = {0: board_text(0, software="24.1.rc2"), 1: board_text(1, software="24.1.rc2")}
    result = module.state(params(node(tmp_path)), fake_run(boards), "/npu-smi", "/dkms", "b1")
    assert result["versions_match"] is False and result["reboot_required"] is True


def test_state_dkms_not_built_for_the_running_kernel(tmp_path):
    module = load_module()
    run = fake_run({}, dkms="davinci_ascend/25.2.0, 6.1.0-10-amd64, x86_64: installed\n")
    result = module.state(params(node(tmp_path)), run, "/npu-smi", "/dkms", "b1")
    assert result["dkms"]["built"] is False
    assert any("not for the running kernel" in r for r in result["reasons"])
    assert "headers of 6.1.0-18-amd64" in result["fix"]


def test_state_in_a_container_skips_dkms_and_reboot(tmp_path):
    module = load_module()
    prefix = node(tmp_path)
    (prefix / "marker.json").write_text(json.dumps({"boot_id": "b1", "reason": "x"}))
    result = module.state(params(prefix, in_container=True), fake_run({}), "/npu-smi", "/dkms", "b1")
    assert result["dkms"]["checked"] is False and "container" in result["dkms"]["reason"]
    assert result["reboot_required"] is False
    assert any("no reboot applies here" in r for r in result["reasons"])


def test_state_fresh_node_without_npu_smi(tmp_path):
    module = load_module()
    result = module.state(params(node(tmp_path, None, None)), fake_run({}), None, None, "b1")
    assert result["installed"] is None and result["compatible"] is None
    assert result["reasons"][0].startswith("no Ascend driver is installed")
    assert result["npu_smi_error"].startswith("npu-smi is not installed")


def test_state_on_a_vm_does_not_judge_the_firmware(tmp_path):
    module = load_module()
    result = module.state(
        params(node(tmp_path, firmware=None), virtual_machine=True), fake_run({}), "/npu-smi", "/dkms", "b1"
    )
    assert result["firmware"] is None and not any("firmware" in r for r in result["reasons"])


def test_cann_state_new_and_old_layout(tmp_path):
    module = load_module()
    new = tmp_path / "new"
    (new / "cann" / "x86_64-linux").mkdir(parents=True)
    (new / "cann" / "x86_64-linux" / "ascend_toolkit_install.info").write_text("version=8.5.0\n")
    state = module.cann_state(str(new), "x86_64")
    assert state["version"] == "8.5.0" and state["set_env"] == f"{new}/cann/set_env.sh"
    old = tmp_path / "old"
    (old / "ascend-toolkit" / "latest" / "aarch64-linux").mkdir(parents=True)
    (old / "ascend-toolkit" / "latest" / "aarch64-linux" / "ascend_toolkit_install.info").write_text(
        "version=8.2.RC1\n"
    )
    (old / "nnal" / "atb").mkdir(parents=True)
    (old / "nnal" / "atb" / "set_env.sh").write_text("")
    state = module.cann_state(str(old), "aarch64")
    assert state["version"] == "8.2.RC1" and state["home"] == f"{old}/ascend-toolkit/latest"
    assert (
        state["uninstall_script"] == f"{old}/ascend-toolkit/latest/aarch64-linux/script/uninstall.sh"
        and state["nnal"]
    )
    assert module.cann_state(str(tmp_path / "none"), "x86_64")["version"] is None


def run_module(args):
    return module_runner.run_module("ascend_driver_state", args, {**os.environ, "PATH": "/nonexistent"}, 60)


def test_module_writes_the_fact_only_when_asked_and_not_in_check_mode(tmp_path, watchdog):
    prefix = node(tmp_path)
    fact = tmp_path / "facts.d" / "clusterforge_ascend_driver.fact"
    args = {
        "install_path": str(prefix),
        "driver_version": "25.2.0",
        "firmware_version": "7.7.0.6.236",
        "in_container": True,
        "npu_smi_path": str(tmp_path / "no-npu-smi"),
        "fact_file": str(fact),
        "fact_extra": {"in_container": True},
    }
    checked = run_module({**args, "_ansible_check_mode": True})
    assert checked["changed"] is True and not fact.exists()
    first = run_module(args)
    assert first["changed"] is True and first["installed"] == "25.2.0"
    data = json.loads(fact.read_text())
    assert data["installed"] == "25.2.0" and data["in_container"] is True and "reasons" in data
    assert run_module(args)["changed"] is False
    assert (
        run_module({k: v for k, v in args.items() if k not in ("fact_file", "fact_extra")})["changed"]
        is False
    )


def test_module_rejects_unknown_options(watchdog):
    result = run_module({"versions": "x"})
    assert result["failed"] is True and "versions" in result["msg"]
