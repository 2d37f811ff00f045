"""`hwreplay profile set|show|list`, the program's entry points and the fabric-manager stand-in."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys

import pytest
from hwreplay_testlib import ALL_PROFILES, HWREPLAY_DIR, replay_env
from patience import HANG_S
from replaylib import control, shims
from replaylib.common import PROGRAM, ReplayError

PYTHON = sys.executable


def test_program_path_is_the_checkout_file():
    assert os.path.samefile(PROGRAM, HWREPLAY_DIR / "hwreplay.py")


def test_set_installs_tool_shims_writes_sysfs_and_unit(ctx, tmp_path):
    previous, changes = control.set_profile(ctx, "h100-healthy")
    assert previous is None and changes
    tools = sorted(os.listdir(tmp_path / "bin"))
    assert tools == [
        "all_reduce_perf",
        "dmesg",
        "ib_write_bw",
        "ibstat",
        "lspci",
        "modinfo",
        "mpirun",
        "nvbandwidth",
        "nvidia-smi",
    ]
    for tool in tools:
        path = tmp_path / "bin" / tool
        assert shims.is_shim(str(path)) and os.access(path, os.X_OK)
        assert path.read_text().startswith("#!/bin/sh\n")
        assert f"HWREPLAY_TOOL={tool}\n" in path.read_text() and PROGRAM in path.read_text()
    port = tmp_path / "sysroot/sys/class/infiniband/mlx5_3/ports/1"
    assert (port / "state").read_text() == "4: ACTIVE\n"
    assert (port / "phys_state").read_text() == "5: LinkUp\n"
    assert (port / "rate").read_text() == "400 Gb/sec (4X NDR)\n"
    assert (port / "link_layer").read_text() == "InfiniBand\n"
    assert (tmp_path / "sysroot/sys/class/infiniband/mlx5_8/ports/1/link_layer").read_text() == "Ethernet\n"
    assert (tmp_path / "sysroot/sys/class/infiniband/mlx5_0/fw_ver").read_text() == "28.39.2048\n"
    assert "Type=notify" in (tmp_path / "units/nvidia-fabricmanager.service").read_text()
    assert (tmp_path / "state/profile").read_text() == "h100-healthy\n"


def test_set_is_idempotent(ctx):
    control.set_profile(ctx, "h100-ib-port-down")
    assert control.set_profile(ctx, "h100-ib-port-down") == ("h100-ib-port-down", [])


def test_switching_rewrites_only_what_differs(ctx, tmp_path):
    control.set_profile(ctx, "h100-healthy")
    previous, changes = control.set_profile(ctx, "h100-ib-port-down")
    assert previous == "h100-healthy"
    assert changes[0] == "profile h100-healthy -> h100-ib-port-down"
    # ibstat's answer changed (mlx5_3 is down); the tool shims did not.
    answers = tmp_path / "state" / "answers"
    assert changes[1].startswith(f"answers {answers}: pre-rendered 9 commands (answers-")
    assert changes[2:] == [f"sysfs {tmp_path / 'sysroot'}/sys/class/infiniband: wrote 3, removed 0 files"]
    port = tmp_path / "sysroot/sys/class/infiniband/mlx5_3/ports/1"
    assert [(port / f).read_text() for f in ("state", "phys_state", "rate")] == [
        "1: DOWN\n",
        "2: Polling\n",
        "40 Gb/sec (4X QDR)\n",
    ]


def test_switching_hardware_family_removes_what_it_lacks(ctx, tmp_path):
    control.set_profile(ctx, "h100-healthy")
    control.set_profile(ctx, "910b-healthy")
    assert sorted(os.listdir(tmp_path / "bin")) == [
        "all_reduce_test",
        "dmesg",
        "hccn_tool",
        "lspci",
        "mpirun",
        "npu-smi",
    ]
    assert not (tmp_path / "sysroot/sys/class/infiniband").exists()
    assert not (tmp_path / "units/nvidia-fabricmanager.service").exists()
    control.set_profile(ctx, "cpu-none")
    assert sorted(os.listdir(tmp_path / "bin")) == ["dmesg", "lspci"]


def test_set_refuses_to_replace_a_real_binary(ctx, tmp_path):
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin/nvidia-smi").write_text("#!/bin/sh\n")
    with pytest.raises(ReplayError, match="is not a hwreplay tool shim"):
        control.set_profile(ctx, "h100-healthy")
    assert not (tmp_path / "state/profile").exists()  # nothing half-done
    assert sorted(os.listdir(tmp_path / "bin")) == ["nvidia-smi"]


def test_unknown_profile_lists_the_known_ones(ctx):
    with pytest.raises(ReplayError) as err:
        control.set_profile(ctx, "h100-burning")
    assert "unknown profile 'h100-burning'" in err.value.message
    assert "h100-xid79" in err.value.fix


def test_nic_plan_must_name_existing_npus(ctx, tmp_path):
    (tmp_path / "no-overrides.json").write_text('{"hccn_devices": [{"id": 8, "address": "10.0.0.9"}]}')
    with pytest.raises(ReplayError, match="hccn_devices has id 8"):
        control.set_profile(ctx, "910b-healthy")


def test_show_and_list(ctx, tmp_path):
    (tmp_path / "no-overrides.json").write_text('{"nvidia_driver_version": "550.90.07"}')
    control.set_profile(ctx, "h100-remapped-rows-pending")
    shown = control.show_profile(ctx)
    assert "profile: h100-remapped-rows-pending\nbase: h100-healthy\n" in shown
    assert "nvidia: 8 GPUs, driver 550.90.07, CUDA 12.4, 4 NVSwitches, fabric manager running" in shown
    assert f"overrides ({tmp_path / 'no-overrides.json'}): nvidia_driver_version" in shown
    listing = control.list_profiles_text(ctx).splitlines()
    assert [line.split()[0] for line in listing[1:]] == sorted(ALL_PROFILES)


def run_program(tmp_path, *argv, argv0=None, extra_env=None):
    """Run hwreplay.py as a process; argv0 picks the name it is called by (like a symlink)."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        **replay_env(tmp_path),
        **(extra_env or {}),
    }
    script = str(HWREPLAY_DIR / "hwreplay.py")
    if argv0:
        link = tmp_path / "called-as" / argv0
        link.parent.mkdir(exist_ok=True)
        if not link.exists():
            link.symlink_to(script)
        command = [PYTHON, str(link), *argv]
    else:
        command = [PYTHON, script, *argv]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=HANG_S, check=False)


def test_dispatch_on_program_name(tmp_path):
    assert run_program(tmp_path, "profile", "set", "h100-healthy").returncode == 0
    listed = run_program(tmp_path, "-L", argv0="nvidia-smi")
    assert listed.returncode == 0 and listed.stdout.count("NVIDIA H100 80GB HBM3 (UUID: GPU-") == 8
    assert run_program(tmp_path, "-l", argv0="ibstat").stdout.split()[0] == "mlx5_0"
    missing = run_program(tmp_path, "info", argv0="npu-smi")
    assert (missing.returncode, missing.stderr) == (127, "npu-smi: command not found\n")
    rendered = run_program(tmp_path, "render", "nvidia-smi", "-L")
    assert rendered.stdout == listed.stdout


def test_set_reports_changes_for_ansible(tmp_path):
    first = run_program(tmp_path, "profile", "set", "910b-healthy")
    assert first.returncode == 0 and "changed: yes\n" in first.stdout
    second = run_program(tmp_path, "profile", "set", "910b-healthy")
    assert second.stdout == "profile: 910b-healthy (was: 910b-healthy)\nchanged: no\n"


def test_tools_without_a_selected_profile_fail_clearly(tmp_path):
    result = run_program(tmp_path, argv0="nvidia-smi")
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith("hwreplay: error: no hardware profile selected")
    assert "fix: run 'hwreplay profile set NAME'" in result.stderr


def test_environment_profile_needs_no_state(tmp_path):
    result = run_program(
        tmp_path,
        "info",
        "-t",
        "health",
        "-i",
        "5",
        argv0="npu-smi",
        extra_env={"HWREPLAY_PROFILE": "910b-health-alarm"},
    )
    assert "Health Status                  : Alarm" in result.stdout


def test_bad_overrides_file_is_named(tmp_path):
    (tmp_path / "no-overrides.json").write_text('{"nvidia_driver": "1"}')
    result = run_program(tmp_path, "profile", "set", "h100-healthy")
    assert result.returncode == 1
    assert "no-overrides.json: unknown keys nvidia_driver" in result.stderr


def test_fabricmanager_fails_on_a_failed_fabric(tmp_path):
    result = run_program(
        tmp_path, "fabricmanager", extra_env={"HWREPLAY_PROFILE": "h100-fabricmanager-failed"}
    )
    assert result.returncode == 1
    assert "[ERROR]" in result.stdout and "failed to initialize the NVSwitch fabric" in result.stdout


def test_fabricmanager_refuses_without_nvswitch(tmp_path):
    result = run_program(tmp_path, "fabricmanager", extra_env={"HWREPLAY_PROFILE": "910b-healthy"})
    assert result.returncode == 1 and "no NVSwitch devices found" in result.stdout


def test_fabricmanager_notifies_systemd_and_stops_on_sigterm(tmp_path):
    notify_path = str(tmp_path / "notify.sock")
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as listener:
        listener.bind(notify_path)
        listener.settimeout(30)
        env = dict(
            os.environ,
            HWREPLAY_PROFILE="h100-healthy",
            NOTIFY_SOCKET=notify_path,
            HWREPLAY_OVERRIDES=str(tmp_path / "none.json"),
        )
        process = subprocess.Popen(
            [PYTHON, str(HWREPLAY_DIR / "hwreplay.py"), "fabricmanager"],
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert listener.recv(64) == b"READY=1"
            assert process.poll() is None  # keeps running, like the real daemon
        finally:
            process.send_signal(signal.SIGTERM)
            output, _ = process.communicate(timeout=HANG_S)
    assert process.returncode == 0
    assert "Successfully configured all the available NVSwitches" in output
