"""Load role base's Python plugins (the collection's plugins/modules and plugins/filter) by path."""

from __future__ import annotations

import importlib.util
from pathlib import Path

PLUGINS = Path(__file__).resolve().parents[3] / "plugins"


def load_role_plugin(relative_path: str):
    path = PLUGINS / relative_path
    spec = importlib.util.spec_from_file_location(f"base_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
