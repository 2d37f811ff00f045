"""Shared rules for input values: what counts as a Jinja template, what a plain value is, and the
input error type.

Stdlib only: used by the node-side module, the controller-side filters and the CLI.
"""

from __future__ import annotations

import re

# A version as the upgrade and the nodes name it (570.133.20, 24.1.rc2, 8.0.RC3.alpha001,
# 2.6.0+cu128): what a version read from a node, a ledger or the command line must match before it
# reaches a playbook (docs/design.md, "Data that reaches Ansible").
VERSION_FORM = re.compile(r"[0-9A-Za-z][0-9A-Za-z.+~_-]{0,63}")


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


def plain_problem(value, form) -> str | None:
    """None when `value` is a plain value: a string that `form` (a compiled pattern) matches whole,
    with no template syntax and no line break or other control character; else what is wrong, as a
    phrase for the caller's message ("holds template syntax").

    The one rule for data that came from a file, a node, a ledger or a bundle and is about to reach
    a playbook as an extra variable (ansible-playbook templates extra variables): only a value of a
    known, narrow form goes there (docs/design.md, "Data that reaches Ansible").
    """
    if not isinstance(value, str):
        return f"is a {type(value).__name__}, not a string"
    if is_template(value):
        return "holds template syntax ({{, {% or {#)"
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        return "holds a line break or another control character"
    if not form.fullmatch(value):
        return f"is not of the form {form.pattern}"
    return None


def is_plain(value, form) -> bool:
    """`plain_problem(value, form)` is None."""
    return plain_problem(value, form) is None
