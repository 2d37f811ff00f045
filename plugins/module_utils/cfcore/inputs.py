"""Shared rules for input values: what counts as a Jinja template, and the input error type.

Stdlib only: used by the node-side module, the controller-side filters and the CLI.
"""

from __future__ import annotations


class InputError(ValueError):
    """Bad input (inventory variables, SKU catalog, BOM): `message` says where, `fix` how to correct it."""

    def __init__(self, message: str, fix: str | None = None):
        super().__init__(message if not fix else f"{message} (fix: {fix})")
        self.message = message
        self.fix = fix


class SchemaError(InputError):
    """Data (built-in, or merged with a site's overrides) that breaks its schema.

    `issues` lists (key path, what is wrong); subclasses name the data (WHAT) and the section of
    docs/design.md that holds its schema (SECTION).
    """

    WHAT = "data"
    SECTION = ""

    def __init__(self, issues: list, origin: str):
        self.issues = issues
        lines = "; ".join(f"{path}: {what}" for path, what in issues)
        super().__init__(
            f"invalid {self.WHAT} ({origin}): {lines}",
            f"correct these keys in {origin} (schema: docs/design.md, '{self.SECTION}')",
        )


def is_template(value) -> bool:
    """True when a value (or anything inside it) holds Jinja syntax Ansible would still resolve."""
    if isinstance(value, str):
        return "{{" in value or "{%" in value or "{#" in value
    if isinstance(value, dict):
        return any(is_template(k) or is_template(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(is_template(v) for v in value)
    return False
