"""meta/argument_specs.yml of the NVIDIA roles: typed, described, consistent with the defaults."""

from __future__ import annotations

import pytest
import role_specs
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from role_specs import defaults, spec

NAMES = ["nvidia_cuda_repo", "nvidia_driver", "nvidia_fabricmanager", "gpudirect"]
GOOD_INVENTORY = {
    "nvidia_cuda_repo_key_sha256": "sha256:" + "0" * 64,
    "nvidia_driver_version": "570.133.20",
    "node_sku": "hgx-h100-8gpu",
}


def validate(role, **values):
    return role_specs.validate(role, GOOD_INVENTORY, **values)


@pytest.mark.parametrize("role", NAMES)
def test_the_defaults_with_a_good_inventory_are_valid(role):
    assert validate(role) == []


@pytest.mark.parametrize(
    ("role", "name", "value"),
    [
        ("nvidia_driver", "nvidia_driver_install_method", "snap"),
        ("nvidia_driver", "nvidia_kernel_module_flavour", "closed"),
        ("nvidia_driver", "nvidia_driver_allow_reboot", "sometimes"),
        ("nvidia_cuda_repo", "nvidia_cuda_repo_arch", "arm64"),
        ("nvidia_fabricmanager", "nvidia_fabricmanager_settle_timeout_s", "soon"),
        ("gpudirect", "gpudirect_rebuild_after_ofed", "maybe"),
    ],
)
def test_bad_values_are_rejected_naming_the_variable(role, name, value):
    errors = validate(role, **{name: value})
    assert errors and name in " ".join(errors)


def test_the_driver_version_is_required():
    options = spec("nvidia_driver")
    errors = ArgumentSpecValidator(options).validate(defaults("nvidia_driver")).errors
    assert "nvidia_driver_version" in " ".join(str(e) for e in errors)
