"""The topology tests reuse the inventory-check helpers (tests/unit/inventory/invcase.py), the
Kubernetes render helpers (tests/unit/k8s/test_volcano_support.py) and the render harness's
validator (tests/k8s_render/validate.py)."""

from __future__ import annotations

import sys
from pathlib import Path

UNIT = Path(__file__).resolve().parents[1]
for folder in (UNIT / "inventory", UNIT / "k8s", UNIT.parent / "k8s_render"):
    sys.path.insert(0, str(folder))
