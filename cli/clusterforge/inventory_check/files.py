"""Checks on the inventory's files themselves, read independently of Ansible.

Ansible reports YAML errors without always naming the line, silently keeps
the last of two duplicate keys (a host listed twice loses its first entry's
variables) and ignores group_vars/host_vars files that match no group or host.
These checks catch all three with file and line, and a variable that two files of the same group
or host set to different values (Ansible keeps the one it reads last without a word).
"""

from __future__ import annotations

import difflib
import keyword
import os
import re
from dataclasses import dataclass
from typing import Any

import yaml
from cfcore.files import UnsafeFile, read_text

from clusterforge.inventory_check.problems import ERROR, WARNING, Problem, display_path

VARS_EXTENSIONS = (".yml", ".yaml", ".json")
MAX_FILE_BYTES = 16 * 1024 * 1024  # per inventory file: bigger is a mistake or an attack
_YAML_EXTENSIONS = (".yml", ".yaml")
_VAULT_HEADER = "$ANSIBLE_VAULT"


@dataclass
class VarsFile:
    path: str
    kind: str  # "group" | "host"
    target: str  # the group or host name it applies to
    data: dict[str, Any] | None = None  # None when unreadable


# libyaml's parser when PyYAML has it: the pure-Python one is several times slower on big inventories.
_BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _CheckingLoader(_BaseLoader):
    """A safe loader that records duplicate keys and accepts Ansible's tags (!vault, !unsafe)."""

    def __init__(self, stream: str, path: str):
        super().__init__(stream)
        self.path = path
        self.duplicates: list[Problem] = []

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            if isinstance(key, (str, int, float, bool)) and key in seen:
                self.duplicates.append(
                    Problem(
                        rule="yaml.duplicate_key",
                        message=(
                            f"key {key!r} appears twice (lines {seen[key]} and {line}); YAML keeps only "
                            "the last one, so everything under the first is silently lost"
                        ),
                        fix="merge the two entries into one",
                        file=self.path,
                        line=line,
                        variable=str(key),
                    )
                )
            elif isinstance(key, (str, int, float, bool)):
                seen[key] = line
        return super().construct_mapping(node, deep=deep)


def _ansible_tag(loader: _CheckingLoader, suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode):
        return loader.construct_scalar(node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    return loader.construct_mapping(node, deep=True)


_CheckingLoader.add_multi_constructor("!", _ansible_tag)


def scan_yaml(path: str) -> tuple[Any, list[Problem]]:
    """Parse one YAML file: (data, problems). Vault-encrypted files are not read (data None)."""
    try:
        text = read_text(path, MAX_FILE_BYTES, errors="strict")
    except (UnsafeFile, UnicodeDecodeError) as err:
        return None, [
            Problem(
                rule="file.unreadable",
                message=f"cannot read: {err}",
                fix="make the file readable UTF-8 text",
                file=path,
            )
        ]
    if text.lstrip().startswith(_VAULT_HEADER):
        return None, []
    loader = _CheckingLoader(text, path)
    try:
        data = loader.get_single_data()
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        what = " ".join(part for part in (err.context, err.problem) if part)
        return None, [
            Problem(
                rule="yaml.syntax",
                message=f"YAML syntax error: {what}",
                fix="correct the YAML at this line (check indentation, quotes and colons)",
                file=path,
                line=mark.line + 1 if mark else None,
            )
        ]
    except yaml.YAMLError as err:
        return None, [
            Problem(rule="yaml.syntax", message=f"YAML error: {err}", fix="correct the YAML", file=path)
        ]
    finally:
        loader.dispose()
    return data, loader.duplicates


def inventory_files(sources: list[str]) -> list[str]:
    """The files Ansible opens as inventory sources (directories walked the way Ansible walks them).

    Every entry that is not a directory counts, FIFOs and devices too: Ansible
    hands them to its plugins, which open them (sources.py refuses them first).
    """
    from ansible.inventory.manager import IGNORED  # imported late: after use_project_config()

    found: list[str] = []
    walked: set[str] = set()

    def walk(path: str) -> None:
        if os.path.isdir(path):
            real = os.path.realpath(path)
            if real in walked:  # a link back up the tree: Ansible would loop, we stop
                return
            walked.add(real)
            for name in sorted(os.listdir(path)):
                if not IGNORED.search(name.encode()):
                    walk(os.path.join(path, name))
        elif os.path.lexists(path):
            found.append(path)

    for source in sources:
        walk(source)
    return found


def vars_files(sources: list[str]) -> list[VarsFile]:
    """group_vars/ and host_vars/ files next to the sources, found as Ansible's host_group_vars finds them."""
    bases = []
    for source in sources:
        base = source if os.path.isdir(source) else os.path.dirname(source)
        if base not in bases:
            bases.append(base)
    found = []
    for base in bases:
        for kind in ("group", "host"):
            folder = os.path.join(base, f"{kind}_vars")
            if os.path.isdir(folder):
                found += _vars_files_in(folder, kind)
    return found


def _vars_files_in(folder: str, kind: str) -> list[VarsFile]:
    found = []
    for name in sorted(os.listdir(folder)):
        if name.startswith("."):
            continue
        path = os.path.join(folder, name)
        stem, ext = os.path.splitext(name)
        if os.path.isdir(path):
            found += [VarsFile(p, kind, name) for p in _files_below(path)]
        elif ext in VARS_EXTENSIONS:
            found.append(VarsFile(path, kind, stem))
        elif not ext:
            found.append(VarsFile(path, kind, name))
    return found


def _files_below(folder: str) -> list[str]:
    files = []
    for root, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(names):
            ext = os.path.splitext(name)[1]
            if not name.startswith(".") and not name.endswith("~") and (not ext or ext in VARS_EXTENSIONS):
                files.append(os.path.join(root, name))
    return files


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def check_vars_file(vars_file: VarsFile) -> list[Problem]:
    """Syntax, duplicate keys, top-level shape and variable names of one group_vars/host_vars file."""
    data, problems = scan_yaml(vars_file.path)
    if problems and data is None:
        return problems
    if data is None:
        vars_file.data = {}
        return problems
    if not isinstance(data, dict):
        return [
            *problems,
            Problem(
                rule="vars.not_mapping",
                message=f"must be a mapping of variable names to values, got a {type(data).__name__}",
                fix="write `name: value` lines at the top level of the file",
                file=vars_file.path,
                line=1,
            ),
        ]
    vars_file.data = data
    for name in data:
        if not (isinstance(name, str) and _IDENTIFIER.fullmatch(name) and not keyword.iskeyword(name)):
            problems.append(
                Problem(
                    rule="vars.name",
                    message=f"{name!r} is not a valid variable name",
                    fix="use letters, digits and underscores, not starting with a digit (e.g. "
                    f"{re.sub(r'[^A-Za-z0-9_]', '_', str(name))})",
                    file=vars_file.path,
                    line=_line_of_key(vars_file.path, str(name)),
                    variable=str(name),
                )
            )
    return problems


def _line_of_key(path: str, key: str) -> int | None:
    try:
        lines = read_text(path, MAX_FILE_BYTES).splitlines()
    except UnsafeFile:
        return None
    for number, text in enumerate(lines, start=1):
        if text.startswith((f"{key}:", f"'{key}':", f'"{key}":')):
            return number
    return None


def check_inventory_yaml(paths: list[str]) -> list[Problem]:
    """Syntax and duplicate keys of the YAML inventory files (INI is left to Ansible's parser)."""
    problems = []
    for path in paths:
        if os.path.splitext(path)[1].lower() in _YAML_EXTENSIONS:
            problems += scan_yaml(path)[1]
    return problems


def check_orphans(files: list[VarsFile], groups: set[str], hosts: set[str]) -> list[Problem]:
    """group_vars/host_vars files that match no group or host apply to nothing: usually a typo."""
    problems = []
    for vars_file in files:
        known = groups if vars_file.kind == "group" else hosts
        if vars_file.target in known:
            continue
        close = difflib.get_close_matches(vars_file.target, sorted(known), n=1, cutoff=0.8)
        what = (
            f"no {vars_file.kind} named {vars_file.target!r} in the inventory: its variables apply to nothing"
        )
        problems.append(
            Problem(
                rule=f"vars.orphan_{vars_file.kind}",
                message=what + (f" (did you mean {close[0]!r}?)" if close else ""),
                fix=f"rename it after the {vars_file.kind} it is meant for"
                + (f" ({close[0]})" if close else f", or remove it if the {vars_file.kind} is gone"),
                severity=ERROR if close else WARNING,
                file=vars_file.path,
            )
        )
    return problems


def check_conflicts(files: list[VarsFile]) -> list[Problem]:
    """A variable that two files of one group or host (group_vars/all/a.yml and b.yml, all.yml and
    all/, the same folder in two inventory sources) set to different values: Ansible merges them
    and keeps one without a word. A warning at the later file, naming both."""
    by_target: dict[tuple[str, str], list[VarsFile]] = {}
    for vars_file in files:
        if isinstance(vars_file.data, dict):
            by_target.setdefault((vars_file.kind, vars_file.target), []).append(vars_file)
    problems = []
    for (kind, target), group in by_target.items():
        first: dict[str, VarsFile] = {}
        for vars_file in group:
            for name, value in vars_file.data.items():
                earlier = first.setdefault(name, vars_file) if isinstance(name, str) else vars_file
                if earlier is vars_file or _same(earlier.data[name], value):
                    continue
                problems.append(
                    Problem(
                        rule="vars.conflict",
                        message=(
                            f"{name} is set in {display_path(earlier.path)} and in "
                            f"{display_path(vars_file.path)} with different values ({kind}_vars of "
                            f"{target}): Ansible keeps one of them without a word (the file it reads "
                            "last, in name order)"
                        ),
                        fix=f"set {name} in one of the two files only",
                        severity=WARNING,
                        file=vars_file.path,
                        line=_line_of_key(vars_file.path, name),
                        variable=name,
                    )
                )
    return problems


def _same(one: Any, other: Any) -> bool:
    try:
        return bool(one == other) and type(one) is type(other)
    except Exception:  # values YAML cannot make unequal-comparable; be safe: report nothing
        return True
