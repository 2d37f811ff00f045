"""The stand-in tools the test packages ship, run from the built .deb files against the hardware replay.

`nvidia-smi` and `lspci` here are hwreplay (tests/hwreplay) called by those
names, with HWREPLAY_PROFILE set: the stand-ins see replayed GPUs the way they
do on a Molecule node.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import tomllib

import pytest
import yaml
from nvidia_repo_testlib import HWREPLAY_DIR
from patience import HANG_S

CTK_DEB = "nvidia-container-toolkit-base_1.17.8-1_amd64.deb"


@pytest.fixture
def node(tmp_path):
    """An environment whose nvidia-smi/lspci are the replay of `profile` (default h100-healthy)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("nvidia-smi", "lspci"):
        (bin_dir / tool).symlink_to(HWREPLAY_DIR / "hwreplay.py")
    env = {
        "PATH": f"{bin_dir}:{os.path.dirname(sys.executable)}:/usr/bin:/bin",
        "HWREPLAY_PROFILE": "h100-healthy",
        "HWREPLAY_OVERRIDES": str(tmp_path / "no-overrides.json"),
        "HWREPLAY_LIB_DIR": str(tmp_path / "lib"),
        "HWREPLAY_PACKAGE_UNIT_DIRS": str(tmp_path / "pkg-units"),
        "HWREPLAY_FM_STATE": str(tmp_path / "run/fabric.state"),
        "HWREPLAY_SYSROOT": str(tmp_path / "sysroot"),
    }
    return env


def run(
    root, tool: str, *args: str, env: dict | None = None, timeout: float = 60
) -> subprocess.CompletedProcess:
    path = next(p for p in (root / "usr/bin" / tool, root / "opt/nvidia/nvlsm/sbin" / tool) if p.exists())
    interpreter = [sys.executable] if path.read_text().startswith("#!/usr/bin/python3") else ["sh"]
    return subprocess.run(
        [*interpreter, str(path), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


# ------------------------------------------------------------------ nvidia-ctk


def test_ctk_version(unpack):
    result = run(unpack(CTK_DEB), "nvidia-ctk", "--version")
    assert result.stdout.startswith("NVIDIA Container Toolkit CLI version 1.17.8\n")


def test_ctk_configures_containerd_like_the_real_tool(unpack, tmp_path):
    root = unpack(CTK_DEB)
    config = tmp_path / "config.toml"
    config.write_text(
        "# Debian's comment: lost, as with the real tool\nversion = 2\n"
        '[plugins."io.containerd.grpc.v1.cri"]\n  sandbox_image = "registry.k8s.io/pause:3.9"\n'
        '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n'
        '  runtime_type = "io.containerd.runc.v2"\n'
        '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]\n  SystemdCgroup = true\n'
    )
    result = run(root, "nvidia-ctk", "runtime", "configure", "--runtime=containerd", f"--config={config}")
    assert result.returncode == 0, result.stderr
    assert f"Wrote updated config to {config}" in result.stderr
    data = tomllib.loads(config.read_text())
    cri = data["plugins"]["io.containerd.grpc.v1.cri"]
    nvidia = cri["containerd"]["runtimes"]["nvidia"]
    assert nvidia["runtime_type"] == "io.containerd.runc.v2"
    assert nvidia["options"] == {"SystemdCgroup": True, "BinaryName": "/usr/bin/nvidia-container-runtime"}
    assert cri["sandbox_image"] == "registry.k8s.io/pause:3.9" and data["version"] == 2
    assert "default_runtime_name" not in cri["containerd"]
    first = config.read_text()
    assert (
        run(
            root, "nvidia-ctk", "runtime", "configure", "--runtime=containerd", f"--config={config}"
        ).returncode
        == 0
    )
    assert config.read_text() == first  # a second run changes nothing
    run(
        root,
        "nvidia-ctk",
        "runtime",
        "configure",
        "--runtime=containerd",
        f"--config={config}",
        "--set-as-default",
    )
    assert (
        tomllib.loads(config.read_text())["plugins"]["io.containerd.grpc.v1.cri"]["containerd"][
            "default_runtime_name"
        ]
        == "nvidia"
    )


def test_ctk_containerd_from_nothing_and_version_3(unpack, tmp_path):
    root = unpack(CTK_DEB)
    fresh = tmp_path / "etc/containerd/config.toml"
    assert (
        run(
            root, "nvidia-ctk", "runtime", "configure", "--runtime=containerd", f"--config={fresh}"
        ).returncode
        == 0
    )
    data = tomllib.loads(fresh.read_text())
    assert data["version"] == 2
    assert data["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["runtimes"]["nvidia"]["options"][
        "BinaryName"
    ] == ("/usr/bin/nvidia-container-runtime")
    v3 = tmp_path / "v3.toml"
    v3.write_text("version = 3\n")
    run(root, "nvidia-ctk", "runtime", "configure", "--runtime=containerd", f"--config={v3}")
    assert (
        "nvidia"
        in tomllib.loads(v3.read_text())["plugins"]["io.containerd.cri.v1.runtime"]["containerd"]["runtimes"]
    )


def test_ctk_configures_docker(unpack, tmp_path):
    root = unpack(CTK_DEB)
    daemon = tmp_path / "daemon.json"
    daemon.write_text('{"log-driver": "json-file", "runtimes": {"other": {"path": "/usr/bin/other"}}}')
    result = run(
        root,
        "nvidia-ctk",
        "runtime",
        "configure",
        "--runtime=docker",
        f"--config={daemon}",
        "--set-as-default",
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(daemon.read_text())
    assert data["runtimes"] == {
        "nvidia": {"args": [], "path": "nvidia-container-runtime"},
        "other": {"path": "/usr/bin/other"},
    }
    assert (data["log-driver"], data["default-runtime"]) == ("json-file", "nvidia")


def test_ctk_refuses_a_broken_config(unpack, tmp_path):
    daemon = tmp_path / "daemon.json"
    daemon.write_text("{broken")
    result = run(
        unpack(CTK_DEB), "nvidia-ctk", "runtime", "configure", "--runtime=docker", f"--config={daemon}"
    )
    assert result.returncode == 1 and result.stderr.startswith(
        f"INFO[0000] Loading config from {daemon}\nERRO[0000] unable to load config"
    )
    assert daemon.read_text() == "{broken"


def test_cdi_generate_and_list(unpack, tmp_path, node):
    root = unpack(CTK_DEB)
    spec_path = tmp_path / "cdi/nvidia.yaml"
    result = run(root, "nvidia-ctk", "cdi", "generate", f"--output={spec_path}", env=node)
    assert result.returncode == 0, result.stderr
    spec = yaml.safe_load(spec_path.read_text())
    assert (spec["kind"], spec["cdiVersion"]) == ("nvidia.com/gpu", "0.5.0")
    names = [device["name"] for device in spec["devices"]]
    assert names == [str(i) for i in range(8)] + ["all"]
    assert spec["devices"][3]["containerEdits"]["deviceNodes"] == [{"path": "/dev/nvidia3"}]
    assert len(spec["devices"][-1]["containerEdits"]["deviceNodes"]) == 8
    assert {"path": "/dev/nvidiactl"} in spec["containerEdits"]["deviceNodes"]
    listed = run(root, "nvidia-ctk", "cdi", "list", f"--spec-dir={tmp_path / 'cdi'}", env=node)
    assert listed.stdout.splitlines() == [f"nvidia.com/gpu={name}" for name in names]
    assert "Found 9 CDI devices" in listed.stderr
    by_uuid = run(root, "nvidia-ctk", "cdi", "generate", "--device-name-strategy=uuid", env=node)
    assert yaml.safe_load(by_uuid.stdout)["devices"][0]["name"].startswith("GPU-")


def test_cdi_generate_without_a_driver_fails(unpack, node):
    env = dict(node, PATH="/usr/bin:/bin")
    result = run(unpack(CTK_DEB), "nvidia-ctk", "cdi", "generate", env=env)
    assert result.returncode == 1 and "failed to initialize NVML" in result.stderr


# ------------------------------------------------------------- nvcc, nvlsm ...


@pytest.mark.parametrize(
    ("deb", "release", "version"),
    [
        ("cuda-toolkit-12-8_12.8.1-1_amd64.deb", "12.8", "12.8.93"),
        ("cuda-toolkit-13-0_13.0.1-1_amd64.deb", "13.0", "13.0.88"),
    ],
)
def test_nvcc_prints_its_version_like_nvcc(unpack, deb, release, version):
    root = unpack(deb)
    done = subprocess.run(
        [str(root / f"usr/local/cuda-{release}/bin/nvcc"), "--version"],
        capture_output=True,
        text=True,
        check=False,
    )
    lines = done.stdout.splitlines()
    assert lines[0] == "nvcc: NVIDIA (R) Cuda compiler driver"
    assert lines[3] == f"Cuda compilation tools, release {release}, V{version}"
    assert re.fullmatch(rf"Build cuda_{re.escape(release)}\.r{re.escape(release)}/compiler\.\d+_0", lines[4])
    assert (
        json.loads((root / f"usr/local/cuda-{release}/version.json").read_text())["cuda_nvcc"]["version"]
        == version
    )


def test_persistenced_and_nvlsm(unpack):
    root = unpack("nvidia-compute-utils-570_570.133.20-1_amd64.deb", "nvlsm_2025.10.1-1_amd64.deb")
    assert run(root, "nvidia-persistenced", "--version").stdout.startswith(
        "nvidia-persistenced:  version 570.133.20\n"
    )
    missing = run(root, "nvidia-persistenced", "--user", "no-such-user-cf")
    assert missing.returncode == 1 and "no-such-user-cf" in missing.stderr
    assert run(root, "nvlsm", "--version").stdout == "nvlsm version 2025.10.1\n"


# ------------------------------------------------------------- fabric manager


def fm_config(tmp_path, daemonize: str) -> tuple:
    state, pid = tmp_path / "run/fabric.state", tmp_path / "run/nv-fabricmanager.pid"
    config = tmp_path / "fabricmanager.cfg"
    config.write_text(
        f"DAEMONIZE={daemonize}\nLOG_FILE_NAME={tmp_path / 'fm.log'}\n"
        f"STATE_FILE_NAME={state}\nPID_FILE_NAME={pid}\n"
    )
    return config, state, pid


def wait_for(path, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} did not appear"
        time.sleep(0.05)


def fm_replay_states(node: dict) -> set:
    done = subprocess.run(
        ["nvidia-smi", "--query-gpu=fabric.state", "--format=csv,noheader"],
        env=node,
        capture_output=True,
        text=True,
        check=True,
    )
    return set(done.stdout.splitlines())


def test_fabric_manager_runs_and_the_replay_follows_it(unpack, tmp_path, node):
    root = unpack(
        "nvidia-fabricmanager-570_570.133.20-1_amd64.deb", "libnvidia-compute-570_570.133.20-1_amd64.deb"
    )
    assert run(root, "nv-fabricmanager", "--version").stdout == "Fabric Manager version is : 570.133.20\n"
    node = dict(
        node,
        HWREPLAY_LIB_DIR=str(root / "usr/lib/x86_64-linux-gnu"),
        HWREPLAY_PACKAGE_UNIT_DIRS=str(root / "lib/systemd/system"),
    )
    config, state, pid_file = fm_config(tmp_path, "0")
    node["HWREPLAY_FM_STATE"] = str(state)
    assert fm_replay_states(node) == {"In Progress"}  # package installed, not running
    process = subprocess.Popen(
        [sys.executable, str(root / "usr/bin/nv-fabricmanager"), "-c", str(config)],
        env=node,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(state)
        assert state.read_text() == f"{process.pid}\nCompleted\n570.133.20\n"
        assert fm_replay_states(node) == {"Completed"}
    finally:
        process.send_signal(signal.SIGTERM)
        _, log = process.communicate(timeout=HANG_S)
    assert process.returncode == 0 and "Successfully configured all the available NVSwitches" in log
    assert not state.exists() and not pid_file.exists()
    assert fm_replay_states(node) == {"In Progress"}


def test_fabric_manager_daemonizes_for_a_forking_unit(unpack, tmp_path, node):
    root = unpack(
        "nvidia-fabricmanager-570_570.133.20-1_amd64.deb", "libnvidia-compute-570_570.133.20-1_amd64.deb"
    )
    node = dict(node, HWREPLAY_LIB_DIR=str(root / "usr/lib/x86_64-linux-gnu"))
    config, state, pid_file = fm_config(tmp_path, "1")
    log = tmp_path / "fm.out"
    with open(log, "w") as out:  # the daemon keeps its output (journald's pipe under systemd)
        started = subprocess.run(
            [sys.executable, str(root / "usr/bin/nv-fabricmanager"), "-c", str(config)],
            env=node,
            stdout=out,
            stderr=out,
            timeout=HANG_S,
            check=False,
        )
    assert started.returncode == 0, log.read_text()
    pid = int(pid_file.read_text())  # written before the parent exited
    try:
        assert state.read_text().startswith(f"{pid}\n") and os.path.isdir(f"/proc/{pid}")
        again = run(root, "nv-fabricmanager", "-c", str(config), env=node)
        assert again.returncode == 1 and "another instance" in again.stderr
    finally:
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + HANG_S
    while state.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not state.exists()


def test_fabric_manager_refuses_another_driver_version(unpack, tmp_path, node):
    root = unpack("nvidia-fabricmanager-570_570.133.20-1_amd64.deb")
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib/libnvidia-ml.so.590.48.01").write_text("x")  # the driver of another branch
    config, state, _ = fm_config(tmp_path, "0")
    result = run(root, "nv-fabricmanager", "-c", str(config), env=node)
    assert result.returncode == 1 and not state.exists()
    assert (
        "fabric manager NVIDIA GPU driver interface version 570.133.20 don't match "
        "with driver version 590.48.01" in result.stderr
    )


def test_fabric_manager_needs_a_fabric_and_nvlsm_on_nvlink5(unpack, tmp_path, node):
    root = unpack("nvidia-fabricmanager-570_570.133.20-1_amd64.deb")
    config, _, _ = fm_config(tmp_path, "0")
    (tmp_path / "lib").mkdir(exist_ok=True)
    (tmp_path / "lib/libnvidia-ml.so.570.133.20").write_text("x")
    sys.path.insert(0, str(HWREPLAY_DIR))
    from replaylib import control
    from replaylib.common import Context

    (tmp_path / "bin/lspci").unlink()  # no NVSwitch bridge on PCI, no NVLink 5 port in sysfs: no fabric
    no_fabric = run(root, "nv-fabricmanager", "-c", str(config), env=node)
    assert no_fabric.returncode == 1 and "NV_WARN_NOTHING_TO_DO" in no_fabric.stderr
    # b200: the NVSwitch management port's VPD says SW_MNG; without nvlsm the fabric manager fails.
    ctx = Context(
        env={
            key: value
            for key, value in node.items()
            if key.startswith("HWREPLAY_") and key != "HWREPLAY_PROFILE"
        }
        | {
            "HWREPLAY_STATE_DIR": str(tmp_path / "state"),
            "HWREPLAY_BIN_DIR": str(tmp_path / "replay-bin"),
            "HWREPLAY_UNIT_DIR": str(tmp_path / "units"),
            "HWREPLAY_SYSTEMD": "0",
        }
    )
    control.set_profile(ctx, "b200-healthy")
    if os.path.exists("/opt/nvidia/nvlsm/sbin/nvlsm"):
        pytest.skip("this machine has nvlsm installed")
    nvl5 = run(root, "nv-fabricmanager", "-c", str(config), env=dict(node, HWREPLAY_PROFILE="b200-healthy"))
    assert nvl5.returncode == 1 and "NVLink 5 system: NVSwitch management port(s) mlx5_8" in nvl5.stderr
    assert "nvlsm" in nvl5.stderr and "NV_WARN_NOTHING_TO_DO" in nvl5.stderr


# ----------------------------------------------------------------------- DCGM


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_dcgm_host_engine_and_dcgmi(unpack, node):
    root = unpack("datacenter-gpu-manager-4-core_4.2.3-1_amd64.deb")
    assert run(root, "dcgmi", "--version").stdout == "dcgmi  version: 4.2.3\n"
    assert run(root, "nv-hostengine", "--version").stdout.startswith("version: 4.2.3\n")
    port = free_port()
    host = f"127.0.0.1:{port}"
    refused = run(root, "dcgmi", "--host", host, "discovery", "-l", env=node)
    assert refused.returncode == 255 and "Unable to connect to host engine" in refused.stdout
    engine = subprocess.Popen(
        [sys.executable, str(root / "usr/bin/nv-hostengine"), "-n", "--port", str(port)],
        env=node,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert engine.stdout.readline().startswith("Started host engine version 4.2.3")
        listing = run(root, "dcgmi", "--host", host, "discovery", "-l", env=node)
        assert listing.returncode == 0 and listing.stdout.startswith("8 GPUs found.\n")
        assert listing.stdout.count("Name: NVIDIA H100 80GB HBM3") == 8
        report = json.loads(run(root, "dcgmi", "--host", host, "diag", "-r", "2", "-j", env=node).stdout)
        results = [
            r for c in report["DCGM Diagnostic"]["test_categories"] for t in c["tests"] for r in t["results"]
        ]
        assert len(results) == 3 * 8 and {r["status"] for r in results} == {"Pass"}
    finally:
        engine.send_signal(signal.SIGTERM)
        engine.communicate(timeout=HANG_S)
    assert engine.returncode == 0


def test_maintainer_scripts_only_write_files(repo):
    for deb in repo.glob("**/*.deb"):
        for script in ("postinst", "postrm"):
            done = subprocess.run(
                ["dpkg-deb", "--info", str(deb), script], capture_output=True, text=True, check=False
            )
            if done.returncode == 0:
                body = [line for line in done.stdout.splitlines()[3:] if line.strip()]
                assert all(re.match(r"(mkdir -p|printf|rm -f) ", line) for line in body), (deb.name, body)
