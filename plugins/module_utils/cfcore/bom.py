"""The version bill of materials: well-formed versions that work together on a host's SKU.

One implementation for `clusterforge inventory check` (every host of an
inventory, before anything runs) and for the playbooks (action `bom_check`,
which reads `input_variables()`: a host whose BOM breaks a rule fails before
any package changes), so both say the same thing in the same words.

The rules and their sources are data (data/bom_rules.yml); the SKU minimums
come from the catalog (data/skus.yml). `bom_findings(value_of, sku_name, sku,
rules)` reads each BOM variable through `value_of(variable)`, which returns
the value, None when unset, or UNRESOLVED when it cannot be checked here (a
template only Ansible resolves, an undecrypted vault value): those variables
are left alone.

A finding is a dict: rule (stable id such as "bom.cuda_driver"), variable,
message, fix, severity ("error" | "warning"), source (the vendor document, or
None), of_value (True when the value itself is malformed, whichever host
reads it). Controller side only for loading (PyYAML); the rules are plain
Python over versions.py.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache

from . import versions

ERROR = "error"
WARNING = "warning"
UNRESOLVED = object()  # value_of's answer for a value that cannot be checked here
RULES_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "bom_rules.yml")
CATALOG_SOURCE = "ClusterForge SKU catalog (plugins/module_utils/cfcore/data/skus.yml), per-SKU vendor notes"
RULES_FILE = "plugins/module_utils/cfcore/data/bom_rules.yml"

_NCCL_CUDA = re.compile(r"\+cuda([0-9]+)\.([0-9]+)\Z")


class BomRules:
    """bom_rules.yml, with typed views of its tables."""

    def __init__(self, raw: dict):
        self.raw = raw

    def source(self, rule: str) -> str:
        return " ".join(str(self.raw[rule]["source"]).split())

    @property
    def cuda_minimum_driver(self) -> dict:
        return {int(k): v for k, v in self.raw["cuda_minimum_driver"]["by_major"].items()}

    @property
    def cuda_toolkit_driver(self) -> dict:
        return {versions.major_minor(k): v for k, v in self.raw["cuda_toolkit_driver"]["by_minor"].items()}

    @property
    def cuda_minimum_for_model(self) -> dict:
        return {k.lower(): v for k, v in self.raw["cuda_minimum_for_accelerator"]["by_model"].items()}

    @property
    def fabricmanager(self) -> dict:
        return self.raw["fabricmanager"]

    @property
    def kernel_modules(self) -> dict:
        return self.raw["kernel_modules"]

    @property
    def ascend_hdk_firmware(self) -> dict:
        """Driver version (lower case) -> the firmware released with it."""
        table = (self.raw.get("ascend_hdk_firmware") or {}).get("by_driver") or {}
        return {str(driver).lower(): str(firmware) for driver, firmware in table.items()}

    @property
    def cann_minimum_driver(self) -> list:
        """(CANN key, CANN version, minimum driver), oldest CANN first."""
        table = self.raw["cann_minimum_driver"]["by_cann"]
        return sorted(
            ((versions.version_key(cann), cann, driver) for cann, driver in table.items()), key=lambda e: e[0]
        )


def input_variables(rules: BomRules) -> tuple:
    """Every variable bom_findings reads: the versions of versions.FORMATS and the kernel modules' choice."""
    return (*versions.FORMATS, rules.kernel_modules["variable"])


@lru_cache(maxsize=None)
def load_rules() -> BomRules:
    import yaml  # controller side only

    with open(RULES_PATH, encoding="utf-8") as handle:
        rules = BomRules(yaml.safe_load(handle))
    _self_check(rules)
    return rules


def _self_check(rules: BomRules) -> None:
    """Every version in the rules has its format: a malformed rules file fails loudly, not per host."""
    drivers = [*rules.cuda_minimum_driver.values(), *rules.cuda_toolkit_driver.values()]
    for driver in drivers:
        if not versions.FORMATS["nvidia_driver_version"].matches(driver) and not re.fullmatch(
            r"[0-9]{3}", driver
        ):
            raise ValueError(f"bom_rules.yml: {driver!r} is not an NVIDIA driver version")
    for _key, cann, driver in rules.cann_minimum_driver:
        for variable, value in (("cann_version", cann), ("ascend_driver_version", driver)):
            problem = versions.format_problem(variable, value)
            if problem:
                raise ValueError(f"bom_rules.yml cann_minimum_driver: {problem}")
    for name in (
        "cuda_minimum_driver",
        "cuda_toolkit_driver",
        "fabricmanager",
        "kernel_modules",
        "nccl_cuda",
    ):
        rules.source(name)


def finding(rule, variable, message, fix, severity=ERROR, source=None, of_value=False) -> dict:
    return {
        "rule": rule,
        "variable": variable,
        "message": message,
        "fix": fix,
        "severity": severity,
        "source": source,
        "of_value": of_value,
    }


def bom_findings(value_of, sku_name: str, sku, rules: BomRules) -> list:
    """Every rule the host's BOM breaks, given its SKU spec (None when unknown: formats only)."""
    bom, found = _well_formed(value_of)
    accelerator = (sku or {}).get("accelerator") or {}
    if accelerator.get("vendor") == "nvidia":
        found += _nvidia(value_of, rules, bom, accelerator, sku_name)
    elif accelerator.get("vendor") == "huawei":
        found += _huawei(rules, bom, accelerator, sku_name)
        found += _ascend_firmware(value_of, rules, bom)
    return found


def _well_formed(value_of) -> tuple:
    """The BOM variables that are set and well-formed; a finding for each that is not."""
    bom, found = {}, []
    for variable, fmt in versions.FORMATS.items():
        value = value_of(variable)
        if value is None or value is UNRESOLVED or value == "":
            continue
        problem = versions.format_problem(variable, value)
        if problem:
            fix = f'quote the version as the vendor prints it: {variable}: "{fmt.example}"'
            found.append(finding("bom.format", variable, problem, fix, of_value=True))
        else:
            bom[variable] = value
    return bom, found


def _nvidia(value_of, rules: BomRules, bom: dict, acc: dict, sku: str) -> list:
    driver = bom.get("nvidia_driver_version")
    if driver is None:
        return []
    found = []
    minimum = int(acc["min_driver"])
    if versions.major(driver) < minimum:
        found.append(
            finding(
                "bom.sku_driver",
                "nvidia_driver_version",
                f"driver {driver} (branch R{versions.major(driver)}) is older than R{minimum}, "
                f"the oldest branch that supports SKU {sku} ({acc['model']})",
                f"use a driver of branch R{minimum} or newer for these hosts",
                source=CATALOG_SOURCE,
            )
        )
    found += _kernel_modules(value_of, rules, driver, acc, sku)
    found += _cuda(rules, driver, bom.get("cuda_version"), acc)
    found += _fabricmanager(rules, driver, bom, acc)
    found += _nccl(rules, bom)
    return found


def kernel_module_flavour(chosen, driver: str, rules: BomRules) -> str:
    """The flavour a driver install gets: the chosen one, else open from the rules' branch on."""
    default_open = versions.major(driver) >= int(rules.kernel_modules["default_open_from_branch"])
    return chosen or ("open" if default_open else "proprietary")


def _kernel_modules(value_of, rules: BomRules, driver: str, acc: dict, sku: str) -> list:
    spec = rules.kernel_modules
    variable, allowed = spec["variable"], spec["values"]
    chosen = value_of(variable)
    if chosen is UNRESOLVED:
        return []
    source = rules.source("kernel_modules")
    if chosen is not None and chosen not in allowed:
        return [
            finding(
                "bom.kernel_modules",
                variable,
                f"{variable} must be one of {', '.join(allowed)}, got {chosen!r}",
                f"set {variable}: open (required on Blackwell, recommended from R560) or proprietary",
                source=source,
            )
        ]
    effective = kernel_module_flavour(chosen, driver, rules)
    needed = acc["kernel_module_flavour"]
    if needed == "any" or effective == needed:
        return []
    if chosen:
        how = f"{variable} is {chosen!r}"
    else:
        how = f"{variable} is unset and R{versions.major(driver)} installs the {effective} modules by default"
    return [
        finding(
            "bom.kernel_modules",
            variable,
            f"SKU {sku} ({acc['model']}) needs the {needed} GPU kernel modules but {how}",
            f"set {variable}: {needed}",
            source=source,
        )
    ]


def _cuda(rules: BomRules, driver: str, cuda, acc: dict) -> list:
    if cuda is None:
        return []
    found = []
    major, minor = versions.major_minor(cuda)
    floor = rules.cuda_minimum_driver.get(major)
    if floor is None:
        found.append(
            finding(
                "bom.cuda_driver",
                "cuda_version",
                f"no driver compatibility data for CUDA {major}.x in the BOM rules",
                f"check the CUDA release notes, then add the major to cuda_minimum_driver in {RULES_FILE}",
                severity=WARNING,
            )
        )
    elif versions.version_key(driver) < versions.version_key(floor):
        found.append(
            finding(
                "bom.cuda_driver",
                "cuda_version",
                f"CUDA {cuda} needs driver >= {floor} (every CUDA {major}.x does), but "
                f"nvidia_driver_version is {driver}",
                f"raise nvidia_driver_version to {floor} or newer, or use an older cuda_version",
                source=rules.source("cuda_minimum_driver"),
            )
        )
    else:
        found += _cuda_toolkit(rules, driver, cuda, (major, minor))
    model_floor = rules.cuda_minimum_for_model.get(str(acc.get("model", "")).lower())
    if model_floor and versions.version_key(cuda) < versions.version_key(model_floor):
        found.append(
            finding(
                "bom.cuda_arch",
                "cuda_version",
                f"CUDA {cuda} cannot build code for {acc['model']} GPUs: their architecture needs "
                f"CUDA {model_floor} or newer",
                f'set cuda_version: "{model_floor}" or newer (with a driver that supports it)',
                source=rules.source("cuda_minimum_for_accelerator"),
            )
        )
    return found


def _cuda_toolkit(rules: BomRules, driver: str, cuda: str, major_minor: tuple) -> list:
    """Warn when the driver is older than the toolkit's own (it then runs by minor version compatibility)."""
    table = rules.cuda_toolkit_driver
    known = [key for key in table if key[0] == major_minor[0] and key <= major_minor]
    if not known:
        return []
    toolkit_driver = table[max(known)]
    if versions.version_key(driver) >= versions.version_key(toolkit_driver):
        return []
    return [
        finding(
            "bom.cuda_toolkit_driver",
            "cuda_version",
            f"CUDA {cuda} ships with driver {toolkit_driver}; {driver} runs it only through minor "
            "version compatibility (no PTX JIT of newer code, newer driver APIs fail)",
            f"raise nvidia_driver_version to {toolkit_driver} or newer, or lower cuda_version",
            severity=WARNING,
            source=rules.source("cuda_toolkit_driver"),
        )
    ]


def _fabricmanager(rules: BomRules, driver: str, bom: dict, acc: dict) -> list:
    spec = rules.fabricmanager
    variable = spec["variable"]
    if acc.get("interconnect") != spec["applies_to_interconnect"] or variable not in bom:
        return []  # unset: the role installs the driver's own version
    if bom[variable] == driver:
        return []
    return [
        finding(
            "bom.fabricmanager",
            variable,
            f"{variable} {bom[variable]} differs from nvidia_driver_version {driver}: "
            "nvidia-fabricmanager refuses to start on a different driver and the GPUs stay unusable "
            "(CUDA error 802, system not yet initialized)",
            f'set {variable}: "{{{{ nvidia_driver_version }}}}" (or unset it: it defaults to the driver)',
            source=rules.source("fabricmanager"),
        )
    ]


def _nccl(rules: BomRules, bom: dict) -> list:
    nccl, cuda = bom.get("nccl_version"), bom.get("cuda_version")
    match = _NCCL_CUDA.search(nccl or "")
    if not match or cuda is None:
        return []
    built_for = int(match.group(1))
    major = versions.major_minor(cuda)[0]
    if built_for == major:
        return []
    return [
        finding(
            "bom.nccl_cuda",
            "nccl_version",
            f"nccl_version {nccl} is a build for CUDA {built_for}.x but cuda_version is {cuda}",
            f"use the NCCL build for CUDA {major}.x (a version ending in +cuda{major}.<minor>)",
            source=rules.source("nccl_cuda"),
        )
    ]


def _huawei(rules: BomRules, bom: dict, acc: dict, sku: str) -> list:
    driver = bom.get("ascend_driver_version")
    if driver is None:
        return []
    found = []
    minimum = acc["min_driver"]
    if versions.version_key(driver) < versions.version_key(minimum):
        found.append(
            finding(
                "bom.sku_driver",
                "ascend_driver_version",
                f"Ascend driver {driver} is older than {minimum}, the oldest that supports SKU {sku} "
                f"({acc['model']})",
                f'use Ascend HDK {minimum} or newer (ascend_driver_version: "{minimum}")',
                source=CATALOG_SOURCE,
            )
        )
    cann = bom.get("cann_version")
    if cann:
        found += _cann(rules, driver, cann)
    return found


def _ascend_firmware(value_of, rules: BomRules, bom: dict) -> list:
    """Warn when ascend_firmware_version is not the firmware released with the driver's HDK."""
    driver, firmware = bom.get("ascend_driver_version"), value_of("ascend_firmware_version")
    if driver is None or firmware is None or firmware is UNRESOLVED or firmware == "":
        return []
    if not isinstance(firmware, str):
        return []  # the format check (versions.FORMATS) reports it
    released = rules.ascend_hdk_firmware.get(driver.lower())
    if released is None or released.lower() == firmware.lower():
        return []
    return [
        finding(
            "bom.ascend_firmware",
            "ascend_firmware_version",
            f"ascend_firmware_version {firmware} is not the firmware released with Ascend driver {driver} "
            f"({released}, the same HDK release); npu-smi may report the pair as incompatible",
            f'set ascend_firmware_version: "{released}", or the driver of the HDK release of {firmware}',
            severity=WARNING,
            source=rules.source("ascend_hdk_firmware"),
        )
    ]


def _cann(rules: BomRules, driver: str, cann: str) -> list:
    table = rules.cann_minimum_driver
    key = versions.version_key(versions.release_line(cann))
    older = [entry for entry in table if entry[0] <= key]
    source = rules.source("cann_minimum_driver")
    if not older or key > table[-1][0]:
        where = "older than" if not older else "newer than"
        return [
            finding(
                "bom.cann_driver",
                "cann_version",
                f"no driver compatibility data for CANN {cann} ({where} the table, which ends at "
                f"{table[-1][1]})",
                "look the CANN release up in Huawei's version matching table and add it to "
                f"cann_minimum_driver in {RULES_FILE}",
                severity=WARNING,
                source=source,
            )
        ]
    _key, base, needed = older[-1]
    if versions.version_key(driver) >= versions.version_key(needed):
        return []
    return [
        finding(
            "bom.cann_driver",
            "cann_version",
            f"CANN {cann} needs Ascend driver >= {needed} (qualified with CANN {base}), but "
            f"ascend_driver_version is {driver}",
            f'raise ascend_driver_version to "{needed}" or newer, or use an older cann_version',
            source=source,
        )
    ]
