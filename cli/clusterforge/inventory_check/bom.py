"""The version bill of materials: well-formed versions that work together on each host's SKU.

The rules and their sources are data (data/bom_rules.yml); the SKU minimums
come from the catalog (data/skus.yml). Checked per host on its effective
variables, so a group or host override of the BOM is checked too.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from cfcore import versions

from clusterforge.inventory_check.context import UNRESOLVED, Context, HostView
from clusterforge.inventory_check.problems import WARNING, Problem
from clusterforge.inventory_check.rules import BomRules

_NCCL_CUDA = re.compile(r"\+cuda([0-9]+)\.([0-9]+)\Z")
_CATALOG_SOURCE = "ClusterForge SKU catalog (plugins/module_utils/cfcore/data/skus.yml), per-SKU vendor notes"


def check_bom(ctx: Context) -> list[Problem]:
    problems: list[Problem] = []
    for view in ctx.views:
        bom, format_problems = _well_formed(view, ctx.rules)
        problems += format_problems
        sku = ctx.sku(view)
        accelerator = (sku or {}).get("accelerator") or {}
        sku_name = view.value("node_sku")
        if accelerator.get("vendor") == "nvidia":
            problems += _nvidia(view, ctx.rules, bom, accelerator, sku_name)
        elif accelerator.get("vendor") == "huawei":
            problems += _huawei(view, ctx.rules, bom, accelerator, sku_name)
    return problems


def _well_formed(view: HostView, rules: BomRules) -> tuple[dict[str, str], list[Problem]]:
    """The BOM variables that are set and well-formed; a problem for each that is not."""
    bom, problems = {}, []
    for variable, fmt in rules.formats.items():
        value = view.value(variable)
        if value is None or value is UNRESOLVED or value == "":
            continue
        problem = versions.format_problem(variable, value)
        if problem:
            problems.append(
                view.problem(
                    "bom.format",
                    variable,
                    problem,
                    f'quote the version as the vendor prints it: {variable}: "{fmt.example}"',
                    of_value=True,
                )
            )
        else:
            bom[variable] = value
    return bom, problems


def _nvidia(
    view: HostView, rules: BomRules, bom: dict[str, str], acc: dict[str, Any], sku: str
) -> list[Problem]:
    driver = bom.get("nvidia_driver_version")
    if driver is None:
        return []
    problems = []
    minimum = int(acc["min_driver"])
    if versions.major(driver) < minimum:
        problems.append(
            _sourced(
                view.problem(
                    "bom.sku_driver",
                    "nvidia_driver_version",
                    f"driver {driver} (branch R{versions.major(driver)}) is older than R{minimum}, "
                    f"the oldest branch that supports SKU {sku} ({acc['model']})",
                    f"use a driver of branch R{minimum} or newer for these hosts",
                ),
                _CATALOG_SOURCE,
            )
        )
    problems += _kernel_modules(view, rules, driver, acc, sku)
    problems += _cuda(view, rules, driver, bom.get("cuda_version"), acc)
    problems += _fabricmanager(view, rules, driver, bom, acc)
    problems += _nccl(view, rules, bom)
    return problems


def _kernel_modules(
    view: HostView, rules: BomRules, driver: str, acc: dict[str, Any], sku: str
) -> list[Problem]:
    spec = rules.kernel_modules
    variable, allowed = spec["variable"], spec["values"]
    chosen = view.value(variable)
    if chosen is UNRESOLVED:
        return []
    if chosen is not None and chosen not in allowed:
        return [
            _sourced(
                view.problem(
                    "bom.kernel_modules",
                    variable,
                    f"{variable} must be one of {', '.join(allowed)}, got {chosen!r}",
                    f"set {variable}: open (required on Blackwell, recommended from R560) or proprietary",
                ),
                rules.source("kernel_modules"),
            )
        ]
    default_open = versions.major(driver) >= int(spec["default_open_from_branch"])
    effective = chosen or ("open" if default_open else "proprietary")
    needed = acc["kernel_module_flavour"]
    if needed == "any" or effective == needed:
        return []
    how = (
        f"{variable} is {chosen!r}"
        if chosen
        else f"{variable} is unset and R{versions.major(driver)} installs "
    )
    how += "" if chosen else f"the {effective} modules by default"
    return [
        _sourced(
            view.problem(
                "bom.kernel_modules",
                variable,
                f"SKU {sku} ({acc['model']}) needs the {needed} GPU kernel modules but {how}",
                f"set {variable}: {needed}",
            ),
            rules.source("kernel_modules"),
        )
    ]


def _cuda(
    view: HostView, rules: BomRules, driver: str, cuda: str | None, acc: dict[str, Any]
) -> list[Problem]:
    if cuda is None:
        return []
    problems = []
    major, minor = versions.major_minor(cuda)
    floor = rules.cuda_minimum_driver.get(major)
    if floor is None:
        problems.append(
            view.problem(
                "bom.cuda_driver",
                "cuda_version",
                f"no driver compatibility data for CUDA {major}.x in the BOM rules",
                "check the CUDA release notes, then add the major to cuda_minimum_driver in "
                "plugins/module_utils/cfcore/data/bom_rules.yml",
                severity=WARNING,
            )
        )
    elif versions.version_key(driver) < versions.version_key(floor):
        problems.append(
            _sourced(
                view.problem(
                    "bom.cuda_driver",
                    "cuda_version",
                    f"CUDA {cuda} needs driver >= {floor} (every CUDA {major}.x does), but "
                    f"nvidia_driver_version is {driver}",
                    f"raise nvidia_driver_version to {floor} or newer, or use an older cuda_version",
                ),
                rules.source("cuda_minimum_driver"),
            )
        )
    else:
        problems += _cuda_toolkit(view, rules, driver, cuda, (major, minor))
    model_floor = rules.cuda_minimum_for_model.get(str(acc.get("model", "")).lower())
    if model_floor and versions.version_key(cuda) < versions.version_key(model_floor):
        problems.append(
            _sourced(
                view.problem(
                    "bom.cuda_arch",
                    "cuda_version",
                    f"CUDA {cuda} cannot build code for {acc['model']} GPUs: their architecture needs "
                    f"CUDA {model_floor} or newer",
                    f'set cuda_version: "{model_floor}" or newer (with a driver that supports it)',
                ),
                rules.source("cuda_minimum_for_accelerator"),
            )
        )
    return problems


def _cuda_toolkit(
    view: HostView, rules: BomRules, driver: str, cuda: str, major_minor: tuple[int, int]
) -> list[Problem]:
    """Warn when the driver is older than the toolkit's own (it then runs by minor version compatibility)."""
    table = rules.cuda_toolkit_driver
    known = [key for key in table if key[0] == major_minor[0] and key <= major_minor]
    if not known:
        return []
    toolkit_driver = table[max(known)]
    if versions.version_key(driver) >= versions.version_key(toolkit_driver):
        return []
    return [
        _sourced(
            view.problem(
                "bom.cuda_toolkit_driver",
                "cuda_version",
                f"CUDA {cuda} ships with driver {toolkit_driver}; {driver} runs it only through minor "
                "version compatibility (no PTX JIT of newer code, newer driver APIs fail)",
                f"raise nvidia_driver_version to {toolkit_driver} or newer, or lower cuda_version",
                severity=WARNING,
            ),
            rules.source("cuda_toolkit_driver"),
        )
    ]


def _fabricmanager(
    view: HostView, rules: BomRules, driver: str, bom: dict[str, str], acc: dict[str, Any]
) -> list[Problem]:
    spec = rules.fabricmanager
    variable = spec["variable"]
    if acc.get("interconnect") != spec["applies_to_interconnect"] or variable not in bom:
        return []  # unset: the role installs the driver's own version
    if bom[variable] == driver:
        return []
    return [
        _sourced(
            view.problem(
                "bom.fabricmanager",
                variable,
                f"{variable} {bom[variable]} differs from nvidia_driver_version {driver}: "
                "nvidia-fabricmanager refuses to start on a different driver and the GPUs stay unusable",
                f'set {variable}: "{{{{ nvidia_driver_version }}}}" (or unset it: it defaults to the driver)',
            ),
            rules.source("fabricmanager"),
        )
    ]


def _nccl(view: HostView, rules: BomRules, bom: dict[str, str]) -> list[Problem]:
    nccl, cuda = bom.get("nccl_version"), bom.get("cuda_version")
    match = _NCCL_CUDA.search(nccl or "")
    if not match or cuda is None:
        return []
    built_for = int(match.group(1))
    major = versions.major_minor(cuda)[0]
    if built_for == major:
        return []
    return [
        _sourced(
            view.problem(
                "bom.nccl_cuda",
                "nccl_version",
                f"nccl_version {nccl} is a build for CUDA {built_for}.x but cuda_version is {cuda}",
                f"use the NCCL build for CUDA {major}.x (a version ending in +cuda{major}.<minor>)",
            ),
            rules.source("nccl_cuda"),
        )
    ]


def _huawei(
    view: HostView, rules: BomRules, bom: dict[str, str], acc: dict[str, Any], sku: str
) -> list[Problem]:
    driver = bom.get("ascend_driver_version")
    if driver is None:
        return []
    problems = []
    minimum = acc["min_driver"]
    if versions.version_key(driver) < versions.version_key(minimum):
        problems.append(
            _sourced(
                view.problem(
                    "bom.sku_driver",
                    "ascend_driver_version",
                    f"Ascend driver {driver} is older than {minimum}, the oldest that supports SKU {sku} "
                    f"({acc['model']})",
                    f'use Ascend HDK {minimum} or newer (ascend_driver_version: "{minimum}")',
                ),
                _CATALOG_SOURCE,
            )
        )
    cann = bom.get("cann_version")
    if cann:
        problems += _cann(view, rules, driver, cann)
    return problems


def _cann(view: HostView, rules: BomRules, driver: str, cann: str) -> list[Problem]:
    table = rules.cann_minimum_driver
    key = versions.version_key(versions.release_line(cann))
    older = [entry for entry in table if entry[0] <= key]
    if not older or key > table[-1][0]:
        newest = table[-1][1]
        where = "older than" if not older else "newer than"
        return [
            _sourced(
                view.problem(
                    "bom.cann_driver",
                    "cann_version",
                    f"no driver compatibility data for CANN {cann} ({where} the table, which ends at "
                    f"{newest})",
                    "look the CANN release up in Huawei's version matching table and add it to "
                    "cann_minimum_driver in plugins/module_utils/cfcore/data/bom_rules.yml",
                    severity=WARNING,
                ),
                rules.source("cann_minimum_driver"),
            )
        ]
    _key, base, needed = older[-1]
    if versions.version_key(driver) >= versions.version_key(needed):
        return []
    return [
        _sourced(
            view.problem(
                "bom.cann_driver",
                "cann_version",
                f"CANN {cann} needs Ascend driver >= {needed} (qualified with CANN {base}), but "
                f"ascend_driver_version is {driver}",
                f'raise ascend_driver_version to "{needed}" or newer, or use an older cann_version',
            ),
            rules.source("cann_minimum_driver"),
        )
    ]


def _sourced(problem: Problem, source: str) -> Problem:
    return replace(problem, source=source)
