"""The CANN stand-ins: the toolkit's two layouts, the 8.5 crossing, operator packages and NNAL."""

from __future__ import annotations

import os
import subprocess

import pytest
from ascend_pkgs_testlib import KERNELS, NNAL, OPS, TOOLKIT, info
from patience import HANG_S

T82 = TOOLKIT.format(version="8.2.RC1")
T85 = TOOLKIT.format(version="8.5.0")
K82 = KERNELS.format(chip="910b", version="8.2.RC1")
K82_A3 = KERNELS.format(chip="A3", version="8.2.RC1")
O85 = OPS.format(chip="910b", version="8.5.0")
O85_A3 = OPS.format(chip="A3", version="8.5.0")
N82 = NNAL.format(version="8.2.RC1")
N85 = NNAL.format(version="8.5.0")
INSTALL = ("--install", "--quiet", "--install-path=/usr/local/Ascend")
UPGRADE = ("--upgrade", "--quiet", "--install-path=/usr/local/Ascend")
A = "/usr/local/Ascend"
LEGACY_HOME = f"{A}/ascend-toolkit/latest"
CANN_HOME = f"{A}/cann"


def sourced(sandbox, set_env: str, package: str, *args: str):
    """Run the package in a shell that sourced set_env.sh (its logical paths, as on a node)."""
    command = f'source "{sandbox.path(set_env)}" && exec bash "{sandbox.packages / package}" "$@"'
    env = {k: v for k, v in os.environ.items() if k != "ASCEND_TOOLKIT_HOME"}
    env["ASCEND_PKGS_ROOT"] = str(sandbox.root)
    return subprocess.run(
        ["bash", "-c", command, "sourced", *args], capture_output=True, text=True, env=env, timeout=HANG_S
    )


def test_toolkit_before_8_5_uses_ascend_toolkit(sandbox):
    sandbox.ok(T82, *INSTALL)
    release = sandbox.path(f"{A}/ascend-toolkit/8.2.RC1")
    assert release.is_dir()
    latest = sandbox.path(LEGACY_HOME)
    assert latest.is_symlink() and os.readlink(latest) == "8.2.RC1"
    set_env = sandbox.read(f"{A}/ascend-toolkit/set_env.sh")
    assert f"export ASCEND_TOOLKIT_HOME={LEGACY_HOME}\n" in set_env
    assert f"export ASCEND_OPP_PATH={LEGACY_HOME}/opp\n" in set_env
    toolkit_info = info(sandbox.read(f"{LEGACY_HOME}/x86_64-linux/ascend_toolkit_install.info"))
    assert toolkit_info["version"] == "8.2.RC1" and toolkit_info["install_path"] == A
    assert os.access(sandbox.path(f"{LEGACY_HOME}/x86_64-linux/script/uninstall.sh"), os.X_OK)
    assert not sandbox.path(CANN_HOME).exists()


def test_toolkit_from_8_5_uses_cann(sandbox):
    sandbox.ok(T85, *INSTALL)
    assert sandbox.path(f"{A}/cann-8.5.0").is_dir()
    link = sandbox.path(CANN_HOME)
    assert link.is_symlink() and os.readlink(link) == "cann-8.5.0"
    assert f"export ASCEND_TOOLKIT_HOME={CANN_HOME}\n" in sandbox.read(f"{CANN_HOME}/set_env.sh")
    assert info(sandbox.read(f"{CANN_HOME}/x86_64-linux/ascend_toolkit_install.info"))["version"] == "8.5.0"
    assert os.access(sandbox.path(f"{CANN_HOME}/x86_64-linux/script/uninstall.sh"), os.X_OK)
    assert not sandbox.path(f"{A}/ascend-toolkit").exists()


def test_sourced_set_env_exports_the_home(sandbox):
    sandbox.ok(T85, *INSTALL)
    done = subprocess.run(
        ["bash", "-c", f'set -u; source "{sandbox.path(CANN_HOME)}/set_env.sh"; echo "$ASCEND_TOOLKIT_HOME"'],
        capture_output=True,
        text=True,
    )
    assert done.stdout == f"{CANN_HOME}\n", done.stderr


def test_default_install_path_is_usr_local_ascend(sandbox):
    sandbox.ok(T85, "--install", "--quiet")
    assert sandbox.path(f"{CANN_HOME}/set_env.sh").is_file()


def test_second_install_of_the_same_release_is_refused(sandbox):
    sandbox.ok(T82, *INSTALL)
    sandbox.refused(T82, *INSTALL, expect="CANN toolkit 8.2.RC1 is already installed")


def test_install_over_another_release_is_refused(sandbox):
    sandbox.ok(T82, *INSTALL)
    done = sandbox.refused(T85, *INSTALL, expect="CANN toolkit 8.2.RC1 is installed")
    assert "use --upgrade, or uninstall first" in done.stderr
    assert not sandbox.path(f"{A}/cann-8.5.0").exists()


def test_upgrade_across_8_5_needs_the_old_release_uninstalled(sandbox):
    sandbox.ok(T82, *INSTALL)
    sandbox.ok(K82, *INSTALL)
    done = sandbox.refused(T85, *UPGRADE, expect="crosses 8.5")
    script = f"{LEGACY_HOME}/x86_64-linux/script/uninstall.sh"
    assert f"bash {script}" in done.stderr
    assert (
        info(sandbox.read(f"{LEGACY_HOME}/x86_64-linux/ascend_toolkit_install.info"))["version"] == "8.2.RC1"
    )
    # the installed uninstall script removes that release (operator package included)
    removed = subprocess.run(
        ["bash", str(sandbox.path(script))],
        capture_output=True,
        text=True,
        env={**os.environ, "ASCEND_PKGS_ROOT": str(sandbox.root)},
    )
    assert removed.returncode == 0, removed.stderr
    assert "CANN toolkit 8.2.RC1 uninstalled" in removed.stdout
    assert not sandbox.path(f"{A}/ascend-toolkit").exists()
    sandbox.ok(T85, *INSTALL)
    sandbox.ok(O85, *INSTALL)
    assert info(sandbox.read(f"{CANN_HOME}/x86_64-linux/ascend_ops_install.info"))["version"] == "8.5.0"


def test_downgrade_across_8_5_is_refused_too(sandbox):
    sandbox.ok(T85, *INSTALL)
    sandbox.refused(T82, *UPGRADE, expect="crosses 8.5")


def test_upgrade_within_a_layout_reinstalls(sandbox):
    sandbox.refused(T85, *UPGRADE, expect="no CANN toolkit is installed")
    sandbox.ok(T85, *INSTALL)
    (sandbox.path(f"{CANN_HOME}/lib64/libascendcl.so")).unlink()
    done = sandbox.ok(T85, *UPGRADE)
    assert "8.5.0 -> 8.5.0" in done.stdout
    assert sandbox.path(f"{CANN_HOME}/lib64/libascendcl.so").is_file()


def test_upgrade_with_user_options_is_refused(sandbox):
    sandbox.ok(T85, *INSTALL)
    sandbox.refused(T85, *UPGRADE, "--install-for-all", expect="--upgrade cannot be combined")


def test_user_options_name_existing_users(sandbox):
    sandbox.refused(
        T85,
        *INSTALL,
        "--install-username=bob",
        "--install-usergroup=HwHiAiUser",
        expect="the running user bob does not exist",
    )
    sandbox.ok(
        T85, *INSTALL, "--install-username=HwHiAiUser", "--install-usergroup=HwHiAiUser", "--install-for-all"
    )
    toolkit_info = info(sandbox.read(f"{CANN_HOME}/x86_64-linux/ascend_toolkit_install.info"))
    assert toolkit_info["install_for_all"] == "yes" and toolkit_info["username"] == "HwHiAiUser"


def test_toolkit_uninstall(sandbox):
    sandbox.refused(T85, "--uninstall", "--quiet", expect="no CANN toolkit is installed")
    sandbox.ok(T82, *INSTALL)
    sandbox.refused(T85, "--uninstall", expect="the installed CANN toolkit is 8.2.RC1")
    sandbox.ok(T82, "--uninstall", "--quiet")  # --quiet is allowed with --uninstall for CANN
    assert not sandbox.path(f"{A}/ascend-toolkit").exists()


@pytest.mark.parametrize(("ops", "toolkit"), [(K82, None), (O85, None), (O85, T82), (K82, T85)])
def test_operator_package_needs_the_same_version_toolkit(sandbox, ops, toolkit):
    if toolkit:
        sandbox.ok(toolkit, *INSTALL)
    version = "8.5.0" if "8.5.0" in ops else "8.2.RC1"
    done = sandbox.refused(ops, *INSTALL, expect=f"needs CANN toolkit {version} installed in {A}")
    assert f"Ascend-cann-toolkit_{version}_linux-x86_64.run" in done.stderr


def test_operator_package_needs_the_toolkit_under_the_same_path(sandbox):
    sandbox.ok(T85, "--install", "--quiet", "--install-path=/opt/cann")
    sandbox.refused(O85, *INSTALL, expect="(found: none)")
    sandbox.ok(O85, "--install", "--quiet", "--install-path=/opt/cann")
    assert sandbox.path("/opt/cann/cann/x86_64-linux/ascend_ops_install.info").is_file()


@pytest.mark.parametrize(
    ("toolkit", "ops", "home", "chip", "name"),
    [
        (T82, K82, LEGACY_HOME, "910b", "Ascend-cann-kernels-910b"),
        (T82, K82_A3, LEGACY_HOME, "A3", "Ascend-cann-kernels-A3"),
        (T85, O85, CANN_HOME, "910b", "Ascend-cann-910b-ops"),
        (T85, O85_A3, CANN_HOME, "A3", "Ascend-cann-A3-ops"),
    ],
)
def test_operator_package_installs_into_the_toolkit(sandbox, toolkit, ops, home, chip, name):
    sandbox.ok(toolkit, *INSTALL)
    sandbox.ok(ops, *INSTALL)  # no hardware check: the fake root has no NPU at all
    ops_info = info(sandbox.read(f"{home}/x86_64-linux/ascend_ops_install.info"))
    assert ops_info["package_name"] == name and ops_info["chip"] == chip
    assert sandbox.path(f"{home}/opp/built-in/op_impl/ai_core/tbe/kernel/{chip}/kernels.o").is_file()
    sandbox.refused(ops, *INSTALL, expect="is already installed")


def test_operator_package_of_another_chip_and_uninstall(sandbox):
    sandbox.ok(T85, *INSTALL)
    sandbox.ok(O85, *INSTALL)
    sandbox.refused(O85_A3, *INSTALL, expect="the operator package for 910b is installed")
    sandbox.refused(O85_A3, "--uninstall", expect="no operator package for A3 is installed")
    sandbox.ok(O85, "--uninstall")
    assert not sandbox.path(f"{CANN_HOME}/x86_64-linux/ascend_ops_install.info").exists()
    assert not sandbox.path(f"{CANN_HOME}/opp/built-in/op_impl/ai_core/tbe/kernel/910b").exists()
    sandbox.refused(O85, *UPGRADE, expect="no operator package is installed")
    sandbox.ok(O85_A3, *INSTALL)


def test_nnal_needs_the_toolkit_environment(sandbox):
    sandbox.ok(T85, *INSTALL)
    done = sandbox.refused(N85, *INSTALL, expect="ASCEND_TOOLKIT_HOME is not set")
    assert "set_env.sh" in done.stderr
    sandbox.refused(N85, *INSTALL, env={"ASCEND_TOOLKIT_HOME": "/nowhere"}, expect="holds no CANN toolkit")
    assert not sandbox.path(f"{A}/nnal").exists()


def test_nnal_needs_the_same_version_toolkit(sandbox):
    sandbox.ok(T82, *INSTALL)
    done = sourced(sandbox, f"{A}/ascend-toolkit/set_env.sh", N85, *INSTALL)
    assert done.returncode == 1
    assert "NNAL 8.5.0 needs CANN toolkit 8.5.0; the sourced toolkit" in done.stderr


@pytest.mark.parametrize(
    ("toolkit", "nnal", "set_env", "version"),
    [(T82, N82, f"{A}/ascend-toolkit/set_env.sh", "8.2.RC1"), (T85, N85, f"{CANN_HOME}/set_env.sh", "8.5.0")],
)
def test_nnal_installs_after_sourcing_the_toolkit(sandbox, toolkit, nnal, set_env, version):
    sandbox.ok(toolkit, *INSTALL)
    done = sourced(sandbox, set_env, nnal, *INSTALL)
    assert done.returncode == 0, done.stderr
    atb_env = sandbox.read(f"{A}/nnal/atb/set_env.sh")
    assert f"export ATB_HOME_PATH={A}/nnal/atb/latest/atb\n" in atb_env
    assert os.readlink(sandbox.path(f"{A}/nnal/atb/latest")) == version
    assert info(sandbox.read(f"{A}/nnal/atb/latest/ascend_nnal_install.info"))["version"] == version
    assert sandbox.path(f"{A}/nnal/atb/latest/atb/lib/libatb.so").is_file()
    again = sourced(sandbox, set_env, nnal, *INSTALL)
    assert again.returncode == 1 and f"NNAL {version} is already installed" in again.stderr


def test_nnal_upgrade_and_uninstall(sandbox):
    sandbox.ok(T82, *INSTALL)
    assert sourced(sandbox, f"{A}/ascend-toolkit/set_env.sh", N82, *INSTALL).returncode == 0
    subprocess.run(
        ["bash", str(sandbox.path(f"{LEGACY_HOME}/x86_64-linux/script/uninstall.sh"))],
        env={**os.environ, "ASCEND_PKGS_ROOT": str(sandbox.root)},
        check=True,
        capture_output=True,
    )
    sandbox.ok(T85, *INSTALL)
    over = sourced(sandbox, f"{CANN_HOME}/set_env.sh", N85, *INSTALL)
    assert over.returncode == 1 and "use --upgrade" in over.stderr
    upgraded = sourced(sandbox, f"{CANN_HOME}/set_env.sh", N85, *UPGRADE)
    assert upgraded.returncode == 0, upgraded.stderr
    assert not sandbox.path(f"{A}/nnal/atb/8.2.RC1").exists()
    assert os.readlink(sandbox.path(f"{A}/nnal/atb/latest")) == "8.5.0"
    sandbox.refused(N82, "--uninstall", expect="NNAL 8.2.RC1 is not installed")
    sandbox.ok(N85, "--uninstall", "--quiet")
    assert not sandbox.path(f"{A}/nnal").exists()
