"""Inventory values before any check walks them: bounded in size, and vaulted parts decrypted.

Size: YAML aliases let a few lines stand for billions of values (the "billion
laughs"): `a: &a [x, x, ...]`, `b: &b [*a, *a, ...]`, ... Loading is cheap
(aliases share one object), but anything that walks the value (templating,
JSON, comparisons) runs forever. `expanded_size` counts the values a walk
would visit, in time proportional to the distinct objects, so such a value is
refused before anything walks it.

Vault: inline `!vault` values load as Ansible's EncryptedString. `Vault.reveal`
returns the value with them decrypted (one decryption per ciphertext for the
whole fleet), or raises Encrypted when no password (or a wrong one) was given;
`Encrypted.wrong_password` tells the two apart (a wrong password is an error,
as for a vaulted file; none given leaves the value unchecked).
"""

from __future__ import annotations

from typing import Any

# Values (scalars, lists, mappings) one variable may expand to; the largest real variable, a
# 16-entry hccn_devices plan or a site's SKU catalog, has a few hundred.
MAX_VALUES = 100_000


def expanded_size(value: Any, limit: int = MAX_VALUES) -> int:
    """How many values a full walk of `value` visits (aliases counted each time), capped at limit + 1."""
    memo: dict[int, int] = {}

    def size(node: Any, depth: int) -> int:
        if isinstance(node, dict):
            children = [*node.keys(), *node.values()]
        elif isinstance(node, (list, tuple)):
            children = list(node)
        else:
            return 1
        key = id(node)
        if key in memo:
            return memo[key]
        if depth > 100:  # deeper than any inventory value: as bad as too big
            return limit + 1
        memo[key] = limit + 1  # a cycle (not possible from YAML, but from Python) counts as too big
        total = 1
        for child in children:
            total += size(child, depth + 1)
            if total > limit:
                break
        memo[key] = min(total, limit + 1)
        return memo[key]

    return size(value, 0)


def too_large(value: Any, limit: int = MAX_VALUES) -> bool:
    return isinstance(value, (dict, list, tuple)) and expanded_size(value, limit) > limit


class Encrypted(Exception):
    """A vaulted value that cannot be decrypted (no vault password, or a wrong one)."""

    def __init__(self, message: str, wrong_password: bool = False):
        super().__init__(message)
        self.wrong_password = wrong_password


class Vault:
    """Decrypts the EncryptedString values of an inventory with the secrets it was loaded with."""

    def __init__(self, secrets: list | None = None):
        self._secrets = secrets or []
        self._plaintexts: dict[str, Any] = {}

    @property
    def has_password(self) -> bool:
        """A vault password was given (so a value it cannot decrypt has the wrong one)."""
        return bool(self._secrets)

    def reveal(self, value: Any) -> Any:
        """`value` with every vaulted part decrypted (the same object when there is none)."""
        if isinstance(value, dict):
            items = [(self.reveal(k), self.reveal(v)) for k, v in value.items()]
            changed = any(
                a is not k or b is not v for (a, b), (k, v) in zip(items, value.items(), strict=True)
            )
            return dict(items) if changed else value
        if isinstance(value, list):
            items = [self.reveal(v) for v in value]
            return items if any(a is not b for a, b in zip(items, value, strict=True)) else value
        ciphertext = ciphertext_of(value)
        return value if ciphertext is None else self._decrypt(ciphertext, value)

    def _decrypt(self, ciphertext: str, value: Any) -> Any:
        if ciphertext not in self._plaintexts:
            from ansible.errors import AnsibleError
            from ansible.parsing.vault import VaultLib

            try:
                plain = VaultLib(secrets=self._secrets).decrypt(ciphertext)
            except AnsibleError as err:
                message = str(getattr(err, "message", None) or err)
                self._plaintexts[ciphertext] = Encrypted(message, wrong_password=self.has_password)
            else:
                self._plaintexts[ciphertext] = plain.decode("utf-8", "replace")
        plain = self._plaintexts[ciphertext]
        if isinstance(plain, Encrypted):
            raise Encrypted(*plain.args, wrong_password=plain.wrong_password)
        from ansible.module_utils._internal._datatag import AnsibleTagHelper

        return AnsibleTagHelper.tag_copy(value, plain)  # keeps the origin (file, line) for messages


def ciphertext_of(value: Any) -> str | None:
    """The vault ciphertext when `value` is an inline `!vault` value, else None."""
    if type(value).__name__ != "EncryptedString":  # cheap test first: most values are plain
        return None
    from ansible.parsing.vault import VaultHelper

    return VaultHelper.get_ciphertext(value, with_tags=False)


def is_encrypted(value: Any) -> bool:
    """True when `value` (or anything inside it) is a vaulted value that was not decrypted."""
    if isinstance(value, dict):
        return any(is_encrypted(v) for v in value.values())
    if isinstance(value, list):
        return any(is_encrypted(v) for v in value)
    return ciphertext_of(value) is not None
