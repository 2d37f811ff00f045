"""Templating inventory values, with a cache shared by all hosts.

Group-wide values such as `nvidia_fabricmanager_version: "{{ nvidia_driver_version }}"`
are the same template on every host; compiling it once per host costs more
than all the checks on a 2000-host fleet. A result is reused only for a host
whose variables referenced by the template (followed through nested
templates) have the same raw values, so host-specific templates
(`{{ inventory_hostname }}`) are still rendered per host.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import lru_cache
from typing import Any

# Variables too big or too dynamic to compare: templates using them are rendered every time.
_UNCACHEABLE = frozenset({"hostvars", "vars", "groups", "lookup", "query", "q"})
_MISSING = "\0missing"


def has_template(value: Any) -> bool:
    if isinstance(value, str):
        return "{{" in value or "{%" in value
    if isinstance(value, dict):
        return any(has_template(v) for v in value.values())
    if isinstance(value, list):
        return any(has_template(v) for v in value)
    return False


class TemplateCache:
    def __init__(self) -> None:
        self._results: dict[tuple[str, ...], tuple[bool, Any]] = {}

    def render(self, raw: Any, variables: dict[str, Any], render: Callable[[Any], Any]) -> Any:
        """render(raw), or the result of an earlier call with the same template and inputs.

        Exceptions raised by `render` propagate every time (they are cached too).
        """
        key = _key(raw, variables)
        if key is None:
            return render(raw)
        if key not in self._results:
            try:
                self._results[key] = (True, render(raw))
            except Exception as err:
                self._results[key] = (False, err)
        ok, result = self._results[key]
        if not ok:
            raise result
        return result


def _key(raw: Any, variables: dict[str, Any]) -> tuple[str, ...] | None:
    names: set[str] = set()
    pending = [raw]
    while pending:
        for text in _strings(pending.pop()):
            if "{{" not in text and "{%" not in text:
                continue
            referenced = _referenced(text)
            if referenced is None or referenced & _UNCACHEABLE:
                return None
            for name in referenced - names:
                names.add(name)
                if name in variables:
                    pending.append(variables[name])
    try:
        inputs = [json.dumps(variables.get(name, _MISSING), sort_keys=True) for name in sorted(names)]
        return (json.dumps(raw, sort_keys=True), *sorted(names), *inputs)
    except (TypeError, ValueError):  # a value JSON cannot express: do not cache
        return None


def _strings(value: Any):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


@lru_cache(maxsize=4096)
def _referenced(text: str) -> frozenset[str] | None:
    """Variable names a template reads; None when Jinja cannot parse it (the renderer reports why)."""
    from jinja2 import Environment, TemplateSyntaxError, meta

    try:
        return frozenset(meta.find_undeclared_variables(Environment().parse(text)))
    except TemplateSyntaxError:
        return None
