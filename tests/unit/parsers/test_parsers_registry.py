"""The KIND registry, dispatch, and 'fail loudly' across all parsers and fixtures."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from cfcore.parsers import KINDS, PARSERS, ParseError, parse

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "parsers"
KIND_NAMES = [
    "nvidia-smi-q", "nvidia-smi-q-xml", "nvidia-smi-csv", "nvidia-smi-topo", "nvidia-smi-nvlink",
    "npu-smi-info", "npu-smi-board", "npu-smi-health", "hccn-ip", "hccn-link", "hccn-net-health",
    "hccn-ping", "ibstat", "lspci", "xid", "ppu-smi-list", "ppu-smi-q", "juicefs-status", "ceph-health",
    "nccl-tests", "hccl-test", "ib-perftest", "nvbandwidth", "juicefs-bench",
]  # fmt: skip

# Every fixture and the one KIND it is the output of (None: an error output no KIND accepts).
FIXTURE_KINDS = {
    "nvidia/q_h100x8_535.txt": "nvidia-smi-q",
    "nvidia/q_h200x8_550.txt": "nvidia-smi-q",
    "nvidia/q_faulty_535.txt": "nvidia-smi-q",
    "nvidia/q_gpu_lost_535.txt": "nvidia-smi-q",
    "nvidia/q_h100x8_535.xml": "nvidia-smi-q-xml",
    "nvidia/q_h200x8_550.xml": "nvidia-smi-q-xml",
    "nvidia/q_faulty_535.xml": "nvidia-smi-q-xml",
    "nvidia/csv_h100x8.csv": "nvidia-smi-csv",
    "nvidia/csv_h100x8_nounits.csv": "nvidia-smi-csv",
    "nvidia/csv_faulty.csv": "nvidia-smi-csv",
    "nvidia/csv_h100x8_noheader.csv": None,  # needs the field list: see test_nvidia_query
    "nvidia/topo_h100x8.txt": "nvidia-smi-topo",
    "nvidia/nvlink_h100x8.txt": "nvidia-smi-nvlink",
    "nvidia/nvlink_h100x8_two_inactive.txt": "nvidia-smi-nvlink",
    "nvidia/error_driver_not_loaded.txt": None,
    "nvidia/error_nvml_mismatch.txt": None,
    "nvidia/error_nvml_unknown.txt": None,
    "nvidia/error_gpu_lost_only.txt": None,
    "ascend/npu_smi_info_910b_x8.txt": "npu-smi-info",
    "ascend/npu_smi_info_910b_x8_alarm.txt": "npu-smi-info",
    "ascend/npu_smi_info_a3_x16.txt": "npu-smi-info",
    "ascend/npu_smi_info_910a_v20.txt": "npu-smi-info",
    "ascend/npu_smi_info_310p_duo.txt": "npu-smi-info",
    "ascend/npu_smi_info_truncated.txt": None,
    "ascend/npu_smi_board_910b.txt": "npu-smi-board",
    "ascend/npu_smi_board_910b_chip.txt": "npu-smi-board",
    "ascend/npu_smi_health_ok.txt": "npu-smi-health",
    "ascend/npu_smi_health_alarm.txt": "npu-smi-health",
    "ascend/npu_smi_health_chip_warning.txt": "npu-smi-health",
    "ascend/npu_smi_dcmi_failure.txt": None,
    "ascend/hccn_ip.txt": "hccn-ip",
    "ascend/hccn_ip_x8.txt": "hccn-ip",
    "ascend/hccn_link_up.txt": "hccn-link",
    "ascend/hccn_link_down.txt": "hccn-link",
    "ascend/hccn_net_health_success.txt": "hccn-net-health",
    "ascend/hccn_net_health_init.txt": "hccn-net-health",
    "ascend/hccn_net_health_socket_fail.txt": "hccn-net-health",
    "ascend/hccn_net_health_receive_timeout.txt": "hccn-net-health",
    "ib/ibstat_h100_all_active.txt": "ibstat",
    "ib/ibstat_h100_down_polling.txt": "ibstat",
    "pci/lspci_vvv_h100_cx7.txt": "lspci",
    "pci/lspci_vvv_nn_D_h100_degraded.txt": "lspci",
    "pci/lspci_vvv_not_root.txt": "lspci",
    "kernel/dmesg_xid_new_form.txt": "xid",
    "kernel/dmesg_T_xid_old_form.txt": "xid",
    "kernel/journalctl_k_xid.txt": "xid",
    "kernel/dmesg_healthy.txt": "xid",
    "kernel/dmesg_not_permitted.txt": None,
    "garbage/error_page.html": None,
    # `ceph -s` of a healthy cluster: garbage to every accelerator parser, the ceph-health kind's own.
    "garbage/ceph_status.txt": "ceph-health",
    "garbage/shell_error.txt": None,
    "garbage/blank.txt": None,
}


def test_registry_keys_are_exactly_the_kind_names():
    assert list(PARSERS) == KIND_NAMES
    assert list(KINDS) == KIND_NAMES
    assert all(KINDS[name].capture and KINDS[name].parser is PARSERS[name] for name in KIND_NAMES)


def test_every_fixture_is_listed():
    on_disk = sorted(str(path.relative_to(FIXTURES)) for path in FIXTURES.rglob("*") if path.is_file())
    assert on_disk == sorted(FIXTURE_KINDS)


@pytest.mark.parametrize("name", sorted(FIXTURE_KINDS))
def test_each_fixture_parses_as_its_own_kind_only(load, name):
    text = load(name)
    own = FIXTURE_KINDS[name]
    for kind in KIND_NAMES:
        if kind == own:
            assert parse(kind, text), f"{name} parsed as {kind} gave an empty result"
            continue
        with pytest.raises(ParseError) as caught:
            parse(kind, text)
        assert caught.value.kind in (kind, "sysfs-infiniband")
        assert caught.value.fix, f"{name} as {kind}: the error has no fix hint"


@pytest.mark.parametrize("name", sorted(name for name, kind in FIXTURE_KINDS.items() if kind))
def test_cut_anywhere_gives_a_result_or_a_parse_error_never_a_crash(load, name):
    text = load(name)
    kind = FIXTURE_KINDS[name]
    for fraction in (0.05, 0.2, 0.35, 0.5, 0.65, 0.8, 0.95):
        cut = text[: int(len(text) * fraction)]
        with contextlib.suppress(ParseError):
            parse(kind, cut)


def test_parse_of_an_unknown_kind_names_the_known_ones():
    with pytest.raises(KeyError, match="nvidia-smi-q"):
        parse("nvidia-smi-table", "text")


def test_parse_errors_carry_a_capture_hint():
    with pytest.raises(ParseError) as caught:
        parse("lspci", "garbage\n")
    assert caught.value.fix.startswith("capture it")
    assert "lspci -vvv" in caught.value.fix
