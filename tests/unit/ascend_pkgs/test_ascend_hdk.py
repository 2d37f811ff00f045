"""The driver and firmware stand-ins: options, forbidden combinations, install state, order refusals."""

from __future__ import annotations

import json
import os

import pytest
from ascend_pkgs_testlib import DRIVER, FIRMWARE, info

D252 = DRIVER.format(chip="910b", version="25.2.0")
D255 = DRIVER.format(chip="910b", version="25.5.0")
F77 = FIRMWARE.format(chip="910b", version="7.7.0.6.236")
F78 = FIRMWARE.format(chip="910b", version="7.8.0.5.216")
F78_910C = FIRMWARE.format(chip="910c", version="7.8.0.5.216")
FRESH_DRIVER = (
    "--nox11",
    "--full",
    "--quiet",
    "--install-username=HwHiAiUser",
    "--install-usergroup=HwHiAiUser",
)
FRESH_FIRMWARE = ("--nox11", "--full", "--quiet")
UPGRADE = ("--nox11", "--upgrade", "--quiet")
RECORD = "/var/lib/hwreplay-pkgs/ascend-driver.json"
FLASH_LOG = "/var/lib/hwreplay-pkgs/ascend-firmware-flashed.log"


def files_under(root) -> set:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() or p.is_symlink()}


@pytest.mark.parametrize(
    ("package", "args", "expect"),
    [
        (
            D255,
            ["--upgrade", "--quiet", "--install-username=HwHiAiUser", "--install-usergroup=HwHiAiUser"],
            "--upgrade cannot be combined",
        ),
        (D255, ["--upgrade", "--quiet", "--install-for-all"], "--upgrade cannot be combined"),
        (D252, ["--uninstall", "--quiet"], "--uninstall cannot be combined with --quiet"),
        (F77, ["--uninstall", "--quiet"], "--uninstall cannot be combined with --quiet"),
        (F77, ["--devel"], "--devel is not an option of the firmware package"),
        (
            F77,
            ["--full", "--quiet", "--install-username=HwHiAiUser", "--install-usergroup=HwHiAiUser"],
            "--install-username=HwHiAiUser is not an option of this package",
        ),
        (F77, ["--full", "--install-for-all"], "--install-for-all is not an option"),
        (D252, ["--install", "--quiet"], "--install is not an option of this package"),
        (D252, ["--full", "--upgrade"], "--full and --upgrade cannot be combined"),
        (D252, ["--quiet", "--nox11"], "no operation given"),
        (D252, [], "no operation given"),
        (D252, ["--full", "--bogus"], "unknown option --bogus"),
        (D252, ["--docker"], "unknown option --docker"),
        (D252, ["--full", "--quiet", "--install-username=HwHiAiUser"], "go together"),
        (
            D252,
            ["--full", "--quiet", "--install-username=root", "--install-usergroup=root"],
            "root as the running user needs --install-for-all",
        ),
        (D252, ["--full", "--quiet", "--install-path=usr/local/Ascend"], "is not an absolute path"),
        (D252, ["--full", "--quiet", "--install-path=/usr/../Ascend"], "contains . or .."),
        (D252, ["--full", "--quiet", "--install-path="], "has an empty value"),
        (D252, ["--full", "--quiet", "--install-path"], "needs a value"),
        (D252, ["--uninstall", "--install-for-all"], "--uninstall cannot be combined with the user options"),
    ],
)
def test_forbidden_combinations_are_refused_and_change_nothing(sandbox, package, args, expect):
    before = files_under(sandbox.root)
    sandbox.refused(package, *args, expect=expect)
    after = files_under(sandbox.root) - {"var/log/ascend_seclog/ascend_install.log"}
    assert after == before
    assert "refused:" in sandbox.read("/var/log/ascend_seclog/ascend_install.log")


def test_fresh_driver_install_writes_what_the_real_one_does(sandbox):
    done = sandbox.ok(D252, *FRESH_DRIVER)
    assert "Driver package installed successfully! Reboot needed" in done.stdout
    assert info(sandbox.read("/usr/local/Ascend/driver/version.info")) == {
        "Version": "25.2.0",
        "ascendhal_version": "7.35.23",
        "aicpu_version": "1.0",
        "tdt_version": "1.0",
        "log_version": "1.0",
        "prof_version": "2.0",
        "dvppkernels_version": "1.1",
        "tsfw_version": "1.0",
        "Innerversion": "V100R001C25SPC001B220",
    }
    install_info = info(sandbox.read("/etc/ascend_install.info"))
    assert install_info["UserName"] == "HwHiAiUser" and install_info["UserGroup"] == "HwHiAiUser"
    assert install_info["Driver_Install_Type"] == "full"
    assert install_info["Driver_Install_Path_Param"] == "/usr/local/Ascend"
    assert install_info["Driver_Install_For_All"] == "no"
    assert install_info["Driver_Install_Command"] == f"bash {D252} {' '.join(FRESH_DRIVER)}"
    for lib in ("driver/libascend_hal.so", "driver/libdrvdsmi_host.so", "common/libc_sec.so"):
        assert sandbox.path(f"/usr/local/Ascend/driver/lib64/{lib}").is_file()
    hccn = sandbox.path("/usr/local/Ascend/driver/tools/hccn_tool")
    assert hccn.is_symlink() and os.readlink(hccn) == "/usr/local/bin/hccn_tool"
    assert json.loads(sandbox.read(RECORD)) == {
        "version": "25.2.0",
        "chip": "910b",
        "compatible_firmware": ["7.7.0.6.236"],
    }
    assert "installed driver 25.2.0 (full)" in sandbox.read("/var/log/ascend_seclog/ascend_install.log")
    # a reboot is announced, never arranged
    written = files_under(sandbox.root)
    assert all(
        f.startswith(("usr/local/Ascend/driver/", "etc/", "var/lib/hwreplay-pkgs/", "var/log/ascend_seclog/"))
        for f in written
    ), written
    assert not any("reboot" in f for f in written)


def test_default_user_is_hwhiaiuser_and_must_exist(sandbox):
    (sandbox.root / "etc" / "passwd").write_text("root:x:0:0:root:/root:/bin/bash\n")
    sandbox.refused(D252, *FRESH_FIRMWARE, expect="the running user HwHiAiUser does not exist")
    sandbox.refused(
        D252,
        "--full",
        "--quiet",
        "--install-username=alice",
        "--install-usergroup=HwHiAiUser",
        expect="the running user alice does not exist",
    )
    assert not sandbox.path("/usr/local/Ascend/driver").exists()


def test_missing_group_is_refused(sandbox):
    (sandbox.root / "etc" / "group").write_text("root:x:0:\n")
    sandbox.refused(D252, "--full", "--quiet", expect="the running group HwHiAiUser does not exist")


def test_root_as_running_user_with_install_for_all(sandbox):
    sandbox.ok(
        D252, "--full", "--quiet", "--install-username=root", "--install-usergroup=root", "--install-for-all"
    )
    install_info = info(sandbox.read("/etc/ascend_install.info"))
    assert (install_info["UserName"], install_info["Driver_Install_For_All"]) == ("root", "yes")


@pytest.mark.parametrize("mode", ["--run", "--devel"])
def test_run_and_devel_are_install_types(sandbox, mode):
    sandbox.ok(D252, "--nox11", mode, "--quiet")
    assert info(sandbox.read("/etc/ascend_install.info"))["Driver_Install_Type"] == mode[2:]


def test_without_quiet_the_licence_must_be_accepted(sandbox):
    sandbox.refused(D252, "--nox11", "--full", stdin="", expect="the licence was not accepted")
    sandbox.refused(D252, "--nox11", "--full", stdin="n\n", expect="use --quiet")
    assert not sandbox.path("/usr/local/Ascend/driver").exists()
    sandbox.ok(D252, "--nox11", "--full", stdin="y\n")
    assert sandbox.path("/usr/local/Ascend/driver/version.info").is_file()


def test_second_full_install_is_refused(sandbox):
    sandbox.ok(D252, *FRESH_DRIVER)
    sandbox.refused(D252, *FRESH_DRIVER, expect="driver 25.2.0 is already installed")
    sandbox.refused(D255, *FRESH_DRIVER, expect="use --upgrade")
    sandbox.ok(F77, *FRESH_FIRMWARE)
    sandbox.refused(F77, *FRESH_FIRMWARE, expect="firmware 7.7.0.6.236 is already installed")
    sandbox.refused(F78, *FRESH_FIRMWARE, expect="use --upgrade")
    assert len(sandbox.read(FLASH_LOG).splitlines()) == 1


def test_firmware_needs_the_driver_first(sandbox):
    sandbox.refused(F77, *FRESH_FIRMWARE, expect="install the driver first")
    sandbox.refused(F77, *UPGRADE, expect="install the driver first")
    assert not sandbox.path(FLASH_LOG).exists()
    assert not sandbox.path("/usr/local/Ascend/firmware").exists()


def test_fresh_node_driver_then_firmware(sandbox):
    sandbox.ok(D252, *FRESH_DRIVER)
    done = sandbox.ok(F77, *FRESH_FIRMWARE)
    assert "Reboot needed" in done.stdout
    assert sandbox.read("/usr/local/Ascend/firmware/version.info") == "Version=7.7.0.6.236\n"
    (line,) = sandbox.read(FLASH_LOG).splitlines()
    stamp, *fields = line.split()
    assert stamp.endswith("Z") and "T" in stamp
    assert fields == ["version=7.7.0.6.236", "chip=910b", "operation=full", f"package={F77}"]
    install_info = info(sandbox.read("/etc/ascend_install.info"))
    assert install_info["Firmware_Install_Type"] == "full"
    assert install_info["Firmware_Install_Path_Param"] == "/usr/local/Ascend"
    assert install_info["UserName"] == "HwHiAiUser"  # the driver's lines are kept


def test_firmware_chip_must_match_the_driver(sandbox):
    sandbox.ok(D252, *FRESH_DRIVER)
    sandbox.refused(
        F78_910C, *FRESH_FIRMWARE, expect="is for chip 910c but the installed driver 25.2.0 is for chip 910b"
    )
    sandbox.refused(DRIVER.format(chip="910c", version="25.5.0"), *UPGRADE, expect="is for chip 910b")


def test_upgrade_needs_an_installed_package(sandbox):
    sandbox.refused(D255, *UPGRADE, expect="no driver is installed")
    sandbox.ok(D252, *FRESH_DRIVER)
    sandbox.refused(F78, *UPGRADE, expect="no firmware is installed")


def test_upgrade_in_the_right_order_firmware_then_driver(sandbox):
    sandbox.ok(D252, *FRESH_DRIVER)
    sandbox.ok(F77, *FRESH_FIRMWARE)
    sandbox.ok(F78, *UPGRADE)
    assert sandbox.read("/usr/local/Ascend/firmware/version.info") == "Version=7.8.0.5.216\n"
    done = sandbox.ok(D255, *UPGRADE)
    assert "25.2.0 -> 25.5.0" in done.stdout and "Reboot needed" in done.stdout
    assert info(sandbox.read("/usr/local/Ascend/driver/version.info"))["Version"] == "25.5.0"
    assert json.loads(sandbox.read(RECORD))["compatible_firmware"] == ["7.8.0.5.216"]
    install_info = info(sandbox.read("/etc/ascend_install.info"))
    assert install_info["UserName"] == "HwHiAiUser"  # the upgrade keeps the running user
    assert install_info["Driver_Install_Command"] == f"bash {D255} {' '.join(UPGRADE)}"
    flashes = sandbox.read(FLASH_LOG).splitlines()
    assert [f.split()[1] for f in flashes] == ["version=7.7.0.6.236", "version=7.8.0.5.216"]
    assert flashes[1].split()[3] == "operation=upgrade"


def test_driver_upgrade_refused_while_the_firmware_is_incompatible(sandbox):
    # 25.2.0 declares only 7.7.0.6.236: with 7.8.0.5.216 flashed, the driver must wait for the firmware.
    sandbox.ok(D255, *FRESH_DRIVER)
    sandbox.ok(F78, *FRESH_FIRMWARE)
    done = sandbox.refused(D252, *UPGRADE, expect="the installed firmware 7.8.0.5.216 is not compatible")
    assert "upgrade the firmware first" in done.stderr
    assert info(sandbox.read("/usr/local/Ascend/driver/version.info"))["Version"] == "25.5.0"
    sandbox.ok(F77, *UPGRADE)
    sandbox.ok(D252, *UPGRADE)
    assert info(sandbox.read("/usr/local/Ascend/driver/version.info"))["Version"] == "25.2.0"


def test_driver_upgrade_without_firmware_is_allowed(sandbox):
    # a virtual machine gets the driver only
    sandbox.ok(D252, *FRESH_DRIVER)
    sandbox.ok(D255, *UPGRADE)
    assert info(sandbox.read("/usr/local/Ascend/driver/version.info"))["Version"] == "25.5.0"


def test_reflash_of_the_same_firmware_is_recorded(sandbox):
    sandbox.ok(D252, *FRESH_DRIVER)
    sandbox.ok(F77, *FRESH_FIRMWARE)
    sandbox.ok(F77, *UPGRADE)
    assert len(sandbox.read(FLASH_LOG).splitlines()) == 2


def test_uninstall(sandbox):
    sandbox.refused(D252, "--uninstall", expect="no driver is installed")
    sandbox.ok(D252, *FRESH_DRIVER)
    sandbox.ok(F77, *FRESH_FIRMWARE)
    sandbox.ok(D252, "--uninstall")
    assert not sandbox.path("/usr/local/Ascend/driver").exists()
    assert not sandbox.path(RECORD).exists()
    install_info = info(sandbox.read("/etc/ascend_install.info"))
    assert not any(key.startswith("Driver_") for key in install_info)
    assert install_info["Firmware_Install_Type"] == "full"
    sandbox.ok(F77, "--uninstall")
    assert not sandbox.path("/usr/local/Ascend/firmware").exists()
    assert not sandbox.path("/etc/ascend_install.info").exists()
    assert len(sandbox.read(FLASH_LOG).splitlines()) == 1  # uninstalling does not unflash


def test_install_path_is_honoured_and_the_firmware_follows_the_driver(sandbox):
    sandbox.ok(D252, *FRESH_DRIVER, "--install-path=/opt/ascend")
    assert info(sandbox.read("/opt/ascend/driver/version.info"))["Version"] == "25.2.0"
    sandbox.ok(F77, *FRESH_FIRMWARE)
    assert sandbox.read("/opt/ascend/firmware/version.info") == "Version=7.7.0.6.236\n"
    # the wrong order (driver before firmware) is refused, the right one works
    sandbox.refused(D255, *UPGRADE, expect="the installed firmware 7.7.0.6.236 is not compatible")
    sandbox.ok(F78, *UPGRADE)
    sandbox.ok(D255, *UPGRADE)
    assert info(sandbox.read("/opt/ascend/driver/version.info"))["Version"] == "25.5.0"
    assert not sandbox.path("/usr/local/Ascend").exists()
