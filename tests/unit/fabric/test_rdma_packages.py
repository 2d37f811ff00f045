"""cfcore.rdma_packages: what each install method installs and from where (role rdma)."""

from __future__ import annotations

import pytest
from cfcore.rdma_packages import (
    DISTRO_PACKAGES,
    PlanError,
    install_plan,
    key_checksum,
    mlnx_ofed_release,
    parse_ofed_info,
    repo_arch,
    repo_distro,
)

KEY = "ab" * 32
UBUNTU = {"os_family": "Debian", "distribution": "Ubuntu", "distribution_version": "22.04"}
RHEL = {"os_family": "RedHat", "distribution": "Rocky", "distribution_version": "9.5"}


def test_distro_installs_the_os_packages_from_no_repository():
    debian = install_plan("distro", "Debian", "Debian", "12.15")
    assert debian == {
        "method": "distro",
        "packages": ["rdma-core", "ibverbs-utils", "infiniband-diags", "perftest"],
        "version": None,
        "repository": None,
    }
    assert install_plan("distro", "RedHat", "Rocky", "9.5")["packages"] == [
        "rdma-core",
        "libibverbs-utils",
        "infiniband-diags",
        "perftest",
    ]


def test_distro_needs_no_key_and_returns_a_copy():
    plan = install_plan("distro", "Debian")
    plan["packages"].append("x")
    assert "x" not in DISTRO_PACKAGES["Debian"]


def test_doca_uses_nvidias_repository_with_the_pinned_key():
    plan = install_plan(
        "doca", doca_version="2.9.1", key_sha256=KEY, keyring="/etc/apt/keyrings/k.asc", **UBUNTU
    )
    assert plan["packages"] == ["doca-ofed"] and plan["version"] == "2.9.1"
    repo = plan["repository"]
    assert repo["url"] == "https://linux.mellanox.com/public/repo/doca/2.9.1/ubuntu22.04/x86_64/"
    assert repo["key_url"] == "https://linux.mellanox.com/public/repo/doca/GPG-KEY-Mellanox.pub"
    assert repo["key_checksum"] == "sha256:" + KEY
    assert repo["apt_source"] == f"deb [signed-by=/etc/apt/keyrings/k.asc] {repo['url']} ./"


def test_doca_on_arm_and_rhel_majors():
    plan = install_plan("doca", doca_version="2.9.1", key_sha256=KEY, architecture="aarch64", **RHEL)
    assert plan["repository"]["url"].endswith("/doca/2.9.1/rhel9/arm64-sbsa/")


def test_a_mirror_url_and_the_profile_are_taken_as_given():
    plan = install_plan(
        "doca",
        doca_version="2.9.1",
        doca_profile="doca-roce",
        doca_repo_url="https://mirror.example/doca/2.9.1",
        key_url="https://mirror.example/doca/key.pub",
        key_sha256="sha256:" + KEY.upper(),
        **UBUNTU,
    )
    assert plan["packages"] == ["doca-roce"]
    assert plan["repository"]["url"] == "https://mirror.example/doca/2.9.1/"
    assert plan["repository"]["key_url"] == "https://mirror.example/doca/key.pub"
    assert plan["repository"]["key_checksum"] == "sha256:" + KEY


@pytest.mark.parametrize("value", [None, "", "sha256:abc", "md5:" + KEY])
def test_the_vendor_methods_refuse_an_unpinned_key_naming_the_variable(value):
    with pytest.raises(PlanError, match=r"rdma_doca_repo_key_sha256 is .*sha256sum"):
        install_plan("doca", doca_version="2.9.1", key_sha256=value, **UBUNTU)
    with pytest.raises(PlanError, match="rdma_doca_repo_key_sha256"):
        install_plan("mlnx_ofed", mlnx_ofed_version="24.10-1.1.4.0", key_sha256=value, **UBUNTU)


def test_mlnx_ofed_uses_its_legacy_repository_per_minor_release():
    plan = install_plan("mlnx_ofed", mlnx_ofed_version="24.10-1.1.4.0", key_sha256=KEY, **RHEL)
    assert plan["packages"] == ["mlnx-ofed-all"] and plan["version"] == "24.10-1.1.4.0"
    assert (
        plan["repository"]["url"]
        == "https://linux.mellanox.com/public/repo/mlnx_ofed/24.10-1.1.4.0/rhel9.5/x86_64/"
    )
    assert plan["repository"]["key_url"] == "https://www.mellanox.com/downloads/ofed/RPM-GPG-KEY-Mellanox"


@pytest.mark.parametrize("version", ["25.01-0.6.0.0", "24.11-1.0.0.0", "26.1-1"])
def test_mlnx_ofed_newer_than_24_10_is_refused_pointing_to_doca(version):
    with pytest.raises(
        PlanError, match=r"newer than the last MLNX_OFED release \(24\.10\).*rdma_install_method: doca"
    ):
        install_plan("mlnx_ofed", mlnx_ofed_version=version, key_sha256=KEY, **UBUNTU)


def test_mlnx_ofed_releases():
    assert mlnx_ofed_release("24.10-1.1.4.0") == (24, 10)
    assert mlnx_ofed_release("5.8-3.0.7.0") == (5, 8)
    with pytest.raises(PlanError, match=r'rdma_mlnx_ofed_version is .*"24.10-1.1.4.0"'):
        mlnx_ofed_release("24.10")


@pytest.mark.parametrize(
    ("settings", "variable"),
    [
        ({"method": "snap"}, "rdma_install_method is 'snap'"),
        ({"method": "doca", "doca_version": "latest"}, "rdma_doca_version is 'latest'"),
        ({"method": "doca", "doca_version": "2.9.1", "doca_profile": "doca ofed"}, "rdma_doca_profile"),
        ({"method": "doca", "doca_version": "2.9.1", "doca_repo_url": "mirror/doca"}, "rdma_doca_repo_url"),
        (
            {"method": "mlnx_ofed", "mlnx_ofed_version": "24.10-1.1.4.0", "mlnx_ofed_profile": ""},
            "rdma_mlnx_ofed_profile",
        ),
        ({"method": "doca", "doca_version": "2.9.1", "distro_override": "ubuntu 22"}, "rdma_repo_distro"),
    ],
)
def test_bad_settings_name_the_variable(settings, variable):
    method = settings.pop("method")
    with pytest.raises(PlanError, match=variable):
        install_plan(method, key_sha256=KEY, **UBUNTU, **settings)


def test_an_unsupported_os_family_is_refused():
    with pytest.raises(PlanError, match="Debian and RedHat OS families, not 'Suse'"):
        install_plan("distro", "Suse", "SLES", "15")


def test_repository_folder_names():
    assert repo_distro("doca", "Debian", "Ubuntu", "24.04") == "ubuntu24.04"
    assert repo_distro("doca", "RedHat", "AlmaLinux", "8.10") == "rhel8"
    assert repo_distro("mlnx_ofed", "RedHat", "RedHat", "9.5") == "rhel9.5"
    assert repo_distro("doca", "Debian", "Debian", "12.5") == "debian12.5"
    with pytest.raises(PlanError, match="set rdma_repo_distro"):
        repo_distro("doca", "Debian", "Kali", "2024")
    assert repo_arch("doca", "x86_64") == "x86_64"
    assert repo_arch("mlnx_ofed", "aarch64") == "aarch64"
    with pytest.raises(PlanError, match="rdma_repo_arch"):
        repo_arch("doca", "ppc64le")


def test_overrides_of_the_folder_names_win():
    plan = install_plan(
        "doca",
        doca_version="3.1.0",
        key_sha256=KEY,
        distro_override="debian12",
        arch_override="arm64-sbsa",
        **UBUNTU,
    )
    assert plan["repository"]["url"].endswith("/doca/3.1.0/debian12/arm64-sbsa/")


def test_key_checksum_forms():
    assert key_checksum(KEY) == key_checksum("sha256:" + KEY) == "sha256:" + KEY


@pytest.mark.parametrize(
    ("text", "version"),
    [
        ("MLNX_OFED_LINUX-24.10-1.1.4.0:\n", "24.10-1.1.4.0"),
        ("OFED-internal-25.01-0.6.0:\n", "25.01-0.6.0"),
        ("\nMLNX_OFED_LINUX-5.8-3.0.7.0\n", "5.8-3.0.7.0"),
        ("", None),
        ("command not found", None),
    ],
)
def test_the_release_ofed_info_prints(text, version):
    assert parse_ofed_info(text) == version
