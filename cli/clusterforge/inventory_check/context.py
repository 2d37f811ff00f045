"""What every check needs: the hosts with their (templated) variables, the SKU catalog, the rules."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

from cfcore import bom as bom_rules
from cfcore.inputs import is_template

from clusterforge.catalog import (
    OVERRIDE_VARIABLE,
    CatalogError,
    load_catalog,
    unknown_sku_fix,
    unknown_sku_message,
)
from clusterforge.inventory_check.ansible_load import HostEntry, LoadedInventory
from clusterforge.inventory_check.origin import origin_of
from clusterforge.inventory_check.problems import ERROR, WARNING, Problem
from clusterforge.inventory_check.templating import (
    TemplateCache,
    refused_lookups,
    unsafe_reason,
)
from clusterforge.inventory_check.values import MAX_VALUES, Encrypted, Vault, ciphertext_of, too_large

# A value that cannot be checked here (HostView.unresolved says why); the BOM rules' own marker.
UNRESOLVED = bom_rules.UNRESOLVED

_NATIVE_TYPES = (bool, int, float, str, list, dict)
_WRONG_PASSWORD_FIX = (
    "point ANSIBLE_VAULT_PASSWORD_FILE (or the vault identity) at the password this value was "
    "encrypted with, or encrypt it again with that one (ansible-vault encrypt_string)"
)


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
        vault: Vault | None = None,
    ):
        self.entry = entry
        self._vault = vault or Vault()
        self._templates = templates or TemplateCache()
        # Variables set for this host alone (inventory entry or host_vars/), not inherited from groups.
        self.own_vars = frozenset(entry.own_vars) | frozenset(host_vars_keys)
        self.name = entry.name
        self.groups = entry.groups
        self._loader = loader
        self._templar: Any = None
        self._values: dict[str, Any] = {}
        self.template_problems: list[Problem] = []
        self.unresolved: dict[str, Problem] = {}  # variable -> why value() gave UNRESOLVED

    def raw(self, variable: str, default: Any = None) -> Any:
        return self.entry.vars.get(variable, default)

    def is_set(self, variable: str) -> bool:
        value = self.entry.vars.get(variable)
        if ciphertext_of(value) is not None:
            return True  # vaulted: set, whatever it decrypts to
        return value is not None and value != "" and value != [] and value != {}

    def value(self, variable: str, default: Any = None) -> Any:
        """The checkable value: vault-decrypted and templated; `default` when unset.

        UNRESOLVED when it cannot be checked here; `unresolved[variable]` then
        says why (too large, encrypted, templated unsafely, template broken).
        """
        if variable not in self.entry.vars:
            return default
        if variable not in self._values:
            self._values[variable] = self._resolve(variable, self.entry.vars[variable])
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

    def finding_problem(self, found: dict[str, Any], **how: Any) -> Problem:
        """A cfcore rule's finding (rule, variable, message, fix, severity; optional value, of_value,
        source) as a problem of this host; `how` overrides where it is placed (of_value, at_host)."""
        problem = self.problem(
            found["rule"],
            found["variable"],
            found["message"],
            found["fix"],
            severity=found["severity"],
            value=found.get("value"),
            of_value=how.pop("of_value", bool(found.get("of_value"))),
            **how,
        )
        return replace(problem, source=found["source"]) if found.get("source") else problem

    def _resolve(self, variable: str, raw: Any) -> Any:
        if too_large(raw):
            return self._unresolved(
                variable,
                "vars.too_large",
                f"{variable} expands to more than {MAX_VALUES} values (YAML anchors and aliases repeated "
                "inside each other?): not checked, and Ansible would choke on it too",
                "write the value out plainly; aliases must not nest into a huge structure",
                ERROR,
            )
        try:
            value = self._vault.reveal(raw)
        except Encrypted as err:
            if err.wrong_password:  # as for a vaulted file: Ansible would fail on it too
                return self._unresolved(
                    variable,
                    "vars.encrypted",
                    f"{variable} is vault-encrypted and the vault password given does not decrypt it ({err})",
                    _WRONG_PASSWORD_FIX,
                    ERROR,
                )
            return self._unresolved(
                variable,
                "vars.encrypted",
                f"{variable} is vault-encrypted and could not be decrypted ({err}): encrypted, not checked",
                "set ANSIBLE_VAULT_PASSWORD_FILE to the vault password file to check it",
                WARNING,
            )
        if not is_template(value):
            return value
        verdict = unsafe_reason(value, self.entry.vars, too_large)
        if verdict.syntax_error:
            return self._unresolved(
                variable,
                "vars.template",
                f"cannot template the value: {verdict.syntax_error}",
                "correct the Jinja syntax, or write the value literally",
                ERROR,
            )
        if verdict.reason:
            return self._unresolved(
                variable,
                "vars.templated",
                f"{variable} is templated, checked at run time: the template {verdict.reason}, so it is not "
                "resolved here",
                "nothing to do if that is intended; write the value literally to have it checked now",
                WARNING,
            )
        return self._template(variable, value)

    def _unresolved(self, variable: str, rule: str, message: str, fix: str, severity: str) -> Any:
        problem = self.problem(rule, variable, message, fix, severity=severity, of_value=True)
        self.unresolved[variable] = problem
        self.template_problems.append(problem)
        return UNRESOLVED

    def _template(self, variable: str, raw: Any) -> Any:
        from ansible.errors import AnsibleError

        try:
            return self._templates.render(raw, self.entry.vars, self._render)
        except AnsibleError as err:
            message = str(getattr(err, "message", None) or err).strip().splitlines()[0]
            if ("vault" in message.lower() or "decrypt" in message.lower()) and self._vault.has_password:
                return self._unresolved(
                    variable,
                    "vars.encrypted",
                    f"{variable} reads a vault-encrypted value that the vault password given does not "
                    "decrypt",
                    _WRONG_PASSWORD_FIX,
                    ERROR,
                )
            if "vault" in message.lower() or "decrypt" in message.lower():
                return self._unresolved(
                    variable,
                    "vars.encrypted",
                    f"{variable} reads a vault-encrypted value that could not be decrypted: encrypted, "
                    "not checked",
                    "set ANSIBLE_VAULT_PASSWORD_FILE to the vault password file to check it",
                    WARNING,
                )
            return self._unresolved(
                variable,
                "vars.template",
                f"cannot template the value: {message}",
                "define the variables the template uses, or write the value literally",
                ERROR,
            )

    def _render(self, raw: Any) -> Any:
        from ansible.template import Templar

        if self._templar is None:
            self._templar = Templar(loader=self._loader, variables=self.entry.vars)
        with refused_lookups():  # the allowlist above decided; this makes sure
            return self._templar.template(raw)


@dataclass
class Context:
    inventory: LoadedInventory
    views: list[HostView]
    rules: bom_rules.BomRules
    _catalogs: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    catalog_problems: list[Problem] = field(default_factory=list)
    _patterns: dict[str, frozenset[str]] = field(default_factory=dict)

    def group(self, name: str) -> frozenset[str]:
        return self.inventory.groups.get(name, frozenset())

    def hosts_matching(self, pattern: str) -> frozenset[str]:
        """Hosts of an Ansible host pattern (a play's `hosts:`), resolved by Ansible."""
        if pattern not in self._patterns:
            manager = self.inventory.manager
            hosts = manager.get_hosts(pattern) if manager is not None else []
            self._patterns[pattern] = frozenset(h.name for h in hosts)
        return self._patterns[pattern]

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
