"""The inventory's sources, looked at before Ansible opens any of them.

- A source with a comma that is not an existing path is an Ansible host list
  (`-i 'a,b,'`), passed to Ansible as it is, never turned into a path.
- Every file Ansible would open (inventory files, group_vars/, host_vars/)
  must be a regular file of at most MAX_FILE_BYTES: a FIFO or a device would
  hang the load, a link to /dev/zero would eat the memory. Such files are
  reported and nothing is loaded.
- Executable inventory files are programs (Ansible's `script` plugin runs
  them). They run only with allow_scripts (`--allow-scripts`); otherwise each
  is reported as not run, with the flag.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from cfcore.files import UnsafeFile, check_regular, read_bytes

from clusterforge.errors import InvalidInput
from clusterforge.inventory_check import files as file_checks
from clusterforge.inventory_check.problems import Problem

MAX_FILE_BYTES = file_checks.MAX_FILE_BYTES
ALLOW_SCRIPTS_FLAG = "--allow-scripts"
_PROGRAM_MAGIC = (b"#!", b"\x7fELF")


def is_host_list(source: str) -> bool:
    """Ansible's host_list form: `-i 'host1,host2,'` (a comma, and not an existing path)."""
    return "," in source and not os.path.exists(source)


@dataclass
class Sources:
    sources: list[str]  # as given to Ansible: absolute paths, host lists unchanged
    paths: list[str]  # the path sources only
    problems: list[Problem] = field(default_factory=list)
    scripts: list[str] = field(default_factory=list)  # executable inventory files, not to be run
    unsafe: bool = False  # a file that must not be opened: load nothing


def prepare(sources: list[str], allow_scripts: bool = False) -> Sources:
    """Sources checked for existence, unsafe files and scripts; InvalidInput when a path is missing."""
    missing = [s for s in sources if not is_host_list(s) and not os.path.exists(s)]
    if missing:
        raise InvalidInput(
            f"inventory source not found: {', '.join(missing)}",
            "pass an inventory file or directory with -i, e.g. -i inventories/example "
            "(or a host list with a comma: -i 'host1,host2,')",
        )
    given = [s if is_host_list(s) else os.path.abspath(s) for s in sources]
    result = Sources(sources=given, paths=[s for s in given if not is_host_list(s)])
    inventory_files = file_checks.inventory_files(result.paths)
    vars_paths = [v.path for v in file_checks.vars_files(result.paths)]
    for path in [*inventory_files, *vars_paths]:
        problem = _unsafe(path)
        if problem:
            result.problems.append(problem)
            result.unsafe = True
    if result.unsafe:
        return result
    for path in inventory_files:
        if _is_program(path):
            result.scripts.append(path)
            if not allow_scripts:
                result.problems.append(_not_run(path))
    return result


def _unsafe(path: str) -> Problem | None:
    try:
        resolved = check_regular(path)
        size = os.stat(resolved).st_size
    except UnsafeFile as err:
        message = str(err)
    else:
        if size <= MAX_FILE_BYTES:
            return None
        message = f"{path} is {size} bytes, over the limit of {MAX_FILE_BYTES} bytes for one inventory file"
    return Problem(
        rule="file.unsafe",
        message=f"refusing to read it: {message}",
        fix="inventories hold regular files only: remove it, or replace the link with the file it "
        "should be (split very large files)",
        file=path,
    )


def _is_program(path: str) -> bool:
    if not os.access(path, os.X_OK):
        return False
    try:
        head = read_bytes(path, MAX_FILE_BYTES)[:4]
    except UnsafeFile:
        return False
    return head.startswith(_PROGRAM_MAGIC)


def _not_run(path: str) -> Problem:
    return Problem(
        rule="inventory.script",
        message="executable inventory file not run: Ansible's script plugin would run it to list the hosts, "
        "and checking an inventory runs nothing from it by default",
        fix=f"if you trust it, rerun with {ALLOW_SCRIPTS_FLAG} to run it; otherwise remove its execute "
        "permission (chmod -x) if it is a data file",
        file=path,
    )
