"""plugins/action/os_packages.py: refresh apt's index (in check mode too), install in one
transaction, say what check mode cannot preview. The node's package manager is a small fake
that records each module call and the check mode it ran in."""

from __future__ import annotations

import importlib
from types import SimpleNamespace
from unittest import mock

import pytest
from ansible.errors import AnsibleActionFail
from ansible.plugins.loader import init_plugin_loader
from clusterforge.ansible_env import ensure_collection_link

# The checkout's collection, loaded as Ansible loads it.
init_plugin_loader([str(ensure_collection_link().parents[2])])

action_plugin = importlib.import_module("ansible_collections.clusterforge.cluster.plugins.action.os_packages")


class Node:
    def __init__(self, installed=(), refresh_failures=0):
        self.installed = set(installed)
        self.refresh_failures = refresh_failures
        self.calls = []  # (module, args without the private ones, check mode)

    def execute_module(self, plugin, module_name=None, module_args=None, task_vars=None, **_):
        check = bool(plugin._task.check_mode)  # what ActionBase._execute_module passes on
        self.calls.append(
            (module_name, {k: v for k, v in module_args.items() if not k.startswith("_")}, check)
        )
        if module_args.get("update_cache"):
            if self.refresh_failures:
                self.refresh_failures -= 1
                return {"failed": True, "msg": "GPG error: the public key is not available"}
            return {"changed": False, "cache_updated": True}
        missing = set(module_args["name"]) - self.installed
        if missing and not check:
            self.installed |= missing
        return {"changed": bool(missing)}


def run(node, check_mode=False, family="Debian", **args):
    task = SimpleNamespace(args={"name": ["munge", "slurmd"], **args}, check_mode=check_mode, async_val=0)
    task.action = "os_packages"
    connection = mock.MagicMock()
    connection._shell.tmpdir = "/tmp/x"
    plugin = action_plugin.ActionModule(
        task, connection, mock.MagicMock(), mock.MagicMock(), mock.MagicMock()
    )
    plugin._execute_module = lambda **kw: node.execute_module(plugin, **kw)
    return plugin.run(task_vars={"ansible_facts": {"os_family": family}})


def test_refreshes_then_installs_in_one_transaction():
    node = Node()
    result = run(node)
    assert result["changed"] and result["refreshed"] and not result["pending"]
    assert node.installed == {"munge", "slurmd"}
    assert [call[0] for call in node.calls] == ["ansible.legacy.apt", "ansible.legacy.apt"]
    assert node.calls[0][1] == {"update_cache": True, "cache_valid_time": 3600}
    assert node.calls[1][1] == {"name": ["munge", "slurmd"], "state": "present", "install_recommends": False}


def test_converged_node_changes_nothing():
    result = run(Node(installed={"munge", "slurmd"}))
    assert not result["changed"] and not result["pending"]


def test_check_mode_refreshes_the_index_but_installs_nothing_and_says_why():
    node = Node()
    result = run(node, check_mode=True, pending_effects="the services are previewed after a real run")
    assert [call[2] for call in node.calls] == [False, True]  # the refresh ran for real, the install did not
    assert node.installed == set()
    assert result["changed"] and result["pending"]
    assert result["warnings"] == [
        "check mode: the packages are not installed yet; the services are previewed after a real run."
    ]


def test_a_refresh_that_fails_once_is_retried_and_one_that_keeps_failing_stops_the_role():
    node = Node(refresh_failures=1)
    assert run(node)["changed"]
    with pytest.raises(AnsibleActionFail, match="could not refresh its package index: GPG error"):
        run(Node(refresh_failures=3))


def test_dnf_installs_without_an_apt_refresh():
    node = Node()
    result = run(node, family="RedHat")
    assert [call[0] for call in node.calls] == ["ansible.legacy.dnf"]
    assert "install_recommends" not in node.calls[0][1] and not result["refreshed"]


def test_an_unknown_os_family_is_refused_with_the_fix():
    with pytest.raises(AnsibleActionFail, match=r"os_packages supports the Debian .* \(Suse family\)\. Fix:"):
        run(Node(), family="Suse")
