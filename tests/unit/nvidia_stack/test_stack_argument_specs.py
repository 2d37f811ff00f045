"""meta/argument_specs.yml of the NVIDIA stack roles: complete, consistent with the defaults, and
rejecting bad variables by name."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

REPO = Path(__file__).resolve().parents[3]
ROLES = ["cuda_toolkit", "nccl", "tensorrt", "dcgm", "nvidia_container_toolkit"]
# Inventory (BOM) variables and facts the roles read without a default of their own.
INVENTORY_ONLY = {
    "cuda_toolkit": {"cuda_version"},
    "nccl": {"cuda_version", "nccl_version"},
    "tensorrt": {"cuda_version"},
    "dcgm": {"dcgm_version", "nvidia_driver_version", "nvidia_driver_cuda_major"},
    "nvidia_container_toolkit": {"nvidia_container_toolkit_repo_key_sha256"},
}
# A valid value for each required inventory variable.
BOM = {
    "cuda_version": "12.8",
    "nccl_version": "2.26.2",
    "dcgm_version": "4.2.3",
    "nvidia_container_toolkit_repo_key_sha256": "a" * 64,
}


def load(role: str):
    defaults = yaml.safe_load((REPO / "roles" / role / "defaults" / "main.yml").read_text()) or {}
    spec = yaml.safe_load((REPO / "roles" / role / "meta" / "argument_specs.yml").read_text())
    return defaults, spec["argument_specs"]["main"]["options"]


def validate(role: str, **overrides):
    defaults, spec = load(role)
    required = {name: BOM[name] for name, option in spec.items() if option.get("required")}
    result = ArgumentSpecValidator(spec).validate({**defaults, **required, **overrides})
    return [str(error) for error in result.errors]


@pytest.mark.parametrize("role", ROLES)
def test_every_default_has_a_spec_and_every_spec_a_default(role):
    defaults, spec = load(role)
    assert set(spec) - INVENTORY_ONLY[role] == set(defaults)


@pytest.mark.parametrize("role", ROLES)
def test_documented_defaults_match_defaults_main(role):
    defaults, spec = load(role)
    for name, option in spec.items():
        if "default" in option:
            assert option["default"] == defaults[name], name
        elif name in defaults:  # templated defaults are described, not repeated
            assert "{{" in str(defaults[name]), name


@pytest.mark.parametrize("role", ROLES)
def test_every_option_is_typed_and_described(role):
    _, spec = load(role)
    for name, option in spec.items():
        assert option.get("type") and option.get("description"), name


@pytest.mark.parametrize("role", ROLES)
def test_the_defaults_are_valid(role):
    assert validate(role) == []


@pytest.mark.parametrize(
    ("role", "name", "value"),
    [
        ("cuda_toolkit", "cuda_toolkit_select_default", "maybe"),
        ("nccl", "nccl_tests_build", "sometimes"),
        ("nccl", "nccl_tests_make_jobs", "many"),
        ("tensorrt", "tensorrt_install", "perhaps"),
        ("dcgm", "dcgm_extra_cuda_majors", ["twelve"]),
        ("dcgm", "nvidia_driver_cuda_major", "thirteen"),
        ("nvidia_container_toolkit", "nvidia_container_toolkit_runtimes", ["podman"]),
        ("nvidia_container_toolkit", "nvidia_container_toolkit_cdi", "auto"),
    ],
)
def test_bad_values_are_rejected_naming_the_variable(role, name, value):
    errors = validate(role, **{name: value})
    assert errors and name in errors[0]


@pytest.mark.parametrize(
    ("role", "name"),
    [
        ("cuda_toolkit", "cuda_version"),
        ("nccl", "nccl_version"),
        ("dcgm", "dcgm_version"),
    ],
)
def test_required_variables_are_required(role, name):
    defaults, spec = load(role)
    required = {n: BOM[n] for n, option in spec.items() if option.get("required") and n != name}
    errors = [str(e) for e in ArgumentSpecValidator(spec).validate({**defaults, **required}).errors]
    assert errors and name in errors[0]
