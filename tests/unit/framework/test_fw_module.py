"""Module framework_smoke: its arguments, check mode, the training environment's schema, and how the
probe is run (venv, image) and read (a crash, a timeout, output that is not its JSON)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import module_runner
import pytest
from cfcore import framework_run
from cfcore.framework_run import env_problem, image_argv, run_framework

NVIDIA_SKU = {"accelerator": {"vendor": "nvidia", "count": 8}}
ASCEND_SKU = {"accelerator": {"vendor": "huawei", "count": 8}}


def fake_venv(tmp_path: Path, body: str) -> Path:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    python = venv / "bin" / "python"
    python.write_text("#!/bin/sh\n" + body)
    python.chmod(0o755)
    return venv


def params(env: dict, sku: dict | None = None, **extra) -> dict:
    return {"node_sku": "hgx-h100-8gpu", "sku": sku or NVIDIA_SKU, "env": env, "bom": {}, **extra}


@pytest.mark.parametrize(
    ("env", "problem"),
    [
        ({"kind": "venv", "path": "/opt/train/venv"}, None),
        ({"kind": "image", "image": "reg/train:1", "runtime": "podman", "run_args": ["--shm-size=8g"]}, None),
        (None, "must be a mapping"),
        ({"kind": "conda", "path": "/x"}, "kind must be one of venv, image"),
        ({"kind": "venv"}, "needs path"),
        ({"kind": "venv", "path": "opt/venv"}, "absolute path"),
        ({"kind": "venv", "path": "/v", "image": "x"}, "unknown key(s) image"),
        ({"kind": "image", "image": "x", "runtime": "enroot"}, "runtime must be one of docker, podman"),
        ({"kind": "image", "image": "x", "run_args": "--gpus all"}, "run_args must be a list"),
        ({"kind": "venv", "path": "/v", "framework": "jax"}, "framework must be one of pytorch, mindspore"),
    ],
)
def test_env_schema(env, problem):
    found = env_problem(env)
    assert found is None if problem is None else problem in found


def test_the_module_refuses_a_bad_env_and_bad_numbers():
    out = module_runner.run_module("framework_smoke", params({"kind": "venv"}))
    assert out["failed"] and "framework_env of kind venv needs path" in out["msg"]
    out = module_runner.run_module("framework_smoke", params({"kind": "venv", "path": "/v"}, timeout_s=0))
    assert out["failed"] and "timeout_s must be positive" in out["msg"]
    out = module_runner.run_module("framework_smoke", params({"kind": "venv", "path": "/v"}, backend="mpi"))
    assert out["failed"] and "backend" in out["msg"]
    out = module_runner.run_module("framework_smoke", {"node_sku": "x"})
    assert out["failed"] and "env" in out["msg"]


def test_check_mode_runs_nothing_and_skips_every_check():
    args = {**params({"kind": "venv", "path": "/does/not/exist"}), "_ansible_check_mode": True}
    out = module_runner.run_module("framework_smoke", args)
    assert not out.get("failed") and out["changed"] is False
    result = out["node_result"]
    assert result["level"] == "framework" and result["status"] == "skip"
    assert {c["status"] for c in result["checks"]} == {"skip"}
    assert all("check mode" in c["message"] for c in result["checks"])


def test_a_missing_venv_is_error_could_not_run():
    out = module_runner.run_module("framework_smoke", params({"kind": "venv", "path": "/does/not/exist"}))
    result = out["node_result"]
    assert out["status"] == "error" and {c["status"] for c in result["checks"]} == {"error"}
    assert "/does/not/exist does not exist on the node" in result["checks"][0]["message"]


def test_ppu_and_cpu_nodes_skip_with_the_reason():
    ppu = run_framework(params({"kind": "venv", "path": "/v"}, {"accelerator": {"vendor": "alibaba"}}), "n")
    assert ppu["status"] == "skip" and "Alibaba PPU" in ppu["checks"][0]["message"]
    cpu = run_framework(params({"kind": "venv", "path": "/v"}, {"accelerator": None}), "n")
    assert cpu["status"] == "skip" and "no accelerator" in cpu["checks"][0]["message"]


def test_a_venv_python_that_prints_no_json_is_error(tmp_path):
    venv = fake_venv(tmp_path, 'echo "Segmentation fault"; exit 139\n')
    result = run_framework(params({"kind": "venv", "path": str(venv)}), "n")
    assert result["status"] == "error"
    assert "not its JSON (exit status 139)" in result["checks"][0]["message"]
    assert "Segmentation fault" in result["checks"][0]["evidence"]["lines"]


def test_a_probe_over_its_time_is_error(tmp_path):
    venv = fake_venv(tmp_path, "sleep 30\n")
    result = run_framework(params({"kind": "venv", "path": str(venv)}, timeout_s=1), "n")
    assert result["status"] == "error" and "timed out after 1 s" in result["checks"][0]["message"]


def test_the_probe_gets_the_skus_world_size_and_the_vendors_backend(tmp_path):
    venv = fake_venv(tmp_path, 'echo "$@" >&2; echo \'{"probe": 1, "crashed": "args"}\'\n')
    seen = {}

    def runner(argv, **kwargs):
        seen["argv"] = argv
        return subprocess.run(argv, **kwargs)

    run_framework(params({"kind": "venv", "path": str(venv)}, ASCEND_SKU), "n", runner=runner)
    argv = seen["argv"]
    assert argv[0] == str(venv / "bin" / "python") and argv[1].endswith("framework_probe.py")
    assert argv[argv.index("--vendor") + 1] == "huawei" and argv[argv.index("--world-size") + 1] == "8"
    assert "--backend" not in argv  # the probe picks hccl for huawei
    run_framework(
        params({"kind": "venv", "path": str(venv)}, backend="gloo", world_size=2), "n", runner=runner
    )
    argv = seen["argv"]
    assert argv[argv.index("--backend") + 1] == "gloo" and argv[argv.index("--world-size") + 1] == "2"


def test_a_source_script_wraps_the_probe(tmp_path):
    venv = fake_venv(tmp_path, "true\n")
    seen = {}

    def runner(argv, **kwargs):
        seen["argv"] = argv
        return subprocess.CompletedProcess(argv, 0, '{"probe": 1, "crashed": "x"}\n', "")

    env = {"kind": "venv", "path": str(venv), "source": "/usr/local/Ascend/cann/set_env.sh"}
    run_framework(params(env, ASCEND_SKU), "n", runner=runner)
    assert seen["argv"][:2] == ["bash", "-c"] and "/usr/local/Ascend/cann/set_env.sh" in seen["argv"]


def test_image_command_lines_pass_the_accelerators_through():
    args = ["--vendor", "nvidia"]
    docker = image_argv({"kind": "image", "image": "reg/t:1"}, "nvidia", 8, "/tmp/p.py", "cf", args)
    assert (
        docker[:3] == ["docker", "run", "--rm"]
        and "--gpus" in docker
        and docker[docker.index("--gpus") + 1] == "all"
    )
    assert f"/tmp/p.py:{framework_run.PROBE_IN_IMAGE}:ro" in docker
    assert docker[-4:] == ["python3", framework_run.PROBE_IN_IMAGE, "--vendor", "nvidia"]
    podman = image_argv({"kind": "image", "image": "r", "runtime": "podman"}, "nvidia", 8, "/p", "cf", [])
    assert podman[podman.index("--device") + 1] == "nvidia.com/gpu=all"
    ascend = image_argv(
        {"kind": "image", "image": "r", "run_args": ["--shm-size=8g"]}, "huawei", 2, "/p", "cf", []
    )
    devices = [ascend[i + 1] for i, a in enumerate(ascend) if a == "--device"]
    assert devices == [
        "/dev/davinci0",
        "/dev/davinci1",
        "/dev/davinci_manager",
        "/dev/devmm_svm",
        "/dev/hisi_hdc",
    ]
    assert "/usr/local/Ascend/driver:/usr/local/Ascend/driver:ro" in ascend
    assert ascend.index("--shm-size=8g") < ascend.index("r")


def test_a_missing_container_runtime_is_error(monkeypatch):
    monkeypatch.setattr(framework_run.shutil, "which", lambda _name: None)
    result = run_framework(params({"kind": "image", "image": "r", "runtime": "podman"}), "n")
    assert result["status"] == "error" and "podman is not installed" in result["checks"][0]["message"]
