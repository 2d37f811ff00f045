"""The B200 profile, and the replay following installed NVIDIA packages (replaylib/installed.py).

Installed packages are simulated by files under the test's HWREPLAY_LIB_DIR
(libnvidia-ml.so.<version>), HWREPLAY_PACKAGE_UNIT_DIRS (the fabric manager
package's unit) and HWREPLAY_FM_STATE (the state file its nv-fabricmanager writes).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hwreplay_testlib import HWREPLAY_DIR, replay_env
from replaylib import control, installed
from replaylib.common import Context
from replaylib.profiles import resolve
from replaylib.tools import run_tool
from test_hwreplay_shims import RenderedSource, no_fallback, node, shim  # noqa: F401 (fixtures)

DEAD_PID = "4194304"  # above the largest pid Linux hands out: never a live process


def install_nvml(lib_dir: Path, version: str, link: bool = True) -> None:
    lib_dir.mkdir(parents=True, exist_ok=True)
    (lib_dir / f"libnvidia-ml.so.{version}").write_text("stand-in\n")
    if link:
        target = lib_dir / "libnvidia-ml.so.1"
        if target.is_symlink():
            target.unlink()
        target.symlink_to(f"libnvidia-ml.so.{version}")


def install_fm_package(unit_dir: Path) -> Path:
    unit_dir.mkdir(parents=True, exist_ok=True)
    unit = unit_dir / "nvidia-fabricmanager.service"
    unit.write_text(
        "[Service]\nExecStart=/usr/bin/nv-fabricmanager -c /usr/share/nvidia/nvswitch/fabricmanager.cfg\n"
    )
    return unit


def write_fm_state(path: Path, pid: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{pid}\nCompleted\n570.133.20\n")


def query(ctx: Context, profile: str, fields: str) -> list:
    result = run_tool(
        ctx, "nvidia-smi", [f"--query-gpu={fields}", "--format=csv,noheader"], resolve(ctx, profile)
    )
    assert result.rc == 0, result.stderr
    return result.stdout.splitlines()


# ------------------------------------------------------------------ b200-healthy


def test_b200_profile_is_an_nvlink5_hgx_b200(ctx, render, tmp_path):
    profile = resolve(ctx, "b200-healthy")
    gpus = profile["nvidia"]["gpus"]
    assert {gpu["name"] for gpu in gpus} == {"NVIDIA B200"} and len({gpu["uuid"] for gpu in gpus}) == 8
    assert profile["nvidia"]["kernel_module_flavour"] == "open"
    assert len(profile["nvidia"]["nvswitches"]) == 2
    compute = [hca for hca in profile["infiniband"]["hcas"] if "vpd" not in hca]
    assert len(compute) == 8 and {hca["ports"][0]["rate"] for hca in compute} == {400}
    # NVLink 5 switches are not PCI functions of the host: no NVSwitch bridge in lspci.
    assert "Bridge [0680]: NVIDIA" not in render("b200-healthy", "lspci", "-nn").stdout
    assert "Bridge [0680]: NVIDIA" in render("h100-healthy", "lspci", "-nn").stdout
    control.set_profile(ctx, "b200-healthy")
    vpd = tmp_path / "sysroot/sys/class/infiniband/mlx5_8/device/vpd"
    assert b"SW_MNG" in vpd.read_bytes()
    assert not (tmp_path / "sysroot/sys/class/infiniband/mlx5_0/device/vpd").exists()


def test_modinfo_tells_the_kernel_module_flavour(render):
    assert render("b200-healthy", "modinfo", "-F", "license", "nvidia").stdout == "Dual MIT/GPL\n"
    assert render("h100-healthy", "modinfo", "-F", "license", "nvidia").stdout == "NVIDIA\n"
    assert render("b200-healthy", "modinfo", "-F", "version", "nvidia-uvm").stdout == "570.133.20\n"
    full = render("b200-healthy", "modinfo", "nvidia").stdout
    assert "license:        Dual MIT/GPL\n" in full and "version:        570.133.20\n" in full
    assert render("910b-healthy", "modinfo", "nvidia").rc == 127  # no GPU: no replayed modinfo


def test_modinfo_hands_other_modules_to_the_real_tool(render):
    result = render("h100-healthy", "modinfo", "hwreplay_no_such_module")
    assert result.rc != 0 and "hwreplay_no_such_module" in result.stderr


def validate(ctx: Context, tmp_path: Path, name: str, catalog: dict | None = None) -> dict:
    from cfcore.expected import build_expected
    from cfcore.validate import validate_node

    control.set_profile(ctx, name)
    hostvars = {
        "node_sku": "hgx-b200-8gpu",
        "sysfs_root": str(tmp_path / "sysroot"),
        "nvidia_driver_version": "570.133.20",
    }
    if catalog:
        hostvars["clusterforge_sku_catalog"] = catalog
    report = validate_node(RenderedSource(ctx, resolve(ctx, name)), build_expected("node", hostvars), "quick")
    return {check["id"]: check for check in report["checks"]}


def test_b200_validates_against_its_sku(ctx, tmp_path):
    checks = validate(ctx, tmp_path, "b200-healthy")
    assert checks["gpu.kernel_modules"]["status"] == "pass", checks["gpu.kernel_modules"]
    assert "open kernel modules loaded" in checks["gpu.kernel_modules"]["message"]
    gpu_and_ib = {name: check["status"] for name, check in checks.items() if name.startswith(("gpu.", "ib."))}
    # systemctl is no replayed tool: the fabric-manager service check needs a node (Molecule).
    gpu_and_ib.pop("gpu.fabric_manager")
    assert set(gpu_and_ib.values()) <= {"pass", "skip"}, gpu_and_ib
    # The NVSwitch management port is a ninth IB device: the SKU names the compute HCAs
    # (hca.devices); counting every CA, the count only warns.
    assert checks["ib.hca_count"]["status"] == "pass"
    unnamed = validate(ctx, tmp_path, "b200-healthy", {"hgx-b200-8gpu": {"hca": {"devices": ["mlx5_*"]}}})
    assert unnamed["ib.hca_count"]["status"] == "warn"


def test_proprietary_modules_fail_the_b200_sku(ctx, tmp_path):
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    for source in (HWREPLAY_DIR / "profiles").glob("*.json"):
        (profiles / source.name).write_text(source.read_text())
    (profiles / "b200-proprietary.json").write_text(
        '{"base": "b200-healthy", "fault": "proprietary modules", "description": "x",'
        ' "patch": {"nvidia": {"kernel_module_flavour": "proprietary"}}}'
    )
    ctx = Context(env={**ctx.env, "HWREPLAY_PROFILE_DIR": str(profiles)})
    checks = validate(ctx, tmp_path, "b200-proprietary")
    assert checks["gpu.kernel_modules"]["status"] == "fail"


# ------------------------------------------------------ driver from the library


def test_driver_version_follows_the_installed_nvml(ctx, tmp_path):
    (tmp_path / "no-overrides.json").write_text('{"nvidia_driver_version": "570.133.20"}')
    assert set(query(ctx, "b200-healthy", "driver_version")) == {"570.133.20"}
    install_nvml(tmp_path / "lib", "590.48.01")
    assert set(query(ctx, "b200-healthy", "driver_version")) == {"590.48.01"}  # wins over the overrides
    nvidia = resolve(ctx, "h100-xid79")["nvidia"]
    assert (nvidia["driver_version"], nvidia["cuda_version"]) == ("590.48.01", "13.1")
    dmesg = run_tool(ctx, "dmesg", [], resolve(ctx, "b200-healthy")).stdout
    assert "Open Kernel Module for x86_64  590.48.01" in dmesg


def test_several_nvml_libraries_take_the_linked_one(ctx, tmp_path):
    install_nvml(tmp_path / "lib", "590.48.01", link=False)
    install_nvml(tmp_path / "lib", "570.133.20")
    assert installed.driver_version(ctx) == "570.133.20"
    (tmp_path / "lib/libnvidia-ml.so.1").unlink()
    assert installed.driver_version(ctx) == "590.48.01"  # no link: the highest


def test_debians_nvml_behind_alternatives_is_found(ctx, tmp_path):
    """Debian's libnvidia-ml1 ships the library in nvidia/current/, linked through alternatives."""
    lib = tmp_path / "lib"
    install_nvml(lib / "nvidia" / "current", "535.309.01")
    (tmp_path / "alternatives").mkdir()
    (tmp_path / "alternatives" / "nvidia--libnvidia-ml.so.1").symlink_to(
        lib / "nvidia/current/libnvidia-ml.so.1"
    )
    (lib / "libnvidia-ml.so.1").symlink_to(tmp_path / "alternatives" / "nvidia--libnvidia-ml.so.1")
    assert installed.driver_version(ctx) == "535.309.01"
    assert installed.fingerprint(ctx)["nvml"] == f" {lib}/nvidia/current/libnvidia-ml.so.535.309.01"


def test_shims_see_debians_nvml_as_the_replay_does(node, no_fallback, tmp_path):  # noqa: F811
    env, set_ctx = node
    control.set_profile(set_ctx, "h100-healthy")
    install_nvml(tmp_path / "lib" / "nvidia" / "current", "535.309.01")
    assert shim(env, "modinfo", "-F", "license", "nvidia").returncode == 99  # changed: rendered live
    control.set_profile(set_ctx, "h100-healthy")
    answer = shim(env, "nvidia-smi", "-q")
    assert b"Driver Version                            : 535.309.01" in answer.stdout


def test_shims_render_live_until_the_answers_follow_the_library(node, no_fallback, tmp_path):  # noqa: F811
    env, set_ctx = node
    control.set_profile(set_ctx, "b200-healthy")
    argv = ("modinfo", "-F", "license", "nvidia")
    assert shim(env, *argv).returncode == 0
    install_nvml(tmp_path / "lib", "590.44.01")
    assert shim(env, *argv).returncode == 99  # the library changed: rendered live (here: the stand-in)
    _, changes = control.set_profile(set_ctx, "b200-healthy")
    assert [change.split(":")[0] for change in changes] == [f"answers {env['HWREPLAY_STATE_DIR']}/answers"]
    answer = shim(env, "nvidia-smi", "-q")
    assert (
        answer.returncode == 0 and b"Driver Version                            : 590.44.01" in answer.stdout
    )
    assert control.set_profile(set_ctx, "b200-healthy")[1] == []  # idempotent
    (tmp_path / "lib/libnvidia-ml.so.590.44.01").unlink()
    assert shim(env, *argv).returncode == 99


# ---------------------------------------------------------------- fabric state


def fabric_states(ctx: Context, profile: str) -> set:
    return set(query(ctx, profile, "fabric.state"))


def test_fabric_state_follows_the_installed_fabric_manager(ctx, tmp_path):
    state = tmp_path / "run/fabric.state"
    assert fabric_states(ctx, "b200-healthy") == {"Completed"}  # no package: the profile's, as before
    install_fm_package(tmp_path / "pkg-units")
    assert fabric_states(ctx, "b200-healthy") == {"In Progress"}  # installed, not running
    write_fm_state(state, str(os.getpid()))
    assert fabric_states(ctx, "b200-healthy") == {"Completed"}
    assert fabric_states(ctx, "h100-fabricmanager-failed") == {"In Progress"}  # the fault stays
    write_fm_state(state, DEAD_PID)
    assert fabric_states(ctx, "h100-healthy") == {"In Progress"}
    assert fabric_states(ctx, "h200-healthy") == {"In Progress"}


def test_package_unit_replaces_the_stand_in_unit(ctx, tmp_path):
    units = tmp_path / "units"
    control.set_profile(ctx, "h100-healthy")
    assert "Installed by hwreplay" in (units / "nvidia-fabricmanager.service").read_text()
    package_unit = install_fm_package(tmp_path / "pkg-units")
    _, changes = control.set_profile(ctx, "h100-healthy")
    assert (
        f"removed {units / 'nvidia-fabricmanager.service'} "
        f"(the nvidia-fabricmanager package's {package_unit} is used)" in changes
    )
    assert not (units / "nvidia-fabricmanager.service").exists()
    dropin = units / "nvidia-fabricmanager.service.d/50-hwreplay-refresh.conf"
    assert "ExecStartPost=-/usr/local/bin/hwreplay profile refresh --answers-only" in dropin.read_text()
    assert control.set_profile(ctx, "h100-healthy")[1] == []
    assert "fabric manager package (stopped)" in control.show_profile(ctx)
    package_unit.unlink()  # package removed: the stand-in comes back, the drop-in goes
    _, changes = control.set_profile(ctx, "h100-healthy")
    assert (units / "nvidia-fabricmanager.service").exists() and not dropin.exists()


def test_an_administrators_unit_is_left_alone(ctx, tmp_path):
    units = tmp_path / "units"
    units.mkdir()
    (units / "nvidia-fabricmanager.service").write_text("[Service]\nExecStart=/opt/site/fm\n")
    install_fm_package(tmp_path / "pkg-units")
    control.set_profile(ctx, "h100-healthy")
    assert (units / "nvidia-fabricmanager.service").read_text() == "[Service]\nExecStart=/opt/site/fm\n"


def test_shims_follow_the_fabric_manager_state(node, no_fallback, tmp_path):  # noqa: F811
    env, set_ctx = node
    install_fm_package(tmp_path / "pkg-units")
    write_fm_state(tmp_path / "run/fabric.state", str(os.getpid()))
    control.set_profile(set_ctx, "h100-healthy")
    answer = shim(env, "nvidia-smi", "-q")
    assert answer.returncode == 0 and b"In Progress" not in answer.stdout
    write_fm_state(tmp_path / "run/fabric.state", DEAD_PID)
    assert shim(env, "nvidia-smi", "-q").returncode == 99  # stopped since: rendered live
    control.set_profile(set_ctx, "h100-healthy")
    stopped = shim(env, "nvidia-smi", "-q")
    assert stopped.returncode == 0 and b"In Progress" in stopped.stdout
    (tmp_path / "run/fabric.state").unlink()
    assert shim(env, "nvidia-smi", "-q").returncode == 0  # still stopped: the answers hold


def test_profile_refresh(tmp_path):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **replay_env(tmp_path)}
    program = [sys.executable, str(HWREPLAY_DIR / "hwreplay.py"), "profile", "refresh"]
    nothing = subprocess.run(program, env=env, capture_output=True, text=True, check=False)
    assert nothing.returncode == 0 and nothing.stdout.startswith("profile: none selected")
    control.set_profile(Context(env=replay_env(tmp_path)), "b200-healthy")
    same = subprocess.run(program, env=env, capture_output=True, text=True, check=False)
    assert same.stdout == "profile: b200-healthy\nchanged: no\n"
    install_nvml(tmp_path / "lib", "570.133.20")
    (tmp_path / "bin/lspci").unlink()
    answers = subprocess.run(
        [*program, "--answers-only"], env=env, capture_output=True, text=True, check=False
    )
    assert "changed: yes\n" in answers.stdout and "pre-rendered" in answers.stdout
    assert not (tmp_path / "bin/lspci").exists()  # --answers-only: nothing but the answers
    changed = subprocess.run(program, env=env, capture_output=True, text=True, check=False)
    assert "changed: yes\n" in changed.stdout and (tmp_path / "bin/lspci").exists()


@pytest.mark.parametrize("name", ["h100-healthy", "b200-healthy"])
def test_set_stays_fast(ctx, name):
    """A no-change set renders (~0.1 s alone) but writes nothing. Its time is not asserted: the unit
    tests run niced beside the lab, where a subprocess can take seconds."""
    control.set_profile(ctx, name)
    assert control.set_profile(ctx, name)[1] == []
