"""Version keys and the BOM version formats."""

from __future__ import annotations

import pytest
from clusterforge.inventory_check import versions
from clusterforge.inventory_check.rules import load_rules


def test_nvidia_and_cuda_versions_compare_numerically():
    assert versions.dotted_key("535.183.01") > versions.dotted_key("535.54.03")
    assert versions.dotted_key("580") == versions.dotted_key("580.0.0") < versions.dotted_key("580.65.06")
    assert versions.dotted_key("12.10") > versions.dotted_key("12.9")
    assert versions.branch("570.124.06") == 570
    assert versions.cuda_major_minor("12.2.2") == (12, 2)


def test_ascend_release_candidates_sort_before_releases():
    ordered = [
        "23.0.rc3",
        "23.0.0",
        "23.0.2.1",
        "23.0.7",
        "24.1.RC1",
        "24.1.rc2",
        "24.1.rc3",
        "24.1.0",
        "25.0.rc1",
    ]
    keys = [versions.huawei_key(v) for v in ordered]
    assert keys == sorted(keys)
    assert versions.huawei_key("24.1.RC2") == versions.huawei_key("24.1.rc2")


def test_cann_prerelease_suffix_counts_as_its_base():
    assert versions.huawei_key("8.0.RC2.alpha003") == versions.huawei_key("8.0.RC2")
    assert versions.huawei_key("8.0.RC2") < versions.huawei_key("8.0.0") < versions.huawei_key("8.1.RC1")


def test_malformed_huawei_version_raises():
    with pytest.raises(ValueError):
        versions.huawei_key("24.1")


@pytest.mark.parametrize(
    ("variable", "good", "bad"),
    [
        (
            "nvidia_driver_version",
            ["535.183.01", "550.54.14", "570.124.06"],
            ["535", "r535.183", "535.183.1.2"],
        ),
        ("cuda_version", ["12.2", "12.10", "12.4.1"], ["12", "v12.2", "12.2.0.1"]),
        ("nccl_version", ["2.21.5", "2.21.5-1+cuda12.4"], ["2.21", "2.21.5+cu124"]),
        ("dcgm_version", ["3.3.9", "4.1.1-1"], ["1:3.3.9", "3.3"]),
        (
            "ascend_driver_version",
            ["24.1.rc2", "24.1.RC2", "23.0.2.1", "25.2.0"],
            ["24.1", "24.1.rcx", "v24.1.0"],
        ),
        (
            "cann_version",
            ["8.0.RC2", "8.0.0", "8.0.RC2.alpha003", "7.0.1.1"],
            ["8.0", "8.0.RC", "CANN-8.0.0"],
        ),
    ],
)
def test_version_formats(variable, good, bad):
    pattern = load_rules().formats[variable].pattern
    assert all(pattern.match(v) for v in good), [v for v in good if not pattern.match(v)]
    assert not any(pattern.match(v) for v in bad), [v for v in bad if pattern.match(v)]
