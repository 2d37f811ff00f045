"""The lab's part of a real Slurm: container flags of the workers, their boot-time unit, the site
variables and the munge key (cli/clusterforge/lab/{model,bare_metal,sitevars,vault}.py)."""

from __future__ import annotations

import base64
import os
import re
import stat
import subprocess
from pathlib import Path

import pytest
import yaml
from clusterforge.errors import EnvironmentNotReady
from clusterforge.lab import bare_metal, vault
from clusterforge.lab.access import LabAccess
from clusterforge.lab.inventory import render
from clusterforge.lab.model import ROLES, LabSpec, plan_nodes
from clusterforge.lab.podman import Podman
from clusterforge.lab.sitevars import SLURM_HEALTH_CHECK_INTERVAL_S, scheduler_vars
from clusterforge.lab.up import UpRequest, lab_up
from labfake import IMAGE

MIX = {"control": 1, "gpu": 2, "npu": 1, "storage": 1}
GPU_RULES = [f"c 195:{minor} rwm" for minor in (0, 1, 2, 3, 4, 5, 6, 7, 255)]


def option_values(argv: tuple[str, ...], option: str) -> list[str]:
    return [argv[i + 1] for i, arg in enumerate(argv) if arg == option]


def run_of(host, container: str) -> tuple[str, ...]:
    (call,) = [c for c in host.podman_calls("run") if c[c.index("--name") + 1] == container]
    return call


# -- container flags ------------------------------------------------------------------------


def test_gpu_workers_get_one_device_rule_per_gpu_of_their_sku_and_nvidiactl():
    gpu = ROLES["gpu"]
    assert gpu.slurm_worker and gpu.nvidia_gpus == 8  # hgx-h100-8gpu in the SKU catalog
    assert list(gpu.device_cgroup_rules) == GPU_RULES
    assert not any("*" in rule for rule in gpu.device_cgroup_rules)  # a wildcard defeats ConstrainDevices


def test_capabilities_merge_fuse_and_slurm_reasons_once():
    assert ROLES["gpu"].capabilities == ("SYS_ADMIN", "SYS_NICE")  # FUSE client and Slurm worker
    assert ROLES["npu"].capabilities == ("SYS_ADMIN",)  # FUSE client, a Kubernetes worker
    assert ROLES["control"].capabilities == ()  # Redis fails 217/USER under CAP_SYS_ADMIN
    assert ROLES["storage"].capabilities == ()
    for name in ("control", "npu", "storage"):
        assert not ROLES[name].slurm_worker and ROLES[name].device_cgroup_rules == (), name


def test_run_node_passes_device_cgroup_rules(host):
    Podman(host, Path("/c.conf")).run_node(
        name="c1",
        hostname="h1",
        network="n",
        ip="10.0.0.11",
        labels={},
        hosts={},
        image=IMAGE,
        capabilities=("SYS_ADMIN", "SYS_NICE"),
        device_cgroup_rules=("c 195:0 rwm", "c 195:255 rwm"),
    )
    argv = host.calls[-1]
    assert option_values(argv, "--cap-add") == ["AUDIT_WRITE", "NET_RAW", "SYS_ADMIN", "SYS_NICE"]
    assert option_values(argv, "--device-cgroup-rule") == ["c 195:0 rwm", "c 195:255 rwm"]
    assert argv[-2:] == (IMAGE, "/sbin/init")


def test_podman_argv_of_a_gpu_node_has_the_rules_and_caps_and_a_cpu_node_none(ctx, host):
    lab_up(ctx, UpRequest(name="lab", counts=dict(MIX)))
    gpu = run_of(host, "cflab-lab-gpu-01")
    assert option_values(gpu, "--device-cgroup-rule") == GPU_RULES
    caps = option_values(gpu, "--cap-add")
    assert caps.count("SYS_ADMIN") == 1 and "SYS_NICE" in caps
    assert "/dev/fuse:/dev/fuse:rwm" in option_values(gpu, "--device")
    for container in ("cflab-lab-ctl-01", "cflab-lab-npu-01", "cflab-lab-sto-01"):
        argv = run_of(host, container)
        assert option_values(argv, "--device-cgroup-rule") == [], container
        assert "SYS_NICE" not in option_values(argv, "--cap-add"), container
    for argv in host.podman_calls("run"):
        assert not any(arg.startswith(("--privileged", "--cgroupns")) for arg in argv), argv


# -- the boot-time unit ---------------------------------------------------------------------


def test_unit_runs_before_slurmd_in_containers_only_and_at_every_boot():
    unit = bare_metal.unit_text()
    lines = set(unit.splitlines())
    assert {
        "Before=slurmd.service",
        "ConditionVirtualization=container",
        "Type=oneshot",
        "RemainAfterExit=yes",
        f"ExecStart={bare_metal.SCRIPT_PATH}",
    } <= lines
    assert re.search(r"^WantedBy=.*\bmulti-user\.target\b", unit, re.M), unit


@pytest.fixture
def stubs(tmp_path):
    """A PATH of stand-ins for stat, mount, mknod that log their arguments."""
    folder, log = tmp_path / "bin", tmp_path / "calls.log"
    folder.mkdir()

    def stub(name: str, body: str = "") -> None:
        path = folder / name
        path.write_text(f'#!/bin/sh\necho "{name} $*" >> {log}\n{body}')
        path.chmod(0o755)

    def run(script: str, fs_type: str) -> list[str]:
        stub("stat", f"echo {fs_type}\n")
        stub("mount")
        stub("mknod")
        proc = subprocess.run(
            ["/bin/sh", "-c", script], env={"PATH": f"{folder}:/usr/bin:/bin"}, capture_output=True, text=True
        )
        assert proc.returncode == 0, proc.stderr
        return log.read_text().splitlines() if log.exists() else []

    return run


@pytest.mark.skipif(os.path.exists("/dev/nvidia0"), reason="this machine has real NVIDIA devices")
def test_script_remounts_the_v1_controllers_and_creates_each_gpu_device(stubs):
    calls = stubs(bare_metal.script_text(8), "tmpfs")
    controllers = ("cpu", "cpuacct", "cpuset", "memory", "devices", "freezer", "pids", "blkio")
    assert calls == [
        "stat -f -c %T /sys/fs/cgroup",
        *(f"mount -o remount,bind,rw /sys/fs/cgroup/{c}" for c in controllers),
        *(f"mknod -m 0666 /dev/nvidia{i} c 195 {i}" for i in range(8)),
        "mknod -m 0666 /dev/nvidiactl c 195 255",
    ]


@pytest.mark.skipif(os.path.exists("/dev/nvidia0"), reason="this machine has real NVIDIA devices")
def test_script_on_a_unified_cgroup_host_remounts_nothing(stubs):
    calls = stubs(bare_metal.script_text(2), "cgroup2fs")
    assert calls == [
        "stat -f -c %T /sys/fs/cgroup",
        "mknod -m 0666 /dev/nvidia0 c 195 0",
        "mknod -m 0666 /dev/nvidia1 c 195 1",
        "mknod -m 0666 /dev/nvidiactl c 195 255",
    ]


def test_script_keeps_existing_device_files(tmp_path, stubs):
    # The same guard as on the node, pointed at a folder that already has the files.
    devices = tmp_path / "dev"
    devices.mkdir()
    for name in ("nvidia0", "nvidiactl"):
        (devices / name).touch()
    script = bare_metal.script_text(1).replace("/dev/", f"{devices}/")
    assert [call for call in stubs(script, "cgroup2fs") if call.startswith("mknod")] == []


def test_installer_writes_the_script_and_unit_verbatim_then_enables_and_runs_it(tmp_path):
    """Run the real installer with its paths moved under tmp_path and a logging systemctl:
    the here-documents must not expand the script's $c/$i, the modes must be 0755/0644."""
    root, log = tmp_path / "root", tmp_path / "systemctl.log"
    (root / "etc" / "systemd" / "system").mkdir(parents=True)
    (tmp_path / "bin").mkdir()
    systemctl = tmp_path / "bin" / "systemctl"
    systemctl.write_text(f'#!/bin/sh\necho "$*" >> {log}\n')
    systemctl.chmod(0o755)
    sh, flag, script = bare_metal.install_command(8)
    assert (sh, flag) == ("sh", "-ec")

    def moved(text: str) -> str:
        return text.replace("/usr/local/sbin", f"{root}/usr/local/sbin").replace("/etc/", f"{root}/etc/")

    proc = subprocess.run(
        [sh, flag, moved(script)],
        env={"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin"},
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    installed = root / bare_metal.SCRIPT_PATH.lstrip("/")
    unit = root / bare_metal.UNIT_PATH.lstrip("/")
    assert installed.read_text() == bare_metal.script_text(8)
    assert unit.read_text() == moved(bare_metal.unit_text())
    assert stat.S_IMODE(installed.stat().st_mode) == 0o755 and stat.S_IMODE(unit.stat().st_mode) == 0o644
    assert log.read_text().splitlines() == [
        "daemon-reload",
        "enable --quiet cflab-bare-metal.service",
        "restart cflab-bare-metal.service",
    ]


def test_up_installs_the_unit_on_slurm_workers_only_on_every_run(ctx, host):
    lab_up(ctx, UpRequest(name="lab", counts=dict(MIX)))
    installed = {name: len(c.bare_metal_scripts) for name, c in host.containers.items()}
    assert installed == {
        "cflab-lab-ctl-01": 0,
        "cflab-lab-gpu-01": 1,
        "cflab-lab-gpu-02": 1,
        "cflab-lab-npu-01": 0,
        "cflab-lab-sto-01": 0,
    }
    assert host.containers["cflab-lab-gpu-01"].bare_metal_scripts[0] == bare_metal.install_command(8)[2]
    lab_up(ctx, UpRequest(name="lab", counts=dict.fromkeys(MIX)))  # reconcile a running lab
    assert len(host.containers["cflab-lab-gpu-02"].bare_metal_scripts) == 2


def test_a_worker_whose_unit_fails_stops_up_with_the_journal_and_the_fix(ctx, host):
    lab_up(ctx, UpRequest(name="lab", counts=dict(MIX)))
    host.containers["cflab-lab-gpu-02"].caps.remove("SYS_ADMIN")  # a node of an older lab
    with pytest.raises(EnvironmentNotReady, match=r"cflab-bare-metal\.service failed on lab-gpu-02") as err:
        lab_up(ctx, UpRequest(name="lab", counts=dict.fromkeys(MIX)))
    assert err.value.message.endswith(
        "lab-gpu-02: mount: /sys/fs/cgroup/cpu: permission denied. "
        "dmesg(1) may have more information after failed mount system call."
    )
    assert "journalctl -u cflab-bare-metal.service" in err.value.fix
    assert "clusterforge lab down --name lab" in err.value.fix
    assert set(host.containers) == {
        f"cflab-lab-{h}" for h in ("ctl-01", "gpu-01", "gpu-02", "npu-01", "sto-01")
    }


# -- site variables and the munge key -------------------------------------------------------


def nodes_of(**counts):
    return plan_nodes(LabSpec("lab", {**MIX, **counts}, "10.89.100.0/24", "img"))


def test_scheduler_vars_reference_the_vault_munge_key_and_a_short_health_check():
    values = scheduler_vars("lab", nodes_of())
    assert values["slurm_munge_key"] == "{{ vault_slurm_munge_key }}"
    assert values["slurm_health_check_interval"] == SLURM_HEALTH_CHECK_INTERVAL_S < 300
    assert values["slurm_enforce_cgroups"] is True
    assert values["slurm_partitions"] == [
        {"name": "gpu", "nodes_group": "gpu_nvidia", "default": True, "max_time": "1-00:00:00"}
    ]
    assert scheduler_vars("lab", nodes_of(gpu=0))["slurm_partitions"] == []


def test_every_vault_variable_the_inventory_references_is_generated(tmp_path):
    access = LabAccess(tmp_path / "state", runner=None)
    storage = vault.ensure_storage(tmp_path / "state")
    files = render("lab", nodes_of(), access, "10.89.100.0/24", storage=storage)
    scheduler = yaml.safe_load(files["group_vars/all/scheduler.yml"])
    assert scheduler["slurm_munge_key"] == "{{ vault_slurm_munge_key }}"
    assert scheduler["slurm_version"] == "22.05.8"
    referenced = set(re.findall(r"\{\{ (vault_\w+) \}\}", "".join(files.values())))
    assert "vault_slurm_munge_key" in referenced and referenced <= set(vault.SECRETS)


def test_munge_key_is_base64_of_48_random_bytes():
    first, second = vault.munge_key(), vault.munge_key()
    assert len(base64.b64decode(first, validate=True)) == 48
    assert first != second


def test_an_existing_lab_without_a_munge_key_gets_one_and_keeps_its_other_secrets(tmp_path):
    state = tmp_path / "state"
    vault.ensure_storage(state)
    password = (state / "vault-password").read_bytes().strip()
    older = vault.read_vault(state / "vault.yml", password)
    del older["vault_slurm_munge_key"]  # the vault.yml of a lab brought up before the schedulers
    (state / "vault.yml").write_text(vault.render_vault(older, password, state / "vault-password"))
    fsid = (state / "storage.json").read_text()

    storage = vault.ensure_storage(state)

    now = vault.read_vault(state / "vault.yml", password)
    assert {k: v for k, v in now.items() if k != "vault_slurm_munge_key"} == older
    assert len(base64.b64decode(now["vault_slurm_munge_key"])) == 48
    assert storage.vault_text == (state / "vault.yml").read_text()
    assert (state / "storage.json").read_text() == fsid
    assert stat.S_IMODE((state / "vault.yml").stat().st_mode) == 0o600
    assert vault.ensure_storage(state).vault_text == storage.vault_text  # added once, then kept
