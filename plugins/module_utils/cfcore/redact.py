"""Secrets kept out of what the CLI writes and prints: one rule for which values are secret, how
a secret is recorded (a digest, never the value) and how a URL's credentials are shown.

docs/design.md, "Secrets in records and output". Stdlib only.
"""

from __future__ import annotations

import hashlib
import re
from urllib.parse import urlsplit, urlunsplit

# A variable whose name says it holds a secret: password, passwd, passphrase, secret, token, key
# (api_key, munge_key, access_key...), credential(s). A harmless variable caught by it
# (`monkey_count`) is only recorded as a digest, which costs nothing but its display.
SECRET_NAME = re.compile(r"pass(?:word|wd|phrase)|secret|token|key|credential", re.IGNORECASE)
REDACTED_PREFIX = "<redacted sha256:"
_REDACTED = re.compile(r"<redacted sha256:[0-9a-f]{64}>")
MASK = "***"


def is_secret_name(name, also: frozenset | set | tuple = ()) -> bool:
    """True for a variable named like a secret, or one of `also` (e.g. the roles' no_log options)."""
    return isinstance(name, str) and (name in also or SECRET_NAME.search(name) is not None)


def redacted(value) -> str:
    """What a record holds instead of a secret: its sha256 over the value as JSON-ish text, so a
    change of the value shows, and the value itself is never written."""
    text = value if isinstance(value, str) else repr(value)
    return f"{REDACTED_PREFIX}{hashlib.sha256(text.encode('utf-8', 'replace')).hexdigest()}>"


def is_redacted(value) -> bool:
    return isinstance(value, str) and _REDACTED.fullmatch(value) is not None


def redact_vars(values, also: frozenset | set | tuple = ()):
    """`values` (a mapping of variables, nested mappings and lists) with every value whose key is
    a secret's name replaced by `redacted(value)`; URLs with credentials masked too."""
    if isinstance(values, dict):
        return {
            key: redacted(value) if is_secret_name(key, also) else redact_vars(value, also)
            for key, value in values.items()
        }
    if isinstance(values, list):
        return [redact_vars(value, also) for value in values]
    if isinstance(values, str) and "@" in values and "://" in values:
        masked = mask_url(values)
        return values if masked == values else redacted(values)
    return values


def mask_url(url) -> str:
    """`url` for a message: the password of `user:password@host` replaced by *** (a bare
    `token@host` too); anything that is not such a URL comes back as it is."""
    text = str(url)
    try:
        parts = urlsplit(text)
    except ValueError:
        return text
    if "@" not in parts.netloc:
        return text
    userinfo, _, hostport = parts.netloc.rpartition("@")
    user, sep, _password = userinfo.partition(":")
    shown = f"{user}:{MASK}" if sep else MASK
    return urlunsplit((parts.scheme, f"{shown}@{hostport}", parts.path, parts.query, parts.fragment))
