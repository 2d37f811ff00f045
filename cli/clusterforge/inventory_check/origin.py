"""Where an inventory value was written: file and line.

ansible-core 2.19 tags every value it loads with its origin (file, line).
The tag class is not public API, so it is used only here and only for
locations in messages: without it (another ansible-core) problems still name
the host and variable, just not the line.
"""

from __future__ import annotations

from typing import Any

try:  # ansible-core >= 2.19
    from ansible._internal._datatag._tags import Origin as _Origin
except ImportError:  # pragma: no cover - older/newer ansible-core without the tag
    _Origin = None


def origin_of(value: Any) -> tuple[str | None, int | None]:
    """(path, line) of a loaded value or of an Origin tag itself; (None, None) when unknown."""
    if _Origin is None or value is None:
        return None, None
    tag = value if isinstance(value, _Origin) else _Origin.get_tag(value)
    if tag is None or not tag.path:
        return None, None
    return str(tag.path), tag.line_num
