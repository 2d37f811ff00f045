"""The run ledger shared by bring-up and upgrade runs (docs/design.md, "Bring-up runs")."""
