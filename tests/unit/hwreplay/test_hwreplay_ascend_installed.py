"""The replay following installed Ascend packages: version.info files and the driver record.

Also the helpers the other test_hwreplay_ascend_* files share (the replayed files under tmp).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cfcore.parsers.ascend import parse_npu_smi_board, parse_npu_smi_info
from cfcore.parsers.common import ParseError
from hwreplay_testlib import replay_env
from replaylib.common import Context
from replaylib.profiles import resolve
from replaylib.tools import run_tool

# ---------------------------------------------------------- shared by the test_hwreplay_ascend_* files


def ascend_env(tmp_path: Path) -> dict:
    """The Ascend replay's files (replaylib/ascend_installed.py) under tmp_path; nothing installed yet."""
    return {
        "HWREPLAY_ASCEND_ROOT": str(tmp_path / "Ascend"),
        "HWREPLAY_PKG_RECORDS": str(tmp_path / "pkgs"),
        "HWREPLAY_HCCN_CONF": str(tmp_path / "etc/hccn.conf"),
        "HWREPLAY_HCCN_LOG": str(tmp_path / "log/hccn_tool.log"),
    }


def pinned_env(tmp_path: Path) -> dict:
    """replay_env (pinned clock, private state) plus the Ascend files under tmp_path."""
    return {**replay_env(tmp_path), **ascend_env(tmp_path)}


def install_driver(env: dict, version: str, chip: str = "910b", compatible=("7.7.0.6.236",)) -> None:
    """What the test driver .run leaves: version.info and the package record."""
    info = Path(env["HWREPLAY_ASCEND_ROOT"]) / "driver/version.info"
    info.parent.mkdir(parents=True, exist_ok=True)
    info.write_text(f"Version={version}\nascendhal_version=7.35.19\npackage_version={version}\n")
    record = Path(env["HWREPLAY_PKG_RECORDS"]) / "ascend-driver.json"
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(json.dumps({"version": version, "chip": chip, "compatible_firmware": list(compatible)}))


def install_firmware(env: dict, version: str) -> None:
    info = Path(env["HWREPLAY_ASCEND_ROOT"]) / "firmware/version.info"
    info.parent.mkdir(parents=True, exist_ok=True)
    info.write_text(f"Version={version}\nfirmware_version=1.0\n")


HCCN_KEYS = ("address", "netmask", "gateway", "netdetect")


def board_plan(profile: dict) -> list:
    """An hccn_devices plan equal to what the profile's NICs report (hccn device id: Phy-ID on A3)."""
    plan = []
    for npu in profile["ascend"]["npus"]:
        device = npu["phy_id"] if npu.get("phy_id") is not None else npu["id"]
        nic = npu["nic"]
        plan.append(
            {"id": device, **{key: nic[key] for key in ("address", "netmask", "gateway", "netdetect")}}
        )
    return plan


@pytest.fixture
def actx(tmp_path) -> Context:
    return Context(env=pinned_env(tmp_path))


def board(ctx: Context, profile: str, npu: str = "0") -> dict:
    result = run_tool(ctx, "npu-smi", ["info", "-t", "board", "-i", npu], resolve(ctx, profile))
    assert result.rc == 0, result.stderr
    return parse_npu_smi_board(result.stdout)


def info_version(ctx: Context, profile: str) -> str:
    return parse_npu_smi_info(run_tool(ctx, "npu-smi", ["info"], resolve(ctx, profile)).stdout)["version"]


def test_without_a_driver_the_profile_answers(actx):
    parsed = board(actx, "910b-healthy")
    assert (parsed["software_version"], parsed["firmware_version"], parsed["compatibility"]) == (
        "24.1.rc2",
        "7.5.0.1.129",
        "OK",
    )
    assert info_version(actx, "910b-healthy") == "24.1.rc2"


def test_override_still_sets_the_version_when_no_driver_is_installed(actx):
    Path(actx.overrides_path).write_text('{"ascend_driver_version": "25.2.0"}')
    assert info_version(actx, "910b-healthy") == "25.2.0"
    assert board(actx, "910b-healthy")["software_version"] == "25.2.0"


def test_installed_versions_win_over_profile_and_overrides(actx):
    Path(actx.overrides_path).write_text('{"ascend_driver_version": "24.1.0"}')
    install_driver(actx.env, "25.2.0", compatible=("7.7.0.6.236",))
    install_firmware(actx.env, "7.7.0.6.236")
    for profile in ("910b-healthy", "910b-health-alarm"):  # a fault patch keeps the installed versions
        parsed = board(actx, profile, "3")
        assert (parsed["software_version"], parsed["firmware_version"], parsed["compatibility"]) == (
            "25.2.0",
            "7.7.0.6.236",
            "OK",
        )
        assert info_version(actx, profile) == "25.2.0"
    chip = run_tool(
        actx, "npu-smi", ["info", "-t", "board", "-i", "3", "-c", "0"], resolve(actx, "910b-healthy")
    )
    assert parse_npu_smi_board(chip.stdout)["firmware_version"] == "7.7.0.6.236"


def test_driver_before_firmware_is_incompatible_until_the_firmware_follows(actx):
    # Fresh node, driver first: the node's old firmware (the profile's) is not in the driver's list.
    install_driver(actx.env, "25.2.0", compatible=("7.7.0.6.236", "7.7.0.5.220"))
    parsed = board(actx, "910b-healthy")
    assert (parsed["firmware_version"], parsed["compatibility"]) == ("7.5.0.1.129", "NOK")
    install_firmware(actx.env, "7.7.0.5.220")
    assert board(actx, "910b-healthy")["compatibility"] == "OK"
    install_firmware(actx.env, "7.8.0.1.100")  # newer than the driver knows
    assert board(actx, "910b-healthy")["compatibility"] == "NOK"


def test_without_a_record_the_profile_decides_compatibility(actx, tmp_path):
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    source = Path(actx.profile_dir)
    (profiles / "910b-healthy.json").write_text((source / "910b-healthy.json").read_text())
    (profiles / "910b-fw-mismatch.json").write_text(
        json.dumps(
            {
                "base": "910b-healthy",
                "fault": "firmware not compatible",
                "description": "test",
                "patch": {"ascend": {"compatible": False}},
            }
        )
    )
    # Fault patches apply after the installed state: the profile's "compatible" must be read
    # from the effective hardware, so the patched profile says NOK.
    ctx = Context(env={**actx.env, "HWREPLAY_PROFILE_DIR": str(profiles)})
    assert board(ctx, "910b-healthy")["compatibility"] == "OK"
    assert board(ctx, "910b-fw-mismatch")["compatibility"] == "NOK"


def test_record_of_another_chip_breaks_npu_smi_like_a_wrong_driver(actx):
    install_driver(actx.env, "25.2.0", chip="910c")
    result = run_tool(actx, "npu-smi", ["info"], resolve(actx, "910b-healthy"))
    assert result.rc != 0 and "dcmi module initialize failed" in result.stdout
    with pytest.raises(ParseError, match="could not talk to the Ascend driver"):
        parse_npu_smi_info(result.stdout)
    install_driver(actx.env, "25.2.0", chip="910C")  # the chip compares case-insensitively
    assert run_tool(actx, "npu-smi", ["info"], resolve(actx, "910c-healthy")).rc == 0


def test_unreadable_files_count_as_not_installed(actx):
    info = Path(actx.env["HWREPLAY_ASCEND_ROOT"]) / "driver/version.info"
    info.parent.mkdir(parents=True)
    info.write_text("ascendhal_version=7.35.19\n")  # no Version= line
    record = Path(actx.env["HWREPLAY_PKG_RECORDS"]) / "ascend-driver.json"
    record.parent.mkdir(parents=True)
    record.write_text("not json")
    parsed = board(actx, "910b-healthy")
    assert (parsed["software_version"], parsed["compatibility"]) == ("24.1.rc2", "OK")


def test_ppu_smi_reports_the_installed_sdk_version(actx):
    def sdk_version() -> str:
        result = run_tool(actx, "ppu-smi", ["-q"], resolve(actx, "ppu-healthy"))
        assert result.rc == 0, result.stderr
        return next(
            line.split(":", 1)[1].strip() for line in result.stdout.splitlines() if "SDK Version" in line
        )

    assert sdk_version() == "2.1.0-a5f865"  # the profile's, while no SDK package is installed
    record = Path(actx.env["HWREPLAY_PKG_RECORDS"]) / "ppu-sdk.json"
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text('{"version": "2.2.0", "prefix": "/usr/local/PPU_SDK"}\n')
    assert sdk_version() == "2.2.0"
