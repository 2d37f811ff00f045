"""Load an inventory through Ansible's own inventory API.

INI, YAML, JSON, directories, scripts and inventory plugins all work because
Ansible parses them. Ansible stops at the first source it cannot parse and
prints the reasons as warnings; here every source is parsed, the reasons are
captured and become problems naming the file (and line where known), so one
run reports everything.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

from clusterforge.errors import EnvironmentNotReady
from clusterforge.inventory_check.origin import origin_of
from clusterforge.inventory_check.problems import WARNING, Problem
from clusterforge.paths import project_root

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


@dataclass
class LoadedInventory:
    sources: list[str]
    hosts: dict[str, HostEntry] = field(default_factory=dict)
    groups: dict[str, frozenset[str]] = field(default_factory=dict)  # group -> host names (descendants too)
    group_origins: dict[str, tuple[str | None, int | None]] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    loader: Any = None  # Ansible's DataLoader, for templating


def use_project_ansible_cfg() -> None:
    """Make Ansible read the checkout's ansible.cfg (plugins, inventory settings) unless told otherwise.

    Must run before ansible.constants is first imported to take effect. Without
    a checkout (an installed CLI) Ansible's defaults apply: the inventory
    strictness this check needs it applies itself (_every_source_parsed).
    """
    with suppress(EnvironmentNotReady):
        os.environ.setdefault("ANSIBLE_CONFIG", str(project_root() / "ansible.cfg"))


def load_inventory(sources: list[str]) -> LoadedInventory:
    use_project_ansible_cfg()
    from ansible.errors import AnsibleError
    from ansible.inventory.manager import InventoryManager
    from ansible.parsing.dataloader import DataLoader
    from ansible.vars.manager import VariableManager

    result = LoadedInventory(sources=[os.path.abspath(s) for s in sources])
    with _captured_display() as events, _every_source_parsed():
        loader = DataLoader()
        _vault_secrets(loader)
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
            result.problems += _display_problems(events)
            return result
        variables = VariableManager(loader=loader, inventory=inventory)
        result.loader = loader
        for group in inventory.groups.values():
            result.groups[group.name] = frozenset(h.name for h in group.get_hosts())
            result.group_origins[group.name] = origin_of(group.name)
        for host in inventory.get_hosts():
            result.hosts[host.name] = _host_entry(host, variables)
    result.problems += _display_problems(events)
    return result


def _vault_secrets(loader: Any) -> None:
    """Decrypt vaulted files with the vault password configured as usual (ANSIBLE_VAULT_PASSWORD_FILE)."""
    from ansible import constants

    password_file = constants.DEFAULT_VAULT_PASSWORD_FILE
    identities = list(constants.DEFAULT_VAULT_IDENTITY_LIST or [])
    if not password_file and not identities:
        return
    from ansible.cli import CLI

    secrets = CLI.setup_vault_secrets(
        loader,
        vault_ids=identities,
        vault_password_files=[password_file] if password_file else [],
        ask_vault_pass=False,
        auto_prompt=False,
    )
    loader.set_vault_secrets(secrets)


def _host_entry(host: Any, variables: Any) -> HostEntry:
    from ansible.errors import AnsibleError

    file, line = origin_of(host.name)
    groups = frozenset(g.name for g in host.get_groups()) - {"all"}
    entry = HostEntry(
        name=host.name,
        groups=groups,
        vars={},
        own_vars=frozenset(host.vars),
        file=file or host.vars.get("inventory_file"),
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


def _display_problems(events: list[tuple[str, Any, Any]]) -> list[Problem]:
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
            if not os.path.isdir(match.group("source")):
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
        with open(path, encoding="utf-8", errors="replace") as handle:
            for number, text in enumerate(handle, start=1):
                if needle in text:
                    return number
    except OSError:
        return None
    return None
