"""meta/argument_specs.yml of roles ascend_driver and cann: typed, described, consistent with the defaults."""

from __future__ import annotations

import pytest
import role_specs
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from role_specs import defaults, spec

NAMES = ["ascend_driver", "cann"]
GOOD_INVENTORY = {
    "ascend_driver_version": "25.2.0",
    "ascend_firmware_version": "7.7.0.6.236",
    "cann_version": "8.2.RC1",
    "node_sku": "atlas-800t-a2",
    "ascend_packages": {"Ascend-cann-toolkit_8.2.RC1_linux-x86_64.run": "0" * 64},
    "ascend_package_url": "http://mirror.example/ascend",
}


def validate(role, **values):
    return role_specs.validate(role, GOOD_INVENTORY, **values)


@pytest.mark.parametrize("role", NAMES)
def test_the_defaults_with_a_good_inventory_are_valid(role):
    assert validate(role) == []


@pytest.mark.parametrize(
    ("role", "name", "value"),
    [
        ("ascend_driver", "ascend_driver_allow_reboot", "sometimes"),
        ("ascend_driver", "ascend_packages", ["a.run"]),
        ("ascend_driver", "ascend_driver_reboot_timeout_s", "soon"),
        ("cann", "cann_source", "pip"),
        ("cann", "cann_python_packages", {"numpy": "1.26.4"}),
        ("cann", "cann_nnal", "maybe"),
    ],
)
def test_bad_values_are_rejected_naming_the_variable(role, name, value):
    errors = validate(role, **{name: value})
    assert errors and name in " ".join(errors)


@pytest.mark.parametrize(
    ("role", "variable"), [("ascend_driver", "ascend_driver_version"), ("cann", "cann_version")]
)
def test_the_bom_version_is_required(role, variable):
    errors = ArgumentSpecValidator(spec(role)).validate(defaults(role)).errors
    assert variable in " ".join(str(e) for e in errors)


def test_the_shared_package_variables_agree():
    driver, cann = spec("ascend_driver"), spec("cann")
    for name in ("ascend_packages", "ascend_package_url", "ascend_package_dir", "ascend_package_cache_dir"):
        assert driver[name]["type"] == cann[name]["type"] and driver[name]["default"] == cann[name]["default"]


def test_the_default_python_packages_are_pinned():
    assert all("==" in requirement for requirement in defaults("cann")["cann_python_packages"])
