"""plugins/action/pinned_packages.py and cfcore/package_pins.py: refuse, install, hold in one task.

The node is a small fake: what the repository lists (apt-cache madison / dnf list), what is
installed and held, and the package manager's module (apt or dnf) that changes only what differs.
"""

from __future__ import annotations

import importlib
import shlex
from types import SimpleNamespace
from unittest import mock

import pytest
from ansible.errors import AnsibleActionFail
from cfcore import package_pins
from stack_plugins import load_plugin  # noqa: F401  (sets up the collection's import path)

action_plugin = importlib.import_module(
    "ansible_collections.clusterforge.cluster.plugins.action.pinned_packages"
)

MADISON = """\
  libnccl2 | 2.26.2-1+cuda12.8 | https://repo/cuda/debian12/x86_64  Packages
  libnccl2 | 2.21.5-1+cuda12.4 | https://repo/cuda/debian12/x86_64  Packages
libnccl-dev | 2.26.2-1+cuda12.8 | https://repo/cuda/debian12/x86_64  Packages
"""
WANTED = {"libnccl2": "2.26.2-1+cuda12.8", "libnccl-dev": "2.26.2-1+cuda12.8"}
SPECS = ["libnccl2=2.26.2-1+cuda12.8", "libnccl-dev=2.26.2-1+cuda12.8"]


class Node:
    """The node's packages: name -> version installed, and the held names."""

    def __init__(self, listing=MADISON, installed=None, held=()):
        self.listing = listing
        self.installed = dict(installed or {})
        self.held = set(held)
        self.modules = []  # (module name, args) in the order they ran
        self.commands = []
        self.check_mode = False

    def execute_module(self, module_name=None, module_args=None, task_vars=None, **_):
        check = self.check_mode  # what ActionBase._execute_module passes as _ansible_check_mode
        self.modules.append((module_name, {k: v for k, v in module_args.items() if not k.startswith("_")}))
        name = module_args.get("name")
        if module_name.endswith((".apt", ".dnf")) and module_args.get("state") == "present":
            sep = "=" if module_name.endswith(".apt") else "-"
            wanted = dict(spec.split(sep, 1) if sep in spec else (spec, "any") for spec in name)
            changed = any(
                self.installed.get(n) != v and not (v == "any" and n in self.installed)
                for n, v in wanted.items()
            )
            if changed and not check:
                self.installed.update(wanted)
            return {"changed": changed}
        if module_name.endswith((".apt", ".dnf")) and module_args.get("state") == "absent":
            gone = [n for n in name if n in self.installed]
            if gone and not check:
                for n in gone:
                    self.installed.pop(n)
            return {"changed": bool(gone)}
        return {"changed": False}

    def low_level(self, cmd, **_):
        argv = shlex.split(cmd)[1:]  # drop LC_ALL=C
        self.commands.append(argv)
        if argv[:2] == ["apt-cache", "madison"] or argv[:2] == ["dnf", "list"]:
            return {"rc": 0, "stdout": self.listing, "stderr": ""}
        if argv[0] == "dpkg-query":
            lines = [
                f"{n} {'hold' if n in self.held else 'install'} ok installed"
                for n in argv[3:]
                if n in self.installed
            ]
            return {"rc": 0 if len(lines) == len(argv) - 3 else 1, "stdout": "\n".join(lines), "stderr": ""}
        if argv[:2] == ["apt-mark", "hold"]:
            self.held.update(argv[2:])
            return {"rc": 0, "stdout": "", "stderr": ""}
        return {"rc": 127, "stdout": "", "stderr": f"{argv[0]}: not found"}


def run(node, check_mode=False, family="Debian", **args):
    task_args = {
        "wanted": WANTED,
        "specs": SPECS,
        "refusal": "nccl_version 2.26.2",
        "fix": "set nccl_version",
    }
    task_args.update(args)
    task = SimpleNamespace(args=task_args, check_mode=check_mode, async_val=0, action="pinned_packages")
    connection = mock.MagicMock()
    connection._shell.tmpdir = "/tmp/x"
    plugin = action_plugin.ActionModule(
        task, connection, mock.MagicMock(), mock.MagicMock(), mock.MagicMock()
    )
    node.check_mode = check_mode
    plugin._execute_module = node.execute_module
    plugin._low_level_execute_command = node.low_level
    return plugin.run(task_vars={"ansible_facts": {"os_family": family}})


def test_fresh_node_installs_then_holds():
    node = Node()
    result = run(node)
    assert result["changed"] and not result["pending"]
    assert node.installed == {"libnccl2": "2.26.2-1+cuda12.8", "libnccl-dev": "2.26.2-1+cuda12.8"}
    assert node.held == {"libnccl2", "libnccl-dev"}
    assert (
        result["msg"]
        == "installed libnccl2=2.26.2-1+cuda12.8, libnccl-dev=2.26.2-1+cuda12.8; held libnccl2, libnccl-dev"
    )
    apt_args = node.modules[0][1]
    assert (
        apt_args["allow_downgrade"]
        and apt_args["allow_change_held_packages"]
        and not apt_args["install_recommends"]
    )


def test_converged_node_changes_nothing_and_marks_nothing():
    node = Node(installed=dict(WANTED), held=WANTED)
    result = run(node)
    assert not result["changed"]
    assert ["apt-mark", "hold", "libnccl2"] not in node.commands and not any(
        c[0] == "apt-mark" for c in node.commands
    )


def test_one_unheld_package_is_held_alone():
    node = Node(installed=dict(WANTED), held={"libnccl2"})
    result = run(node)
    assert result["changed"] and node.commands[-1] == ["apt-mark", "hold", "libnccl-dev"]


def test_version_the_repository_lacks_is_refused_before_anything_changes():
    node = Node(listing=MADISON.replace("2.26.2-1+cuda12.8", "2.27.3-1+cuda12.9"))
    with pytest.raises(AnsibleActionFail) as failure:
        run(node)
    message = str(failure.value)
    assert message.startswith("nccl_version 2.26.2: libnccl2 2.26.2-1+cuda12.8 is not in the CUDA repository")
    assert "it offers: 2.27.3-1+cuda12.9, 2.21.5-1+cuda12.4" in message and message.endswith(
        "Fix: set nccl_version"
    )
    assert node.modules == []


def test_check_mode_ahead_of_the_repository_reports_instead_of_refusing():
    node = Node(listing="")
    result = run(
        node, check_mode=True, repo_pending=True, pending_effects="nccl-tests are built after a real run"
    )
    assert result["pending"] and result["repo_missing"] and result["changed"]
    assert "does not offer libnccl2 2.26.2-1+cuda12.8" in result["msg"]
    assert result["warnings"][0].endswith("; nccl-tests are built after a real run.")
    assert node.modules == []


def test_check_mode_with_the_repository_in_place_still_refuses():
    with pytest.raises(AnsibleActionFail, match="no version at all"):
        run(Node(listing=""), check_mode=True, repo_pending=False)


def test_check_mode_previews_the_install_and_holds_nothing():
    node = Node()
    result = run(node, check_mode=True)
    assert result["pending"] and result["changed"] and not result["repo_missing"]
    assert node.installed == {} and node.held == set()
    assert not any(c[0] in ("apt-mark", "dpkg-query") for c in node.commands)


def test_check_mode_on_a_converged_node_reports_no_change():
    node = Node(installed=dict(WANTED), held=WANTED)
    result = run(node, check_mode=True)
    assert not result["changed"] and not result["pending"]


def test_conflicting_packages_are_purged_first():
    node = Node(installed={"datacenter-gpu-manager": "1:3.3.9"})
    run(node, remove=["datacenter-gpu-manager"])
    assert node.modules[0] == (
        "ansible.legacy.apt",
        {
            "name": ["datacenter-gpu-manager"],
            "state": "absent",
            "purge": True,
            "allow_change_held_packages": True,
        },
    )
    assert "datacenter-gpu-manager" not in node.installed


def test_newest_matching_build_is_chosen_when_no_specs_are_given():
    listing = (
        "datacenter-gpu-manager-exporter | 1:4.1.3-1 | https://repo Packages\n"
        "datacenter-gpu-manager-exporter | 1:4.1.3-2 | https://repo Packages\n"
        "datacenter-gpu-manager-exporter | 1:4.2.0-1 | https://repo Packages\n"
    )
    node = Node(listing=listing)
    run(node, wanted={"datacenter-gpu-manager-exporter": "4.1.3-*"}, specs=None)
    assert node.installed == {"datacenter-gpu-manager-exporter": "1:4.1.3-2"}


def test_dnf_installs_without_the_lock_then_locks():
    listing = "libnccl.x86_64   2.26.2-1+cuda12.8   cuda-rhel9-x86_64\n"
    node = Node(listing=listing)
    run(node, family="RedHat", wanted={"libnccl": "2.26.2-1+cuda12.8"}, specs=None)
    names = [(name, args.get("name"), args.get("state")) for name, args in node.modules]
    assert names == [
        ("ansible.legacy.dnf", ["python3-dnf-plugin-versionlock"], "present"),
        ("ansible.legacy.dnf", ["libnccl-2.26.2-1+cuda12.8"], "present"),
        ("community.general.dnf_versionlock", ["libnccl"], "absent"),
        ("community.general.dnf_versionlock", ["libnccl"], "present"),
    ]
    assert node.modules[1][1]["disable_plugin"] == ["versionlock"]


def test_unknown_os_family_is_an_error_naming_it():
    refusal = r"pinned_packages supports the Debian .* \(Suse family\)\. Fix:"
    with pytest.raises(AnsibleActionFail, match=refusal):
        run(Node(), family="Suse")


def test_not_held_reads_dpkg_query_and_counts_unknown_packages_as_not_held():
    selections = "libnccl2 hold ok installed\nlibnccl-dev install ok installed\n"
    assert package_pins.not_held(selections, ["libnccl2", "libnccl-dev", "libnccl-extra"]) == [
        "libnccl-dev",
        "libnccl-extra",
    ]
    assert package_pins.not_held("libnccl2:amd64 hold ok installed", ["libnccl2"]) == []


def test_install_specs_keep_the_epoch_for_apt_only():
    chosen = {"datacenter-gpu-manager-4-core": "1:4.2.3-1"}
    assert package_pins.install_specs(chosen, "apt") == ["datacenter-gpu-manager-4-core=1:4.2.3-1"]
    assert package_pins.install_specs(chosen, "dnf") == ["datacenter-gpu-manager-4-core-4.2.3-1"]
