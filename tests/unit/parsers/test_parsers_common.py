"""Shared conventions: value conversion, PCI addresses, the error type."""

from __future__ import annotations

import pytest
from cfcore.parsers.common import (
    ParseError,
    na,
    normalize_pci_bus_id,
    snake_key,
    strip_source_header,
    to_float,
    to_int,
    to_number,
    yes_no,
)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("00000000:18:00.0", "0000:18:00.0"),  # nvidia-smi
        ("PCI:0000:18:00", "0000:18:00.0"),  # kernel log (Xid)
        ("0000:C1:00.0", "0000:c1:00.0"),  # npu-smi
        ("18:00.0", "0000:18:00.0"),  # lspci without -D
        ("00000001:00:00.0", "0001:00:00.0"),  # Azure/Hyper-V domains
        ("0000:9b:00", "0000:9b:00.0"),
        ("N/A", None),
        ("NA", None),
        ("not-an-address", None),
    ],
)
def test_pci_bus_ids_are_normalised_so_sources_join(raw, expected):
    assert normalize_pci_bus_id(raw) == expected


@pytest.mark.parametrize(
    "raw",
    [
        "N/A",
        "[N/A]",
        "Not Supported",
        "[Not Supported]",
        "NA",
        "-",
        "",
        None,
        "[Requested functionality has been deprecated]",
    ],
)
def test_not_available_spellings_become_none(raw):
    assert na(raw) is None
    assert to_number(raw) is None


def test_numbers_lose_their_units():
    assert to_int("81559 MiB") == 81559
    assert to_int("16x") == 16
    assert to_int("-8 C") == -8
    assert to_float("71.97 W") == 71.97
    assert to_number("2.5") == 2.5
    assert isinstance(to_number("400"), int)
    assert to_int("Enabled") is None


def test_yes_no():
    assert yes_no("Yes") is True
    assert yes_no("No") is False
    assert yes_no("[N/A]") is None
    assert yes_no("Pending") is None


def test_source_header_becomes_a_blank_line_so_line_numbers_hold():
    text = "# source: somewhere\nline two\n"
    assert strip_source_header(text) == "\nline two\n"
    assert strip_source_header("plain\n") == "plain\n"
    assert strip_source_header("# source: only") == ""


def test_parse_error_names_the_line_and_keeps_its_parts():
    err = ParseError("lspci", "not lspci -vvv output", 3, "<html>", fix="capture it")
    assert str(err) == "not lspci -vvv output (line 3: '<html>')"
    assert (err.kind, err.message, err.line, err.fix) == ("lspci", "not lspci -vvv output", 3, "capture it")
    assert str(ParseError("xid", "empty input")) == "empty input"


def test_snake_key():
    assert snake_key("PCIe Bus Info") == "pcie_bus_info"
    assert snake_key("Aicore Usage Rate(%)") == "aicore_usage_rate_pct"
