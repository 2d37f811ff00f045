"""The Ascend Docker Runtime stand-in: scenes, containerd and docker config edits, upgrade, uninstall."""

from __future__ import annotations

import json
import subprocess
import tomllib

import pytest
from ascend_pkgs_testlib import RUNTIME, info

R6 = RUNTIME.format(version="6.0.0")
R7 = RUNTIME.format(version="7.0.0")
BINARY = "/usr/local/Ascend/Ascend-Docker-Runtime/ascend-docker-runtime"
INFO = "/usr/local/Ascend/Ascend-Docker-Runtime/ascend_docker_runtime_install.info"
CONTAINERD_V2 = """\
version = 2
root = "/var/lib/containerd"

[plugins]
  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = "registry.k8s.io/pause:3.9"
    [plugins."io.containerd.grpc.v1.cri".containerd]
      default_runtime_name = "runc"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes]
        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
          runtime_type = "io.containerd.runc.v2"
          [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
            SystemdCgroup = true
"""
CONTAINERD_V3 = """\
version = 3

[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
"""


def write(sandbox, logical: str, text: str):
    path = sandbox.path(logical)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def runtimes(config: dict, cri: str) -> dict:
    return config["plugins"][cri]["containerd"]["runtimes"]


@pytest.mark.parametrize(
    ("args", "expect"),
    [
        (["--install", "--install-scene=podman"], "--install-scene=podman is not a scene"),
        (["--install", "--full"], "--full is not an option of this package"),
        (["--full"], "--full is not an option of this package"),
        (["--install", "--install-username=HwHiAiUser"], "is not an option of this package"),
        (["--install", "--bogus"], "unknown option --bogus"),
        (["--install", "--install-scene"], "needs a value"),
        (["--install", "--config-file-path=etc/containerd.toml"], "is not an absolute path"),
        (["--upgrade"], "no Ascend Docker Runtime is installed"),
        (["--uninstall"], "no Ascend Docker Runtime is installed"),
        ([], "no operation given"),
    ],
)
def test_refusals(sandbox, args, expect):
    sandbox.refused(R6, *args, expect=expect)
    assert not sandbox.path("/usr/local/Ascend").exists()


def test_containerd_scene_needs_the_config_file(sandbox):
    done = sandbox.refused(
        R6, "--install", "--install-scene=containerd", expect="/etc/containerd/config.toml does not exist"
    )
    assert "containerd config default" in done.stderr
    assert not sandbox.path(INFO).exists()


def test_containerd_scene_registers_the_ascend_runtime(sandbox):
    config = write(sandbox, "/etc/containerd/config.toml", CONTAINERD_V2)
    done = sandbox.ok(R6, "--install", "--install-scene=containerd", "--install-path=/usr/local/Ascend")
    assert "restart the container engine" in done.stdout
    parsed = tomllib.loads(config.read_text())
    ascend = runtimes(parsed, "io.containerd.grpc.v1.cri")["ascend"]
    assert ascend["runtime_type"] == "io.containerd.runc.v2"
    assert ascend["options"] == {"BinaryName": BINARY, "SystemdCgroup": True}
    assert runtimes(parsed, "io.containerd.grpc.v1.cri")["runc"]["options"]["SystemdCgroup"] is True
    assert config.read_text().startswith(CONTAINERD_V2)  # the rest of the file is kept as it was
    recorded = info(sandbox.read(INFO))
    assert recorded["version"] == "6.0.0" and recorded["install_scene"] == "containerd"
    # the binaries, under <path>/Ascend-Docker-Runtime/
    runtime = sandbox.path(BINARY)
    version = subprocess.run(["sh", str(runtime), "--version"], capture_output=True, text=True)
    assert version.stdout == "ascend-docker-runtime version: v6.0.0\n"
    for tool in ("ascend-docker-hook", "ascend-docker-cli", "ascend-docker-destroy"):
        assert sandbox.path(f"/usr/local/Ascend/Ascend-Docker-Runtime/{tool}").is_file()
    sandbox.refused(R6, "--install", "--install-scene=containerd", expect="is already installed")
    sandbox.refused(R7, "--install", "--install-scene=containerd", expect="use --upgrade")


def test_containerd_upgrade_keeps_the_scene_and_an_unchanged_file(sandbox):
    config = write(sandbox, "/etc/containerd/config.toml", CONTAINERD_V2)
    sandbox.ok(R6, "--install", "--install-scene=containerd")
    edited = config.read_text()
    done = sandbox.ok(R7, "--upgrade")
    assert "unchanged" in done.stdout
    assert config.read_text() == edited
    assert info(sandbox.read(INFO))["version"] == "7.0.0"
    version = subprocess.run(["sh", str(sandbox.path(BINARY)), "--version"], capture_output=True, text=True)
    assert "v7.0.0" in version.stdout


def test_containerd_uninstall_restores_the_file(sandbox):
    config = write(sandbox, "/etc/containerd/config.toml", CONTAINERD_V2)
    sandbox.ok(R6, "--install", "--install-scene=containerd")
    sandbox.ok(R6, "--uninstall")
    assert config.read_text() == CONTAINERD_V2
    assert not sandbox.path("/usr/local/Ascend/Ascend-Docker-Runtime").exists()


def test_containerd_config_version_3(sandbox):
    config = write(sandbox, "/etc/containerd/config.toml", CONTAINERD_V3)
    sandbox.ok(R7, "--install", "--install-scene=containerd")
    parsed = tomllib.loads(config.read_text())
    ascend = runtimes(parsed, "io.containerd.cri.v1.runtime")["ascend"]
    assert ascend["options"] == {"BinaryName": BINARY}  # runc has no SystemdCgroup here: none copied
    assert "io.containerd.grpc.v1.cri" not in parsed["plugins"]


def test_config_file_path_and_install_path_options(sandbox):
    config = write(sandbox, "/etc/k8s/containerd.toml", CONTAINERD_V2)
    sandbox.ok(
        R6,
        "--install",
        "--install-scene=containerd",
        "--config-file-path=/etc/k8s/containerd.toml",
        "--install-path=/opt/ascend",
    )
    ascend = runtimes(tomllib.loads(config.read_text()), "io.containerd.grpc.v1.cri")["ascend"]
    assert ascend["options"]["BinaryName"] == "/opt/ascend/Ascend-Docker-Runtime/ascend-docker-runtime"
    assert (
        info(sandbox.read("/opt/ascend/Ascend-Docker-Runtime/ascend_docker_runtime_install.info"))[
            "config_file"
        ]
        == "/etc/k8s/containerd.toml"
    )


def test_docker_scene_creates_daemon_json(sandbox):
    sandbox.ok(R6, "--install", "--install-scene=docker")
    daemon = json.loads(sandbox.read("/etc/docker/daemon.json"))
    assert daemon == {
        "runtimes": {"ascend": {"path": BINARY, "runtimeArgs": []}},
        "default-runtime": "ascend",
    }


def test_docker_is_the_default_scene_and_other_keys_are_kept(sandbox):
    write(
        sandbox,
        "/etc/docker/daemon.json",
        json.dumps({"log-driver": "journald", "runtimes": {"x": {"path": "/x"}}}),
    )
    sandbox.ok(R6, "--install")
    daemon = json.loads(sandbox.read("/etc/docker/daemon.json"))
    assert daemon["log-driver"] == "journald"
    assert set(daemon["runtimes"]) == {"x", "ascend"} and daemon["default-runtime"] == "ascend"
    assert info(sandbox.read(INFO))["install_scene"] == "docker"
    sandbox.ok(R6, "--uninstall")
    assert json.loads(sandbox.read("/etc/docker/daemon.json")) == {
        "log-driver": "journald",
        "runtimes": {"x": {"path": "/x"}},
    }


def test_invalid_daemon_json_is_refused(sandbox):
    write(sandbox, "/etc/docker/daemon.json", "{not json")
    done = sandbox.refused(
        R6, "--install", "--install-scene=docker", expect="could not edit /etc/docker/daemon.json"
    )
    assert "not valid JSON" in done.stderr
    assert sandbox.read("/etc/docker/daemon.json") == "{not json"


@pytest.mark.parametrize("scene", ["crio", "isula"])
def test_crio_and_isula_install_the_binaries_only(sandbox, scene):
    sandbox.ok(R6, "--install", f"--install-scene={scene}")
    assert info(sandbox.read(INFO))["install_scene"] == scene
    assert not sandbox.path("/etc/docker").exists() and not sandbox.path("/etc/containerd").exists()


def test_upgrade_to_another_scene_moves_the_registration(sandbox):
    write(sandbox, "/etc/containerd/config.toml", CONTAINERD_V2)
    sandbox.ok(R6, "--install", "--install-scene=docker")
    sandbox.ok(R7, "--upgrade", "--install-scene=containerd")
    assert "runtimes" not in json.loads(sandbox.read("/etc/docker/daemon.json"))
    parsed = tomllib.loads(sandbox.read("/etc/containerd/config.toml"))
    assert "ascend" in runtimes(parsed, "io.containerd.grpc.v1.cri")


def test_refused_scene_move_keeps_the_old_registration(sandbox):
    sandbox.ok(R6, "--install", "--install-scene=docker")
    sandbox.refused(
        R7, "--upgrade", "--install-scene=containerd", expect="/etc/containerd/config.toml does not exist"
    )
    assert json.loads(sandbox.read("/etc/docker/daemon.json"))["default-runtime"] == "ascend"
    recorded = info(sandbox.read(INFO))
    assert (recorded["version"], recorded["install_scene"]) == ("6.0.0", "docker")
