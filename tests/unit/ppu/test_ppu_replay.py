"""The hardware replay's ppu-smi: rendering, the profiles, pre-rendered answers and the shim's place."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HWREPLAY_DIR = Path(__file__).resolve().parents[2] / "hwreplay"
sys.path.insert(0, str(HWREPLAY_DIR))

from cfcore.parsers import parse  # noqa: E402
from replaylib import control, prerender, shims, tools  # noqa: E402
from replaylib.common import Context  # noqa: E402
from replaylib.profiles import resolve  # noqa: E402
from replaylib.tools import run_tool  # noqa: E402

NOW = "1718935388"


@pytest.fixture
def ctx(tmp_path) -> Context:
    return Context(
        env={
            "HWREPLAY_OVERRIDES": str(tmp_path / "no-overrides.json"),
            "HWREPLAY_STATE_DIR": str(tmp_path / "state"),
            "HWREPLAY_SYSROOT": str(tmp_path / "sysroot"),
            "HWREPLAY_BIN_DIR": str(tmp_path / "bin"),
            "HWREPLAY_VENDOR_BIN_DIR": str(tmp_path / "opt-bin"),
            "HWREPLAY_UNIT_DIR": str(tmp_path / "units"),
            "HWREPLAY_LIB_DIR": str(tmp_path / "lib"),
            "HWREPLAY_PACKAGE_UNIT_DIRS": str(tmp_path / "pkg-units"),
            "HWREPLAY_FM_STATE": str(tmp_path / "run/fabric.state"),
            "HWREPLAY_SYSTEMD": "0",
            "HWREPLAY_NOW": NOW,
            "HWREPLAY_UPTIME": "86400",
        }
    )


def render(ctx, name, *args):
    return run_tool(ctx, "ppu-smi", list(args), resolve(ctx, name))


def test_healthy_profile_renders_outputs_the_parsers_read(ctx):
    listed = parse("ppu-smi-list", render(ctx, "ppu-healthy", "-L").stdout)
    detail = parse("ppu-smi-q", render(ctx, "ppu-healthy", "-q").stdout)
    assert len(listed["ppus"]) == 16 and {p["name"] for p in listed["ppus"]} == {"PPU-ZW810E"}
    assert [p["uuid"] for p in listed["ppus"]] == [p["uuid"] for p in detail["ppus"]]
    assert detail["sdk_version"] == "2.1.0-a5f865" and detail["attached"] == 16
    assert all(p["health"] == "OK" and p["ecc_uncorrectable_volatile"] == 0 for p in detail["ppus"])
    assert detail["ppus"][5]["bus_id"] == "0000:2c:00.0"


def test_device_error_profile_differs_only_in_ppu_5(ctx):
    healthy = parse("ppu-smi-q", render(ctx, "ppu-healthy", "-q").stdout)["ppus"]
    faulty = parse("ppu-smi-q", render(ctx, "ppu-device-error", "-q").stdout)["ppus"]
    changed = [i for i, (a, b) in enumerate(zip(healthy, faulty, strict=True)) if a != b]
    assert changed == [5]
    assert (faulty[5]["health"], faulty[5]["ecc_uncorrectable_volatile"]) == ("Critical", 3)
    assert resolve(ctx, "ppu-device-error")["profile"]["base"] == "ppu-healthy"


def test_query_of_one_device_and_bad_arguments(ctx):
    one = parse("ppu-smi-q", render(ctx, "ppu-healthy", "-q", "-i", "3").stdout)["ppus"]
    assert [p["index"] for p in one] == [3]
    missing = render(ctx, "ppu-healthy", "-q", "-i", "99")
    assert missing.rc == 6 and "99" in missing.stderr
    bad = render(ctx, "ppu-healthy", "--bogus")
    assert bad.rc == 2 and "ppu-smi -h" in bad.stderr


def test_other_hardware_has_no_ppu_smi(ctx):
    result = run_tool(ctx, "ppu-smi", ["-L"], resolve(ctx, "h100-healthy"))
    assert result.rc == 127


def test_validator_commands_are_pre_rendered_with_the_time_split_out(ctx):
    answers = {a.argv: a for a in prerender.render_answers(ctx, resolve(ctx, "ppu-healthy"))}
    assert ("ppu-smi", "-L") in answers and answers[("ppu-smi", "-L")].tail is None
    timed = answers[("ppu-smi", "-q")]
    assert timed.stdout.endswith("Timestamp                             : ") and timed.tail.startswith("\n")


def test_profile_set_puts_the_shim_in_the_vendor_dir_not_on_path(ctx, tmp_path):
    control.set_profile(ctx, "ppu-healthy")
    shim = tmp_path / "opt-bin" / "ppu-smi"
    assert shims.is_shim(str(shim)) and not (tmp_path / "bin" / "ppu-smi").exists()
    assert (tmp_path / "bin" / "lspci").exists()
    assert tools.tool_path(Context(env={}), "ppu-smi") == "/opt/hwreplay/bin/ppu-smi"
    # Switching to hardware without PPUs removes it; back again, nothing else changes twice.
    control.set_profile(ctx, "cpu-none")
    assert not shim.exists()
    control.set_profile(ctx, "ppu-healthy")
    assert control.set_profile(ctx, "ppu-healthy")[1] == []


def test_set_refuses_to_shadow_a_real_ppu_smi(ctx, tmp_path):
    real = tmp_path / "opt-bin" / "ppu-smi"
    real.parent.mkdir()
    real.write_text("#!/bin/sh\necho real\n")
    with pytest.raises(Exception, match="not a hwreplay tool shim"):
        control.set_profile(ctx, "ppu-healthy")


def test_the_shim_prints_the_pre_rendered_answers_byte_for_byte(ctx, tmp_path):
    control.set_profile(ctx, "ppu-healthy")
    env = {k: v for k, v in ctx.env.items() if k not in ("HWREPLAY_NOW", "HWREPLAY_UPTIME")}
    env["PATH"] = os.environ["PATH"]
    shim = str(tmp_path / "opt-bin" / "ppu-smi")
    ran = subprocess.run([shim, "-L"], env=env, capture_output=True, text=True, check=True)
    assert ran.stdout == render(ctx, "ppu-healthy", "-L").stdout
    timed = subprocess.run([shim, "-q"], env=env, capture_output=True, text=True, check=True)
    assert parse("ppu-smi-q", timed.stdout)["attached"] == 16
    # Arguments without an answer go to Python, which renders them live.
    live = subprocess.run([shim, "-q", "-i", "2"], env=env, capture_output=True, text=True, check=True)
    assert [p["index"] for p in parse("ppu-smi-q", live.stdout)["ppus"]] == [2]


def test_validation_on_the_replay_answers_every_command_it_runs(ctx):
    from cfcore.catalog import sku_spec
    from cfcore.validate import validate_node

    ran = []

    class Source:
        kind = "live"

        def run(self, argv, timeout=30):
            ran.append(tuple(argv))
            if argv[0] not in tools.TOOLS:
                return 127, "", "not found"
            result = run_tool(ctx, argv[0], list(argv[1:]), resolve(ctx, "ppu-device-error"))
            return result.rc, result.stdout, result.stderr

        def read(self, path):
            return None

        def exists(self, path):
            return False

        def hostname(self):
            return "replayed"

        def file_for(self, argv):
            return None

        def sysfs_root(self, configured):
            return "/"

    sku = "alibaba-ppu-zw810e-16"
    result = validate_node(
        Source(), {"node_sku": sku, "sku": sku_spec(sku), "bom": {"ppu_sdk_version": "2.1.0"}}
    )
    statuses = {c["id"]: c["status"] for c in result["checks"] if c["id"].startswith("ppu.")}
    assert statuses == {
        "ppu.tool": "pass",
        "ppu.count": "pass",
        "ppu.model": "pass",
        "ppu.health": "fail",
        "ppu.sdk_version": "pass",
    }
    replayed = {argv for argv in ran if argv[0] in tools.TOOLS}
    answered = {a.argv for a in prerender.render_answers(ctx, resolve(ctx, "ppu-device-error"))}
    assert replayed and replayed <= answered
