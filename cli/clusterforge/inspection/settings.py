"""The inspection variables of the inventory (docs/design.md, "Inventory variables"), checked once."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cfcore.inputs import is_template

from clusterforge.errors import InvalidInput
from clusterforge.validation.inventory import Inventory, is_encrypted

DEFAULTS: dict[str, Any] = {
    "inspect_history_dir": "/var/lib/clusterforge/inspect",
    "inspect_quick_schedule": "*-*-* 03:15:00",
    "inspect_full_schedule": "Sun *-*-* 04:30:00",
    "inspect_keep_runs": 60,
    "inspect_keep_days": 90,
    "inspect_textfile_dir": None,
    "inspect_auto_quarantine": False,
}
_TYPES = {
    "inspect_history_dir": str,
    "inspect_quick_schedule": str,
    "inspect_full_schedule": str,
    "inspect_keep_runs": int,
    "inspect_keep_days": int,
    "inspect_textfile_dir": str,
    "inspect_auto_quarantine": bool,
}


@dataclass(frozen=True)
class Settings:
    history_dir: Path
    quick_schedule: str
    full_schedule: str
    keep_runs: int
    keep_days: int
    textfile_dir: Path | None
    auto_quarantine: bool


def read_settings(inventory: Inventory) -> Settings:
    """The inspect_* variables as the inventory's first host sees them (group_vars/all), with defaults."""
    view = inventory.vars_of(inventory.targets[0]) if inventory.targets else {}
    values = {name: _checked(inventory, name, view.get(name, default)) for name, default in DEFAULTS.items()}
    return Settings(
        history_dir=Path(values["inspect_history_dir"]),
        quick_schedule=values["inspect_quick_schedule"],
        full_schedule=values["inspect_full_schedule"],
        keep_runs=values["inspect_keep_runs"],
        keep_days=values["inspect_keep_days"],
        textfile_dir=Path(values["inspect_textfile_dir"]) if values["inspect_textfile_dir"] else None,
        auto_quarantine=values["inspect_auto_quarantine"],
    )


def _checked(inventory: Inventory, name: str, value: Any) -> Any:
    if value is None or value == DEFAULTS[name]:
        return value
    wanted = _TYPES[name]
    where = f"{name} in {inventory.path} (group_vars/all)"
    if is_template(value) or is_encrypted(value):
        raise InvalidInput(f"{where} is templated or vaulted", f"write {name} as a literal value")
    if wanted is int and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise InvalidInput(
            f"{where} must be a whole number >= 0, got {value!r}", f"e.g. {name}: 60 (0: no limit)"
        )
    if wanted is bool and not isinstance(value, bool):
        raise InvalidInput(f"{where} must be true or false, got {value!r}", f"e.g. {name}: true")
    if wanted is str and (not isinstance(value, str) or not value.strip()):
        raise InvalidInput(f"{where} must be a non-empty string, got {value!r}", f"set {name} or remove it")
    return value
