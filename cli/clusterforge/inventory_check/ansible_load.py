"""Load an inventory through Ansible's own inventory API.

INI, YAML, JSON, directories, scripts and inventory plugins all work because
Ansible parses them. Ansible stops at the first source it cannot parse and
prints the reasons as warnings; here every source is parsed, the reasons are
captured and become problems naming the file (and line where known), so one
run reports everything.
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from cfcore.files import UnsafeFile, read_text

from clusterforge.ansible_env import use_project_config
from clusterforge.errors import InvalidInput
from clusterforge.inventory_check import sources as inventory_sources
from clusterforge.inventory_check.origin import origin_of
from clusterforge.inventory_check.problems import WARNING, Problem
from clusterforge.inventory_check.templating import refused_lookups
from clusterforge.inventory_check.values import Vault, ciphertext_of, too_large

PARSE_FIX = "correct the file so that `ansible-inventory -i {path} --graph` parses it"

# Warnings that checks of our own report better: duplicate keys (with both lines), an empty inventory.
_OWN_CHECKS = ("Found duplicate mapping key", "No inventory was parsed")

_UNABLE_TO_PARSE = re.compile(r"^Unable to parse (?P<source>.+) as an inventory source$")


@dataclass
class HostEntry:
    """A host as Ansible sees it: groups (ancestors included), untemplated variables."""

    name: str
    groups: frozenset[str]
    vars: dict[str, Any]
    own_vars: frozenset[str]  # set on the host itself (inventory entry), not inherited
    file: str | None
    line: int | None
    vars_error: Problem | None = None


@dataclass(frozen=True)
class Redefinition:
    """One variable of a host set twice by the inventory sources, with different values."""

    host: str
    variable: str
    first: Any
    second: Any  # the one Ansible keeps


@dataclass
class LoadedInventory:
    sources: list[str]  # as given to Ansible: absolute paths, host lists unchanged
    hosts: dict[str, HostEntry] = field(default_factory=dict)  # in inventory order
    groups: dict[str, frozenset[str]] = field(default_factory=dict)  # group -> host names (descendants too)
    group_origins: dict[str, tuple[str | None, int | None]] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    redefinitions: list[Redefinition] = field(default_factory=list)
    loader: Any = None  # Ansible's DataLoader, for templating
    manager: Any = None  # Ansible's InventoryManager: host patterns (--limit, plays' hosts:)
    vault: Vault = field(default_factory=Vault)
    paths: list[str] = field(default_factory=list)  # the path sources (not host lists)
    unsafe: bool = False  # a source file was refused: nothing was loaded


def load_inventory(sources: list[str], allow_scripts: bool = False) -> LoadedInventory:
    """Load through Ansible's inventory API, running nothing from the inventory.

    Sources are checked first (sources.py): unsafe files stop the load,
    executable files run only with allow_scripts. Lookups are refused
    throughout (templating.refused_lookups). InvalidInput when a source path
    is missing or the vault password setting is broken.
    """
    use_project_config()
    prepared = inventory_sources.prepare(sources, allow_scripts)
    result = LoadedInventory(sources=prepared.sources, paths=prepared.paths, unsafe=prepared.unsafe)
    result.problems += prepared.problems
    if prepared.unsafe:
        return result
    from ansible.errors import AnsibleError
    from ansible.inventory.manager import InventoryManager
    from ansible.parsing.dataloader import DataLoader
    from ansible.vars.manager import VariableManager

    skipped = set() if allow_scripts else set(prepared.scripts)
    with (
        _captured_display() as events,
        _every_source_parsed(),
        _scripts_allowed(allow_scripts),
        refused_lookups(),
        _recorded_host_variables() as assignments,
    ):
        loader = DataLoader()
        result.vault = Vault(_vault_secrets(loader))
        try:
            inventory = InventoryManager(loader=loader, sources=result.sources)
        except AnsibleError as err:  # e.g. an inventory plugin that fails outright
            path, line = _error_origin(err)
            result.problems.append(
                Problem(
                    rule="inventory.parse",
                    message=f"Ansible cannot load the inventory: {_message(err)}",
                    fix=PARSE_FIX.format(path=" -i ".join(sources)),
                    file=path,
                    line=line,
                )
            )
            result.problems += _display_problems(events, skipped)
            return result
        variables = VariableManager(loader=loader, inventory=inventory)
        result.loader, result.manager = loader, inventory
        for group in inventory.groups.values():
            result.groups[group.name] = frozenset(h.name for h in group.get_hosts())
            result.group_origins[group.name] = origin_of(group.name)
        for host in inventory.get_hosts():
            result.hosts[host.name] = _host_entry(host, variables)
    result.problems += _display_problems(events, skipped)
    result.redefinitions = _redefinitions(assignments)
    return result


def _vault_secrets(loader: Any) -> list:
    """The vault secrets configured as usual (ANSIBLE_VAULT_PASSWORD_FILE, vault identities).

    They decrypt vaulted files and inline `!vault` values. A password file that
    does not exist or cannot be used is bad input (exit 2), not a crash.
    """
    from ansible import constants
    from ansible.errors import AnsibleError
    from ansible.parsing.vault import VaultSecretsContext, get_file_vault_secret

    sources = (
        [("default", constants.DEFAULT_VAULT_PASSWORD_FILE)] if constants.DEFAULT_VAULT_PASSWORD_FILE else []
    )
    for identity in constants.DEFAULT_VAULT_IDENTITY_LIST or []:
        vault_id, _, path = str(identity).rpartition("@")
        sources.append((vault_id or "default", path))
    secrets: list = []
    for vault_id, path in sources:
        setting = (
            f"ANSIBLE_VAULT_PASSWORD_FILE={path}"
            if vault_id == "default"
            else f"vault identity {vault_id}@{path}"
        )
        try:
            if path == "prompt":
                raise AnsibleError("prompting for a vault password is not supported here")
            secret = get_file_vault_secret(filename=path, vault_id=vault_id, loader=loader)
            secret.load()
        except AnsibleError as err:
            raise InvalidInput(
                f"the vault password setting cannot be used ({setting}): {_message(err)}",
                "point ANSIBLE_VAULT_PASSWORD_FILE at the file holding the vault password, or unset it "
                "when the inventory has no vaulted values",
            ) from None
        secrets.append((vault_id, secret))
    loader.set_vault_secrets(secrets)
    # Templating decrypts vaulted values through this process-wide context (set once, updated per load).
    context = VaultSecretsContext.current(optional=True)
    if context is None:
        VaultSecretsContext.initialize(VaultSecretsContext(secrets))
    else:
        context.secrets = secrets
    return secrets


@contextmanager
def _scripts_allowed(allowed: bool) -> Iterator[None]:
    """Without `allowed`, Ansible's script inventory plugin is switched off: no inventory file runs."""
    from ansible import constants

    saved = list(constants.INVENTORY_ENABLED)
    if not allowed:
        constants.INVENTORY_ENABLED = [p for p in saved if p not in _SCRIPT_PLUGINS]
    try:
        yield
    finally:
        constants.INVENTORY_ENABLED = saved


_SCRIPT_PLUGINS = ("script", "ansible.builtin.script")


@contextmanager
def _recorded_host_variables() -> Iterator[dict[tuple[str, str], list[Any]]]:
    """Every value the inventory sources set on a host variable, in order (Ansible keeps only the last)."""
    from ansible.inventory.data import InventoryData

    assignments: dict[tuple[str, str], list[Any]] = {}
    original = InventoryData.set_variable

    def recording(self: Any, entity: str, varname: str, value: Any) -> None:
        original(self, entity, varname, value)
        if entity in self.hosts:
            assignments.setdefault((entity, varname), []).append(value)

    InventoryData.set_variable = recording
    try:
        yield assignments
    finally:
        InventoryData.set_variable = original


def _redefinitions(assignments: dict[tuple[str, str], list[Any]]) -> list[Redefinition]:
    found = []
    for (host, variable), values in assignments.items():
        for earlier, later in itertools.pairwise(values):
            if not _same_value(earlier, later):
                found.append(Redefinition(host, variable, earlier, later))
    return found


def _same_value(one: Any, other: Any) -> bool:
    if too_large(one) or too_large(other):
        return one is other  # never compared element by element (an alias bomb would take forever)
    secret_one, secret_other = ciphertext_of(one), ciphertext_of(other)
    if secret_one is not None or secret_other is not None:
        return secret_one == secret_other
    try:
        return bool(one == other)
    except Exception:  # a comparison that needs a secret we lack (a vaulted value inside a list)
        return False


def _host_entry(host: Any, variables: Any) -> HostEntry:
    from ansible.errors import AnsibleError

    file, line = origin_of(host.name)
    groups = frozenset(g.name for g in host.get_groups()) - {"all"}
    entry = HostEntry(
        name=host.name,
        groups=groups,
        vars={},
        own_vars=frozenset(host.vars),
        file=file or _source_file(host.vars.get("inventory_file")),
        line=line,
    )
    try:
        entry.vars = variables.get_vars(host=host, include_hostvars=True)
    except AnsibleError as err:
        path, err_line = _error_origin(err)
        message = _message(err)
        vaulted = "vault" in message.lower()
        entry.vars_error = Problem(
            rule="vars.load",
            message=f"Ansible cannot load this host's variables: {message}",
            fix="set ANSIBLE_VAULT_PASSWORD_FILE to the vault password file, then rerun"
            if vaulted
            else "correct the variables file named here (group_vars/ or host_vars/)",
            file=path,
            line=err_line,
            host=host.name,
        )
    return entry


def _source_file(source: Any) -> str | None:
    """The inventory file a host came from; None for a host list ('a,b,'), which is no file."""
    return str(source) if isinstance(source, str) and os.path.isfile(source) else None


@contextmanager
def _every_source_parsed() -> Iterator[None]:
    """Parse every source even when one fails (ansible.cfg makes Ansible stop at the first).

    The failures are reported as errors all the same: they are captured from
    Ansible's display and turned into problems.
    """
    from ansible import constants

    saved = {name: getattr(constants, name, None) for name in _STRICT_SETTINGS}
    for name in _STRICT_SETTINGS:
        setattr(constants, name, False)
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(constants, name, value)


_STRICT_SETTINGS = ("INVENTORY_UNPARSED_IS_FAILED", "INVENTORY_ANY_UNPARSED_IS_FAILED")


@contextmanager
def _captured_display() -> Iterator[list[tuple[str, Any, Any]]]:
    """Collect Ansible's warnings and parse failures instead of printing them."""
    from ansible.utils.display import Display

    display = Display()  # a singleton: the instance every Ansible module prints through
    events: list[tuple[str, Any, Any]] = []
    saved = display.warning, display.error_as_warning

    def warning(msg: str, *args: Any, **kwargs: Any) -> None:
        events.append(("warning", msg, kwargs.get("obj")))

    def error_as_warning(msg: str | None, exception: BaseException, *args: Any, **kwargs: Any) -> None:
        events.append(("failure", msg, exception))

    display.warning, display.error_as_warning = warning, error_as_warning
    try:
        yield events
    finally:
        display.warning, display.error_as_warning = saved


def _display_problems(events: list[tuple[str, Any, Any]], skipped: set[str] = frozenset()) -> list[Problem]:
    """Turn captured Ansible output into problems: one per unparsable source, warnings as warnings."""
    problems: list[Problem] = []
    failures: list[tuple[str, BaseException]] = []
    for kind, msg, obj in events:
        if kind == "failure":
            failures.append((str(msg or ""), obj))
            continue
        text = str(msg)
        match = _UNABLE_TO_PARSE.match(text)
        if match:
            # A directory is unparsed when its files are: those are reported one by one.
            # Scripts not run are reported once by sources.py.
            if not os.path.isdir(match.group("source")) and match.group("source") not in skipped:
                problems.append(_parse_failure(match.group("source"), failures))
            failures = []
        elif not text.startswith(_OWN_CHECKS):
            path, line = origin_of(obj)
            problems.append(
                Problem(
                    rule="ansible.warning",
                    message=f"Ansible warns: {text}",
                    fix="address the warning (Ansible runs would print it too)",
                    severity=WARNING,
                    file=path,
                    line=line,
                )
            )
    return problems


def _parse_failure(source: str, failures: list[tuple[str, BaseException]]) -> Problem:
    """The failure of the plugin that should have parsed `source`, located as precisely as known."""
    chosen = _relevant_failure(source, failures)
    if chosen is None:
        message = "no inventory plugin could parse this file"
        path, line = source, None
    else:
        plugin, error = chosen
        message = f"cannot parse as an inventory ({plugin} plugin): {_message(error)}"
        path, line = _error_origin(error)
        if not path or not os.path.isfile(path):
            path = source
        if line is None:
            line = _line_of_offending_text(path, _message(error))
    return Problem(
        rule="inventory.parse",
        message=message,
        fix=PARSE_FIX.format(path=source),
        file=path,
        line=line,
    )


def _relevant_failure(source: str, failures: list[tuple[str, BaseException]]) -> tuple[str, Any] | None:
    by_plugin = {}
    for msg, error in failures:
        match = re.search(r"with '([^']+)' plugin", msg)
        by_plugin[match.group(1) if match else "unknown"] = error
    ext = os.path.splitext(source)[1].lower()
    preference = {".yml": "yaml", ".yaml": "yaml", ".json": "yaml", ".toml": "toml"}.get(ext, "ini")
    for plugin in (preference, "auto", "script", "ini", "yaml", "toml"):
        if plugin in by_plugin:
            return plugin, by_plugin[plugin]
    return next(iter(by_plugin.items()), None)


def _message(error: BaseException) -> str:
    return str(getattr(error, "message", None) or error).strip()


def _error_origin(error: BaseException) -> tuple[str | None, int | None]:
    """The most precise (path, line) along the exception chain."""
    best: tuple[str | None, int | None] = (None, None)
    seen: BaseException | None = error
    while seen is not None:
        path, line = origin_of(getattr(seen, "obj", None))
        if path and (line or not best[0]):
            best = (path, line)
            if line:
                break
        seen = seen.__cause__ or seen.__context__
    return best


def _line_of_offending_text(path: str, message: str) -> int | None:
    """Ansible's INI parser names the bad text but not its line: find the line holding it."""
    match = re.search(r"got: (.+)$", message) or re.search(r"entry: '([^']+)'", message)
    if not match:
        return None
    needle = match.group(1).strip()
    try:
        lines = read_text(path, inventory_sources.MAX_FILE_BYTES).splitlines()
    except UnsafeFile:
        return None
    for number, text in enumerate(lines, start=1):
        if needle in text:
            return number
    return None
