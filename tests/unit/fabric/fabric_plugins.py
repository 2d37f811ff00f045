"""The collection's fabric filters (plugins/filter/ipoib.py, fleet.py), loaded as Ansible loads them:
through the checkout's collection link (.collections/ansible_collections/...)."""

from __future__ import annotations

import importlib

from ansible.plugins.loader import init_plugin_loader
from clusterforge.ansible_env import ensure_collection_link

COLLECTIONS = ensure_collection_link().parents[2]
init_plugin_loader([str(COLLECTIONS)])


def load_plugin(kind: str, name: str):
    """plugins/<kind>/<name>.py of the collection, as a Python module."""
    return importlib.import_module(f"ansible_collections.clusterforge.cluster.plugins.{kind}.{name}")
