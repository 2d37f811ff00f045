"""cfcore/ascend_packages.py: file selection by pattern, installer command lines, CANN layout, plans."""

from __future__ import annotations

import pytest
from cfcore import ascend_packages as ap
from cfcore.inputs import InputError

SHA = "a" * 64
MANIFEST = {
    "Ascend-hdk-910b-npu-driver_25.2.0_linux-x86-64.run": SHA,
    "Ascend-hdk-910b-npu-driver_25.2.0_linux-aarch64.run": SHA,
    "Ascend-hdk-910b-npu-firmware_7.7.0.6.236.run": SHA,
    "Ascend-hdk-910b-npu-driver_25.5.0_linux-x86-64.run": SHA,
    "Ascend-hdk-910b-npu-firmware_7.8.0.5.216.run": SHA,
    "Atlas-A3-hdk-npu-driver_25.2.0_linux-aarch64.run": SHA,
    "Atlas-A3-hdk-npu-firmware_7.7.0.6.236.run": SHA,
    "Ascend-cann-toolkit_8.2.RC1_linux-x86_64.run": SHA,
    "Ascend-cann-kernels-910b_8.2.RC1_linux-x86_64.run": SHA,
    "Ascend-cann-kernels-910b_8.0.RC2_linux.run": SHA,
    "Ascend-cann-toolkit_8.5.0_linux-x86_64.run": SHA,
    "Ascend-cann-910b-ops_8.5.0_linux-x86_64.run": SHA,
    "Ascend-cann-A3-ops_8.5.0_linux-aarch64.run": SHA,
    "Ascend-cann-nnal_8.2.RC1_linux-x86_64.run": SHA,
    "Ascend-docker-runtime_7.1.RC1_linux-x86_64.run": SHA,
    "Ascend-mindxdl-npu-exporter_7.1.RC1_linux-x86_64.zip": SHA,
}


@pytest.mark.parametrize(
    ("kind", "version", "chip", "arch", "expected"),
    [
        ("driver", "25.2.0", "910b", "x86_64", "Ascend-hdk-910b-npu-driver_25.2.0_linux-x86-64.run"),
        ("driver", "25.2.0", "910B", "aarch64", "Ascend-hdk-910b-npu-driver_25.2.0_linux-aarch64.run"),
        ("driver", "25.2.0", "910b", "arm64", "Ascend-hdk-910b-npu-driver_25.2.0_linux-aarch64.run"),
        ("firmware", "7.7.0.6.236", "910b", None, "Ascend-hdk-910b-npu-firmware_7.7.0.6.236.run"),
        ("driver", "25.2.0", "910c", "aarch64", "Atlas-A3-hdk-npu-driver_25.2.0_linux-aarch64.run"),
        ("firmware", "7.7.0.6.236", "910C", None, "Atlas-A3-hdk-npu-firmware_7.7.0.6.236.run"),
        ("toolkit", "8.2.RC1", None, "x86_64", "Ascend-cann-toolkit_8.2.RC1_linux-x86_64.run"),
        ("toolkit", "8.2.rc1", None, "x86-64", "Ascend-cann-toolkit_8.2.RC1_linux-x86_64.run"),
        ("kernels", "8.2.RC1", "910B", "x86_64", "Ascend-cann-kernels-910b_8.2.RC1_linux-x86_64.run"),
        ("kernels", "8.0.RC2", "910b", "x86_64", "Ascend-cann-kernels-910b_8.0.RC2_linux.run"),
        ("ops", "8.5.0", "910b", "x86_64", "Ascend-cann-910b-ops_8.5.0_linux-x86_64.run"),
        ("ops", "8.5.0", "a3", "aarch64", "Ascend-cann-A3-ops_8.5.0_linux-aarch64.run"),
        ("nnal", "8.2.RC1", None, "x86_64", "Ascend-cann-nnal_8.2.RC1_linux-x86_64.run"),
        ("docker_runtime", "7.1.RC1", None, "x86_64", "Ascend-docker-runtime_7.1.RC1_linux-x86_64.run"),
        ("npu_exporter", "7.1.RC1", None, "x86_64", "Ascend-mindxdl-npu-exporter_7.1.RC1_linux-x86_64.zip"),
    ],
)
def test_select_package_by_pattern(kind, version, chip, arch, expected):
    assert ap.select_package(kind, MANIFEST, version=version, chip=chip, arch=arch) == expected


def test_design_spelling_of_the_a3_hdk_is_accepted_too():
    names = ["Ascend-hdk-910c-npu-driver_25.2.0_linux-x86-64.run"]
    assert ap.select_package("driver", names, version="25.2.0", chip="910c", arch="x86_64") == names[0]


def test_atlas_a3_name_is_not_taken_for_another_chip():
    names = ["Atlas-A3-hdk-npu-driver_25.2.0_linux-aarch64.run"]
    with pytest.raises(InputError, match="no file matches the driver pattern"):
        ap.select_package("driver", names, version="25.2.0", chip="910b", arch="aarch64")


def test_no_match_names_the_variable_the_pattern_and_the_candidates():
    with pytest.raises(InputError) as err:
        ap.select_package("driver", MANIFEST, version="24.1.rc3", chip="910b", arch="x86_64")
    text = str(err.value)
    assert "ascend_packages" in text
    assert "Ascend-hdk-910b-npu-driver_24.1.rc3_linux-x86_64.run" in text
    assert "Ascend-hdk-910b-npu-driver_25.2.0_linux-x86-64.run" in text  # a candidate
    assert "Ascend-cann-toolkit" not in text  # other kinds are no candidates


def test_two_matches_are_refused():
    names = ["Ascend-cann-toolkit_8.2.RC1_linux-x86_64.run", "ascend-cann-toolkit_8.2.rc1_linux-x86-64.run"]
    with pytest.raises(InputError, match="2 files match the toolkit pattern"):
        ap.select_package("toolkit", names, version="8.2.RC1", arch="x86_64")


def test_version_must_match_in_full():
    names = ["Ascend-hdk-910b-npu-driver_25.2.0.1_linux-x86-64.run"]
    with pytest.raises(InputError):
        ap.select_package("driver", names, version="25.2.0", chip="910b", arch="x86_64")


def test_bad_inputs_are_refused():
    with pytest.raises(InputError, match="not an Ascend package kind"):
        ap.select_package("bios", MANIFEST, version="1")
    with pytest.raises(InputError, match="architecture"):
        ap.select_package("toolkit", MANIFEST, version="8.2.RC1", arch="ppc64le")
    with pytest.raises(InputError, match="mapping of file name"):
        ap.select_package("toolkit", "Ascend-cann-toolkit.run", version="8.2.RC1", arch="x86_64")
    with pytest.raises(InputError, match="chip"):
        ap.select_package("ops", MANIFEST, version="8.5.0", arch="x86_64")
    with pytest.raises(InputError, match="version"):
        ap.select_package("nnal", MANIFEST, arch="x86_64")


def test_manifest_sha256():
    assert ap.manifest_sha256({"f": "sha256:" + "AB" * 32}, "f") == "ab" * 32
    with pytest.raises(InputError, match=r"ascend_packages\['f'\]"):
        ap.manifest_sha256({"f": "1234"}, "f")


@pytest.mark.parametrize(
    ("model", "chips"),
    [
        ("910B", ("910b", "910b")),
        ("Ascend910", ("910c", "A3")),
        ("910", ("910", "910")),
        ("310P", ("310p", "310p")),
    ],
)
def test_chip_defaults_by_model(model, chips):
    assert ap.chips_for_model(model) == chips


def test_unknown_model_names_the_chip_variables():
    with pytest.raises(InputError, match="ascend_hdk_chip"):
        ap.chips_for_model("H100")


# ------------------------------------------------------------ installer argv ----


def test_driver_fresh_and_upgrade_argv():
    assert ap.installer_argv("driver", "full", user="HwHiAiUser", group="HwHiAiUser") == [
        "--nox11",
        "--full",
        "--quiet",
        "--install-username=HwHiAiUser",
        "--install-usergroup=HwHiAiUser",
    ]
    assert ap.installer_argv("driver", "full", user="u", group="g", for_all=True)[-1] == "--install-for-all"
    assert ap.installer_argv("driver", "upgrade") == ["--nox11", "--upgrade", "--quiet"]


def test_driver_install_path_only_when_not_the_default():
    assert "--install-path=/usr/local/Ascend" not in ap.installer_argv(
        "driver", "full", user="u", group="g", install_path="/usr/local/Ascend"
    )
    assert (
        ap.installer_argv("driver", "upgrade", install_path="/opt/Ascend")[-1] == "--install-path=/opt/Ascend"
    )


def test_firmware_argv():
    assert ap.installer_argv("firmware", "full") == ["--nox11", "--full", "--quiet"]
    assert ap.installer_argv("firmware", "upgrade") == ["--nox11", "--upgrade", "--quiet"]


@pytest.mark.parametrize(
    ("kind", "mode", "kwargs", "words"),
    [
        ("driver", "upgrade", {"user": "HwHiAiUser"}, "--upgrade cannot be combined"),
        ("driver", "upgrade", {"for_all": True}, "--upgrade cannot be combined"),
        ("toolkit", "upgrade", {"for_all": True, "install_path": "/p"}, "--upgrade cannot be combined"),
        ("driver", "uninstall", {"quiet": True}, "--uninstall cannot be combined with --quiet"),
        ("firmware", "uninstall", {"quiet": True}, "--uninstall cannot be combined with --quiet"),
        ("firmware", "devel", {}, "no --devel"),
        ("firmware", "full", {"user": "HwHiAiUser", "group": "HwHiAiUser"}, "reuses the driver's"),
        ("driver", "full", {}, "running user and group"),
        ("driver", "full", {"user": "root", "group": "root"}, "root needs --install-for-all"),
        ("toolkit", "install", {}, "cann_install_path"),
        ("docker_runtime", "install", {"install_path": "/p"}, "ascend_runtime_install_scene"),
        ("toolkit", "flash", {"install_path": "/p"}, "mode 'flash'"),
        ("bios", "full", {}, "no installer command line"),
    ],
)
def test_forbidden_combinations_are_refused(kind, mode, kwargs, words):
    with pytest.raises(InputError, match=words.replace("-", r"\-")):
        ap.installer_argv(kind, mode, **kwargs)


def test_uninstall_of_driver_is_not_quiet_by_default_but_cann_is():
    assert ap.installer_argv("driver", "uninstall") == ["--nox11", "--uninstall"]
    assert ap.installer_argv("toolkit", "uninstall", install_path="/p") == [
        "--uninstall",
        "--quiet",
        "--install-path=/p",
    ]


def test_cann_argv():
    assert ap.installer_argv("toolkit", "install", install_path="/usr/local/Ascend", for_all=True) == [
        "--install",
        "--quiet",
        "--install-path=/usr/local/Ascend",
        "--install-for-all",
    ]
    assert ap.installer_argv("ops", "upgrade", install_path="/usr/local/Ascend") == [
        "--upgrade",
        "--quiet",
        "--install-path=/usr/local/Ascend",
    ]


def test_docker_runtime_argv():
    assert ap.installer_argv("docker_runtime", "install", install_path="/p", install_scene="containerd") == [
        "--install",
        "--quiet",
        "--install-scene=containerd",
        "--install-path=/p",
    ]


# --------------------------------------------------------------------- CANN ----


def test_layout_before_and_from_8_5():
    old = ap.cann_layout("8.2.RC1", "/usr/local/Ascend", "x86_64")
    assert old["ops_kind"] == "kernels" and not old["new_layout"]
    assert old["set_env"] == "/usr/local/Ascend/ascend-toolkit/set_env.sh"
    assert old["install_info"] == (
        "/usr/local/Ascend/ascend-toolkit/latest/x86_64-linux/ascend_toolkit_install.info"
    )
    new = ap.cann_layout("8.5.0", "/opt/Ascend/", "arm64")
    assert new["ops_kind"] == "ops" and new["new_layout"]
    assert new["home"] == "/opt/Ascend/cann"
    assert new["set_env"] == "/opt/Ascend/cann/set_env.sh"
    assert new["install_info"] == "/opt/Ascend/cann/aarch64-linux/ascend_toolkit_install.info"
    assert new["uninstall_script"] == "/opt/Ascend/cann/aarch64-linux/script/uninstall.sh"
    assert new["nnal_set_env"] == "/opt/Ascend/nnal/atb/set_env.sh"


@pytest.mark.parametrize(
    ("version", "new"),
    [
        ("8.0.RC2", False),
        ("8.3.RC1", False),
        ("8.5.RC1", False),
        ("8.5.0", True),
        ("8.5.1", True),
        ("8.5.0.alpha002", True),
        ("9.0.0", True),
    ],
)
def test_crossing_8_5_uses_the_version_order(version, new):
    assert ap.is_new_layout(version) is new


def test_layout_refuses_a_malformed_version():
    with pytest.raises(InputError, match="cann_version"):
        ap.cann_layout("8.2", "/usr/local/Ascend")


def test_installed_info_version():
    text = "package_name=Ascend-cann-toolkit\nversion=8.2.RC1\ninnerversion=V100R001C22\narch=x86_64\n"
    assert ap.installed_info_version(text) == "8.2.RC1"
    assert ap.installed_info_version("") is None


def test_cann_plan_same_version_is_nothing():
    assert ap.cann_plan("8.2.rc1", "8.2.RC1")["action"] == "none"


def test_cann_plan_fresh_and_same_side_upgrade():
    assert ap.cann_plan(None, "8.2.RC1")["action"] == "install"
    plan = ap.cann_plan("8.0.RC2", "8.2.RC1")
    assert (plan["action"], plan["mode"], plan["crossing"]) == ("upgrade", "upgrade", False)
    assert ap.cann_plan("8.5.0", "8.5.1")["mode"] == "upgrade"


def test_cann_plan_crossing_uninstalls_with_the_installed_script():
    plan = ap.cann_plan(
        "8.2.RC1", "8.5.0", "/usr/local/Ascend", installed_home="/usr/local/Ascend/ascend-toolkit/latest"
    )
    assert (plan["action"], plan["mode"], plan["crossing"]) == ("reinstall", "install", True)
    assert (
        plan["uninstall_script"] == "/usr/local/Ascend/ascend-toolkit/latest/x86_64-linux/script/uninstall.sh"
    )
    back = ap.cann_plan("8.5.0", "8.2.RC1", "/usr/local/Ascend")
    assert back["uninstall_script"] == "/usr/local/Ascend/cann/x86_64-linux/script/uninstall.sh"


def test_repo_package_names():
    assert ap.repo_packages("9.1.0", "910b", "Debian") == [
        "ascend-cann-toolkit=9.1.0",
        "ascend-cann-910b-ops=9.1.0",
        "ascend-cann-nnal=9.1.0",
    ]
    assert ap.repo_packages("9.1.0", "A3", "Debian", nnal=False) == [
        "ascend-cann-toolkit=9.1.0",
        "ascend-cann-a3-ops=9.1.0",
    ]
    assert ap.repo_packages("9.1.0", "A3", "RedHat") == [
        "Ascend-cann-toolkit-9.1.0",
        "Ascend-cann-A3-ops-9.1.0",
        "Ascend-cann-nnal-9.1.0",
    ]
    with pytest.raises(InputError, match="cann_source: run"):
        ap.repo_packages("9.1.0", "910b", "Suse")
    with pytest.raises(InputError, match="cann_ops_chip"):
        ap.repo_packages("9.1.0", "", "Debian")


# ------------------------------------------------------------- driver plan ----


@pytest.mark.parametrize(
    ("vtype", "vrole", "vm"),
    [
        ("kvm", "guest", True),
        ("VMware", "guest", True),
        ("kvm", "host", False),
        ("podman", "guest", False),
        ("docker", "guest", False),
        ("container", "guest", False),
        ("NA", "NA", False),
        ("", "", False),
    ],
)
def test_virtual_machines_only(vtype, vrole, vm):
    assert ap.is_virtual_machine(vtype, vrole) is vm


def test_containers():
    assert ap.is_container("podman", "guest") and not ap.is_container("kvm", "guest")


def test_fresh_node_installs_driver_then_firmware():
    plan = ap.driver_plan(None, None, "25.2.0", "7.7.0.6.236", physical=True)
    assert plan["fresh"] is True
    assert [(s["kind"], s["mode"]) for s in plan["steps"]] == [("driver", "full"), ("firmware", "full")]


def test_upgrade_flashes_firmware_then_driver():
    plan = ap.driver_plan("24.1.rc2", "7.5.0.1.129", "25.2.0", "7.7.0.6.236", physical=True)
    assert plan["fresh"] is False
    assert [(s["kind"], s["mode"]) for s in plan["steps"]] == [("firmware", "upgrade"), ("driver", "upgrade")]
    assert plan["steps"][1]["installed"] == "24.1.rc2"


def test_only_what_differs():
    assert ap.driver_plan("25.2.0", "7.7.0.6.236", "25.2.0", "7.7.0.6.236", physical=True)["steps"] == []
    plan = ap.driver_plan("25.2.0", "7.5.0.1.129", "25.2.0", "7.7.0.6.236", physical=True)
    assert [(s["kind"], s["mode"]) for s in plan["steps"]] == [("firmware", "upgrade")]
    plan = ap.driver_plan("25.2.0", None, "25.2.0", "7.7.0.6.236", physical=True)
    assert [(s["kind"], s["mode"]) for s in plan["steps"]] == [("firmware", "full")]


def test_versions_compare_ignoring_case():
    assert ap.driver_plan("25.0.RC1.1", "7.7.0.1.231", "25.0.rc1.1", "7.7.0.1.231", True)["steps"] == []


def test_vm_gets_the_driver_only_with_the_reason():
    plan = ap.driver_plan(None, None, "25.2.0", None, physical=False, vm_type="kvm")
    assert [s["kind"] for s in plan["steps"]] == ["driver"]
    assert (
        plan["skipped"][0]["kind"] == "firmware" and "virtual machine (kvm)" in plan["skipped"][0]["reason"]
    )


def test_plan_needs_the_bom_versions():
    with pytest.raises(InputError, match="ascend_driver_version"):
        ap.driver_plan(None, None, "", "7.7.0.6.236", True)
    with pytest.raises(InputError, match="ascend_firmware_version"):
        ap.driver_plan(None, None, "25.2.0", None, True)
