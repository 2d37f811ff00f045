"""roles/ceph argument specs: the lab inventory is valid, bad values refused by name, secrets no_log."""

from __future__ import annotations

import pytest
from role_specs import spec, validate

LAB = {
    "ceph_fsid": "07cf6d08-d85e-4fa4-8c13-20d185b17342",
    "ceph_osd_method": "raw",
    "ceph_osd_devices": ["/dev/vdb"],
    "ceph_pool_default_size": 1,
    "ceph_pool_default_min_size": 1,
    "ceph_crush_chooseleaf_type": 0,
    "ceph_mon_data_avail_warn": 5,
    "ceph_clients": [{"name": "fsuser", "key": "k", "caps": {"mon": "allow r"}}],
}


def test_the_lab_inventory_is_valid():
    assert validate("ceph", LAB) == []


@pytest.mark.parametrize(
    "name, value",
    [
        ("ceph_deploy_method", "rook"),
        ("ceph_osd_method", "filestore"),
        ("ceph_osd_devices", {"a": 1}),
        ("ceph_pool_default_size", "three"),
        ("ceph_wait_health_ok", "maybe"),
    ],
)
def test_bad_values_are_refused_naming_the_variable(name, value):
    errors = validate("ceph", LAB, **{name: value})
    assert errors and name in " ".join(errors)


def test_secrets_are_no_log():
    options = spec("ceph")
    for name in (
        "ceph_mon_secret",
        "ceph_admin_secret",
        "ceph_clients",
        "ceph_rgw_users",
        "ceph_cephadm_registry_password",
    ):
        assert options[name].get("no_log") is True, name
