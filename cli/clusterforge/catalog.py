"""The SKU catalog as the CLI uses it: cfcore.catalog (the one implementation,
shared with the collection's playbooks and modules), with its input errors
raised as the CLI's InvalidInput (exit 2)."""

from __future__ import annotations

from typing import Any

from cfcore import catalog as _catalog
from cfcore.catalog import (  # noqa: F401  (re-exported)
    LINK_LAYERS,
    MIG_MODES,
    MODULE_FLAVOURS,
    OVERRIDE_VARIABLE,
    SUBNET_RULES,
    VENDOR_GROUPS,
    unknown_sku_fix,
    unknown_sku_message,
    validate_catalog,
)
from cfcore.inputs import InputError

from clusterforge.errors import InvalidInput


class CatalogError(InvalidInput):
    """cfcore.catalog.CatalogError as an InvalidInput; `issues` as there."""

    def __init__(self, err: _catalog.CatalogError):
        super().__init__(err.message, err.fix)
        self.issues = err.issues


def load_catalog(overrides: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    try:
        return _catalog.load_catalog(overrides)
    except _catalog.CatalogError as err:
        raise CatalogError(err) from None


def sku_spec(name: str, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    try:
        return _catalog.sku_spec(name, overrides)
    except _catalog.CatalogError as err:
        raise CatalogError(err) from None
    except InputError as err:
        raise InvalidInput(err.message, err.fix) from None
