"""base_hard_limits / base_cap_limit: limits a container can grant."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from base_role_plugins import load_role_plugin

base_limits = load_role_plugin("filter/base_limits.py")

# /proc/1/limits of a podman container on a host with RLIMIT_NOFILE 20000 and memlock 8 MiB.
PROC_LIMITS = """\
Limit                     Soft Limit           Hard Limit           Units
Max cpu time              unlimited            unlimited            seconds
Max open files            20000                20000                files
Max locked memory         8388608              8388608              bytes
Max address space         unlimited            unlimited            bytes
"""


def test_hard_limits_from_proc_limits_memlock_in_kib():
    assert base_limits.base_hard_limits(PROC_LIMITS) == {"memlock": "8192", "nofile": "20000"}


def test_unlimited_hard_limits():
    text = PROC_LIMITS.replace("8388608              8388608", "unlimited            unlimited")
    assert base_limits.base_hard_limits(text)["memlock"] == "unlimited"


def test_missing_row_is_an_error():
    without_nofile = "".join(line for line in PROC_LIMITS.splitlines(True) if "open files" not in line)
    with pytest.raises(AnsibleFilterError, match="no 'Max open files' row"):
        base_limits.base_hard_limits(without_nofile)


@pytest.mark.parametrize(
    ("wanted", "ceiling", "capped"),
    [
        ("unlimited", "8192", "8192"),
        ("unlimited", "unlimited", "unlimited"),
        (1048576, "20000", "20000"),
        ("4096", "20000", "4096"),
        (1048576, "unlimited", "1048576"),
    ],
)
def test_cap_limit(wanted, ceiling, capped):
    assert base_limits.base_cap_limit(wanted, ceiling) == capped


@pytest.mark.parametrize("wanted", ["infinity", "-1", "0", "8M", ""])
def test_cap_limit_rejects_bad_values_naming_the_variable(wanted):
    with pytest.raises(
        AnsibleFilterError,
        match=rf"base_memlock_limit must be 'unlimited' or a positive number, got '{wanted}'",
    ):
        base_limits.base_cap_limit(wanted, "unlimited", "base_memlock_limit")
