"""`clusterforge facts kinds` and `clusterforge facts parse KIND FILE [--json]`."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest
from clusterforge.main import main

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "parsers"


def run(capsys, *argv, stdin: str | None = None):
    """(exit code, stdout, stderr) of `clusterforge ARGV`."""
    if stdin is not None:
        # A real stdin: text over a byte buffer (the CLI reads bytes, capped).
        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin.encode()), encoding="utf-8")
    try:
        with pytest.raises(SystemExit) as exited:
            main(list(argv))
    finally:
        sys.stdin = sys.__stdin__
    out, err = capsys.readouterr()
    return exited.value.code, out, err


def test_kinds_lists_every_kind_with_its_capture_command(capsys):
    code, out, _err = run(capsys, "facts", "kinds")
    assert code == 0
    for kind, command in (("nvidia-smi-q-xml", "nvidia-smi -q -x"), ("hccn-net-health", "-net_health -g"),
                          ("xid", "dmesg"), ("lspci", "lspci -vvv")):  # fmt: skip
        line = next(line for line in out.splitlines() if f" {kind} " in line)
        assert command in line


def test_parse_json_gives_the_documented_keys(capsys):
    code, out, _err = run(
        capsys, "facts", "parse", "nvidia-smi-q", str(FIXTURES / "nvidia/q_faulty_535.txt"), "--json"
    )
    assert code == 0
    facts = json.loads(out)
    assert facts["driver_version"] == "535.183.01"
    assert len(facts["gpus"]) == 8
    assert facts["gpus"][3]["pcie_width_current"] == 8
    assert facts["gpus"][3]["remapped_rows_pending"] is True


def test_parse_summary_is_a_readable_table(capsys):
    code, out, _err = run(
        capsys, "facts", "parse", "ibstat", str(FIXTURES / "ib/ibstat_h100_down_polling.txt")
    )
    assert code == 0
    row = next(line for line in out.splitlines() if "mlx5_5 " in line)
    assert "Down" in row and "Polling" in row
    code, out, _err = run(capsys, "facts", "parse", "xid", str(FIXTURES / "kernel/dmesg_xid_new_form.txt"))
    assert code == 0
    assert "10 Xid event(s)" in out
    assert "GPU has fallen off the bus" in out


@pytest.mark.parametrize(
    ("kind", "name"),
    [
        ("nvidia-smi-q-xml", "nvidia/q_h200x8_550.xml"),
        ("nvidia-smi-csv", "nvidia/csv_h100x8.csv"),
        ("nvidia-smi-topo", "nvidia/topo_h100x8.txt"),
        ("nvidia-smi-nvlink", "nvidia/nvlink_h100x8_two_inactive.txt"),
        ("npu-smi-info", "ascend/npu_smi_info_a3_x16.txt"),
        ("npu-smi-board", "ascend/npu_smi_board_910b.txt"),
        ("npu-smi-health", "ascend/npu_smi_health_alarm.txt"),
        ("hccn-ip", "ascend/hccn_ip_x8.txt"),
        ("hccn-net-health", "ascend/hccn_net_health_socket_fail.txt"),
        ("lspci", "pci/lspci_vvv_nn_D_h100_degraded.txt"),
        ("xid", "kernel/dmesg_healthy.txt"),
    ],
)
def test_every_kind_has_a_summary(capsys, kind, name):
    code, out, err = run(capsys, "facts", "parse", kind, str(FIXTURES / name))
    assert (code, err) == (0, "")
    assert out.strip()


def test_stdin_and_source_header(capsys):
    text = "# source: captured on gpu-r1-n01\n" + (FIXTURES / "ascend/hccn_link_down.txt").read_text()
    code, out, _err = run(capsys, "facts", "parse", "hccn-link", "-", "--json", "--device", "5", stdin=text)
    assert code == 0
    facts = json.loads(out)
    assert (facts["device"], facts["link_status"], facts["up"]) == (5, "DOWN", False)


def test_noheader_csv_with_fields(capsys):
    from cfcore.parsers.nvidia import QUERY_GPU_FIELDS

    path = str(FIXTURES / "nvidia/csv_h100x8_noheader.csv")
    code, out, _err = run(
        capsys, "facts", "parse", "nvidia-smi-csv", path, "--json", "--fields", QUERY_GPU_FIELDS
    )
    assert code == 0
    assert len(json.loads(out)["gpus"]) == 8


def test_unparseable_file_exits_2_naming_file_line_and_fix(capsys, tmp_path):
    capture = tmp_path / "gpu.xml"
    capture.write_text("# source: wrong command\n" + (FIXTURES / "nvidia/q_h100x8_535.txt").read_text())
    code, out, err = run(capsys, "facts", "parse", "nvidia-smi-q-xml", str(capture))
    assert code == 2
    assert out == ""
    assert err.startswith(f"error: {capture}: not nvidia-smi -q -x output")
    assert "(line 2: '==============NVSMI LOG==============')" in err  # line numbers of the file itself
    assert "fix: capture it with: nvidia-smi -q -x > FILE" in err


def test_driver_failure_exits_2_with_the_driver_fix(capsys):
    code, _out, err = run(
        capsys, "facts", "parse", "nvidia-smi-q", str(FIXTURES / "nvidia/error_nvml_mismatch.txt")
    )
    assert code == 2
    assert "could not talk to the NVIDIA driver" in err
    assert "reboot" in err


def test_bad_flags_exit_2(capsys, tmp_path):
    path = str(FIXTURES / "ib/ibstat_h100_all_active.txt")
    assert run(capsys, "facts", "parse", "nvidia-smi-table", path)[0] == 2
    assert run(capsys, "facts", "parse", "ibstat", str(tmp_path / "missing.txt"))[0] == 2
    code, _out, err = run(capsys, "facts", "parse", "ibstat", path, "--device", "1")
    assert code == 2
    assert "--device applies to hccn-ip" in err
