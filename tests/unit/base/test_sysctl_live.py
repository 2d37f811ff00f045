"""base_sysctl_live: live sysctl values, on a fake /proc/sys tree."""

from __future__ import annotations

import errno

import pytest
from base_role_plugins import load_role_plugin

sysctl_live = load_role_plugin("modules/base_sysctl_live.py")


@pytest.fixture
def proc_sys(tmp_path):
    for key, value in {
        "vm/max_map_count": "65530",
        "net/ipv4/tcp_rmem": "4096\t131072\t6291456",
        "kernel/numa_balancing": "1",
    }.items():
        path = tmp_path / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(value + "\n")
    return tmp_path


def read(proc_sys, key):
    return (proc_sys / key.replace(".", "/")).read_text()


def test_writes_the_values_that_differ_and_keeps_the_others(proc_sys):
    applied, unchanged, not_applicable = sysctl_live.apply_settings(
        {"vm.max_map_count": 1048576, "net.ipv4.tcp_rmem": "4096 131072 6291456", "kernel.numa_balancing": 0},
        proc_sys=str(proc_sys),
    )
    assert applied == {
        "kernel.numa_balancing": {"before": "1", "after": "0"},
        "vm.max_map_count": {"before": "65530", "after": "1048576"},
    }
    # Tabs in the kernel's output and spaces in the setting are the same value.
    assert unchanged == ["net.ipv4.tcp_rmem"]
    assert not_applicable == {}
    assert read(proc_sys, "vm.max_map_count") == "1048576\n"


def test_second_run_changes_nothing(proc_sys):
    settings = {"vm.max_map_count": 1048576, "kernel.numa_balancing": 0}
    sysctl_live.apply_settings(settings, proc_sys=str(proc_sys))
    applied, unchanged, _ = sysctl_live.apply_settings(settings, proc_sys=str(proc_sys))
    assert applied == {}
    assert unchanged == ["kernel.numa_balancing", "vm.max_map_count"]


def test_check_mode_reports_without_writing(proc_sys):
    applied, _, _ = sysctl_live.apply_settings(
        {"vm.max_map_count": 1048576}, proc_sys=str(proc_sys), check_mode=True
    )
    assert applied == {"vm.max_map_count": {"before": "65530", "after": "1048576"}}
    assert read(proc_sys, "vm.max_map_count") == "65530\n"


def read_only(path, value):
    raise OSError(errno.EROFS, "Read-only file system", path)


def test_container_reports_read_only_and_missing_keys_as_not_applicable(proc_sys):
    applied, unchanged, not_applicable = sysctl_live.apply_settings(
        {"vm.max_map_count": 1048576, "net.core.netdev_max_backlog": 250000, "kernel.numa_balancing": 1},
        proc_sys=str(proc_sys),
        in_container=True,
        write=read_only,
    )
    assert applied == {}
    assert unchanged == ["kernel.numa_balancing"]
    assert set(not_applicable) == {"vm.max_map_count", "net.core.netdev_max_backlog"}
    assert "read-only in this container" in not_applicable["vm.max_map_count"]
    assert "no such key" in not_applicable["net.core.netdev_max_backlog"]


def test_container_check_mode_gives_the_same_report_as_a_real_run(proc_sys, monkeypatch):
    settings = {"vm.max_map_count": 1048576}
    real = sysctl_live.apply_settings(settings, proc_sys=str(proc_sys), in_container=True, write=read_only)
    # A read-only mount answers access(W_OK) with EROFS, even for root.
    monkeypatch.setattr(sysctl_live.os, "access", lambda path, mode: False)
    checked = sysctl_live.apply_settings(settings, proc_sys=str(proc_sys), in_container=True, check_mode=True)
    assert checked == real


def test_bare_metal_fails_on_a_read_only_key(proc_sys):
    with pytest.raises(sysctl_live.SysctlError, match=r"sysctl vm.max_map_count: writing '1048576'"):
        sysctl_live.apply_settings({"vm.max_map_count": 1048576}, proc_sys=str(proc_sys), write=read_only)


def test_bare_metal_fails_on_a_missing_key_and_says_how_to_drop_it(proc_sys):
    with pytest.raises(sysctl_live.SysctlError, match=r"base_sysctls_site: \{net.core.somaxconn: null\}"):
        sysctl_live.apply_settings({"net.core.somaxconn": 4096}, proc_sys=str(proc_sys))


def test_kernel_clamping_a_value_is_an_error(proc_sys):
    def clamp(path, value):
        with open(path, "w") as handle:
            handle.write("65536\n")

    with pytest.raises(sysctl_live.SysctlError, match="accepted '1048576' but reports '65536'"):
        sysctl_live.apply_settings({"vm.max_map_count": 1048576}, proc_sys=str(proc_sys), write=clamp)


@pytest.mark.parametrize("key", ["", "vm..max_map_count", ".vm", "vm/max_map_count", "../etc/passwd"])
def test_rejects_names_that_are_not_sysctl_names(proc_sys, key):
    with pytest.raises(sysctl_live.SysctlError, match="is not a sysctl name"):
        sysctl_live.apply_settings({key: 1}, proc_sys=str(proc_sys))


@pytest.mark.parametrize("value", [True, None, [1, 2], {"a": 1}])
def test_rejects_values_that_are_not_numbers_or_strings(proc_sys, value):
    with pytest.raises(sysctl_live.SysctlError, match=r"sysctl vm\.max_map_count: value"):
        sysctl_live.apply_settings({"vm.max_map_count": value}, proc_sys=str(proc_sys))
