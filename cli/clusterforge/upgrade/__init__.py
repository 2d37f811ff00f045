"""Rolling upgrades of a component across the fleet (docs/design.md, "Rolling upgrades")."""
