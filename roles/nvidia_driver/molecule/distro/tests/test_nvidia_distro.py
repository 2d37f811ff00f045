"""Role nvidia_driver, `distro` method: Debian 12's real non-free packages, pinned and held
at the BOM's version, on a container that cannot build or load the kernel module (and says so)."""

from __future__ import annotations

import cfmol_testinfra as cfmol


def debian_version(host, package: str) -> str:
    return host.check_output(f"dpkg-query -W -f '${{Version}}' {package}")


def test_debian_driver_userspace_at_the_bom_version_is_held(host):
    version = cfmol.node_vars(host)["nvidia_driver_version"]
    holds = set(host.check_output("apt-mark showhold").split())
    for package in ("libcuda1", "nvidia-smi", "nvidia-kernel-dkms"):
        assert debian_version(host, package).startswith(version + "-"), package
        assert package in holds, package
    # The CUDA repository's names are not used by this method.
    assert host.run("dpkg-query -W libnvidia-compute-535").rc != 0


def test_the_pin_keeps_apt_on_the_bom_version(host):
    version = cfmol.node_vars(host)["nvidia_driver_version"]
    policy = host.check_output("apt-cache policy libcuda1")
    candidate = next(line.split(":", 1)[1].strip() for line in policy.splitlines() if "Candidate:" in line)
    assert candidate.startswith(version + "-"), policy


def test_the_container_case_is_reported_not_hidden(host):
    fact = cfmol.read_json(host, "/etc/ansible/facts.d/clusterforge_nvidia_driver.fact")
    assert fact["installed"] == cfmol.node_vars(host)["nvidia_driver_version"]
    assert fact["loaded"] in (None, "")
    assert fact["mismatch"] is False
    assert any("container" in reason for reason in fact["reasons"]), fact


def test_replayed_gpus_report_the_installed_debian_driver(host):
    version = cfmol.node_vars(host)["nvidia_driver_version"]
    reported = set(host.check_output("nvidia-smi --query-gpu=driver_version --format=csv,noheader").split())
    assert reported == {version}
