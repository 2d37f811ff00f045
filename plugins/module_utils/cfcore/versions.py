"""Vendor version strings: their formats and their order. One module for the node and the controller.

Formats (`FORMATS`, `format_problem`): what each BOM variable must look like,
matched in full and with ASCII digits only, so "535.183.01\\n" (a YAML block
scalar) or Arabic-Indic digits never pass as a version.

Order (`version_key`, `at_least`, `same_version`): the parts between `.`, `-`
and `_` compare one by one:

- numbers numerically, with ASCII digits only: `535.183.01` < `550.54.15`, `12.8` < `12.10`;
- missing parts count as zero: `580` == `580.0.0`;
- a pre-release sorts before the release it precedes, in the order
  `alpha`/`t` < `beta` < `rc` < any number: Ascend `24.1.rc3` < `24.1.0`, CANN
  `8.0.RC2` < `8.0.0`, and a pre-release of a release candidate before that
  candidate: `8.1.RC1.alpha003` < `8.1.RC1`;
- letters are compared ignoring case: `8.0.RC2` == `8.0.rc2`.

Stdlib only, Python 3.8: runs inside Ansible modules on the nodes.
"""

from __future__ import annotations

import re
from functools import total_ordering

# Rank of a part: pre-releases below every number, unknown words below everything.
_PRE_RELEASE_RANK = {"alpha": 1, "t": 1, "beta": 2, "rc": 3}
_NUMBER_RANK = 4
_WORD_RANK = 0
_ZERO = (_NUMBER_RANK, 0, "")

_SEPARATORS = re.compile(r"[.\-_]")
_NUMBER = re.compile(r"[0-9]+")
_PRE_RELEASE = re.compile(r"(alpha|beta|rc|t)([0-9]*)")
_NUMBER_SUFFIX = re.compile(r"([0-9]+)(.+)")


@total_ordering
class VersionKey:
    """A comparable version: compares part by part, the shorter one padded with zeros."""

    __slots__ = ("parts",)

    def __init__(self, parts: tuple):
        self.parts = parts

    def _padded(self, other: VersionKey) -> tuple[tuple, tuple]:
        width = max(len(self.parts), len(other.parts))
        return (
            self.parts + (_ZERO,) * (width - len(self.parts)),
            other.parts + (_ZERO,) * (width - len(other.parts)),
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, VersionKey):
            return NotImplemented
        mine, theirs = self._padded(other)
        return mine == theirs

    def __lt__(self, other: VersionKey) -> bool:
        if not isinstance(other, VersionKey):
            return NotImplemented
        mine, theirs = self._padded(other)
        return mine < theirs

    def __hash__(self) -> int:
        parts = self.parts
        while parts and parts[-1] == _ZERO:
            parts = parts[:-1]
        return hash(parts)

    def __repr__(self) -> str:
        return f"VersionKey({self.parts!r})"


def _part(text: str) -> tuple:
    if _NUMBER.fullmatch(text):
        return (_NUMBER_RANK, int(text), "")
    pre = _PRE_RELEASE.fullmatch(text)
    if pre:
        return (_PRE_RELEASE_RANK[pre.group(1)], int(pre.group(2) or 0), pre.group(1))
    with_suffix = _NUMBER_SUFFIX.fullmatch(text)
    if with_suffix:  # "01a": the number decides, then the suffix
        return (_NUMBER_RANK, int(with_suffix.group(1)), with_suffix.group(2))
    return (_WORD_RANK, 0, text)


def version_key(text: str) -> VersionKey:
    """A sortable key of a version string (see the module docstring for the order)."""
    parts = [part for part in _SEPARATORS.split(str(text).strip().lower()) if part]
    return VersionKey(tuple(_part(part) for part in parts))


def at_least(version: str, minimum: str) -> bool:
    """Whether `version` is `minimum` or newer; a bare branch `525` means 525.0.0, so any 525.x.y."""
    return version_key(version) >= version_key(minimum)


def same_version(a: str, b: str) -> bool:
    """Equal as versions: ignoring case and trailing zero parts (`8.0.RC2` = `8.0.rc2`, `580` = `580.0.0`)."""
    return version_key(a) == version_key(b)


def major(version: str) -> int:
    """The first number: the NVIDIA driver branch ("535.183.01" -> 535), the CUDA major."""
    return major_minor(version)[0]


def major_minor(version: str) -> tuple[int, int]:
    """The first two numbers: CUDA "12.2.2" -> (12, 2); a missing minor is 0. ValueError if not numbers."""
    parts = str(version).split(".")
    if not _NUMBER.fullmatch(parts[0]) or (len(parts) > 1 and not _NUMBER.fullmatch(parts[1])):
        raise ValueError(f"not a numeric version: {version!r}")
    return int(parts[0]), int(parts[1]) if len(parts) > 1 else 0


def release_line(version: str, parts: int = 3) -> str:
    """The first `parts` dot-separated parts: CANN "8.0.RC2.alpha003" -> "8.0.RC2", "8.0.0.1" -> "8.0.0"."""
    return ".".join(str(version).split(".")[:parts])


# ------------------------------------------------------------------ formats ----


class VersionFormat:
    """The form of one BOM variable: a pattern matched in full (ASCII digits) and an example."""

    __slots__ = ("example", "pattern")

    def __init__(self, pattern: str, example: str):
        self.pattern = re.compile(pattern, re.ASCII)
        self.example = example

    def matches(self, value: str) -> bool:
        return self.pattern.fullmatch(value) is not None


_NVIDIA_DRIVER = r"[0-9]{3}\.[0-9]{2,3}(\.[0-9]{2})?"
# The single source of the BOM version formats (bom_rules.yml holds the compatibility rules only):
# version strings as the vendors' packages print them (nvidia-smi, nvcc, the NCCL and DCGM
# packages, npu-smi, CANN's version.info).
FORMATS = {
    "nvidia_driver_version": VersionFormat(_NVIDIA_DRIVER, "535.183.01"),
    "nvidia_fabricmanager_version": VersionFormat(_NVIDIA_DRIVER, "535.183.01"),
    "cuda_version": VersionFormat(r"[0-9]{2}\.[0-9]{1,2}(\.[0-9]{1,2})?", "12.2"),
    "nccl_version": VersionFormat(
        r"[0-9]+\.[0-9]+\.[0-9]+(-[0-9]+)?(\+cuda[0-9]+\.[0-9]+)?", "2.21.5-1+cuda12.2"
    ),
    "dcgm_version": VersionFormat(r"[0-9]+\.[0-9]+\.[0-9]+(-[0-9]+)?", "3.3.9"),
    # NVIDIA's image tag <dcgm>-<exporter> (4.2.3-4.1.1), or the exporter's own version (4.1.1).
    "dcgm_exporter_version": VersionFormat(
        r"([0-9]+\.[0-9]+\.[0-9]+-)?[0-9]+\.[0-9]+\.[0-9]+", "4.2.3-4.1.1"
    ),
    "ascend_driver_version": VersionFormat(r"[0-9]+\.[0-9]+\.([Rr][Cc][0-9]+|[0-9]+)(\.[0-9]+)*", "24.1.rc2"),
    "cann_version": VersionFormat(
        r"[0-9]+\.[0-9]+\.([Rr][Cc][0-9]+|[0-9]+)(\.(alpha|beta)?[0-9]+)?", "8.0.RC2"
    ),
    # HDK firmware: four to six numbers (7.7.0.6.236).
    "ascend_firmware_version": VersionFormat(r"[0-9]+(\.[0-9]+){3,5}", "7.7.0.6.236"),
    "ppu_sdk_version": VersionFormat(r"[0-9]+\.[0-9]+\.[0-9]+", "2.1.1"),
    # The training frameworks (docs/design.md, "Framework readiness"): PyTorch as pip numbers it
    # (without the local +cu128 part: the CUDA of the build is pytorch_cuda_version), torch_npu
    # (<PyTorch version>[.postN|rcN]) and MindSpore.
    "pytorch_version": VersionFormat(r"[0-9]+\.[0-9]+\.[0-9]+", "2.6.0"),
    "pytorch_cuda_version": VersionFormat(r"[0-9]{2}\.[0-9]{1,2}", "12.6"),
    "torch_npu_version": VersionFormat(r"[0-9]+\.[0-9]+\.[0-9]+(\.?(post|rc)[0-9]+)?", "2.6.0.post3"),
    "mindspore_version": VersionFormat(r"[0-9]+\.[0-9]+\.[0-9]+(-?rc[0-9]+)?", "2.7.1"),
}


def _type_name(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return type(value).__name__


def _is_template(text: str) -> bool:
    return "{{" in text or "{%" in text or "{#" in text


def format_problem(variable: str, value) -> str | None:
    """None when `value` is a valid version string for the BOM variable `variable`, else what is wrong.

    The message names the variable, the value, what is wrong with it and an
    example of the right form. ValueError for a variable without a format.
    """
    if variable not in FORMATS:
        raise ValueError(f"{variable} is not a BOM version variable (known: {', '.join(sorted(FORMATS))})")
    fmt = FORMATS[variable]
    example = f'{variable}: "{fmt.example}"'
    if not isinstance(value, str):
        return (
            f"{variable} must be a quoted string, got the {_type_name(value)} {value!r} (YAML reads an "
            f"unquoted 12.10 as the number 12.1); write e.g. {example}"
        )
    if fmt.matches(value):
        return None
    if _is_template(value):
        return f"{variable} {value!r} is a template, not a version; write the version itself, e.g. {example}"
    if value != value.strip():
        return (
            f"{variable} {value!r} has leading or trailing white space or a line break (a YAML block "
            f"scalar `|` keeps the newline); write it on one line, e.g. {example}"
        )
    foreign = sorted({ch for ch in value if not ch.isascii()})
    if foreign:
        return (
            f"{variable} {value!r} contains non-ASCII characters ({', '.join(map(repr, foreign))}); "
            f"versions use ASCII digits 0-9, e.g. {example}"
        )
    return f"{variable} {value!r} is not a version of the form {fmt.example!r}; write e.g. {example}"
