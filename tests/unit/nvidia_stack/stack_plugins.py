"""The NVIDIA stack roles' filter plugin (plugins/filter/nvidia_stack.py), loaded as Ansible loads it:
through the checkout's collection link (.collections/ansible_collections/clusterforge/cluster)."""

from __future__ import annotations

import importlib

from ansible.plugins.loader import init_plugin_loader
from clusterforge.ansible_env import ensure_collection_link

init_plugin_loader([str(ensure_collection_link().parents[2])])


def load_plugin(name: str):
    """plugins/filter/<name>.py of the collection, as a Python module."""
    return importlib.import_module(f"ansible_collections.clusterforge.cluster.plugins.filter.{name}")
