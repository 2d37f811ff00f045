"""meta/argument_specs.yml of the NVIDIA roles: typed, described, consistent with the defaults."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

ROLES = Path(__file__).resolve().parents[3] / "roles"
NAMES = ["nvidia_cuda_repo", "nvidia_driver", "nvidia_fabricmanager", "gpudirect"]
# Inventory variables the roles read without a default of their own.
INVENTORY_ONLY = {
    "nvidia_cuda_repo_key_sha256",
    "nvidia_driver_version",
    "nvidia_fabricmanager_version",
    "node_sku",
    "clusterforge_sku_catalog",
}
GOOD_INVENTORY = {
    "nvidia_cuda_repo_key_sha256": "sha256:" + "0" * 64,
    "nvidia_driver_version": "570.133.20",
    "node_sku": "hgx-h100-8gpu",
}


def spec(role):
    return yaml.safe_load((ROLES / role / "meta" / "argument_specs.yml").read_text())["argument_specs"][
        "main"
    ]["options"]


def defaults(role):
    return yaml.safe_load((ROLES / role / "defaults" / "main.yml").read_text()) or {}


def validate(role, **values):
    options = spec(role)
    known = {k: v for k, v in {**GOOD_INVENTORY, **defaults(role), **values}.items() if k in options}
    return [str(error) for error in ArgumentSpecValidator(options).validate(known).errors]


@pytest.mark.parametrize("role", NAMES)
def test_every_default_has_a_spec_and_every_spec_a_default(role):
    assert set(spec(role)) - INVENTORY_ONLY == set(defaults(role))


@pytest.mark.parametrize("role", NAMES)
def test_options_are_typed_described_and_defaults_match(role):
    for name, option in spec(role).items():
        assert option.get("type") and option.get("description"), name
        if "default" in option:
            assert option["default"] == defaults(role)[name], name


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
