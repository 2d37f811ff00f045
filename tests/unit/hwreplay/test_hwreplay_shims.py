"""The tool shims and their pre-rendered answers: same bytes and exit codes as rendering live, only faster."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import hwreplay
import pytest
import yaml
from hwreplay_testlib import ALL_PROFILES, HWREPLAY_DIR, NOW
from patience import HANG_S
from replaylib import control, prerender, shims
from replaylib.common import Context, ctime
from replaylib.profiles import resolve
from replaylib.tools import TOOLS, run_tool

SKU_OF = {
    "h100": "hgx-h100-8gpu",
    "h200": "hgx-h200-8gpu",
    "b200": "hgx-b200-8gpu",
    "910b": "atlas-800t-a2",
    "910c": "atlas-800t-a3",
    "ppu": "alibaba-ppu-zw810e-16",
    "cpu": "cpu-generic",
    "roce": "hgx-h100-8gpu-roce",
}


@pytest.fixture
def node(tmp_path):
    """A private replay node: its environment (no pinned clock) and a context for `profile set`."""
    env = {
        "PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin",
        "HWREPLAY_STATE_DIR": str(tmp_path / "state"),
        "HWREPLAY_OVERRIDES": str(tmp_path / "overrides.json"),
        "HWREPLAY_SYSROOT": str(tmp_path / "sysroot"),
        "HWREPLAY_BIN_DIR": str(tmp_path / "bin"),
        "HWREPLAY_VENDOR_BIN_DIR": str(tmp_path / "vendor-bin"),
        "HWREPLAY_UNIT_DIR": str(tmp_path / "units"),
        "HWREPLAY_LIB_DIR": str(tmp_path / "lib"),
        "HWREPLAY_PACKAGE_UNIT_DIRS": str(tmp_path / "pkg-units"),
        "HWREPLAY_FM_STATE": str(tmp_path / "run/fabric.state"),
        "HWREPLAY_ASCEND_ROOT": str(tmp_path / "Ascend"),
        "HWREPLAY_PKG_RECORDS": str(tmp_path / "pkgs"),
        "HWREPLAY_HCCN_CONF": str(tmp_path / "etc/hccn.conf"),
        "HWREPLAY_HCCN_LOG": str(tmp_path / "log/hccn_tool.log"),
        "HWREPLAY_SYSTEMD": "0",
    }
    if "TZ" in os.environ:  # the stamps nvidia-smi prints are local time, here as in the tests' renders
        env["TZ"] = os.environ["TZ"]
    return env, Context(env=dict(env))


@pytest.fixture
def no_fallback(tmp_path, monkeypatch):
    """Shims written from now on fall back to a stand-in that says so (rc 99) instead of Python."""
    fake = tmp_path / "fake-python"
    fake.write_text(
        '#!/bin/sh\nshift\nprintf "fallback %s:" "$HWREPLAY_TOOL" >&2\nprintf " [%s]" "$@" >&2\nexit 99\n'
    )
    fake.chmod(0o755)
    monkeypatch.setattr(shims, "interpreter", lambda: str(fake))


def shim(env: dict, *argv: str, extra_env: dict | None = None) -> subprocess.CompletedProcess:
    path = Path(env["HWREPLAY_BIN_DIR"]) / argv[0]
    if not path.exists():  # vendor tools the SDK puts on PATH (ppu-smi) live apart
        path = Path(env["HWREPLAY_VENDOR_BIN_DIR"]) / argv[0]
    return subprocess.run(
        [str(path), *argv[1:]],
        env={**env, **(extra_env or {})},
        capture_output=True,
        timeout=HANG_S,
        check=False,
    )


def shim_in_one_second(env: dict, argv: tuple) -> tuple:
    """(the second it ran in, result): retried when the call straddles a second boundary."""
    for _ in range(5):
        second = int(time.time())
        result = shim(env, *argv)
        if int(time.time()) == second:
            return second, result
    raise AssertionError(f"{argv}: every try crossed a second boundary")


def render_command(monkeypatch, capsys, env: dict, now: int, argv: tuple) -> tuple:
    """(rc, stdout, stderr) of `hwreplay render ARGV` with the node's environment, clock pinned to `now`."""
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("HWREPLAY_NOW", str(now))
    rc = hwreplay.main(["hwreplay", "render", *argv])
    captured = capsys.readouterr()
    return rc, captured.out.encode(), captured.err.encode()


# ---------------------------------------------------------------- the command list


def expand_cfcore_table(profile: dict) -> set:
    from cfcore.collect import CAPTURE_LAYOUT

    replayed = tuple(tuple(argv) for argv, _ in CAPTURE_LAYOUT if argv[0] in TOOLS)
    return set(prerender.expand(replayed, profile))


@pytest.mark.parametrize("name", ALL_PROFILES)
def test_explicit_list_covers_cfcore_command_table(ctx, name):
    profile = resolve(ctx, name)
    explicit = set(prerender.expand(prerender.command_templates(), profile))
    missing = expand_cfcore_table(profile) - explicit
    assert not missing, f"add to replaylib/prerender.py VALIDATOR_COMMANDS: {sorted(missing)}"


class RenderedSource:
    """cfcore's live-source interface answered in-process by the replay; records what ran."""

    kind = "live"

    def __init__(self, ctx: Context, profile: dict) -> None:
        self.ctx, self.profile, self.ran = ctx, profile, []

    def run(self, argv, timeout: float = 30) -> tuple:
        self.ran.append(tuple(argv))
        if argv[0] not in TOOLS:
            return 127, "", f"{argv[0]} not found on PATH"
        result = run_tool(self.ctx, argv[0], list(argv[1:]), self.profile)
        return result.rc, result.stdout, result.stderr

    def read(self, path: str):
        return None

    def exists(self, path: str) -> bool:
        return False

    def hostname(self) -> str:
        return "replayed-node"

    def file_for(self, argv):
        return None

    def sysfs_root(self, configured: str) -> str:
        return configured or "/"


@pytest.mark.parametrize("name", ALL_PROFILES)
@pytest.mark.parametrize("nic_plan", [True, False], ids=["nic-plan", "no-nic-plan"])
def test_node_answers_every_replayed_command_validation_runs(ctx, monkeypatch, tmp_path, name, nic_plan):
    from cfcore.expected import build_expected
    from cfcore.validate import validate_node

    monkeypatch.setattr(prerender, "cfcore_templates", lambda: ())  # a node has no cfcore
    profile = resolve(ctx, name)
    hostvars = {"node_sku": SKU_OF[name.split("-")[0]], "sysfs_root": str(tmp_path / "sysroot")}
    npus = (profile.get("ascend") or {}).get("npus", [])
    if nic_plan and npus:
        hostvars["hccn_devices"] = [
            {"id": npu.get("phy_id", npu["id"]), "address": npu["nic"]["address"], "netmask": "255.255.255.0"}
            for npu in npus
        ]
    source = RenderedSource(ctx, profile)
    validate_node(source, build_expected("node", hostvars), "quick")
    # mlnx_qos is stateful, never pre-rendered (replaylib/roce.py): no RoCE plan here, so it never runs.
    replayed = {argv for argv in source.ran if argv[0] in TOOLS and argv[0] != "mlnx_qos"}
    assert replayed or name == "cpu-none", "validation ran no replayed tool"
    answered = {answer.argv for answer in prerender.render_answers(ctx, profile)}
    assert replayed <= answered, sorted(replayed - answered)


def test_answers_stay_live_when_they_depend_on_more_than_the_date(ctx):
    profile = resolve(ctx, "h100-healthy")
    timed = prerender.render_answer(ctx, profile, ("nvidia-smi", "-q"))
    assert timed.tail is not None and re.search(r"\nTimestamp +: $", timed.stdout)
    assert timed.tail.startswith("\nDriver Version")
    assert prerender.render_answer(ctx, profile, ("dmesg",)).tail is None  # seconds since boot: fixed
    assert prerender.render_answer(ctx, profile, ("dmesg", "-T")) is None  # boot time from the uptime
    query = ("nvidia-smi", "--query-gpu=index,timestamp", "--format=csv")
    assert prerender.render_answer(ctx, profile, query) is None  # a second clock format


# ------------------------------------------------------- shims against live rendering


@pytest.mark.parametrize("name", ALL_PROFILES)
def test_shims_print_what_render_prints(node, no_fallback, monkeypatch, capsys, name):
    env, set_ctx = node
    control.set_profile(set_ctx, name)
    answers = prerender.render_answers(set_ctx, resolve(set_ctx, name))
    assert answers
    for answer in answers:
        second, result = shim_in_one_second(env, answer.argv)
        expected = render_command(monkeypatch, capsys, env, second, answer.argv)
        assert (result.returncode, result.stdout, result.stderr) == expected, answer.argv
    if name.startswith("h"):
        assert any(answer.tail is not None for answer in answers)  # nvidia-smi -q and -q -x


def test_timed_answer_prints_the_time_of_the_call(node, no_fallback):
    env, set_ctx = node
    control.set_profile(set_ctx, "h200-healthy")
    second, result = shim_in_one_second(env, ("nvidia-smi", "-q", "-x"))
    assert f"\t<timestamp>{ctime(second)}</timestamp>\n".encode() in result.stdout


def test_other_arguments_go_to_python_with_the_tool_name(node, no_fallback):
    env, set_ctx = node
    control.set_profile(set_ctx, "910b-healthy")
    for argv in (
        ("npu-smi", "info", "-m"),
        ("npu-smi", "info", "-t", "usages", "-i", "0"),
        ("hccn_tool", "-i", "0", "-ip", "-g", "-x"),
        ("hccn_tool", "-i", "0", "-ip"),
        ("npu-smi", "info -t", "board", "-i", "0"),  # the same words, split differently
        ("npu-smi", "info", "-t", "board", "-i", "8"),
        ("npu-smi", "info", "-t", "board", "-i", "*"),
        ("dmesg", "-T"),
    ):
        result = shim(env, *argv)
        fallback = f"fallback {argv[0]}:" + "".join(f" [{arg}]" for arg in argv[1:])
        assert (result.returncode, result.stderr.decode()) == (99, fallback), argv


@pytest.mark.parametrize(
    "pin",
    [
        {"HWREPLAY_NOW": str(NOW)},
        {"HWREPLAY_UPTIME": "60"},
        {"HWREPLAY_PROFILE": "910b-health-alarm"},
        {"HWREPLAY_PROFILE_DIR": str(HWREPLAY_DIR / "profiles") + "/"},
        {"HWREPLAY_OVERRIDES": "/nonexistent/overrides.json"},
    ],
)
def test_a_pinned_setting_renders_live(node, no_fallback, pin):
    env, set_ctx = node
    control.set_profile(set_ctx, "910b-healthy")
    assert shim(env, "npu-smi", "info").returncode == 0
    assert shim(env, "npu-smi", "info", extra_env=pin).returncode == 99


def test_fallback_renders_like_before(node):
    env, set_ctx = node
    control.set_profile(set_ctx, "h100-healthy")  # shims fall back to this Python
    pinned = {**env, "HWREPLAY_NOW": str(NOW), "HWREPLAY_UPTIME": "86400"}
    for call_env, argv in (
        (env, ("nvidia-smi", "-L")),
        (env, ("lspci", "-s", "zz")),
        (pinned, ("nvidia-smi", "-q", "-x")),
        (pinned, ("dmesg", "-T")),
    ):
        result = shim(call_env, *argv)
        live = run_tool(Context(env=call_env), argv[0], list(argv[1:]))
        assert (result.returncode, result.stdout.decode(), result.stderr.decode()) == (
            live.rc,
            live.stdout,
            live.stderr,
        ), argv
    missing = subprocess.run(
        ["sh", "-c", "npu-smi info"], env=env, capture_output=True, text=True, check=False
    )
    assert missing.returncode == 127 and "not found" in missing.stderr


def test_tools_the_profile_lacks_are_not_found(node):
    env, set_ctx = node
    control.set_profile(set_ctx, "910b-healthy")
    control.set_profile(set_ctx, "cpu-none")
    assert sorted(os.listdir(env["HWREPLAY_BIN_DIR"])) == ["dmesg", "lspci"]
    for command in ("nvidia-smi -q -x", "npu-smi info", "hccn_tool -i 0 -ip -g", "ibstat"):
        result = subprocess.run(["sh", "-c", command], env=env, capture_output=True, text=True, check=False)
        assert result.returncode == 127, command


# ------------------------------------------------------------ switching and overrides


def answer_sets(env: dict) -> list:
    return sorted(entry for entry in os.listdir(env["HWREPLAY_STATE_DIR"]) if entry.startswith("answers"))


def test_switch_swaps_complete_answer_sets(node, no_fallback):
    env, set_ctx = node
    control.set_profile(set_ctx, "910b-healthy")
    first = os.readlink(Path(env["HWREPLAY_STATE_DIR"]) / "answers")
    assert control.set_profile(set_ctx, "910b-healthy")[1] == []  # idempotent
    control.set_profile(set_ctx, "910b-health-alarm")
    second = os.readlink(Path(env["HWREPLAY_STATE_DIR"]) / "answers")
    assert first != second
    assert b"Alarm" in shim(env, "npu-smi", "info", "-t", "health", "-i", "5").stdout
    control.set_profile(set_ctx, "h100-healthy")
    # The current set, and the one before it for a shim that may still be reading it.
    assert answer_sets(env) == sorted(
        ["answers", second, os.readlink(Path(env["HWREPLAY_STATE_DIR"]) / "answers")]
    )


def test_failed_render_leaves_the_previous_answers(node, no_fallback, monkeypatch):
    env, set_ctx = node
    control.set_profile(set_ctx, "910b-healthy")
    before = answer_sets(env)
    real_write = shims.write_answers

    def write_half(directory, files):
        real_write(directory, dict(list(files.items())[:3]))
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(shims, "write_answers", write_half)
    with pytest.raises(OSError):
        control.set_profile(set_ctx, "910b-health-alarm")
    assert answer_sets(env) == before  # no half-written set, no temporary left behind
    result = shim(env, "npu-smi", "info", "-t", "health", "-i", "5")
    assert result.returncode == 0 and b"Health Status                  : OK" in result.stdout


def test_overrides_change_is_reflected(node, no_fallback):
    env, set_ctx = node
    overrides = Path(env["HWREPLAY_OVERRIDES"])
    control.set_profile(set_ctx, "910b-healthy")
    assert (
        shim(env, "hccn_tool", "-i", "3", "-ip", "-g").stdout == b"ipaddr:10.10.0.14\nnetmask:255.255.255.0\n"
    )
    overrides.write_text('{"hccn_devices": [{"id": 3, "address": "172.16.0.3", "netmask": "255.255.0.0"}]}')
    # Until `profile set` runs again the answers are stale: the shim renders live.
    assert shim(env, "hccn_tool", "-i", "3", "-ip", "-g").returncode == 99
    _, changes = control.set_profile(set_ctx, "910b-healthy")
    assert [change.split(":")[0] for change in changes] == [f"answers {env['HWREPLAY_STATE_DIR']}/answers"]
    assert (
        shim(env, "hccn_tool", "-i", "3", "-ip", "-g").stdout == b"ipaddr:172.16.0.3\nnetmask:255.255.0.0\n"
    )
    # Rewritten with the same content: nothing to re-render, and the answers are used again.
    time.sleep(0.01)
    overrides.write_text(overrides.read_text())
    assert shim(env, "hccn_tool", "-i", "3", "-ip", "-g").returncode == 99
    assert control.set_profile(set_ctx, "910b-healthy")[1] == []
    assert shim(env, "hccn_tool", "-i", "3", "-ip", "-g").returncode == 0
    overrides.unlink()
    assert shim(env, "hccn_tool", "-i", "3", "-ip", "-g").returncode == 99


def test_links_of_an_older_hwreplay_become_shims(node):
    env, set_ctx = node
    bin_dir = Path(env["HWREPLAY_BIN_DIR"])
    bin_dir.mkdir()
    (bin_dir / "lspci").symlink_to(HWREPLAY_DIR / "hwreplay.py")
    _, changes = control.set_profile(set_ctx, "cpu-none")
    assert f"installed {bin_dir / 'lspci'}" in changes
    assert shims.is_shim(str(bin_dir / "lspci"))


def test_tool_name_comes_from_the_shim_variable(node):
    env, set_ctx = node
    control.set_profile(set_ctx, "910b-healthy")
    result = subprocess.run(
        [sys.executable, str(HWREPLAY_DIR / "hwreplay.py"), "info", "-m"],
        env={**env, "HWREPLAY_TOOL": "npu-smi"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0 and result.stdout.startswith("\tNPU ID")


def test_install_playbook_reselects_the_profile_after_writing_overrides():
    play = yaml.safe_load((HWREPLAY_DIR / "install.yml").read_text())[0]
    tasks = next(task["block"] for task in play["tasks"] if "block" in task)
    names = [task["name"] for task in tasks]
    overrides = names.index("Write the host's replay overrides")
    select = names.index("Select the replayed hardware profile")
    assert select > overrides
    # Every run re-renders what changed (overrides, profiles, the tool); "changed" only then.
    assert "when" not in tasks[select]
    assert tasks[select]["changed_when"] == "'changed: yes' in hwreplay_set.stdout"
