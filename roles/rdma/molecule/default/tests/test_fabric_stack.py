"""The fabric stack on real Debian 12 nodes with replayed HCAs, after side_effect.yml broke and
healed it: Debian's RDMA packages, module and memlock configuration, the recorded HCAs, IPoIB
through systemd-networkd, the subnet manager's configuration, and lossless RoCE as the replayed
NICs now report it. Every check reads real node state (dpkg, systemd, files, ip, the replayed
mlnx_qos); none of it would hold on a node the roles did not touch.
"""

from __future__ import annotations

import json

import cfmol_testinfra as cfmol
import pytest

IB_NODE = "cfmol-fabric-ib"
ROCE_NODE = "cfmol-fabric-roce"
SYSROOT = "/opt/hwreplay/sysroot"
PFC_PRIORITY = 3
DSCP = 26


def on(host, node):
    if cfmol.node_name(host) != node:
        pytest.skip(f"checked on {node}")


@pytest.mark.parametrize("package", ["rdma-core", "ibverbs-utils", "infiniband-diags", "perftest"])
def test_rdma_packages_are_installed(host, package):
    assert host.package(package).is_installed


def test_rdma_modules_load_at_boot(host):
    listed = host.file("/etc/modules-load.d/clusterforge-rdma.conf").content_string.split()
    assert {"mlx5_ib", "ib_umad", "ib_ipoib", "rdma_ucm"} <= set(listed)


def test_memlock_is_unlimited_for_sessions_and_services(host):
    limits = host.file("/etc/security/limits.d/90-clusterforge-rdma.conf").content_string
    rows = {tuple(line.split()[:3]) for line in limits.splitlines() if line and not line.startswith("#")}
    assert {("*", "soft", "memlock"), ("*", "hard", "memlock"), ("root", "hard", "memlock")} <= rows
    dropin = host.file("/etc/systemd/system.conf.d/90-clusterforge-rdma.conf").content_string
    assert "DefaultLimitMEMLOCK=infinity" in dropin


def test_hca_firmware_is_recorded_as_a_local_fact(host):
    fact = cfmol.read_json(host, "/etc/ansible/facts.d/clusterforge_rdma.fact")
    assert fact["install_method"] == "distro" and fact["ofed_version"] is None
    # The replayed sysfs tree: 8 compute HCAs and 2 front-end NICs, ConnectX-7 firmware.
    hcas = fact["hcas"]
    assert len(hcas) == 10, sorted(hcas)
    for name in (f"mlx5_{n}" for n in range(8)):
        firmware = host.file(f"{SYSROOT}/sys/class/infiniband/{name}/fw_ver").content_string.strip()
        assert hcas[name]["firmware"] == firmware


def test_ipoib_interface_holds_its_planned_address(host):
    on(host, IB_NODE)
    network = host.file("/etc/systemd/network/60-clusterforge-ib0.network").content_string
    assert "Name=ib0" in network and "Address=10.40.1.11/16" in network and "MTUBytes=2044" in network
    assert host.service("systemd-networkd").is_enabled
    link = json.loads(host.check_output("ip -j addr show dev ib0"))[0]
    addresses = {(a["local"], a["prefixlen"]) for a in link["addr_info"] if a["family"] == "inet"}
    assert ("10.40.1.11", 16) in addresses and link["mtu"] == 2044


def test_subnet_manager_is_configured_and_enabled(host):
    on(host, IB_NODE)
    assert host.package("opensm").is_installed
    conf = host.file("/etc/opensm/opensm.conf").content_string
    assert "sm_priority 14" in conf
    partitions = host.file("/etc/opensm/partitions.conf").content_string
    assert "Default=0x7fff" in partitions.replace(" ", "") and "storage=0x0001" in partitions.replace(" ", "")
    assert host.service("opensm").is_enabled
    # No HCA port in a container: the unit's ConditionPathExists keeps it from starting.
    assert not host.file("/sys/class/infiniband_mad/abi_version").exists


def test_roce_boot_unit_reapplies_the_plan(host):
    on(host, ROCE_NODE)
    script = host.file("/usr/local/sbin/clusterforge-roce-apply")
    assert script.mode == 0o755
    assert "--pfc 0,0,0,1,0,0,0,0" in script.content_string and "--trust dscp" in script.content_string
    assert host.service("clusterforge-roce").is_enabled


@pytest.mark.parametrize("iface", ["enp24s0np0", "enp220s0np0"])
def test_roce_ports_are_lossless_as_planned(host, iface):
    on(host, ROCE_NODE)
    qos = host.check_output(f"mlnx_qos -i {iface}")
    assert "dscp" in qos.lower()
    enabled = next(line for line in qos.splitlines() if line.strip().startswith("enabled"))
    assert enabled.split()[1:] == ["0", "0", "0", "1", "0", "0", "0", "0"], enabled
    ecn = f"{SYSROOT}/sys/class/net/{iface}/ecn"
    for point in ("roce_np", "roce_rp"):
        assert host.file(f"{ecn}/{point}/enable/{PFC_PRIORITY}").content_string.strip() == "1"
    assert host.file(f"{ecn}/roce_np/cnp_dscp").content_string.strip() == "48"
