"""nvidia-smi -q (text), -q -x (XML) and --query-gpu CSV: the GPU inventory forms."""

from __future__ import annotations

import pytest
from cfcore.parsers import ParseError, parse
from cfcore.parsers.nvidia import GPU_FIELDS, QUERY_GPU_FIELDS, parse_nvidia_smi_csv

CONTRACT_KEYS = [
    "index", "name", "uuid", "serial", "pci_bus_id", "pcie_gen_max", "pcie_gen_current", "pcie_width_max",
    "pcie_width_current", "persistence_mode", "mig_mode", "ecc_mode", "ecc_uncorrected_volatile",
    "retired_pages_pending", "remapped_rows_pending", "remapped_rows_failure", "temperature_c",
    "power_draw_w", "memory_total_mib",
]  # fmt: skip
H100_BUSES = ["0000:18:00.0", "0000:2a:00.0", "0000:3a:00.0", "0000:5d:00.0",
              "0000:9a:00.0", "0000:ab:00.0", "0000:ba:00.0", "0000:db:00.0"]  # fmt: skip


@pytest.mark.parametrize(
    ("kind", "name"),
    [("nvidia-smi-q", "nvidia/q_h100x8_535.txt"), ("nvidia-smi-q-xml", "nvidia/q_h100x8_535.xml")],
)
def test_healthy_h100_node(load, kind, name):
    facts = parse(kind, load(name))
    assert facts["driver_version"] == "535.183.01"
    assert facts["cuda_version"] == "12.2"
    assert facts["attached_gpus"] == 8
    gpus = facts["gpus"]
    assert [gpu["index"] for gpu in gpus] == list(range(8))
    assert [gpu["pci_bus_id"] for gpu in gpus] == H100_BUSES
    first = gpus[0]
    assert first["name"] == "NVIDIA H100 80GB HBM3"
    assert first["uuid"] == "GPU-3f2c8a41-7d0e-4b6a-9c55-1e8d2f47a0b1"
    assert first["serial"] == "1654923004101"
    for gpu in gpus:
        assert (gpu["pcie_gen_max"], gpu["pcie_gen_current"]) == (5, 5)
        assert (gpu["pcie_width_max"], gpu["pcie_width_current"]) == (16, 16)
        assert (gpu["persistence_mode"], gpu["mig_mode"], gpu["ecc_mode"]) == (
            "Enabled",
            "Disabled",
            "Enabled",
        )
        assert gpu["ecc_uncorrected_volatile"] == 0
        assert gpu["retired_pages_pending"] is None  # H100 remaps rows; page retirement is N/A
        assert gpu["remapped_rows_pending"] is False
        assert gpu["remapped_rows_failure"] is False
        assert gpu["memory_total_mib"] == 81559
        assert 20 <= gpu["temperature_c"] <= 40
        assert isinstance(gpu["power_draw_w"], float)
    assert first["power_draw_w"] == 71.23
    assert first["power_limit_w"] == 700.0
    assert first["fabric_state"] == "Completed"
    assert facts["tool_messages"] == []


def test_every_gpu_has_every_key_in_the_documented_order(load):
    for kind, name in (
        ("nvidia-smi-q", "nvidia/q_h100x8_535.txt"),
        ("nvidia-smi-csv", "nvidia/csv_h100x8.csv"),
    ):
        for gpu in parse(kind, load(name))["gpus"]:
            assert tuple(gpu) == GPU_FIELDS
            assert list(gpu)[: len(CONTRACT_KEYS)] == CONTRACT_KEYS


def test_text_xml_and_csv_of_one_node_agree(load):
    text = parse("nvidia-smi-q", load("nvidia/q_faulty_535.txt"))["gpus"]
    xml = parse("nvidia-smi-q-xml", load("nvidia/q_faulty_535.xml"))["gpus"]
    csv = parse("nvidia-smi-csv", load("nvidia/csv_faulty.csv"))["gpus"]
    assert text == xml
    printed_by_csv = [
        key for key in CONTRACT_KEYS if key not in ("remapped_rows_pending", "remapped_rows_failure")
    ]
    for a, b in zip(text, csv, strict=True):
        assert {key: a[key] for key in printed_by_csv} == {key: b[key] for key in printed_by_csv}


@pytest.mark.parametrize("kind,name", [("nvidia-smi-q", "nvidia/q_faulty_535.txt"),
                                       ("nvidia-smi-q-xml", "nvidia/q_faulty_535.xml")])  # fmt: skip
def test_faulty_gpu_is_reported_as_printed(load, kind, name):
    gpus = parse(kind, load(name))["gpus"]
    bad = gpus[3]
    assert bad["pci_bus_id"] == "0000:5d:00.0"
    assert (bad["pcie_width_current"], bad["pcie_width_max"]) == (8, 16)
    assert bad["remapped_rows_pending"] is True
    assert bad["remapped_rows_uncorrectable"] == 1
    assert bad["ecc_uncorrected_volatile"] == 2
    assert bad["ecc_uncorrected_aggregate"] == 2
    assert gpus[6]["remapped_rows_failure"] is True
    assert gpus[6]["persistence_mode"] == "Disabled"
    healthy = [gpu for position, gpu in enumerate(gpus) if position not in (3, 6)]
    assert all(gpu["remapped_rows_pending"] is False and gpu["pcie_width_current"] == 16 for gpu in healthy)


@pytest.mark.parametrize("kind,name", [("nvidia-smi-q", "nvidia/q_h200x8_550.txt"),
                                       ("nvidia-smi-q-xml", "nvidia/q_h200x8_550.xml")])  # fmt: skip
def test_h200_on_550_reads_the_newer_power_fields(load, kind, name):
    facts = parse(kind, load(name))
    assert facts["driver_version"] == "550.127.05"
    assert facts["cuda_version"] == "12.4"
    gpus = facts["gpus"]
    assert len(gpus) == 8
    assert {gpu["name"] for gpu in gpus} == {"NVIDIA H200"}
    assert {gpu["memory_total_mib"] for gpu in gpus} == {143771}
    # 550 prints 'Instantaneous Power Draw' / <instant_power_draw> instead of 'Power Draw'
    assert gpus[0]["power_draw_w"] == 71.23


def test_a_gpu_nvidia_smi_cannot_reach_is_listed_in_tool_messages(load):
    facts = parse("nvidia-smi-q", load("nvidia/q_gpu_lost_535.txt"))
    assert facts["attached_gpus"] == 8
    assert len(facts["gpus"]) == 7
    assert "0000:5d:00.0" not in [gpu["pci_bus_id"] for gpu in facts["gpus"]]
    assert facts["tool_messages"] == [
        "Unable to determine the device handle for GPU0000:5D:00.0: Unknown Error"
    ]


def test_only_unreachable_gpus_is_an_error(load):
    with pytest.raises(ParseError, match="could not reach any GPU"):
        parse("nvidia-smi-q", load("nvidia/error_gpu_lost_only.txt"))


@pytest.mark.parametrize("kind", ["nvidia-smi-q", "nvidia-smi-q-xml", "nvidia-smi-csv", "nvidia-smi-topo",
                                  "nvidia-smi-nvlink"])  # fmt: skip
@pytest.mark.parametrize(
    ("name", "fix_word"),
    [
        ("nvidia/error_driver_not_loaded.txt", "lsmod"),
        ("nvidia/error_nvml_unknown.txt", "lsmod"),
        ("nvidia/error_nvml_mismatch.txt", "reboot"),
    ],
)
def test_driver_failures_say_the_tool_could_not_talk_to_the_driver(load, kind, name, fix_word):
    with pytest.raises(ParseError) as caught:
        parse(kind, load(name))
    err = caught.value
    assert err.kind == kind
    assert "could not talk to the NVIDIA driver" in err.message
    assert err.line == 1
    assert fix_word in err.fix


def test_truncated_text_output_is_refused(load):
    lines = load("nvidia/q_h100x8_535.txt").splitlines()
    cut = "\n".join(lines[:700])
    with pytest.raises(ParseError, match="truncated nvidia-smi -q output") as caught:
        parse("nvidia-smi-q", cut)
    assert caught.value.line is not None


def test_truncated_xml_is_refused_with_the_line(load):
    lines = load("nvidia/q_h100x8_535.xml").splitlines()
    with pytest.raises(ParseError, match="truncated XML") as caught:
        parse("nvidia-smi-q-xml", "\n".join(lines[:500]))
    assert caught.value.line >= 499


def test_xml_parser_refuses_text_output_and_vice_versa(load):
    with pytest.raises(ParseError, match="not nvidia-smi -q -x output"):
        parse("nvidia-smi-q-xml", load("nvidia/q_h100x8_535.txt"))
    with pytest.raises(ParseError, match="not nvidia-smi -q output"):
        parse("nvidia-smi-q", load("nvidia/q_h100x8_535.xml"))


def test_xml_of_another_document_is_refused():
    with pytest.raises(ParseError, match="root is <svg>"):
        parse("nvidia-smi-q-xml", '<?xml version="1.0"?>\n<svg><g/></svg>\n')


def test_xml_preamble_warnings_are_kept(load):
    text = "WARNING: infoROM is corrupted at gpu 0000:3A:00.0\n" + load("nvidia/q_h100x8_535.xml")
    facts = parse("nvidia-smi-q-xml", text)
    assert facts["tool_messages"] == ["WARNING: infoROM is corrupted at gpu 0000:3A:00.0"]
    assert len(facts["gpus"]) == 8


def test_text_tolerates_unknown_fields_and_sections(load):
    text = load("nvidia/q_h100x8_535.txt").replace(
        "    Sparse Operation Mode",
        "    Future Feature Mode                   : Enabled\n    Future Section\n"
        "        Knob                              : 3\n    Sparse Operation Mode",
    )
    assert (
        parse("nvidia-smi-q", text)["gpus"] == parse("nvidia-smi-q", load("nvidia/q_h100x8_535.txt"))["gpus"]
    )


def test_page_retirement_only_output_parses_with_nulls_elsewhere():
    text = (
        "\n==============NVSMI LOG==============\n\n"
        "Timestamp                                 : Thu Nov 14 08:01:12 2024\n"
        "Driver Version                            : 535.183.01\n"
        "CUDA Version                              : 12.2\n\n"
        "Attached GPUs                             : 2\n"
        "GPU 00000000:3B:00.0\n    Retired Pages\n"
        "        Single Bit ECC                    : 2\n"
        "        Double Bit ECC                    : 1\n"
        "        Pending Page Blacklist            : Yes\n\n"
        "GPU 00000000:86:00.0\n    Retired Pages\n"
        "        Single Bit ECC                    : 0\n"
        "        Double Bit ECC                    : 0\n"
        "        Pending Page Blacklist            : No\n"
    )
    gpus = parse("nvidia-smi-q", text)["gpus"]
    assert [gpu["retired_pages_pending"] for gpu in gpus] == [True, False]
    assert gpus[0]["retired_pages_double_bit"] == 1
    assert gpus[0]["name"] is None and gpus[0]["temperature_c"] is None


def test_csv_with_and_without_units_agree(load):
    with_units = parse("nvidia-smi-csv", load("nvidia/csv_h100x8.csv"))
    without = parse("nvidia-smi-csv", load("nvidia/csv_h100x8_nounits.csv"))
    assert with_units["gpus"] == without["gpus"]
    assert with_units["driver_version"] == "535.183.01"
    gpu = with_units["gpus"][0]
    assert (gpu["power_draw_w"], gpu["memory_total_mib"], gpu["temperature_c"]) == (71.23, 81559, 31)
    assert gpu["retired_pages_pending"] is None  # '[N/A]'


def test_csv_noheader_needs_the_field_list(load):
    text = load("nvidia/csv_h100x8_noheader.csv")
    with pytest.raises(ParseError, match="no header row"):
        parse("nvidia-smi-csv", text)
    facts = parse_nvidia_smi_csv(text, fields=QUERY_GPU_FIELDS)
    assert facts["gpus"] == parse("nvidia-smi-csv", load("nvidia/csv_h100x8.csv"))["gpus"]


def test_csv_columns_are_found_by_name_in_any_order():
    text = (
        "pci.bus_id, temperature.gpu, index, power.draw.instant [W], vbios_version\n"
        "00000000:18:00.0, 33, 0, 88.10 W, 96.00.99.00.01\n"
        "00000000:2A:00.0, 35, 1, 90.02 W, 96.00.99.00.01\n"
    )
    gpus = parse("nvidia-smi-csv", text)["gpus"]
    assert [(gpu["index"], gpu["pci_bus_id"], gpu["temperature_c"], gpu["power_draw_w"]) for gpu in gpus] == [
        (0, "0000:18:00.0", 33, 88.1),
        (1, "0000:2a:00.0", 35, 90.02),
    ]
    assert gpus[0]["name"] is None


def test_csv_of_another_query_or_with_missing_values_is_refused():
    retired = (
        "timestamp, gpu_name, gpu_bus_id, gpu_serial, gpu_uuid, retired_pages.address, retired_pages.cause\n"
        "2024/11/12 09:14:52.101, NVIDIA H100 80GB HBM3, 00000000:18:00.0, 1654923004101, GPU-3f2c, 0x1f, "
        "Single Bit ECC\n"
    )
    with pytest.raises(ParseError, match="--query-retired-pages"):
        parse("nvidia-smi-csv", retired)
    with pytest.raises(ParseError, match="2 values for 3 columns") as caught:
        parse("nvidia-smi-csv", "index, name, uuid\n0, NVIDIA H100 80GB HBM3\n")
    assert caught.value.line == 2
    with pytest.raises(ParseError, match="appears twice"):
        parse("nvidia-smi-csv", "index, pci.bus_id\n0, 00000000:18:00.0\n1, 00000000:18:00.0\n")
    with pytest.raises(ParseError, match="no GPU identity column"):
        parse("nvidia-smi-csv", "temperature.gpu, power.draw [W]\n33, 80.00 W\n")
