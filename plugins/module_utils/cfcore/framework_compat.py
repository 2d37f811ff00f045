"""Which PyTorch and torch_npu builds go with the BOM's CUDA, driver and CANN: the table
(data/framework_compat.yml), its one schema, and the rules `clusterforge inventory check` applies
(docs/design.md, "Framework readiness (`clusterforge validate --level framework`)").

    load_compat()                                   -> FrameworkCompat (schema-checked once)
    compat_findings(value_of, sku, compat, rules)   -> [finding]  (cfcore.bom's finding shape)

`value_of(variable)` answers as for cfcore.bom.bom_findings (None when unset, bom.UNRESOLVED when
only Ansible can resolve it). Rules, each naming the variable and the fix:
  framework.pytorch_cuda        pytorch_cuda_version is not a CUDA PyTorch builds its minor for (error);
                                a PyTorch minor not in the table (warning)
  framework.pytorch_cuda_major  the torch build's CUDA major differs from cuda_version's (error), or the
                                driver is older than that CUDA major needs (error, bom_rules.yml)
  framework.torch_npu_pytorch   torch_npu_version is not an extension of pytorch_version (error)
  framework.torch_npu_cann      torch_npu_version is not one made for cann_version (error); a CANN
                                or torch_npu release not in the table (warning)
Malformed versions are reported by the BOM's format check (versions.FORMATS) and left alone here.
Controller side: PyYAML is imported only when the table is loaded.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache

from . import versions
from .bom import ERROR, UNRESOLVED, WARNING, finding
from .inputs import SchemaError

COMPAT_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "framework_compat.yml")
COMPAT_FILE = "plugins/module_utils/cfcore/data/framework_compat.yml"
TABLES = {"pytorch_cuda": ("by_minor", "cuda"), "torch_npu_cann": ("by_cann", "torch_npu")}
ENTRY_KEYS = {"cuda", "torch_npu", "note"}

_MINOR = re.compile(r"[0-9]+\.[0-9]+", re.ASCII)
_NPU_BASE = re.compile(r"([0-9]+\.[0-9]+\.[0-9]+)", re.ASCII)


class CompatError(SchemaError):
    """data/framework_compat.yml breaks its schema."""

    WHAT = "framework compatibility table"
    SECTION = "Framework readiness (`clusterforge validate --level framework`)"


class FrameworkCompat:
    """The table with typed views: PyTorch minor -> CUDA versions, CANN release -> torch_npu versions."""

    def __init__(self, raw: dict):
        self.raw = raw

    def source(self, table: str) -> str:
        return " ".join(str(self.raw[table]["source"]).split())

    @property
    def pytorch_cuda(self) -> dict:
        return {minor: list(entry["cuda"]) for minor, entry in self.raw["pytorch_cuda"]["by_minor"].items()}

    @property
    def torch_npu_cann(self) -> dict:
        """CANN release (lower case) -> (CANN as written, [torch_npu versions])."""
        table = self.raw["torch_npu_cann"]["by_cann"]
        return {str(cann).lower(): (str(cann), list(entry["torch_npu"])) for cann, entry in table.items()}


def validate_compat(data) -> list:
    """Schema issues of the table as (key path, what is wrong); [] when it is well formed."""
    if not isinstance(data, dict):
        return [("(top)", f"must be a mapping, got {type(data).__name__}")]
    issues = []
    for unknown in sorted(set(map(str, data)) - set(TABLES)):
        issues.append((unknown, f"unknown table (known: {', '.join(TABLES)})"))
    for table, (index, values) in TABLES.items():
        spec = data.get(table)
        if not isinstance(spec, dict):
            issues.append((table, "missing, or not a mapping with source and " + index))
            continue
        if not isinstance(spec.get("source"), str) or not spec["source"].strip():
            issues.append((f"{table}.source", "must name the document the table comes from"))
        rows = spec.get(index)
        if not isinstance(rows, dict) or not rows:
            issues.append((f"{table}.{index}", "must be a non-empty mapping"))
            continue
        for key, entry in rows.items():
            issues += _entry_issues(f"{table}.{index}.{key}", table, key, entry, values)
    return issues


def _entry_issues(path: str, table: str, key, entry, values: str) -> list:
    issues = []
    if not isinstance(key, str):
        return [(path, "the key must be a quoted string (YAML reads 2.10 as the number 2.1)")]
    if table == "pytorch_cuda" and not _MINOR.fullmatch(key):
        issues.append((path, "must be a PyTorch minor release such as '2.6'"))
    if table == "torch_npu_cann" and versions.format_problem("cann_version", key):
        issues.append((path, versions.format_problem("cann_version", key)))
    if not isinstance(entry, dict):
        return [*issues, (path, f"must be a mapping with {values} (and an optional note)")]
    for unknown in sorted(set(map(str, entry)) - ENTRY_KEYS):
        issues.append((f"{path}.{unknown}", f"unknown key (known: {values}, note)"))
    listed = entry.get(values)
    if not isinstance(listed, list) or not listed:
        return [*issues, (f"{path}.{values}", "must be a non-empty list of quoted versions")]
    variable = "pytorch_cuda_version" if table == "pytorch_cuda" else "torch_npu_version"
    for item in listed:
        problem = versions.format_problem(variable, item)
        if problem:
            issues.append((f"{path}.{values}", problem))
    if "note" in entry and not isinstance(entry["note"], str):
        issues.append((f"{path}.note", "must be text"))
    return issues


@lru_cache(maxsize=None)
def load_compat() -> FrameworkCompat:
    import yaml  # controller side only

    with open(COMPAT_PATH, encoding="utf-8") as handle:
        data = yaml.safe_load(handle)
    issues = validate_compat(data)
    if issues:
        raise CompatError(issues, f"built-in {COMPAT_FILE}")
    return FrameworkCompat(data)


def torch_npu_base(version: str) -> str:
    """The PyTorch release a torch_npu version extends: 2.6.0.post3 -> 2.6.0."""
    match = _NPU_BASE.match(str(version))
    return match.group(1) if match else str(version)


def _set(value_of, variable: str):
    """The variable's value when it is set and well formed here (else None: unset, unresolved, malformed)."""
    value = value_of(variable)
    if value is None or value is UNRESOLVED or value == "" or not isinstance(value, str):
        return None
    return None if versions.format_problem(variable, value) else value


def compat_findings(value_of, sku, compat: FrameworkCompat, rules=None) -> list:
    """Every framework rule the host's BOM breaks, given its SKU spec (None when unknown)."""
    vendor = ((sku or {}).get("accelerator") or {}).get("vendor")
    pytorch = _set(value_of, "pytorch_version")
    found = []
    if vendor == "nvidia" and pytorch:
        found += _pytorch_cuda(value_of, pytorch, compat, rules)
    if vendor == "huawei":
        found += _torch_npu(value_of, pytorch, compat)
    return found


def _pytorch_cuda(value_of, pytorch: str, compat: FrameworkCompat, rules) -> list:
    minor = ".".join(pytorch.split(".")[:2])
    builds = compat.pytorch_cuda.get(minor)
    source = compat.source("pytorch_cuda")
    cuda, torch_cuda = _set(value_of, "cuda_version"), _set(value_of, "pytorch_cuda_version")
    if builds is None:
        return [
            finding(
                "framework.pytorch_cuda",
                "pytorch_version",
                f"PyTorch {minor} is not in the framework compatibility table (it knows "
                f"{', '.join(compat.pytorch_cuda)}): its CUDA builds are not checked",
                f"look PyTorch {minor} up in PyTorch's release compatibility matrix and add it to "
                f"pytorch_cuda in {COMPAT_FILE}",
                severity=WARNING,
                source=source,
            )
        ]
    found = []
    if torch_cuda is not None and not any(versions.same_version(torch_cuda, b) for b in builds):
        found.append(
            finding(
                "framework.pytorch_cuda",
                "pytorch_cuda_version",
                f"PyTorch {minor} has no build for CUDA {torch_cuda}: its builds are for CUDA "
                f"{', '.join(builds)}",
                f"set pytorch_cuda_version to one of {', '.join(builds)} (the +cuXY of the wheel), "
                "or a PyTorch release built for it",
                source=source,
            )
        )
    if cuda is None:
        return found
    major = versions.major(cuda)
    if torch_cuda is None:
        if not any(versions.major(b) == major for b in builds):
            found.append(
                finding(
                    "framework.pytorch_cuda_major",
                    "pytorch_version",
                    f"PyTorch {minor} has no build for CUDA {major}.x (cuda_version is {cuda}): its builds "
                    f"are for CUDA {', '.join(builds)}",
                    "use a PyTorch release with a CUDA "
                    f"{major}.x build, or the cuda_version of one of its builds",
                    source=source,
                )
            )
        return found
    if versions.major(torch_cuda) != major:
        found.append(
            finding(
                "framework.pytorch_cuda_major",
                "pytorch_cuda_version",
                f"the PyTorch build is for CUDA {torch_cuda} but cuda_version is {cuda}: extensions built "
                "with the node's toolkit do not load into it",
                f"use PyTorch's CUDA {major}.x build (pytorch_cuda_version: one of "
                f"{', '.join(b for b in builds if versions.major(b) == major) or 'none for this minor'})",
                source=source,
            )
        )
    found += _driver_for(value_of, torch_cuda, rules)
    return found


def _driver_for(value_of, torch_cuda: str, rules) -> list:
    """The driver must run the torch build's CUDA (bom_rules.yml cuda_minimum_driver)."""
    driver = _set(value_of, "nvidia_driver_version")
    if rules is None or driver is None:
        return []
    floor = rules.cuda_minimum_driver.get(versions.major(torch_cuda))
    if floor is None or versions.version_key(driver) >= versions.version_key(floor):
        return []
    return [
        finding(
            "framework.pytorch_cuda_major",
            "pytorch_cuda_version",
            f"the PyTorch build for CUDA {torch_cuda} needs NVIDIA driver >= {floor}, but "
            f"nvidia_driver_version is {driver}",
            f"raise nvidia_driver_version to {floor} or newer, or use an older CUDA build of PyTorch",
            source=rules.source("cuda_minimum_driver"),
        )
    ]


def _torch_npu(value_of, pytorch, compat: FrameworkCompat) -> list:
    npu = _set(value_of, "torch_npu_version")
    if npu is None:
        return []
    found = []
    source = compat.source("torch_npu_cann")
    base = torch_npu_base(npu)
    if pytorch and not versions.same_version(base, pytorch):
        found.append(
            finding(
                "framework.torch_npu_pytorch",
                "torch_npu_version",
                f"torch_npu {npu} extends PyTorch {base}, but pytorch_version is {pytorch}",
                f'set pytorch_version: "{base}", or the torch_npu release for PyTorch {pytorch}',
                source=source,
            )
        )
    cann = _set(value_of, "cann_version")
    if cann is None:
        return found
    table = compat.torch_npu_cann
    line = versions.release_line(cann).lower()
    every = {v.lower() for _written, listed in table.values() for v in listed}
    if line not in table or npu.lower() not in every:
        what = f"CANN {cann}" if line not in table else f"torch_npu {npu}"
        found.append(
            finding(
                "framework.torch_npu_cann",
                "torch_npu_version" if line in table else "cann_version",
                f"{what} is not in the framework compatibility table: torch_npu and CANN are not checked",
                f"look it up in the Ascend/pytorch README's version table and add it to torch_npu_cann in "
                f"{COMPAT_FILE}",
                severity=WARNING,
                source=source,
            )
        )
        return found
    written, listed = table[line]
    if npu.lower() in (v.lower() for v in listed):
        return found
    same_torch = [v for v in listed if torch_npu_base(v) == base]
    fix = (
        f'set torch_npu_version: "{same_torch[-1]}" (the release for PyTorch {base} and CANN {written})'
        if same_torch
        else f"use one of {', '.join(listed)} (with its PyTorch), or a CANN release made for torch_npu {npu}"
    )
    found.append(
        finding(
            "framework.torch_npu_cann",
            "torch_npu_version",
            f"torch_npu {npu} is not made for CANN {cann}: "
            f"the releases for CANN {written} are {', '.join(listed)}",
            fix,
            severity=ERROR,
            source=source,
        )
    )
    return found
