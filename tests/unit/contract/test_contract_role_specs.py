"""Every role's meta/argument_specs.yml: each option typed and described, every default of
defaults/main.yml specified, and a default the spec states equal to the one the role has.
(A spec may leave out a default the role computes, such as "{{ cuda_version }}", or a
large one documented in defaults/main.yml, such as base_sysctls.)"""

from __future__ import annotations

import pytest
from role_specs import defaults, role_names, spec

ROLES = role_names()


def test_every_role_has_argument_specs():
    assert {"base", "nvidia_driver", "ascend_driver", "cann", "hccn", "ascend_runtime", "ppu"} <= set(ROLES)


@pytest.mark.parametrize("role", ROLES)
def test_options_are_typed_and_described(role):
    for name, option in spec(role).items():
        assert option.get("type"), f"{role}: {name} has no type"
        assert option.get("description"), f"{role}: {name} has no description"


@pytest.mark.parametrize("role", ROLES)
def test_defaults_and_specs_agree(role):
    options, values = spec(role), defaults(role)
    assert set(values) <= set(options), (
        f"{role}: defaults without a spec: {sorted(set(values) - set(options))}"
    )
    for name, option in options.items():
        if "default" in option:
            assert name in values, f"{role}: the spec's default of {name} is not in defaults/main.yml"
            assert values[name] == option["default"], f"{role}: {name}"
