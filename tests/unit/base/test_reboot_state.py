"""cfcore/reboot.py and the module base_reboot_state: why a node needs a reboot."""

from __future__ import annotations

import json
from pathlib import Path

from cfcore import reboot
from module_runner import run_module

BOOT_ID = Path("/proc/sys/kernel/random/boot_id").read_text().strip()


def test_a_node_with_nothing_pending_needs_no_reboot():
    assert reboot.reboot_reasons() == []
    assert reboot.reboot_reasons(nouveau_loaded=True, blacklist_nouveau=False, needs_restarting_rc=0) == []


def test_each_reason_is_named_in_a_fixed_order():
    reasons = reboot.reboot_reasons(
        os_flag=True,
        os_packages_text="linux-image-6.1.0-28-amd64\nlibc6\nlinux-image-6.1.0-28-amd64\n",
        needs_restarting_rc=1,
        nouveau_loaded=True,
        blacklist_nouveau=True,
        marker_text=json.dumps({"boot_id": "b1", "reason": "the initramfs was rebuilt without nouveau"}),
        boot_id="b1",
    )
    assert reasons == [
        "the OS asks for a reboot (packages: libc6, linux-image-6.1.0-28-amd64)",
        "needs-restarting -r: core libraries or the kernel were updated since boot",
        "nouveau is loaded; it stays blacklisted from the next boot on",
        "the initramfs was rebuilt without nouveau",
    ]


def test_the_os_flag_without_its_package_list_says_so():
    assert reboot.reboot_reasons(os_flag=True) == ["the OS asks for a reboot (packages: not listed)"]


def test_a_recorded_reason_of_an_earlier_boot_has_been_served():
    marker = json.dumps({"boot_id": "earlier", "reason": "the initramfs was rebuilt"})
    assert reboot.reboot_reasons(marker_text=marker, boot_id="now") == []


def test_a_damaged_record_counts_as_none():
    for text in ("{not json", "[1, 2]", '"text"', json.dumps({"reason": "x"})):
        assert reboot.reboot_reasons(marker_text=text, boot_id="b1") == []


def test_module_reads_the_record_of_this_boot(tmp_path):
    marker = tmp_path / "initramfs.json"
    marker.write_text(json.dumps({"boot_id": BOOT_ID, "reason": "the initramfs was rebuilt without nouveau"}))
    result = run_module("base_reboot_state", {"os_family": "Debian", "marker": str(marker)})
    assert result["changed"] is False
    assert result["required"] is True
    assert result["reasons"][-1] == "the initramfs was rebuilt without nouveau"


def test_module_without_a_record_reports_what_the_node_says(tmp_path):
    result = run_module("base_reboot_state", {"os_family": "Debian", "marker": str(tmp_path / "none.json")})
    assert "failed" not in result
    assert result["required"] is bool(result["reasons"])
    assert all("initramfs" not in reason for reason in result["reasons"])
