"""The NVIDIA stack on real Debian 12 nodes with replayed GPUs, after side_effect.yml moved the
BOM to branch 590: what is installed, pinned and held, which services run, what the container
runtime and CDI see, and what the replayed hardware reports. Every check reads real node state
(dpkg, apt, systemd, files); none of it would hold on a node the roles did not touch.
"""

from __future__ import annotations

import cfmol_testinfra as cfmol
import pytest
import yaml

DRIVER = "590.48.01"  # side_effect.yml's branch change (inventory file nvidia_branch_change.yml)
DRIVER_DEB = f"{DRIVER}-1"
OLD_BRANCH = "570"
# The driver family the roles may install from branch 590 on (unversioned names).
DRIVER_FAMILY = (
    "nvidia-open",
    "cuda-drivers",
    "libnvidia-compute",
    "nvidia-dkms-open",
    "nvidia-kernel-common",
    "nvidia-compute-utils",
)
FABRIC = ("nvidia-fabricmanager", "libnvidia-nscq")
CTK = (
    "nvidia-container-toolkit",
    "nvidia-container-toolkit-base",
    "libnvidia-container-tools",
    "libnvidia-container1",
)


def installed(host) -> dict[str, str]:
    """Installed packages -> version (dpkg's view)."""
    out = host.check_output("dpkg-query -W -f '${Package} ${Version} ${db:Status-Abbrev}\\n'")
    packages = {}
    for line in out.splitlines():
        name, version, status = [*line.split(None, 2), "", ""][:3]
        if status[1:2] == "i":  # installed; the first letter is the selection (i, or h when held)
            packages[name] = version
    return packages


def held(host) -> set[str]:
    return set(host.check_output("apt-mark showhold").split())


def test_cuda_repository_is_signed_by_the_pinned_key(host):
    sources = host.check_output("grep -rh '^deb ' /etc/apt/sources.list.d/ || true")
    base = cfmol.node_vars(host)["nvidia_cuda_repo_base_url"]
    line = next(line for line in sources.splitlines() if base in line)
    assert "signed-by=" in line and line.rstrip().endswith(" /"), line
    keyfile = line.split("signed-by=")[1].split("]")[0].split()[0]
    digest = host.check_output(f"sha256sum {keyfile}").split()[0]
    assert f"sha256:{digest}" == cfmol.node_vars(host)["nvidia_cuda_repo_key_sha256"]


def test_driver_is_the_bom_branch_pinned_and_held(host):
    packages, holds = installed(host), held(host)
    assert packages.get("libnvidia-compute") == DRIVER_DEB, packages
    assert f"nvidia-driver-pinning-{DRIVER}" in packages
    family = [name for name in DRIVER_FAMILY if name in packages]
    assert all(packages[name] == DRIVER_DEB for name in family), {n: packages[n] for n in family}
    assert set(family) <= holds, f"not held: {set(family) - holds}"
    leftovers = sorted(name for name in packages if name.endswith((f"-{OLD_BRANCH}", f"-{OLD_BRANCH}-open")))
    assert leftovers == [], f"packages of the old branch left behind: {leftovers}"
    # apt would pick exactly the BOM's version, though the repository also has 590.44.01 and others.
    policy = host.check_output("apt-cache policy libnvidia-compute")
    assert f"Candidate: {DRIVER_DEB}" in policy, policy


def test_open_kernel_modules_on_every_node(host):
    packages = installed(host)
    assert "nvidia-dkms-open" in packages and "nvidia-dkms" not in packages


def test_driver_state_fact_reports_the_installed_version(host):
    fact = cfmol.read_json(host, "/etc/ansible/facts.d/clusterforge_nvidia_driver.fact")
    assert fact["installed"] == DRIVER, fact
    # A container cannot load kernel modules: the replay has none loaded, so no mismatch is claimed.
    assert fact["mismatch"] is False, fact


def test_replayed_gpus_report_the_installed_driver(host):
    versions = host.check_output("nvidia-smi --query-gpu=driver_version --format=csv,noheader").split()
    assert versions and set(versions) == {DRIVER}, versions


def test_fabric_manager_matches_the_driver_and_runs(host):
    packages, holds = installed(host), held(host)
    for name in FABRIC:
        assert packages.get(name) == DRIVER_DEB, (name, packages.get(name))
        assert name in holds, name
    service = host.service("nvidia-fabricmanager")
    assert service.is_running and service.is_enabled
    states = [
        line.split(":", 1)[1].strip()
        for line in host.check_output("nvidia-smi -q").splitlines()
        if line.strip().startswith("State") and ":" in line
    ]
    assert "Completed" in states and "In Progress" not in states, states


def test_nvlink5_node_runs_nvlsm_with_ib_umad_at_boot(host):
    if cfmol.node_vars(host)["node_sku"] != "hgx-b200-8gpu":
        assert "nvlsm" not in installed(host)  # NVLink 4 systems need no NVLink subnet manager
        return
    packages = installed(host)
    assert packages.get("nvlsm", "").startswith(cfmol.node_vars(host)["nvidia_nvlsm_version"]), packages.get(
        "nvlsm"
    )
    assert "infiniband-diags" in packages  # Debian's real package
    modules = host.check_output("cat /etc/modules-load.d/*.conf")
    assert "ib_umad" in modules.split()


def test_persistence_daemon_runs(host):
    service = host.service("nvidia-persistenced")
    assert service.is_enabled and service.is_running


def test_cuda_nccl_tensorrt_are_pinned_to_the_bom(host):
    node = cfmol.node_vars(host)
    cuda = node["cuda_version"]
    packages, holds = installed(host), held(host)
    toolkit = f"cuda-toolkit-{cuda.replace('.', '-')}"
    assert toolkit in packages and toolkit in holds
    build = f"{node['nccl_version']}-1+cuda{cuda}"
    for name in ("libnccl2", "libnccl-dev"):
        assert packages.get(name) == build and name in holds, (name, packages.get(name))
    trt = f"{node['tensorrt_version']}-1+cuda{cuda}"
    for name in ("libnvinfer10", "libnvinfer-plugin10", "libnvonnxparsers10"):
        assert packages.get(name) == trt and name in holds, (name, packages.get(name))
    profile = host.file("/etc/profile.d/cuda.sh").content_string
    assert f"/usr/local/cuda-{cuda}/bin" in profile
    login = cfmol.fresh_login(host, "bash -lc 'nvcc --version'")  # a login shell reads profile.d
    assert login.rc == 0 and f"release {cuda}," in login.stdout, login.stdout + login.stderr


def test_dcgm_4_for_the_drivers_cuda_major_runs(host):
    packages, holds = installed(host), held(host)
    assert "datacenter-gpu-manager" not in packages  # 3.x removed
    # Branch 590 serves CUDA 13.
    for name in ("datacenter-gpu-manager-4-core", "datacenter-gpu-manager-4-cuda13"):
        assert packages.get(name, "").startswith(f"1:{cfmol.node_vars(host)['dcgm_version']}"), name
        assert name in holds, name
    assert "datacenter-gpu-manager-4-cuda12" not in packages
    assert host.service("nvidia-dcgm").is_running
    gpus = host.run("dcgmi discovery -l")
    assert gpus.rc == 0 and "8 GPU" in gpus.stdout, gpus.stdout


def test_container_toolkit_and_cdi(host):
    packages, holds = installed(host), held(host)
    version = f"{cfmol.node_vars(host)['nvidia_container_toolkit_version']}-1"
    for name in CTK:
        assert packages.get(name) == version and name in holds, (name, packages.get(name))
    spec = yaml.safe_load(host.check_output("sudo cat /var/run/cdi/nvidia.yaml"))
    assert spec["kind"] == "nvidia.com/gpu"
    names = {device["name"] for device in spec["devices"]}
    assert {"all", "0", "7"} <= names, names
    assert not host.file("/etc/cdi/nvidia.yaml").exists


@pytest.mark.parametrize("runtime", ["containerd"])
def test_runtimes_present_get_the_nvidia_runtime(host, runtime):
    config = host.file("/etc/containerd/config.toml")
    if "containerd" not in installed(host):
        assert not config.exists or "nvidia" not in config.content_string  # nothing to configure
        return
    text = config.content_string
    assert "runtimes.nvidia" in text and "/usr/bin/nvidia-container-runtime" in text, text[-2000:]
    assert host.service("containerd").is_running
