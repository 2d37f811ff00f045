"""meta/argument_specs.yml of roles rdma and ib_fabric: what Ansible refuses before the roles start."""

from __future__ import annotations

import pytest
import role_specs

PLAN = [
    {"name": "ib0", "address": "10.40.1.11/16"},
    {"parent": "ib0", "pkey": "0x0001", "address": "10.41.1.11/16"},
]


@pytest.mark.parametrize("role", ["rdma", "ib_fabric"])
def test_the_defaults_with_a_fabric_plan_are_valid(role):
    assert role_specs.validate(role, {"node_sku": "hgx-h100-8gpu", "fabric_ipoib_interfaces": PLAN}) == []


@pytest.mark.parametrize(
    ("role", "name", "value"),
    [
        ("rdma", "rdma_install_method", "snap"),
        ("rdma", "rdma_kernel_modules", {"mlx5_ib": True}),
        ("rdma", "rdma_enabled", "perhaps"),
        ("ib_fabric", "ib_fabric_network_backend", "ifupdown"),
        ("ib_fabric", "ib_fabric_opensm_priority", "high"),
        ("ib_fabric", "ib_fabric_opensm_partitions", [{"pkey": "0x0001"}]),
    ],
)
def test_bad_values_are_refused_naming_the_variable(role, name, value):
    errors = role_specs.validate(role, {}, **{name: value})
    # A missing sub-option is named by its own name and its parent's.
    expected = "name" if name == "ib_fabric_opensm_partitions" else name
    assert errors and any(expected in error for error in errors), errors
