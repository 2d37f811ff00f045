"""base_hosts_lines: the cluster's /etc/hosts lines from inventory variables."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from base_role_plugins import load_role_plugin

base_hosts = load_role_plugin("filter/base_hosts.py")


def lines(hostvars, group="all", domain="", order=None):
    groups = {"all": order or list(hostvars), "gpu_nvidia": [name for name in hostvars if "gpu" in name]}
    return base_hosts.base_hosts_lines(group, groups, hostvars, domain)


def test_address_priority_explicit_then_ansible_host_then_facts():
    hostvars = {
        "gpu-r1-n01": {"ansible_host": "10.10.1.11", "base_cluster_address": "10.30.1.11"},
        "gpu-r1-n02": {"ansible_host": "10.10.1.12"},
        "gpu-r1-n03": {
            "ansible_host": "gpu-r1-n03.mgmt",
            "ansible_facts": {"default_ipv4": {"address": "10.10.1.13"}},
        },
        "gpu-r1-n04": {"ansible_default_ipv4": {"address": "10.10.1.14"}},
    }
    assert lines(hostvars) == [
        "10.30.1.11 gpu-r1-n01",
        "10.10.1.12 gpu-r1-n02",
        "10.10.1.13 gpu-r1-n03",
        "10.10.1.14 gpu-r1-n04",
    ]


def test_domain_adds_the_fqdn_first_and_fqdn_inventory_names_keep_theirs():
    hostvars = {
        "gpu-r1-n01": {"ansible_host": "10.10.1.11"},
        "npu-r2-n01.site.example": {"ansible_host": "10.10.2.11"},
    }
    assert lines(hostvars, domain="cluster.local.") == [
        "10.10.1.11 gpu-r1-n01.cluster.local gpu-r1-n01",
        "10.10.2.11 npu-r2-n01.site.example npu-r2-n01",
    ]


def test_inventory_order_and_group_selection():
    hostvars = {
        "ctl-01": {"ansible_host": "10.0.0.1"},
        "gpu-02": {"ansible_host": "10.0.0.3"},
        "gpu-01": {"ansible_host": "10.0.0.2"},
    }
    assert lines(hostvars, group="gpu_nvidia") == ["10.0.0.3 gpu-02", "10.0.0.2 gpu-01"]


def test_ipv6_addresses_are_normalised():
    assert lines({"gpu-01": {"ansible_host": "fd00:0:0::0011"}}) == ["fd00::11 gpu-01"]


def test_unknown_group_names_the_known_ones():
    with pytest.raises(
        AnsibleFilterError, match=r"base_hosts_group 'gpus' is not a group.*one of: all, gpu_nvidia"
    ):
        lines({"gpu-01": {"ansible_host": "10.0.0.1"}}, group="gpus")


def test_host_without_any_address_names_the_host_and_the_fix():
    with pytest.raises(
        AnsibleFilterError, match=r"host gpu-02: no cluster address.*set base_cluster_address"
    ):
        lines({"gpu-01": {"ansible_host": "10.0.0.1"}, "gpu-02": {"ansible_host": "gpu-02.mgmt"}})


def test_explicit_address_that_is_not_an_ip_is_an_error():
    with pytest.raises(
        AnsibleFilterError, match=r"host gpu-01: base_cluster_address 'gpu-01.ib' is not an IP"
    ):
        lines({"gpu-01": {"ansible_host": "10.0.0.1", "base_cluster_address": "gpu-01.ib"}})


def test_two_hosts_with_one_address_is_an_error():
    with pytest.raises(
        AnsibleFilterError, match=r"hosts gpu-01 and gpu-02 both have the cluster address 10\.0\.0\.1"
    ):
        lines({"gpu-01": {"ansible_host": "10.0.0.1"}, "gpu-02": {"ansible_host": "10.0.0.1"}})
