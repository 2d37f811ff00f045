"""The BOM compatibility rules (cfcore/data/bom_rules.yml), loaded and checked for shape.

The version formats are not here: they live with the version order in
cfcore/versions.py, the one version module of node and controller.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import yaml
from cfcore import versions


@dataclass(frozen=True)
class BomRules:
    raw: dict[str, Any]

    def source(self, rule: str) -> str:
        return " ".join(str(self.raw[rule]["source"]).split())

    @property
    def formats(self) -> dict[str, versions.VersionFormat]:
        return versions.FORMATS

    @property
    def cuda_minimum_driver(self) -> dict[int, str]:
        return {int(k): v for k, v in self.raw["cuda_minimum_driver"]["by_major"].items()}

    @property
    def cuda_toolkit_driver(self) -> dict[tuple[int, int], str]:
        return {versions.major_minor(k): v for k, v in self.raw["cuda_toolkit_driver"]["by_minor"].items()}

    @property
    def cuda_minimum_for_model(self) -> dict[str, str]:
        return {k.lower(): v for k, v in self.raw["cuda_minimum_for_accelerator"]["by_model"].items()}

    @property
    def fabricmanager(self) -> dict[str, Any]:
        return self.raw["fabricmanager"]

    @property
    def kernel_modules(self) -> dict[str, Any]:
        return self.raw["kernel_modules"]

    @property
    def cann_minimum_driver(self) -> list[tuple[versions.VersionKey, str, str]]:
        """(CANN key, CANN version, minimum driver), oldest CANN first."""
        table = self.raw["cann_minimum_driver"]["by_cann"]
        return sorted(
            ((versions.version_key(cann), cann, driver) for cann, driver in table.items()), key=lambda e: e[0]
        )


@cache
def load_rules() -> BomRules:
    text = resources.files("cfcore").joinpath("data/bom_rules.yml").read_text(encoding="utf-8")
    rules = BomRules(raw=yaml.safe_load(text))
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
