"""The BOM compatibility rules (data/bom_rules.yml), loaded and checked for shape."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import yaml

from clusterforge.inventory_check import versions


@dataclass(frozen=True)
class VersionFormat:
    pattern: re.Pattern[str]
    example: str


@dataclass(frozen=True)
class BomRules:
    raw: dict[str, Any]
    formats: dict[str, VersionFormat]

    def source(self, rule: str) -> str:
        return " ".join(str(self.raw[rule]["source"]).split())

    @property
    def cuda_minimum_driver(self) -> dict[int, str]:
        return {int(k): v for k, v in self.raw["cuda_minimum_driver"]["by_major"].items()}

    @property
    def cuda_toolkit_driver(self) -> dict[tuple[int, int], str]:
        return {
            versions.cuda_major_minor(k): v for k, v in self.raw["cuda_toolkit_driver"]["by_minor"].items()
        }

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
    def cann_minimum_driver(self) -> list[tuple[tuple[int, ...], str, str]]:
        """(CANN key, CANN version, minimum driver), oldest CANN first."""
        table = self.raw["cann_minimum_driver"]["by_cann"]
        return sorted((versions.huawei_key(cann), cann, driver) for cann, driver in table.items())


@cache
def load_rules() -> BomRules:
    text = resources.files("clusterforge").joinpath("data/bom_rules.yml").read_text(encoding="utf-8")
    raw = yaml.safe_load(text)
    formats = {
        name: VersionFormat(re.compile(spec["pattern"]), str(spec["example"]))
        for name, spec in raw["version_formats"]["variables"].items()
    }
    rules = BomRules(raw=raw, formats=formats)
    _self_check(rules)
    return rules


def _self_check(rules: BomRules) -> None:
    """Every version in the rules parses: a malformed rules file fails loudly, not per host."""
    for driver in [*rules.cuda_minimum_driver.values(), *rules.cuda_toolkit_driver.values()]:
        versions.dotted_key(driver)
    for _key, _cann, driver in rules.cann_minimum_driver:
        versions.huawei_key(driver)
    for name in (
        "cuda_minimum_driver",
        "cuda_toolkit_driver",
        "fabricmanager",
        "kernel_modules",
        "nccl_cuda",
    ):
        rules.source(name)
