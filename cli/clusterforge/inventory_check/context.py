"""What every check needs: the hosts with their (templated) variables, the SKU catalog, the rules."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from clusterforge.catalog import (
    OVERRIDE_VARIABLE,
    CatalogError,
    load_catalog,
    unknown_sku_fix,
    unknown_sku_message,
)
from clusterforge.inventory_check.ansible_load import HostEntry, LoadedInventory
from clusterforge.inventory_check.origin import origin_of
from clusterforge.inventory_check.problems import ERROR, Problem
from clusterforge.inventory_check.rules import BomRules
from clusterforge.inventory_check.templating import TemplateCache, has_template

UNRESOLVED = object()  # a value whose template failed (the failure is reported once)

_NATIVE_TYPES = (bool, int, float, str, list, dict)


def kind(value: Any) -> str:
    """The plain type name of a value (Ansible wraps loaded values in tagged subclasses)."""
    if value is None:
        return "null"
    return next((t.__name__ for t in _NATIVE_TYPES if isinstance(value, t)), type(value).__name__)


class HostView:
    """One host's variables as checks read them: templated, with where each was written."""

    def __init__(
        self,
        entry: HostEntry,
        loader: Any,
        host_vars_keys: set[str] | frozenset[str] = frozenset(),
        templates: TemplateCache | None = None,
    ):
        self.entry = entry
        self._templates = templates or TemplateCache()
        # Variables set for this host alone (inventory entry or host_vars/), not inherited from groups.
        self.own_vars = frozenset(entry.own_vars) | frozenset(host_vars_keys)
        self.name = entry.name
        self.groups = entry.groups
        self._loader = loader
        self._templar: Any = None
        self._values: dict[str, Any] = {}
        self.template_problems: list[Problem] = []

    def raw(self, variable: str, default: Any = None) -> Any:
        return self.entry.vars.get(variable, default)

    def is_set(self, variable: str) -> bool:
        value = self.entry.vars.get(variable)
        return value is not None and value != "" and value != [] and value != {}

    def value(self, variable: str, default: Any = None) -> Any:
        """The templated value, `default` when unset, UNRESOLVED when templating failed."""
        if variable not in self.entry.vars:
            return default
        if variable not in self._values:
            self._values[variable] = self._template(variable, self.entry.vars[variable])
        return self._values[variable]

    def where(self, variable: str | None = None, value: Any = None) -> tuple[str | None, int | None]:
        """Where `value` (or the variable, or else the host itself) was written."""
        for candidate in (value, self.entry.vars.get(variable) if variable else None):
            path, line = origin_of(candidate)
            if path:
                return path, line
        return self.entry.file, self.entry.line

    def problem(
        self,
        rule: str,
        variable: str | None,
        message: str,
        fix: str,
        severity: str = ERROR,
        value: Any = None,
        at_host: bool = False,
        of_value: bool = False,
    ) -> Problem:
        """A problem of this host, located where the variable (or `value`, or the host) was written.

        of_value: the value itself is wrong, whichever host reads it; unless the
        host set it alone, the problem is reported once, at the value's file.
        """
        base = variable.split("[")[0].split(".")[0] if variable else None
        path, line = (self.entry.file, self.entry.line) if at_host else self.where(base, value)
        host = None if of_value and path and base not in self.own_vars else self.name
        return Problem(
            rule=rule,
            message=message,
            fix=fix,
            severity=severity,
            file=path,
            line=line,
            host=host,
            variable=variable,
        )

    def _template(self, variable: str, raw: Any) -> Any:
        if not has_template(raw):
            return raw
        from ansible.errors import AnsibleError

        try:
            return self._templates.render(raw, self.entry.vars, self._render)
        except AnsibleError as err:
            message = str(getattr(err, "message", None) or err).strip().splitlines()[0]
            self.template_problems.append(
                self.problem(
                    "vars.template",
                    variable,
                    f"cannot template the value: {message}",
                    "define the variables the template uses, or write the value literally",
                )
            )
            return UNRESOLVED

    def _render(self, raw: Any) -> Any:
        from ansible.template import Templar

        if self._templar is None:
            self._templar = Templar(loader=self._loader, variables=self.entry.vars)
        return self._templar.template(raw)


@dataclass
class Context:
    inventory: LoadedInventory
    views: list[HostView]
    rules: BomRules
    _catalogs: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    catalog_problems: list[Problem] = field(default_factory=list)

    def group(self, name: str) -> frozenset[str]:
        return self.inventory.groups.get(name, frozenset())

    def catalog(self, view: HostView) -> dict[str, Any] | None:
        """The SKU catalog with this host's overrides; None when the overrides are invalid (reported once)."""
        overrides = view.value(OVERRIDE_VARIABLE)
        if overrides is UNRESOLVED:
            return None
        key = json.dumps(overrides, sort_keys=True, default=str)
        if key not in self._catalogs:
            try:
                self._catalogs[key] = load_catalog(overrides or None)
            except CatalogError as err:
                self._catalogs[key] = None
                self.catalog_problems += _catalog_problems(view, overrides, err)
        return self._catalogs[key]

    def sku(self, view: HostView) -> dict[str, Any] | None:
        """The host's SKU spec; None when node_sku is unset, unknown or the catalog is invalid."""
        catalog = self.catalog(view)
        name = view.value("node_sku")
        if catalog is None or not isinstance(name, str):
            return None
        return catalog.get(name)

    def unknown_sku(self, view: HostView) -> Problem | None:
        catalog = self.catalog(view)
        name = view.value("node_sku")
        if catalog is None or name is None or name is UNRESOLVED or name in catalog:
            return None
        return view.problem(
            "sku.unknown", "node_sku", unknown_sku_message(name, catalog), unknown_sku_fix(catalog)
        )


def _catalog_problems(view: HostView, overrides: Any, err: CatalogError) -> list[Problem]:
    problems = []
    for path, what in err.issues:
        value = _at_path(overrides, path)
        file, line = view.where(OVERRIDE_VARIABLE, value)
        problems.append(
            Problem(
                rule="sku.catalog",
                message=f"SKU catalog override {path}: {what}",
                fix=err.fix or "",
                file=file,
                line=line,
                variable=f"{OVERRIDE_VARIABLE}.{path}" if path != OVERRIDE_VARIABLE else path,
            )
        )
    return problems


def _at_path(data: Any, path: str) -> Any:
    """The value at "sku.key.subkey" inside the overrides (for its origin), or the deepest one found."""
    found = data
    for part in path.split("."):
        if isinstance(found, dict) and part in found:
            found = found[part]
        else:
            break
    return found
