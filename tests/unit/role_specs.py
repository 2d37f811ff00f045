"""Roles' meta/argument_specs.yml as the unit tests read them (`import role_specs`).

Ansible checks a role's variables against its argument specs when the role starts;
these helpers run the same validator (ArgumentSpecValidator) on a role's defaults
plus an inventory, so a test shows which values a role refuses before it changes
anything. tests/unit/contract/test_role_argument_specs.py holds the rules every
role's specs follow.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

ROLES = Path(__file__).resolve().parents[2] / "roles"


def role_names() -> list[str]:
    return sorted(path.parent.parent.name for path in ROLES.glob("*/meta/argument_specs.yml"))


def spec(role: str) -> dict:
    """The options of the role's main entry point."""
    document = yaml.safe_load((ROLES / role / "meta" / "argument_specs.yml").read_text())
    return document["argument_specs"]["main"]["options"]


def defaults(role: str) -> dict:
    return yaml.safe_load((ROLES / role / "defaults" / "main.yml").read_text()) or {}


def validate(role: str, inventory: dict, **values) -> list[str]:
    """The validator's errors for the role's defaults, then `inventory`, then `values` (spec options only)."""
    options = spec(role)
    merged = {**defaults(role), **inventory, **values}
    known = {name: value for name, value in merged.items() if name in options}
    return [str(error) for error in ArgumentSpecValidator(options).validate(known).errors]
