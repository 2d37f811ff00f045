"""`clusterforge bringup`: stages, progress, the run ledger (docs/design.md, "Bring-up runs")."""
