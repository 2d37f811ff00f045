"""Expected benchmark figures per SKU, and their one schema (docs/design.md, "Multi-node
performance validation").

The built-in figures are `data/perf_expectations.yml` beside this file; a site adds SKUs or
figures, or overrides keys of built-in ones, with the inventory variable `perf_expectations`
(same shape, merged per SKU and per figure, key by key). Every merged figure is validated, so
a typo in an override is reported with a "did you mean" instead of silently ignored.

    load_expectations(overrides=None)   -> {sku: {figure: spec}}
    expectation(sku, figure, *, sku_spec=None, overrides=None)   -> spec | None
    expectations_for(sku, *, sku_spec=None, overrides=None)      -> {figure: spec}

A spec is {typical, floor, warn (optional), source} for a bandwidth figure: below `floor`
the check fails, below `warn` it warns. `hccn_ping_loss_pct_max` is {max, source}. A SKU
without an `ib_write_bw_gbps` figure gets one derived from its catalog `hca.rate_gbps`
(`derived_ib_write_bw`). In an override, null removes: a SKU (all its figures), a figure,
or an optional key (`warn`). An override that changes a built-in figure's numbers without
giving a source gets a source saying so, so a report never cites a vendor figure for a
site's own number.

Controller side (the CLI, filter cf_perf_expectations): stdlib, plus PyYAML imported only
when the built-in file is loaded.
"""

from __future__ import annotations

import copy
import difflib
import os
from functools import lru_cache
from typing import Any

from .catalog import _kind, load_catalog
from .inputs import InputError, SchemaError

OVERRIDE_VARIABLE = "perf_expectations"
BUILTIN_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "perf_expectations.yml")
BUILTIN_FILE = "plugins/module_utils/cfcore/data/perf_expectations.yml"

# Figure -> unit, in the units the benchmarks print (docs/design.md).
BANDWIDTH_FIGURES = {
    "nccl_local_busbw_gbps": "GB/s",
    "nccl_pair_busbw_gbps": "GB/s",
    "h2d_gbps": "GB/s",
    "d2h_gbps": "GB/s",
    "ib_write_bw_gbps": "Gb/s",
    "hccl_local_algbw_gbps": "GB/s",
    "storage_write_mibps": "MiB/s",
    "storage_read_mibps": "MiB/s",
}
LOSS_FIGURES = {"hccn_ping_loss_pct_max": "%"}
FIGURES = {**BANDWIDTH_FIGURES, **LOSS_FIGURES}

BANDWIDTH_KEYS = ({"typical", "floor", "source"}, {"warn"})  # (required, optional)
LOSS_KEYS = ({"max", "source"}, set())
NUMERIC_KEYS = ("typical", "warn", "floor", "max")

IB_FIGURE = "ib_write_bw_gbps"
# ib_write_bw of a healthy port as fractions of the line rate: ~390 Gb/s on NDR 400G is 97.5 %.
IB_TYPICAL, IB_WARN, IB_FLOOR = 0.975, 0.95, 0.90


class ExpectationsError(SchemaError):
    """The expected figures (built-in or merged with a site's overrides) break the schema.

    `issues` lists (key path, what is wrong), e.g.
    ("hgx-h100-8gpu.nccl_local_busbw_gbps.floor", "must be at most typical (480), got 500").
    """

    WHAT = "expected performance figures"
    SECTION = "Multi-node performance validation"


@lru_cache(maxsize=None)
def builtin_text() -> str:
    with open(BUILTIN_PATH, encoding="utf-8") as handle:
        return handle.read()


@lru_cache(maxsize=None)
def _builtin() -> dict[str, Any]:
    import yaml  # controller side only

    data = yaml.safe_load(builtin_text())
    issues = validate_expectations(data)
    if issues:
        raise ExpectationsError(issues, f"built-in {BUILTIN_FILE}")
    # One copy per figure: YAML aliases (one spec shared by several SKUs) must not stay one object.
    return {
        str(sku): {str(figure): copy.deepcopy(spec) for figure, spec in (figures or {}).items()}
        for sku, figures in data.items()
    }


def load_expectations(
    overrides: dict[str, Any] | None = None, *, known_skus=None
) -> dict[str, dict[str, dict[str, Any]]]:
    """The built-in figures merged with a site's `perf_expectations`: {sku: {figure: spec}}.

    Returns a fresh copy. `known_skus` (the catalog's SKU names, when the caller has them)
    makes an override of an unknown SKU an error with a "did you mean". Raises
    ExpectationsError (an InputError) when the overrides are malformed or make a figure break
    the schema.
    """
    merged = copy.deepcopy(_builtin())
    if not overrides:
        return merged
    origin = f"inventory variable {OVERRIDE_VARIABLE}"
    if not isinstance(overrides, dict):
        raise ExpectationsError(
            [(OVERRIDE_VARIABLE, f"must be a mapping of SKU name to figures, got {_kind(overrides)}")], origin
        )
    issues: list[tuple[str, str]] = []
    for name, override in overrides.items():
        sku = str(name)
        if known_skus is not None and sku not in known_skus:
            issues.append((sku, _unknown("SKU", sku, known_skus) + " (a SKU of the catalog)"))
            continue
        if override is None:
            merged[sku] = {}
            continue
        if not isinstance(override, dict):
            issues.append((sku, f"must be a mapping of figure name to spec, or null, got {_kind(override)}"))
            continue
        merged[sku] = _merge_sku(merged.get(sku, {}), override)
    touched = {str(name): merged[str(name)] for name in overrides if str(name) in merged}
    issues += validate_expectations(touched)
    if issues:
        raise ExpectationsError(issues, origin)
    return merged


def expectation(
    sku_name: str,
    figure: str,
    *,
    sku_spec: dict[str, Any] | None = None,
    overrides: dict[str, Any] | None = None,
) -> dict[str, Any] | None:
    """The expected `figure` on SKU `sku_name`, or None when there is none.

    For `ib_write_bw_gbps` without an entry, the figure derived from the SKU's `hca.rate_gbps`.
    `sku_spec` is the SKU's catalog spec (the site's, merged with clusterforge_sku_catalog);
    None looks the SKU up in the built-in catalog. An unknown `figure` raises InputError.
    """
    if figure not in FIGURES:
        raise InputError(
            f"unknown performance figure {figure!r}" + _hint(figure, FIGURES),
            f"use one of: {', '.join(FIGURES)}",
        )
    figures = load_expectations(overrides).get(str(sku_name)) or {}
    return _resolve(str(sku_name), figures, figure, sku_spec)


def expectations_for(
    sku_name: str,
    *,
    sku_spec: dict[str, Any] | None = None,
    overrides: dict[str, Any] | None = None,
) -> dict[str, dict[str, Any]]:
    """Every expected figure of one SKU, {figure: spec}, the derived ib_write_bw_gbps included.

    What the controller hands to module perf_run; a SKU with no figures gets {} (its checks
    then warn "no expected figure").
    """
    figures = load_expectations(overrides).get(str(sku_name)) or {}
    found = {}
    for figure in FIGURES:
        spec = _resolve(str(sku_name), figures, figure, sku_spec)
        if spec is not None:
            found[figure] = spec
    return found


def _resolve(sku_name: str, figures: dict[str, Any], figure: str, sku_spec) -> dict[str, Any] | None:
    """The SKU's own figure, else (ib_write_bw_gbps only) the one derived from its HCA rate."""
    if figures.get(figure) is not None:
        return figures[figure]
    if figure != IB_FIGURE:
        return None
    spec = sku_spec if sku_spec is not None else load_catalog().get(sku_name)
    hca = spec.get("hca") if isinstance(spec, dict) else None
    rate = hca.get("rate_gbps") if isinstance(hca, dict) else None
    if _is_number(rate) and rate > 0:
        return derived_ib_write_bw(rate)
    return None


def derived_ib_write_bw(rate_gbps: float) -> dict[str, Any]:
    """ib_write_bw per rail from the line rate: typical 97.5 %, warn 95 %, floor 90 %."""
    return {
        "typical": round(rate_gbps * IB_TYPICAL, 1),
        "warn": round(rate_gbps * IB_WARN, 1),
        "floor": round(rate_gbps * IB_FLOOR, 1),
        "source": (
            f"derived from the catalog's hca.rate_gbps ({rate_gbps:g} Gb/s): typical 97.5 % of the "
            "line rate (ib_write_bw on a ConnectX-7 NDR 400G port measures ~390 Gb/s at large "
            "messages), warn below 95 %, fail below 90 %"
        ),
    }


# --- merge --------------------------------------------------------------------------


def _merge_sku(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Per figure, key by key; a null figure is removed. Schema errors are left to validation."""
    merged = copy.deepcopy(base)
    for name, spec in override.items():
        figure = str(name)
        if spec is None:
            merged.pop(figure, None)
        elif isinstance(spec, dict):
            merged[figure] = _merge_figure(merged.get(figure) or {}, spec)
        else:
            merged[figure] = copy.deepcopy(spec)
    return merged


def _merge_figure(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        if value is None:
            merged.pop(str(key), None)
        else:
            merged[str(key)] = value
    changed = sorted(str(key) for key in override if str(key) in NUMERIC_KEYS)
    if changed and "source" not in override and base.get("source"):
        # The built-in source describes the built-in numbers, not the site's.
        merged["source"] = (
            f"site override of {', '.join(changed)} ({OVERRIDE_VARIABLE}); built-in figure: {base['source']}"
        )
    return merged


# --- schema -------------------------------------------------------------------------


def validate_expectations(data: Any) -> list[tuple[str, str]]:
    """Every schema violation of {sku: {figure: spec}} as (key path, what is wrong)."""
    if not isinstance(data, dict):
        return [("(expectations)", f"must be a mapping of SKU name to figures, got {_kind(data)}")]
    issues: list[tuple[str, str]] = []
    for sku, figures in data.items():
        if figures is None:
            continue
        if not isinstance(figures, dict):
            issues.append((str(sku), f"must be a mapping of figure name to spec, got {_kind(figures)}"))
            continue
        for figure, spec in figures.items():
            issues += _validate_figure(f"{sku}.{figure}", str(figure), spec)
    return issues


def _validate_figure(path: str, figure: str, spec: Any) -> list[tuple[str, str]]:
    if figure not in FIGURES:
        return [(path, "unknown figure" + _hint(figure, FIGURES))]
    if not isinstance(spec, dict):
        return [(path, f"must be a mapping, got {_kind(spec)}")]
    required, optional = LOSS_KEYS if figure in LOSS_FIGURES else BANDWIDTH_KEYS
    issues = [(f"{path}.{key}", "is missing") for key in sorted(required - set(map(str, spec)))]
    for key in sorted(set(map(str, spec)) - required - optional):
        issues.append((f"{path}.{key}", "unknown key" + _hint(key, sorted(required | optional))))
    if "source" in spec and not (isinstance(spec["source"], str) and spec["source"].strip()):
        why = "must say where the figure comes from (e.g. 'measured on healthy nodes, 2026-05')"
        issues.append((f"{path}.source", why))
    numbers = {}
    for key in NUMERIC_KEYS:
        if key not in spec or key not in required | optional:
            continue
        value = spec[key]
        if not _is_number(value) or value < 0:
            issues.append((f"{path}.{key}", f"must be a number >= 0, got {_kind(value)}"))
        else:
            numbers[key] = value
    if figure in LOSS_FIGURES:
        if "max" in numbers and numbers["max"] > 100:
            issues.append((f"{path}.max", f"is a percentage of packets lost: 0..100, got {numbers['max']:g}"))
        return issues
    typical, floor, warn = numbers.get("typical"), numbers.get("floor"), numbers.get("warn")
    if typical is not None and typical <= 0:
        issues.append((f"{path}.typical", "must be above 0"))
    if typical is not None and floor is not None and floor > typical:
        issues.append((f"{path}.floor", f"must be at most typical ({typical:g}), got {floor:g}"))
    if warn is not None and floor is not None and warn < floor:
        issues.append((f"{path}.warn", f"must lie between floor ({floor:g}) and typical, got {warn:g}"))
    if warn is not None and typical is not None and warn > typical:
        issues.append((f"{path}.warn", f"must lie between floor and typical ({typical:g}), got {warn:g}"))
    return issues


def _hint(name: str, known) -> str:
    close = difflib.get_close_matches(str(name), list(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _unknown(what: str, name: str, known) -> str:
    return f"unknown {what} {name!r}" + _hint(name, known)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
