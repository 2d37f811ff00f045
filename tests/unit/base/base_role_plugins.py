"""Load role base's Python plugins (role-local library/ and filter_plugins/) by path."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROLE = Path(__file__).resolve().parents[3] / "roles" / "base"


def load_role_plugin(relative_path: str):
    path = ROLE / relative_path
    spec = importlib.util.spec_from_file_location(f"base_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
