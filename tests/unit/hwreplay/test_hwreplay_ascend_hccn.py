"""hccn_tool -s keeps /etc/hccn.conf like the real tool; -g answers follow it; the shims see it change."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from cfcore.parsers.hccn import parse_hccn_ip, parse_hccn_net_health
from hwreplay_testlib import HWREPLAY_DIR
from patience import HANG_S
from replaylib import ascend_installed, control
from replaylib.common import Context
from replaylib.profiles import resolve
from replaylib.tools import run_tool
from test_hwreplay_ascend_installed import ascend_env, install_driver, install_firmware, pinned_env
from test_hwreplay_shims import no_fallback, node, shim  # noqa: F401 (fixtures)


@pytest.fixture
def actx(tmp_path) -> Context:
    return Context(env=pinned_env(tmp_path))


def hccn(ctx: Context, profile: str, *args: str):
    return run_tool(ctx, "hccn_tool", list(args), resolve(ctx, profile))


def conf_lines(ctx: Context) -> list:
    return Path(ctx.env["HWREPLAY_HCCN_CONF"]).read_text().splitlines()


def log_lines(ctx: Context) -> list:
    path = Path(ctx.env["HWREPLAY_HCCN_LOG"])
    return [line.split(" ", 1)[1] for line in path.read_text().splitlines()] if path.exists() else []


# ------------------------------------------------------------------ -s writes /etc/hccn.conf


def test_set_writes_the_device_keys_and_logs_the_call(actx):
    assert (
        hccn(
            actx,
            "910b-healthy",
            "-i",
            "3",
            "-ip",
            "-s",
            "address",
            "192.168.100.13",
            "netmask",
            "255.255.255.0",
        ).rc
        == 0
    )
    assert hccn(actx, "910b-healthy", "-i", "3", "-gateway", "-s", "gateway", "192.168.100.1").rc == 0
    assert hccn(actx, "910b-healthy", "-i", "3", "-netdetect", "-s", "address", "192.168.100.1").rc == 0
    assert conf_lines(actx) == [
        "address_3=192.168.100.13",
        "netmask_3=255.255.255.0",
        "gateway_3=192.168.100.1",
        "netdetect_3=192.168.100.1",
    ]
    assert log_lines(actx) == [
        "rc=0 hccn_tool -i 3 -ip -s address 192.168.100.13 netmask 255.255.255.0",
        "rc=0 hccn_tool -i 3 -gateway -s gateway 192.168.100.1",
        "rc=0 hccn_tool -i 3 -netdetect -s address 192.168.100.1",
    ]
    # The -g answers of device 3 follow the file; device 4 still answers from the profile.
    assert (
        hccn(actx, "910b-healthy", "-i", "3", "-ip", "-g").stdout
        == "ipaddr:192.168.100.13\nnetmask:255.255.255.0\n"
    )
    assert (
        hccn(actx, "910b-healthy", "-i", "3", "-gateway", "-g").stdout
        == "default gateway:192.168.100.1, Iface:eth3\n"
    )
    assert (
        hccn(actx, "910b-healthy", "-i", "3", "-netdetect", "-g").stdout
        == "netdetect address: 192.168.100.1\n"
    )
    assert (
        hccn(actx, "910b-healthy", "-i", "4", "-ip", "-g").stdout
        == "ipaddr:10.10.0.15\nnetmask:255.255.255.0\n"
    )


def test_set_keeps_other_lines_and_replaces_in_place(actx):
    conf = Path(actx.env["HWREPLAY_HCCN_CONF"])
    conf.parent.mkdir(parents=True)
    conf.write_text(
        "# site comment\naddress_0=29.1.137.205\nnetmask_0=255.255.0.0\nsend_arp_status_0=1\n"
        "address_1=29.1.137.206\naddress_1=29.1.137.207\ntls_enable_1=0\n"
    )
    conf.chmod(0o600)
    assert (
        hccn(actx, "910b-healthy", "-i", "1", "-ip", "-s", "address", "29.1.0.9", "netmask", "255.255.0.0").rc
        == 0
    )
    assert conf_lines(actx) == [
        "# site comment",
        "address_0=29.1.137.205",
        "netmask_0=255.255.0.0",
        "send_arp_status_0=1",
        "address_1=29.1.0.9",  # the first of the repeated keys holds the value, the repeat is gone
        "tls_enable_1=0",
        "netmask_1=255.255.0.0",
    ]
    assert conf.stat().st_mode & 0o777 == 0o600  # the rewrite keeps the file's mode
    assert [entry.name for entry in conf.parent.iterdir()] == ["hccn.conf"]  # no temporary left
    assert (
        hccn(actx, "910b-healthy", "-i", "0", "-ip", "-g").stdout
        == "ipaddr:29.1.137.205\nnetmask:255.255.0.0\n"
    )


@pytest.mark.parametrize(
    "args, words",
    [
        (
            ["-i", "2", "-ip", "-s", "address", "10.0.0.300", "netmask", "255.255.255.0"],
            "not a valid IPv4 address",
        ),
        (["-i", "2", "-ip", "-s", "address", "10.0.0.5", "netmask", "255.0.255.0"], "contiguous"),
        (["-i", "2", "-ip", "-s", "address", "10.0.0.0", "netmask", "255.255.255.0"], "network or broadcast"),
        (
            ["-i", "2", "-ip", "-s", "address", "10.0.0.255", "netmask", "255.255.255.0"],
            "network or broadcast",
        ),
        (["-i", "2", "-ip", "-s", "address", "224.0.0.5", "netmask", "255.255.255.0"], "not a unicast"),
        (["-i", "2", "-gateway", "-s", "gateway", "0.0.0.0"], "not a unicast"),
        (["-i", "2", "-netdetect", "-s", "address", "fe80::1"], "not a valid IPv4 address"),
    ],
)
def test_bad_values_are_refused_and_nothing_is_written(actx, args, words):
    result = hccn(actx, "910b-healthy", *args)
    assert result.rc != 0 and words in result.stderr and result.stderr.startswith("Invalid parameter: ")
    assert not Path(actx.env["HWREPLAY_HCCN_CONF"]).exists()
    assert log_lines(actx) == [f"rc={result.rc} hccn_tool {' '.join(args)}"]  # evidence of the refusal


@pytest.mark.parametrize(
    "args, words",
    [
        (
            ["-i", "8", "-ip", "-s", "address", "10.0.0.5", "netmask", "255.255.255.0"],
            "device id 8 is invalid",
        ),
        (["-i", "2", "-ip", "-s", "address", "10.0.0.5"], "Invalid command"),
        (["-i", "2", "-link", "-s", "up"], "Invalid command"),
        (["-i", "2", "-gateway", "-s", "address", "10.0.0.1"], "Invalid command"),
    ],
)
def test_unknown_devices_and_malformed_calls_are_refused_unlogged(actx, args, words):
    result = hccn(actx, "910b-healthy", *args)
    assert result.rc != 0 and words in result.stderr
    assert not Path(actx.env["HWREPLAY_HCCN_CONF"]).exists() and log_lines(actx) == []


def test_a3_devices_are_the_phy_ids(actx):
    assert (
        hccn(
            actx, "910c-healthy", "-i", "15", "-ip", "-s", "address", "10.20.1.18", "netmask", "255.255.255.0"
        ).rc
        == 0
    )
    assert conf_lines(actx) == ["address_15=10.20.1.18", "netmask_15=255.255.255.0"]
    assert (
        hccn(actx, "910c-healthy", "-i", "15", "-ip", "-g").stdout
        == "ipaddr:10.20.1.18\nnetmask:255.255.255.0\n"
    )
    assert (
        hccn(actx, "910c-healthy", "-i", "14", "-ip", "-g").stdout
        == "ipaddr:10.11.0.18\nnetmask:255.255.255.0\n"
    )
    assert hccn(actx, "910c-healthy", "-i", "16", "-ip", "-g").rc != 0


# ------------------------------------------------------------------ -g: file, overrides, profile


def test_get_answers_from_the_file_then_the_overrides_then_the_profile(actx):
    Path(actx.overrides_path).write_text(
        '{"hccn_devices": [{"id": 1, "address": "172.16.0.1", "netmask": "255.255.0.0",'
        ' "gateway": "172.16.0.254"}, {"id": 2, "address": "172.16.0.2", "netmask": "255.255.0.0"}]}'
    )
    hccn(actx, "910b-healthy", "-i", "1", "-ip", "-s", "address", "192.168.5.1", "netmask", "255.255.255.0")
    assert (
        hccn(actx, "910b-healthy", "-i", "1", "-ip", "-g").stdout
        == "ipaddr:192.168.5.1\nnetmask:255.255.255.0\n"
    )
    # Keys the file lacks still come from the overrides, then the profile.
    assert (
        hccn(actx, "910b-healthy", "-i", "1", "-gateway", "-g").stdout
        == "default gateway:172.16.0.254, Iface:eth1\n"
    )
    assert (
        hccn(actx, "910b-healthy", "-i", "1", "-netdetect", "-g").stdout == "netdetect address: 10.10.0.1\n"
    )
    assert (
        hccn(actx, "910b-healthy", "-i", "2", "-ip", "-g").stdout
        == "ipaddr:172.16.0.2\nnetmask:255.255.0.0\n"
    )
    assert (
        hccn(actx, "910b-healthy", "-i", "5", "-ip", "-g").stdout
        == "ipaddr:10.10.0.16\nnetmask:255.255.255.0\n"
    )


def test_link_and_net_health_stay_as_the_profile_says(actx):
    for device in ("3", "4"):
        hccn(actx, "910b-nic-net-health-fail", "-i", device, "-netdetect", "-s", "address", "10.10.0.1")
    failing = parse_hccn_net_health(
        hccn(actx, "910b-nic-net-health-fail", "-i", "3", "-net_health", "-g").stdout
    )
    assert failing["net_health"] == "Receive timeout"  # a faulty profile stays faulty
    assert parse_hccn_net_health(
        hccn(actx, "910b-nic-net-health-fail", "-i", "4", "-net_health", "-g").stdout
    )["healthy"]
    assert hccn(actx, "910b-nic-net-health-fail", "-i", "3", "-link", "-g").stdout == "link status: UP\n"


def test_the_parser_reads_what_the_file_makes_the_tool_print(actx):
    hccn(actx, "910b-healthy", "-i", "6", "-ip", "-s", "address", "10.30.2.17", "netmask", "255.255.0.0")
    parsed = parse_hccn_ip(hccn(actx, "910b-healthy", "-i", "6", "-ip", "-g").stdout, device=6)
    assert (parsed["address"], parsed["prefix_length"]) == ("10.30.2.17", 16)


# ------------------------------------------------------------------ the shims see the file change


@pytest.fixture
def anode(node):  # noqa: F811
    """A private replay node (test_hwreplay_shims.node) whose Ascend files live under its tmp dir too."""
    env, _ = node
    tmp = Path(env["HWREPLAY_STATE_DIR"]).parent
    env.update(ascend_env(tmp))
    return env, Context(env=dict(env))


def test_answers_go_live_when_hccn_conf_changes(anode, no_fallback):  # noqa: F811
    env, set_ctx = anode
    control.set_profile(set_ctx, "910b-healthy")
    assert (
        shim(env, "hccn_tool", "-i", "3", "-ip", "-g").stdout == b"ipaddr:10.10.0.14\nnetmask:255.255.255.0\n"
    )
    # -s is no pre-rendered command: it goes to Python.
    assert (
        shim(
            env, "hccn_tool", "-i", "3", "-ip", "-s", "address", "192.168.100.13", "netmask", "255.255.255.0"
        ).returncode
        == 99
    )
    ascend_installed.write_conf(set_ctx, 3, {"address": "192.168.100.13", "netmask": "255.255.255.0"})
    for argv in (
        ("hccn_tool", "-i", "3", "-ip", "-g"),
        ("hccn_tool", "-i", "5", "-link", "-g"),
        ("npu-smi", "info"),
    ):
        assert shim(env, *argv).returncode == 99, argv  # stale: every Ascend answer renders live
    assert shim(env, "lspci", "-vvv", "-nn", "-D", "-d", "19e5:").returncode == 0  # no Ascend state in it
    control.set_profile(set_ctx, "910b-healthy")
    assert (
        shim(env, "hccn_tool", "-i", "3", "-ip", "-g").stdout
        == b"ipaddr:192.168.100.13\nnetmask:255.255.255.0\n"
    )
    # Rewritten with the same content (trailing newlines aside): still pre-rendered.
    conf = Path(env["HWREPLAY_HCCN_CONF"])
    conf.write_text(conf.read_text() + "\n\n")
    assert shim(env, "hccn_tool", "-i", "3", "-ip", "-g").returncode == 0
    conf.unlink()
    assert shim(env, "hccn_tool", "-i", "3", "-ip", "-g").returncode == 99


def test_answers_go_live_when_an_installed_driver_changes(anode, no_fallback):  # noqa: F811
    env, set_ctx = anode
    control.set_profile(set_ctx, "910b-healthy")
    assert shim(env, "npu-smi", "info").returncode == 0
    install_driver(env, "25.2.0")
    assert shim(env, "npu-smi", "info").returncode == 99
    control.set_profile(set_ctx, "910b-healthy")
    assert (
        b"Compatibility                  : NOK"
        in shim(env, "npu-smi", "info", "-t", "board", "-i", "0").stdout
    )
    install_firmware(env, "7.7.0.6.236")
    assert shim(env, "npu-smi", "info", "-t", "board", "-i", "0").returncode == 99


@pytest.mark.parametrize("variable", ["HWREPLAY_HCCN_CONF", "HWREPLAY_ASCEND_ROOT", "HWREPLAY_PKG_RECORDS"])
def test_other_ascend_paths_render_live(anode, no_fallback, variable, tmp_path):  # noqa: F811
    env, set_ctx = anode
    control.set_profile(set_ctx, "910b-healthy")
    assert (
        shim(
            env, "hccn_tool", "-i", "0", "-ip", "-g", extra_env={variable: str(tmp_path / "elsewhere")}
        ).returncode
        == 99
    )


def run_shim(env: dict, *argv: str) -> subprocess.CompletedProcess:
    path = Path(env["HWREPLAY_BIN_DIR"]) / argv[0]
    return subprocess.run(
        [str(path), *argv[1:]], env=env, capture_output=True, text=True, timeout=HANG_S, check=False
    )


def test_a_live_call_pre_renders_the_answers_again(anode):
    env, set_ctx = anode
    control.set_profile(set_ctx, "910b-healthy")
    answers = Path(env["HWREPLAY_STATE_DIR"]) / "answers"
    before = os.readlink(answers)
    set_call = run_shim(
        env, "hccn_tool", "-i", "3", "-ip", "-s", "address", "192.168.100.13", "netmask", "255.255.255.0"
    )
    assert set_call.returncode == 0, set_call.stderr
    assert os.readlink(answers) == before  # never after a -s: more may follow
    read = run_shim(env, "hccn_tool", "-i", "3", "-ip", "-g")  # live, then re-renders
    assert read.stdout == "ipaddr:192.168.100.13\nnetmask:255.255.255.0\n"
    assert os.readlink(answers) != before
    table = (answers / "hccn_tool.sh").read_text()
    assert "address_3=192.168.100.13" in table  # the guard holds the file it was rendered with
    # A pinned call renders live and re-renders nothing.
    ascend_installed.write_conf(set_ctx, 4, {"address": "192.168.100.14", "netmask": "255.255.255.0"})
    current = os.readlink(answers)
    pinned = dict(env, HWREPLAY_NOW="1718935388")
    subprocess.run(
        [str(Path(env["HWREPLAY_BIN_DIR"]) / "npu-smi"), "info"], env=pinned, capture_output=True, check=True
    )
    assert os.readlink(answers) == current
    run_shim(env, "npu-smi", "info")
    assert os.readlink(answers) != current
    assert b"ipaddr:192.168.100.14" in shim(env, "hccn_tool", "-i", "4", "-ip", "-g").stdout


def test_live_calls_after_a_refresh_print_what_render_prints(anode):
    env, set_ctx = anode
    control.set_profile(set_ctx, "910c-healthy")
    run_shim(env, "hccn_tool", "-i", "9", "-ip", "-s", "address", "10.20.1.15", "netmask", "255.255.255.0")
    for argv in (
        ("hccn_tool", "-i", "9", "-ip", "-g"),
        ("hccn_tool", "-i", "9", "-ip", "-g"),
        ("npu-smi", "info"),
    ):
        result = run_shim(env, *argv)
        live = subprocess.run(
            [sys.executable, str(HWREPLAY_DIR / "hwreplay.py"), "render", *argv],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert (result.returncode, result.stdout, result.stderr) == (
            live.returncode,
            live.stdout,
            live.stderr,
        )


# ------------------------------------------------------------------ install.yml


def test_install_playbook_no_longer_copies_the_nic_plan():
    text = (HWREPLAY_DIR / "install.yml").read_text()
    play = yaml.safe_load(text)[0]
    tasks = next(task["block"] for task in play["tasks"] if "block" in task)
    overrides = next(task for task in tasks if task["name"] == "Write the host's replay overrides")
    expression = overrides["vars"]["hwreplay_overrides"]
    assert "hccn_devices" not in expression
    assert "ascend_driver_version" in expression and "nvidia_driver_version" in expression
