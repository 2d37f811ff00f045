"""One malformed line, or an output far over its normal size, never crashes a parser."""

from __future__ import annotations

import pytest
from cfcore.parsers import KINDS, MAX_INPUT_BYTES, MAX_KERNEL_LOG_BYTES, ParseError, parse


def test_garbled_nvlink_speed_is_an_unreadable_link_with_a_note(load):
    text = load("nvidia/nvlink_h100x8.txt").replace("Link 0: 26.562 GB/s", "Link 0: . GB/s", 1)
    facts = parse("nvidia-smi-nvlink", text)
    gpu0 = facts["gpus"][0]
    assert gpu0["links"][0] == {"link": 0, "state": "unreadable", "speed_gbps": None, "text": ". GB/s"}
    assert [link["state"] for link in gpu0["links"][1:]] == ["active"] * 17
    assert len(facts["gpus"]) == 8
    assert any("unreadable link value '. GB/s'" in note for note in facts["tool_messages"])


def test_npu_smi_chip_header_missing_a_bar_still_parses(load):
    text = load("ascend/npu_smi_info_910b_x8.txt")
    original = parse("npu-smi-info", text)
    header = next(line for line in text.splitlines() if line.startswith("| Chip"))
    broken = text.replace(header, header.replace("| Bus-Id", "  Bus-Id", 1))
    assert broken != text
    assert parse("npu-smi-info", broken) == original


def test_npu_smi_npu_header_missing_a_bar_still_parses(load):
    text = load("ascend/npu_smi_info_910b_x8.txt")
    header = next(line for line in text.splitlines() if line.startswith("| NPU"))
    broken = text.replace(header, header.replace("| Health", "  Health", 1))
    assert parse("npu-smi-info", broken) == parse("npu-smi-info", text)


def test_npu_smi_data_row_missing_a_bar_is_a_parse_error_naming_the_line(load):
    text = load("ascend/npu_smi_info_910b_x8.txt")
    lines = text.splitlines()
    index = next(i for i, line in enumerate(lines) if line.startswith("| 3 "))
    first, second = lines[index].index("|", 1), lines[index].index("|", lines[index].index("|", 1) + 1)
    lines[index] = (
        lines[index][:first] + " " + lines[index][first + 1 : second] + " " + lines[index][second + 1 :]
    )
    with pytest.raises(ParseError, match="malformed npu-smi info row") as caught:
        parse("npu-smi-info", "\n".join(lines))
    assert caught.value.line == index + 1


def test_csv_field_over_128_kib_is_a_parse_error_naming_the_line(load):
    lines = load("nvidia/csv_h100x8.csv").splitlines()
    lines[2] = lines[2].replace(",", "," + "x" * (129 * 1024), 1)
    with pytest.raises(ParseError, match=r"malformed .*field larger than field limit") as caught:
        parse("nvidia-smi-csv", "\n".join(lines))
    assert caught.value.line == 3


def test_csv_stray_quote_is_blamed_on_its_own_line(load):
    lines = load("nvidia/csv_h100x8.csv").splitlines()
    lines[3] = lines[3].replace("NVIDIA", '"NVIDIA', 1)
    with pytest.raises(ParseError, match="values for") as caught:
        parse("nvidia-smi-csv", "\n".join(lines))
    assert caught.value.line == 4


def test_nvlink_just_over_the_limit_is_refused_before_parsing():
    line = "\tLink 0: 26.562 GB/s\n"
    text = "GPU 0: NVIDIA H100 (UUID: GPU-1)\n" + line * (MAX_INPUT_BYTES // len(line) + 1)
    assert len(text) > MAX_INPUT_BYTES
    with pytest.raises(ParseError, match=r"output over 16 MiB, not the tool's normal output") as caught:
        parse("nvidia-smi-nvlink", text)
    assert "nvidia-smi nvlink -s > FILE" in caught.value.fix


def test_kernel_log_limit_is_larger_but_still_a_limit():
    assert KINDS["xid"].max_bytes == MAX_KERNEL_LOG_BYTES > MAX_INPUT_BYTES
    line = "[ 1.000000] NVRM: Xid (PCI:0000:18:00): 13, Graphics Exception\n"
    with pytest.raises(ParseError, match="output over 64 MiB"):
        parse("xid", line * (MAX_KERNEL_LOG_BYTES // len(line) + 1))


def test_ibstat_of_many_cas_parses_in_one_pass(load):
    block = load("ib/ibstat_h100_all_active.txt").split("CA '", 2)[1]
    text = "".join(f"CA 'mlx5_{n}{block[block.index(chr(39)) :]}" for n in range(20000))
    assert len(text) < MAX_INPUT_BYTES
    assert len(parse("ibstat", text)["cas"]) == 20000
