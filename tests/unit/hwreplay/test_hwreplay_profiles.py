"""Profile files, the patch rules, host overrides and the errors for bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hwreplay_testlib import ALL_PROFILES, FAULTY
from replaylib.common import Context, ReplayError
from replaylib.profiles import apply_patch, list_profiles, resolve
from replaylib.tools import run_tool


def test_required_profiles_exist(ctx):
    assert sorted(list_profiles(ctx)) == sorted(ALL_PROFILES)


@pytest.mark.parametrize("name", ["h100-healthy", "h200-healthy"])
def test_nvidia_profiles_describe_an_hgx_node(ctx, name):
    profile = resolve(ctx, name)
    gpus = profile["nvidia"]["gpus"]
    assert len(gpus) == 8 and len({gpu["uuid"] for gpu in gpus}) == 8
    assert len({gpu["serial"] for gpu in gpus}) == 8
    assert len(profile["nvidia"]["nvswitches"]) == 4
    fabric = [hca for hca in profile["infiniband"]["hcas"] if hca["ports"][0]["link_layer"] == "InfiniBand"]
    assert len(fabric) == 8 and all(hca["ports"][0]["rate"] == 400 for hca in fabric)


def test_h200_is_not_an_h100(ctx):
    h100, h200 = (resolve(ctx, name)["nvidia"]["gpus"][0] for name in ("h100-healthy", "h200-healthy"))
    assert (h200["name"], h200["memory"]["total_mib"], h200["pci_device_id"]) == (
        "NVIDIA H200",
        143771,
        "0x233510DE",
    )
    assert h100["uuid"] != h200["uuid"]


def test_910b_profile(ctx):
    ascend = resolve(ctx, "910b-healthy")["ascend"]
    assert len(ascend["npus"]) == 8
    assert {npu["name"] for npu in ascend["npus"]} == {"910B3"}
    assert {npu["nic"]["netmask"] for npu in ascend["npus"]} == {"255.255.255.0"}  # single-subnet plan


def test_faulty_profiles_are_patches(ctx):
    for name, base in FAULTY.items():
        raw = json.loads((Path(ctx.profile_dir) / (name + ".json")).read_text())
        assert set(raw) == {"base", "fault", "description", "patch"} and raw["base"] == base


def test_patch_rules():
    target = {"a": {"b": 1, "c": 2}, "items": [{"x": 1}, {"x": 2}], "gone": True}
    patched = apply_patch(
        target, {"a": {"b": 5}, "items": {"1": {"x": 9}, "+": [{"x": 3}]}, "gone": None}, "t"
    )
    assert patched == {"a": {"b": 5, "c": 2}, "items": [{"x": 1}, {"x": 9}, {"x": 3}]}
    with pytest.raises(ReplayError, match=r"'5' is not an index of this 2-element list"):
        apply_patch({"items": [1, 2]}, {"items": {"5": 0}}, "t")


def test_overrides_driver_version_and_cuda(ctx, tmp_path):
    (tmp_path / "no-overrides.json").write_text('{"nvidia_driver_version": "570.124.06"}')
    nvidia = resolve(ctx, "h100-xid79")["nvidia"]
    assert (nvidia["driver_version"], nvidia["cuda_version"]) == ("570.124.06", "12.8")


def test_overrides_nic_plan(ctx, tmp_path, render):
    plan = [
        {
            "id": i,
            "address": f"192.168.30.{10 + i}",
            "netmask": "255.255.255.0",
            "gateway": "192.168.30.1",
            "netdetect": "192.168.30.1",
        }
        for i in range(8)
    ]
    (tmp_path / "no-overrides.json").write_text(json.dumps({"hccn_devices": plan}))
    assert render("910b-healthy", "hccn_tool", "-i", "6", "-ip", "-g").stdout == (
        "ipaddr:192.168.30.16\nnetmask:255.255.255.0\n"
    )
    assert render("910b-healthy", "hccn_tool", "-i", "6", "-gateway", "-g").stdout == (
        "default gateway:192.168.30.1, Iface:eth6\n"
    )


def test_bad_overrides_name_the_file(ctx, tmp_path):
    path = tmp_path / "no-overrides.json"
    path.write_text("{not json")
    with pytest.raises(ReplayError, match=f"cannot read {path}"):
        resolve(ctx, "h100-healthy")
    path.write_text('{"hccn_devices": [{"address": "1.2.3.4"}]}')
    with pytest.raises(ReplayError, match=r"hccn_devices\[0\] must be an object with an integer id"):
        resolve(ctx, "910b-healthy")


def test_bad_profile_files(tmp_path):
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    (profiles / "broken.json").write_text('{"nvidia": ')
    (profiles / "loop-a.json").write_text('{"base": "loop-b", "patch": {}}')
    (profiles / "loop-b.json").write_text('{"base": "loop-a", "patch": {}}')
    (profiles / "orphan.json").write_text('{"patch": {}}')
    ctx = Context(env={"HWREPLAY_PROFILE_DIR": str(profiles), "HWREPLAY_OVERRIDES": str(tmp_path / "none")})
    with pytest.raises(ReplayError, match=r"broken\.json is not valid JSON"):
        resolve(ctx, "broken")
    with pytest.raises(ReplayError, match="bases form a cycle"):
        resolve(ctx, "loop-a")
    with pytest.raises(ReplayError, match="has a patch but no base"):
        resolve(ctx, "orphan")


def test_kernel_log_field_errors_name_the_line(tmp_path):
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    (profiles / "k.json").write_text('{"kernel_log": [{"t": 1, "msg": "GPU {nvidia[gpus][0][uuid]}"}]}')
    ctx = Context(env={"HWREPLAY_PROFILE_DIR": str(profiles), "HWREPLAY_OVERRIDES": str(tmp_path / "none")})
    with pytest.raises(ReplayError, match=r"kernel_log\[0\] of profile k names a value the profile lacks"):
        run_tool(ctx, "dmesg", [], resolve(ctx, "k"))
