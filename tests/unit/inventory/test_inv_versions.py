"""The one version module (cfcore.versions): order of real version strings and the BOM formats."""

from __future__ import annotations

import itertools

import pytest
from cfcore import versions
from cfcore.versions import at_least, format_problem, same_version, version_key


def _ascending(*items: str) -> bool:
    keys = [version_key(v) for v in items]
    return all(a < b for a, b in itertools.pairwise(keys))


def test_nvidia_driver_versions_compare_numerically():
    assert _ascending("535.54.03", "535.183.01", "550.54.15", "570.133.20", "580.65.06")
    assert version_key("535.183.01") == version_key("535.183.1")
    assert versions.major("570.133.20") == 570


def test_missing_parts_count_as_zero():
    assert same_version("580", "580.0.0") and version_key("580") == version_key("580.0.0")
    assert hash(version_key("580")) == hash(version_key("580.0.0"))
    assert version_key("580") < version_key("580.0.1") < version_key("580.65.06")
    assert at_least("580.0.0", "580") and at_least("580", "580.0.0")
    assert at_least("535.183.01", "525") and not at_least("470.82.01", "525")


def test_cuda_minor_versions_are_numbers_not_decimals():
    assert _ascending("12.2", "12.8", "12.9", "12.10")
    assert versions.major_minor("12.2.2") == (12, 2)
    assert versions.major_minor("13") == (13, 0)


def test_cann_release_candidates_sort_before_releases():
    assert _ascending("7.0.RC1", "7.0.0", "8.0.RC1", "8.0.RC2", "8.0.RC3", "8.0.0", "8.1.RC1", "8.5.0")
    assert same_version("8.0.RC2", "8.0.rc2")


def test_a_pre_release_sorts_before_what_it_precedes():
    assert _ascending("8.1.RC1.alpha001", "8.1.RC1.alpha003", "8.1.RC1.beta1", "8.1.RC1", "8.1.0")
    assert versions.release_line("8.1.RC1.alpha003") == "8.1.RC1"


def test_ascend_driver_versions():
    assert _ascending(
        "23.0.rc3", "23.0.0", "23.0.2.1", "23.0.7", "24.1.RC1", "24.1.rc2", "24.1.rc3", "24.1.0", "25.2.1"
    )
    assert at_least("24.1.rc2", "23.0.0") and not at_least("23.0.rc3", "23.0.0")
    assert same_version("24.1.RC2", "24.1.rc2") and not same_version("535.183.01", "535.183.06")


def test_non_ascii_digits_are_not_numbers():
    arabic_indic = "\u0665\u0663\u0665.183.01"  # 535 in Arabic-Indic digits
    assert version_key(arabic_indic) != version_key("535.183.01")
    with pytest.raises(ValueError):
        versions.major(arabic_indic)


@pytest.mark.parametrize(
    ("variable", "good", "bad"),
    [
        (
            "nvidia_driver_version",
            ["535.183.01", "550.54.14", "570.124.06"],
            ["535", "r535.183", "535.183.1.2", "535.183.01\n", "\u0665\u0663\u0665.183.01"],
        ),
        ("cuda_version", ["12.2", "12.10", "12.4.1"], ["12", "v12.2", "12.2.0.1", "12.2\n", "latest"]),
        ("nccl_version", ["2.21.5", "2.21.5-1+cuda12.4"], ["2.21", "2.21.5+cu124"]),
        ("dcgm_version", ["3.3.9", "4.1.1-1"], ["1:3.3.9", "3.3"]),
        (
            "ascend_driver_version",
            ["24.1.rc2", "24.1.RC2", "23.0.2.1", "25.2.0"],
            ["24.1", "24.1.rcx", "v24.1.0", "24.1.rc2\n"],
        ),
        (
            "cann_version",
            ["8.0.RC2", "8.0.0", "8.0.RC2.alpha003", "7.0.1.1"],
            ["8.0", "8.0.RC", "CANN-8.0.0"],
        ),
    ],
)
def test_version_formats_match_in_full(variable, good, bad):
    assert [v for v in good if format_problem(variable, v)] == []
    assert [v for v in bad if format_problem(variable, v) is None] == []


@pytest.mark.parametrize(
    ("value", "words"),
    [
        (12.1, ["quoted string", "number 12.1", 'cuda_version: "12.2"']),
        ("latest", ["'latest' is not a version", 'cuda_version: "12.2"']),
        ("{{ cuda }}", ["is a template", 'cuda_version: "12.2"']),
        ("12.2\n", ["line break", 'cuda_version: "12.2"']),
        ("\u0661\u0662.\u0662", ["non-ASCII", 'cuda_version: "12.2"']),
    ],
)
def test_format_problem_says_what_is_wrong_and_shows_the_form(value, words):
    message = format_problem("cuda_version", value)
    assert message and all(word in message for word in words), message


def test_format_problem_refuses_a_variable_without_a_format():
    with pytest.raises(ValueError, match="not a BOM version variable"):
        format_problem("node_sku", "x")
