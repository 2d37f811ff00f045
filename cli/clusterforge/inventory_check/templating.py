"""Templating inventory values safely, with a cache shared by all hosts.

Safety: an inventory is input from other people (a pull request), so checking
it must never run what it says. A template is rendered only when
`unsafe_reason` finds nothing in it, nor in the templates of the variables it
reads (followed through), that could reach outside the values themselves:
lookups (`lookup`, `query`, `q`), `hostvars`/`vars` (other hosts' templates),
includes, filters and tests outside an allowlist of pure ones (no file,
environment or randomness), huge numbers or `**` (memory bombs). Anything
else stays unresolved: "templated, checked at run time". `refused_lookups()`
also blocks every lookup inside Ansible while the inventory is loaded and
checked (inventory plugins such as `constructed` template too).

Caching:
Group-wide values such as `nvidia_fabricmanager_version: "{{ nvidia_driver_version }}"`
are the same template on every host; compiling it once per host costs more
than all the checks on a 2000-host fleet. A result is reused only for a host
whose variables referenced by the template (followed through nested
templates) have the same raw values, so host-specific templates
(`{{ inventory_hostname }}`) are still rendered per host.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from cfcore.inputs import is_template

# Variables too big or too dynamic to compare: templates using them are rendered every time.
_UNCACHEABLE = frozenset({"hostvars", "vars", "groups", "lookup", "query", "q"})
_MISSING = "\0missing"


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
    """Every string inside a value, dict keys included (Ansible templates those too)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(key)
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
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


# Pure filters and tests (Jinja's and ansible.builtin's): no files, environment, randomness or explosions.
SAFE_FILTERS = frozenset(
    [
        "abs",
        "attr",
        "b64decode",
        "b64encode",
        "basename",
        "batch",
        "bool",
        "capitalize",
        "center",
        "checksum",
        "combine",
        "comment",
        "count",
        "d",
        "default",
        "dict2items",
        "dictsort",
        "difference",
        "dirname",
        "e",
        "escape",
        "extract",
        "first",
        "flatten",
        "float",
        "forceescape",
        "format",
        "from_json",
        "groupby",
        "hash",
        "human_readable",
        "human_to_bytes",
        "indent",
        "int",
        "intersect",
        "items",
        "items2dict",
        "join",
        "last",
        "length",
        "list",
        "log",
        "lower",
        "map",
        "mandatory",
        "max",
        "md5",
        "min",
        "quote",
        "regex_escape",
        "regex_findall",
        "regex_replace",
        "regex_search",
        "reject",
        "rejectattr",
        "replace",
        "reverse",
        "root",
        "round",
        "safe",
        "select",
        "selectattr",
        "sha1",
        "slice",
        "sort",
        "split",
        "splitext",
        "string",
        "striptags",
        "strftime",
        "subelements",
        "sum",
        "symmetric_difference",
        "ternary",
        "title",
        "to_datetime",
        "to_json",
        "to_nice_json",
        "to_nice_yaml",
        "to_uuid",
        "to_yaml",
        "tojson",
        "trim",
        "truncate",
        "type_debug",
        "union",
        "unique",
        "upper",
        "urlencode",
        "urlsplit",
        "wordcount",
        "wordwrap",
        "zip",
        "zip_longest",
    ]
)
SAFE_TESTS = frozenset(
    [
        "abs",
        "all",
        "any",
        "boolean",
        "callable",
        "changed",
        "contains",
        "defined",
        "divisibleby",
        "eq",
        "equalto",
        "escaped",
        "even",
        "failed",
        "falsy",
        "false",
        "filter",
        "float",
        "ge",
        "greaterthan",
        "gt",
        "in",
        "integer",
        "iterable",
        "le",
        "lessthan",
        "lower",
        "lt",
        "mapping",
        "match",
        "nan",
        "ne",
        "none",
        "number",
        "odd",
        "regex",
        "sameas",
        "search",
        "sequence",
        "skipped",
        "string",
        "subset",
        "succeeded",
        "success",
        "superset",
        "test",
        "true",
        "truthy",
        "undefined",
        "upper",
        "vault_encrypted",
        "version",
        "version_compare",
    ]
)
_LOOKUPS = frozenset({"lookup", "query", "q"})
_DYNAMIC = frozenset({"hostvars", "vars"})  # reach templates of other hosts, which are not followed here
_HIGHER_ORDER = {
    "map": 0,
    "select": 0,
    "reject": 0,
    "selectattr": 1,
    "rejectattr": 1,
}  # arg naming a filter/test
_LARGEST_NUMBER = 1_000_000
_BUILTIN_PREFIX = "ansible.builtin."
_DELIMITER_OVERRIDE = "#jinja2:"


@dataclass(frozen=True)
class Verdict:
    """What a template string would do: why it is unsafe, its syntax error, the variables it reads."""

    reason: str | None = None
    syntax_error: str | None = None
    names: frozenset[str] = frozenset()


def unsafe_reason(raw: Any, variables: dict[str, Any], too_large: Callable[[Any], bool]) -> Verdict:
    """The first reason not to render `raw` (following the variables it reads); empty Verdict when safe."""
    seen: set[str] = set()
    pending = [raw]
    while pending:
        for text in _strings(pending.pop()):
            if text.startswith(_DELIMITER_OVERRIDE):
                return Verdict(reason="changes the template delimiters (#jinja2:)")
            if not is_template(text):
                continue
            verdict = template_verdict(text)
            if verdict.reason or verdict.syntax_error:
                return verdict
            for name in sorted(verdict.names - seen):
                seen.add(name)
                if name in variables:
                    if too_large(variables[name]):
                        return Verdict(reason=f"reads {name}, whose value is too large to expand")
                    pending.append(variables[name])
    return Verdict()


@lru_cache(maxsize=4096)
def template_verdict(text: str) -> Verdict:
    from jinja2 import Environment, TemplateSyntaxError, meta, nodes

    try:
        tree = Environment().parse(text)
    except TemplateSyntaxError as err:
        return Verdict(syntax_error=f"{err.message} (line {err.lineno})")
    for node in tree.find_all(nodes.Node):
        reason = _node_reason(node, nodes)
        if reason:
            return Verdict(reason=reason)
    return Verdict(names=frozenset(meta.find_undeclared_variables(tree)))


def _node_reason(node: Any, nodes: Any) -> str | None:
    if isinstance(node, nodes.Name) and node.name in _LOOKUPS:
        return f"calls {node.name}(), which could run commands or read files"
    if isinstance(node, nodes.Name) and node.name in _DYNAMIC:
        return f"reads {node.name}, resolved only at run time"
    if isinstance(node, (nodes.Include, nodes.Import, nodes.FromImport, nodes.Extends)):
        return "includes another template file"
    if isinstance(node, nodes.Filter):
        return _plugin_reason("filter", node, SAFE_FILTERS, nodes)
    if isinstance(node, nodes.Test):
        return _plugin_reason("test", node, SAFE_TESTS, nodes)
    if isinstance(node, (nodes.Getattr, nodes.Getitem)):
        key = node.attr if isinstance(node, nodes.Getattr) else getattr(node.arg, "value", None)
        if isinstance(key, str) and key.startswith("_"):
            return f"reads the private attribute {key}"
    if isinstance(node, nodes.Pow):
        return "uses ** (can build huge values)"
    if isinstance(node, nodes.Const):
        value = node.value
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > _LARGEST_NUMBER:
            return f"uses the number {value} (can build huge values)"
        if isinstance(value, str) and is_template(value):  # Ansible renders templates inside strings too
            inner = template_verdict(value)
            return inner.reason or inner.syntax_error
    return None


def _plugin_reason(kind: str, node: Any, allowed: frozenset[str], nodes: Any) -> str | None:
    name = node.name[len(_BUILTIN_PREFIX) :] if node.name.startswith(_BUILTIN_PREFIX) else node.name
    if name not in allowed:
        return f"uses the {kind} {node.name}, which is not known to be free of side effects"
    position = _HIGHER_ORDER.get(name)
    if position is None or (name == "map" and any(k.key == "attribute" for k in node.kwargs)):
        return None
    if len(node.args) <= position:
        return None
    named = node.args[position]
    inner_allowed = SAFE_FILTERS if name == "map" else SAFE_TESTS
    if not isinstance(named, nodes.Const) or not isinstance(named.value, str):
        return f"{name} names its {('filter' if name == 'map' else 'test')} through an expression"
    if named.value.removeprefix(_BUILTIN_PREFIX) not in inner_allowed:
        return f"{name} applies {named.value}, which is not known to be free of side effects"
    return None


class LookupRefused(Exception):
    """Raised inside Ansible instead of loading a lookup plugin while an inventory is checked."""


@contextmanager
def refused_lookups() -> Iterator[None]:
    """While active, no lookup plugin can be loaded in this process (so none runs)."""
    from ansible.plugins.loader import lookup_loader

    def refuse(name: str, *args: Any, **kwargs: Any) -> Any:
        raise LookupRefused(f"lookup {name!r} refused: checking an inventory never runs lookups")

    shadowed = "get" in vars(lookup_loader)
    saved = vars(lookup_loader).get("get")
    lookup_loader.get = refuse
    try:
        yield
    finally:
        if shadowed:
            lookup_loader.get = saved
        else:
            del lookup_loader.get
