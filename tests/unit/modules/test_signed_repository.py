"""plugins/action/signed_repository.py: pinned key, conflicting sources removed, the source,
and apt's index refreshed only when something changed or the index is missing. The node is a
small fake: its files, apt's lists and the module calls in order."""

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
action_plugin = importlib.import_module(
    "ansible_collections.clusterforge.cluster.plugins.action.signed_repository"
)

URL = "http://mirror.site:8080/cuda/debian12/x86_64/"
KEY = "a" * 64
ARGS = {
    "name": "nvidia-cuda",
    "url": URL,
    "key_url": URL + "3bf863cc.pub",
    "key_sha256": f"sha256:{KEY.upper()}",
    "keyring": "/etc/apt/keyrings/nvidia-cuda.asc",
    "remove": ["/etc/apt/sources.list.d/cuda-debian12-x86_64.list", "/etc/apt/sources.list.d/old.list"],
}


class Node:
    def __init__(self, files=(), lists=()):
        self.files = set(files)  # paths present with the wanted content
        self.lists = set(lists)
        self.calls = []

    def execute_module(self, plugin, module_name=None, module_args=None, task_vars=None, **_):
        check = bool(plugin._task.check_mode)
        name = module_name.rsplit(".", 1)[-1]
        self.calls.append((name, {k: v for k, v in module_args.items() if not k.startswith("_")}))
        target = {
            "get_url": module_args.get("dest"),
            "apt_repository": f"source:{module_args.get('repo')}",
            "yum_repository": f"repo:{module_args.get('name')}",
            "rpm_key": f"rpm:{module_args.get('key')}",
        }.get(name)
        if name == "file" and module_args.get("state") == "absent":
            changed = module_args["path"] in self.files
            if changed and not check:
                self.files.discard(module_args["path"])
            return {"changed": changed}
        if target is not None:
            changed = target not in self.files
            if changed and not check:
                self.files.add(target)
            return {"changed": changed}
        if name == "apt" and module_args.get("update_cache"):
            self.lists.add("refreshed")
        return {"changed": False}

    def low_level(self, cmd, **_):
        prefix = cmd.split("/var/lib/apt/lists/", 1)[1].split("*", 1)[0].strip("'")
        return {"rc": 0 if prefix in self.lists else 2, "stdout": "", "stderr": ""}


def run(node, check_mode=False, family="Debian", **args):
    task = SimpleNamespace(
        args={**ARGS, **args}, check_mode=check_mode, async_val=0, action="signed_repository"
    )
    connection = mock.MagicMock()
    connection._shell.tmpdir = "/tmp/x"
    loaders = (mock.MagicMock(), mock.MagicMock(), mock.MagicMock())
    plugin = action_plugin.ActionModule(task, connection, *loaders)
    plugin._execute_module = lambda **kw: node.execute_module(plugin, **kw)
    plugin._low_level_execute_command = node.low_level
    return plugin.run(task_vars={"ansible_facts": {"os_family": family}})


LIST_FILE = "mirror.site:8080_cuda_debian12_x86%5f64_Packages"
SOURCE = f"source:deb [signed-by=/etc/apt/keyrings/nvidia-cuda.asc] {URL} /"


def test_the_lists_file_of_a_flat_repository():
    assert action_plugin.flat_list_file(URL) == LIST_FILE
    assert action_plugin.flat_list_file(URL.rstrip("/")) == LIST_FILE


def test_a_fresh_node_gets_the_pinned_key_the_source_and_a_refreshed_index():
    conflicting = ARGS["remove"]
    node = Node(files=conflicting)
    result = run(node)
    assert result["changed"] and not result["pending"]
    assert node.files == {ARGS["keyring"], SOURCE}  # both conflicting sources removed
    get_url = next(args for name, args in node.calls if name == "get_url")
    assert get_url["checksum"] == f"sha256:{KEY}" and get_url["dest"] == ARGS["keyring"]
    assert ("apt", {"update_cache": True}) in node.calls


def test_a_converged_node_changes_nothing_and_keeps_its_index():
    node = Node(files={ARGS["keyring"], SOURCE}, lists={LIST_FILE})
    result = run(node)
    assert not result["changed"] and not result["pending"]
    assert not any(name == "apt" for name, _ in node.calls)


def test_a_missing_index_is_fetched_again():
    node = Node(files={ARGS["keyring"], SOURCE})
    run(node)
    assert ("apt", {"update_cache": True}) in node.calls


def test_check_mode_writes_nothing_and_says_the_repository_is_pending():
    node = Node()
    result = run(node, check_mode=True)
    assert result["changed"] and result["pending"]
    assert node.files == set() and not any(name == "apt" for name, _ in node.calls)


def test_an_unpinned_key_is_refused_with_the_fix():
    with pytest.raises(AnsibleActionFail, match=r"is not a sha256 digest\. Fix: set it to the sha256 of"):
        run(Node(), key_sha256="latest")


def test_dnf_writes_the_repository_with_the_key_and_imports_it_where_asked():
    node = Node()
    run(node, family="RedHat", import_key=True, repo_gpgcheck=False, description="NVIDIA CUDA")
    names = [name for name, _ in node.calls]
    assert names == ["file", "get_url", "file", "file", "rpm_key", "yum_repository"]
    repo = node.calls[-1][1]
    assert repo["gpgkey"] == "file:///etc/apt/keyrings/nvidia-cuda.asc" and repo["gpgcheck"] is True
