"""cfcore/nvidia_packages.py: package names by branch and flavour, flavour decision, branch change sets."""

from __future__ import annotations

import pytest
from cfcore import nvidia_packages as nv
from cfcore.inputs import InputError


@pytest.mark.parametrize(
    ("version", "flavour", "compute_only", "pinning", "install"),
    [
        ("535.183.01", "proprietary", False, None, ["cuda-drivers-535"]),
        ("535.183.01", "open", False, None, ["nvidia-open-535"]),
        (
            "535.183.01",
            "proprietary",
            True,
            None,
            ["libnvidia-compute-535", "nvidia-dkms-535", "nvidia-compute-utils-535"],
        ),
        ("570.133.20", "open", False, None, ["nvidia-open-570"]),
        ("570.133.20", "proprietary", False, None, ["cuda-drivers-570"]),
        (
            "570.133.20",
            "open",
            True,
            None,
            ["libnvidia-compute-570", "nvidia-dkms-570-open", "nvidia-compute-utils-570"],
        ),
        # 580 is the last branch with the branch in the driver package names
        ("580.65.06", "open", False, None, ["nvidia-open-580"]),
        (
            "580.65.06",
            "open",
            True,
            None,
            ["libnvidia-compute-580", "nvidia-dkms-580-open", "nvidia-compute-utils-580"],
        ),
        ("590.48.01", "open", False, "nvidia-driver-pinning-590.48.01", ["nvidia-open"]),
        ("590.48.01", "proprietary", False, "nvidia-driver-pinning-590.48.01", ["cuda-drivers"]),
        (
            "590.48.01",
            "open",
            True,
            "nvidia-driver-pinning-590.48.01",
            ["libnvidia-compute", "nvidia-dkms-open", "nvidia-compute-utils"],
        ),
        (
            "590.48.01",
            "proprietary",
            True,
            "nvidia-driver-pinning-590.48.01",
            ["libnvidia-compute", "nvidia-dkms", "nvidia-compute-utils"],
        ),
    ],
)
def test_cuda_repo_apt_names_by_branch(version, flavour, compute_only, pinning, install):
    branch, version = nv.parse_driver_version(version)
    assert nv.cuda_repo_apt_packages(branch, version, flavour, compute_only) == (pinning, install)


def test_pin_patterns_cover_the_branch_named_and_the_unversioned_names():
    assert nv.cuda_repo_apt_pin_patterns(570) == [
        "nvidia-*-570",
        "nvidia-*-570-*",
        "libnvidia-*-570",
        "cuda-drivers-570",
    ]
    unversioned = nv.cuda_repo_apt_pin_patterns(590)
    assert {
        "nvidia-open",
        "cuda-drivers",
        "libnvidia-compute",
        "nvidia-dkms-open",
        "nvidia-kernel-common",
    } <= set(unversioned)
    # never the container toolkit (its own versions) or fabric manager (its own role)
    assert not [p for p in unversioned if "container" in p or "fabricmanager" in p]


@pytest.mark.parametrize(
    ("branch", "version", "names"),
    [
        (535, "535.183.01", ["nvidia-fabricmanager-535", "libnvidia-nscq-535"]),
        (570, "570.133.20", ["nvidia-fabricmanager-570", "libnvidia-nscq-570"]),
        (575, "575.57.08", ["nvidia-fabricmanager-575", "libnvidia-nscq-575"]),
        (580, "580.65.06", ["nvidia-fabricmanager", "libnvidia-nscq"]),
        (590, "590.48.01", ["nvidia-fabricmanager", "libnvidia-nscq"]),
    ],
)
def test_fabricmanager_names_by_branch(branch, version, names):
    assert nv.fabricmanager_packages(branch, version) == names


def test_fabricmanager_names_on_rhel_keep_the_hyphen_before_580():
    assert nv.fabricmanager_packages(570, "570.133.20", "RedHat") == [
        "nvidia-fabric-manager-570.133.20",
        "libnvidia-nscq-570.133.20",
    ]
    assert nv.fabricmanager_packages(580, "580.65.06", "RedHat")[0] == "nvidia-fabricmanager-580.65.06"


def test_distro_packages_debian_12():
    assert nv.distro_apt_packages("proprietary", False) == ["nvidia-driver", "nvidia-kernel-dkms"]
    assert nv.distro_apt_packages("open", True) == [
        "libcuda1",
        "nvidia-smi",
        "nvidia-persistenced",
        "nvidia-open-kernel-dkms",
    ]
    assert nv.distro_apt_pin_patterns() == [
        "src:nvidia-graphics-drivers",
        "src:nvidia-open-gpu-kernel-modules",
    ]


def test_distro_packages_ubuntu_are_the_server_builds():
    assert nv.distro_apt_packages("open", False, "Ubuntu", 570) == ["nvidia-driver-570-server-open"]
    assert nv.distro_apt_packages("proprietary", True, "Ubuntu", 535) == [
        "nvidia-headless-535-server",
        "nvidia-utils-535-server",
    ]


def test_dnf_streams_and_versionlock():
    stream, install, lock = nv.dnf_packages(570, "570.133.20", "open", False, "9")
    assert stream == "nvidia-driver:570-open"
    assert install == ["nvidia-open-570.133.20"]
    assert lock[0] == "*nvidia*-570.133.20*"
    assert nv.dnf_packages(535, "535.183.01", "proprietary", True, 8)[:2] == (
        "nvidia-driver:535-dkms",
        ["nvidia-driver-cuda-535.183.01", "kmod-nvidia-latest-dkms-535.183.01"],
    )
    # RHEL 10 has no module streams
    assert nv.dnf_packages(580, "580.65.06", "open", False, "10")[0] is None


@pytest.mark.parametrize(
    ("branch", "requested", "sku", "flavour", "reason_word"),
    [
        (535, None, "any", "proprietary", "default of branch 535"),
        (555, None, None, "proprietary", "default of branch 555"),
        (560, None, "any", "open", "default of branch 560"),
        (590, None, "any", "open", "default"),
        (570, None, "open", "open", "SKU hgx-b200-8gpu requires it"),
        (535, "open", "any", "open", "nvidia_kernel_module_flavour"),
        (570, "proprietary", "any", "proprietary", "nvidia_kernel_module_flavour"),
        (570, "open", "open", "open", "nvidia_kernel_module_flavour"),
    ],
)
def test_flavour_decision(branch, requested, sku, flavour, reason_word):
    chosen, reason = nv.kernel_module_flavour(branch, requested, sku, "hgx-b200-8gpu")
    assert chosen == flavour
    assert reason_word in reason


def test_sku_requiring_open_refuses_proprietary_naming_sku_and_variable():
    with pytest.raises(InputError) as err:
        nv.kernel_module_flavour(570, "proprietary", "open", "hgx-b200-8gpu")
    assert "SKU hgx-b200-8gpu requires the open GPU kernel modules" in err.value.message
    assert "nvidia_kernel_module_flavour is proprietary" in err.value.message
    assert "nvidia_kernel_module_flavour: open" in err.value.fix


@pytest.mark.parametrize(
    ("branch", "requested", "sku", "words"),
    [
        (470, "open", "any", "no open GPU kernel modules"),
        (470, None, "open", "no open GPU kernel modules"),
        (570, "opne", "any", "is not one of open, proprietary"),
        (570, None, "closed", "accelerator.kernel_module_flavour 'closed'"),
    ],
)
def test_flavour_errors(branch, requested, sku, words):
    with pytest.raises(InputError, match=words):
        nv.kernel_module_flavour(branch, requested, sku, "x")


@pytest.mark.parametrize(
    "bad", ["570", "570.133.20\n", "v570.133.20", 570.1, None, "", "57.1.2", "570.133.20-1"]
)
def test_bad_driver_versions_name_the_variable(bad):
    with pytest.raises(InputError) as err:
        nv.parse_driver_version(bad)
    assert "nvidia_driver_version" in err.value.message
    assert '"570.133.20"' in err.value.fix


def test_cuda_major_by_branch():
    assert [nv.cuda_major(b) for b in (470, 525, 570, 575, 580, 590)] == [11, 12, 12, 12, 13, 13]


def test_fabricmanager_version_must_equal_the_driver_version():
    assert nv.fabricmanager_version("570.133.20") == (570, "570.133.20")
    assert nv.fabricmanager_version("570.133.20", "570.133.20") == (570, "570.133.20")
    with pytest.raises(InputError) as err:
        nv.fabricmanager_version("570.133.20", "570.124.06")
    assert "802" in err.value.message
    assert "nvidia_fabricmanager_version" in err.value.fix


INSTALLED_570 = {
    "nvidia-open-570": "570.133.20-1",
    "nvidia-dkms-570-open": "570.133.20-1",
    "libnvidia-compute-570": "570.133.20-1",
    "nvidia-kernel-common-570": "570.133.20-1",
    "nvidia-compute-utils-570": "570.133.20-1",
    "nvidia-fabricmanager-570": "570.133.20-1",
    "libnvidia-nscq-570": "570.133.20-1",
    "nvidia-container-toolkit": "1.17.8-1",
    "libnvidia-container1": "1.17.8-1",
}


def test_branch_change_570_to_590_removes_the_branch_named_packages_only():
    remove = nv.other_branch_packages(INSTALLED_570, 590, "590.48.01")
    assert remove == [
        "libnvidia-compute-570",
        "nvidia-compute-utils-570",
        "nvidia-dkms-570-open",
        "nvidia-kernel-common-570",
        "nvidia-open-570",
    ]
    fm = nv.other_branch_packages(INSTALLED_570, 590, "590.48.01", nv.is_fabricmanager_package)
    assert fm == ["libnvidia-nscq-570", "nvidia-fabricmanager-570"]


def test_same_branch_other_version_is_upgraded_not_removed():
    older = {name: "570.124.06-1" for name in INSTALLED_570 if "570" in name}
    assert nv.other_branch_packages(older, 570, "570.133.20") == []
    held = sorted(older)
    assert "nvidia-open-570" in nv.packages_to_release(older, held, "570.133.20")


def test_590_version_change_replaces_the_pinning_package():
    installed = {
        "nvidia-driver-pinning-590.44.01": "590.44.01-1",
        "nvidia-open": "590.44.01-1",
        "nvidia-kernel-common": "590.44.01-1",
    }
    assert nv.other_branch_packages(installed, 590, "590.48.01") == ["nvidia-driver-pinning-590.44.01"]


def test_back_to_570_removes_the_unversioned_names():
    installed = {
        "nvidia-open": "590.48.01-1",
        "nvidia-dkms-open": "590.48.01-1",
        "nvidia-fabricmanager": "590.48.01-1",
    }
    assert nv.other_branch_packages(installed, 570, "570.133.20") == ["nvidia-dkms-open", "nvidia-open"]
    assert nv.other_branch_packages(installed, 570, "570.133.20", nv.is_fabricmanager_package) == [
        "nvidia-fabricmanager"
    ]


def test_holds_only_the_driver_family_at_the_version():
    installed = {
        **INSTALLED_570,
        "nvidia-kernel-common": "20151021+13",
        "nvidia-persistenced": "535.171.04-1~deb12u1",
    }
    held = nv.packages_at_version(installed, "570.133.20")
    assert "nvidia-open-570" in held
    assert "nvidia-fabricmanager-570" not in held  # the fabric manager role holds its own
    assert "libnvidia-container1" not in held
    assert "nvidia-kernel-common" not in held
    assert nv.packages_at_version(installed, "570.133.20", nv.is_fabricmanager_package) == [
        "libnvidia-nscq-570",
        "nvidia-fabricmanager-570",
    ]


@pytest.mark.parametrize(
    ("installed", "version", "matches"),
    [
        ("570.133.20-1", "570.133.20", True),
        ("535.309.01-0+deb12u1", "535.309.01", True),
        ("1:570.133.20-1.el9", "570.133.20", True),
        ("570.133.200-1", "570.133.20", False),
        ("570.133.2-1", "570.133.20", False),
    ],
)
def test_version_matches(installed, version, matches):
    assert nv.version_matches(installed, version) is matches
