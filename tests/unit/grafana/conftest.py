"""tests/monitoring (metric_names, exporter_metrics.yml) on sys.path for the Grafana tests."""

from __future__ import annotations

import sys
from pathlib import Path

MONITORING = Path(__file__).resolve().parents[2] / "monitoring"
if str(MONITORING) not in sys.path:
    sys.path.insert(0, str(MONITORING))
