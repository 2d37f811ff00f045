"""plugins/filter/roce.py as Ansible loads it, and the roce role's argument specs and files."""

from __future__ import annotations

from pathlib import Path

import pytest
import role_specs
import yaml
from ansible.errors import AnsibleFilterError
from ansible.plugins.loader import filter_loader, init_plugin_loader
from clusterforge.ansible_env import ensure_collection_link

init_plugin_loader([str(ensure_collection_link().parents[2])])
ROLE = Path(__file__).resolve().parents[3] / "roles" / "roce"


def flt(name):
    return filter_loader.get(f"clusterforge.cluster.{name}").j2_function


plan_filter = flt("cf_roce_plan")
commands_filter = flt("cf_roce_commands")


def test_plan_filter_normalizes_and_fails_naming_the_variable():
    plan = plan_filter({"interfaces": ["eth2"], "trust": None, "pfc_priority": None, "mtu": 4200})
    assert plan["trust"] == "dscp" and plan["mtu"] == 4200 and plan["traffic_class"] == 104
    assert plan_filter({"interfaces": None}) is None
    with pytest.raises(AnsibleFilterError, match=r"fabric_roce_pfc_priority must be 0-7, got 9 \(fix: set"):
        plan_filter({"interfaces": ["eth2"], "pfc_priority": 9})


def test_commands_filter_is_apply_commands():
    plan = plan_filter({"interfaces": ["eth2"]})
    commands = commands_filter(plan, "eth2", "mlx5_2", "/srv/sys")
    assert commands[0] == ["mlnx_qos", "-i", "eth2", "--trust", "dscp"]
    assert commands[-1] == ["ip", "link", "set", "dev", "eth2", "mtu", "9000"]
    assert ["mkdir", "-p", "/srv/sys/sys/kernel/config/rdma_cm/mlx5_2"] in commands
    with pytest.raises(AnsibleFilterError, match="eth3 is not in fabric_roce_interfaces"):
        commands_filter(plan, "eth3", "mlx5_2")
    with pytest.raises(AnsibleFilterError, match="needs the normalized plan"):
        commands_filter(["eth2"], "eth2", "mlx5_2")


def test_role_defaults_are_valid_and_bad_values_name_the_variable():
    assert role_specs.validate("roce", {"fabric_roce_interfaces": ["eth2"]}) == []
    for name, value in (
        ("fabric_roce_trust", "l2"),
        ("roce_mlnx_tools_install", "maybe"),
        ("fabric_roce_ecn", "sometimes"),
        ("rdma_install_method", "snap"),
    ):
        errors = role_specs.validate("roce", {}, **{name: value})
        assert errors and name in " ".join(errors), (name, errors)


def test_the_unit_is_a_oneshot_after_the_network_enabled_for_boot():
    unit = (ROLE / "templates" / "clusterforge-roce.service.j2").read_text()
    for line in (
        "Type=oneshot",
        "After=network-online.target sys-kernel-config.mount",
        "Wants=network-online.target",
        "WantedBy=multi-user.target",
        "RemainAfterExit=yes",
    ):
        assert line in unit
    tasks = yaml.safe_load((ROLE / "tasks" / "apply.yml").read_text())
    enable = next(t for t in tasks if "ansible.builtin.systemd_service" in t)
    assert enable["ansible.builtin.systemd_service"] == {"name": "{{ roce__unit }}", "enabled": True}
    assert (
        "state" not in enable["ansible.builtin.systemd_service"]
    )  # applied now by roce_qos, not by the unit
