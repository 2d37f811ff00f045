"""Helpers for the testinfra tests of Molecule scenarios (`import cfmol_testinfra`).

The shared Molecule config puts this folder on PYTHONPATH of the verifier. The
tests reach the nodes over SSH as the user ansible; these helpers answer the
questions most scenarios ask: who the other nodes are and at which address,
whether the node is a container, what a local fact says, and polling for state
that settles after converge (a time source, a peer's service).
"""

from __future__ import annotations

import json
import shlex
import time
from collections.abc import Callable
from typing import Any, TypeVar

import pytest
import testinfra
from testinfra.utils.ansible_runner import AnsibleRunner

T = TypeVar("T")


def inventory(host: Any) -> AnsibleRunner:
    """The scenario's inventory, as Molecule gives it to Ansible and testinfra."""
    return host.backend.ansible_runner


def node_name(host: Any) -> str:
    """Inventory name of the node under test."""
    return host.backend.get_hostname()


def node_vars(host: Any, name: str | None = None) -> dict[str, Any]:
    """Inventory variables (host_vars, group_vars, connection settings) of the node
    under test, or of the node `name`."""
    return inventory(host).get_variables(name or node_name(host))


def node_address(host: Any, name: str | None = None) -> str:
    """Address on the scenario network (where Molecule reaches it) of the node under
    test, or of the node `name`."""
    return node_vars(host, name)["ansible_host"]


def other_node(host: Any, name: str) -> Any:
    """A testinfra host for another node of the scenario, reached the same way (SSH as the
    user ansible): for checks that compare two nodes (data written on one, read on another)."""
    return testinfra.get_host(f"ansible://{name}", ansible_inventory=inventory(host).inventory_file)


def peers(host: Any) -> list[str]:
    """The other nodes of the scenario."""
    me = node_name(host)
    return [name for name in inventory(host).get_hosts("all") if name != me]


def fresh_login(host: Any, command: str) -> Any:
    """Run `command` on the node in a brand-new SSH login of the inventory user, as a
    user or a job launcher would get it now. testinfra's own commands reuse a master
    connection (ControlPersist) that may have logged in before the role ran, so
    they would see that older session's limits and groups."""
    v = node_vars(host)
    argv = [
        "ssh",
        "-S",
        "none",
        "-p",
        str(v.get("ansible_port", 22)),
        "-i",
        v["ansible_private_key_file"],
        *shlex.split(v.get("ansible_ssh_common_args", "")),
        f"{v['ansible_user']}@{v['ansible_host']}",
        command,
    ]
    return testinfra.get_host("local://").run(" ".join(["%s"] * len(argv)), *argv)


def is_container(host: Any) -> bool:
    return host.run("systemd-detect-virt --container").rc == 0


def read_json(host: Any, path: str) -> Any:
    """A JSON file on the node, read as root; fails the test with the path if it is not JSON."""
    result = host.run("sudo cat %s", path)
    assert result.rc == 0, f"{path}: {result.stderr.strip()}"
    try:
        return json.loads(result.stdout)
    except json.JSONDecodeError as err:
        raise AssertionError(f"{path} is not valid JSON ({err}): {result.stdout[:300]!r}") from None


def pid1_hard_limit(host: Any, row: str) -> str:
    """Hard limit of PID 1 from /proc/1/limits (e.g. row "Max open files"): the
    ceiling of everything on a container node."""
    for line in host.file("/proc/1/limits").content_string.splitlines():
        if line.startswith(row):
            return line[len(row) :].split()[1]
    raise AssertionError(f"no {row!r} row in /proc/1/limits")


def wait_for(check: Callable[[], T], timeout: float = 30.0, interval: float = 1.0) -> T:
    """Call `check` until it returns a truthy value or `timeout` seconds pass; returns the
    last value (falsy on timeout), so the caller's assert shows what was seen."""
    deadline = time.monotonic() + timeout
    value = check()
    while not value and time.monotonic() < deadline:
        time.sleep(interval)
        value = check()
    return value


def on(host: Any, *nodes: str) -> None:
    """Skip the test unless the node under test is one of `nodes` (tests of one node's part)."""
    if node_name(host) not in nodes:
        pytest.skip(f"checked on {', '.join(nodes)}")


def root(host: Any, command: str, *args: str) -> str:
    """Run a command as root (testinfra quotes `args` into its %s); fail the test with its
    output if it fails, else return its stdout."""
    result = host.run("sudo " + command, *args)
    assert result.rc == 0, f"{command % args}: rc={result.rc} {result.stderr.strip()[-800:]}"
    return result.stdout
