"""ppu-smi -L / -q parsers: the assumed formats, their tolerance, and loud refusal of other input."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from cfcore.parsers import KINDS, ParseError, parse

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
PPU = FIXTURES / "ppu"


def text(name: str) -> str:
    return (PPU / name).read_text()


def test_list_gives_index_name_uuid():
    data = parse("ppu-smi-list", text("ppu_smi_L_zw810e_x16.txt"))
    assert len(data["ppus"]) == 16
    first = data["ppus"][0]
    assert first["index"] == 0 and first["name"] == "PPU-ZW810E" and first["uuid"].startswith("PPU-")
    assert [p["index"] for p in data["ppus"]] == list(range(16))


def test_list_reads_mig_children_and_crlf_and_spacing():
    raw = (
        "PPU 0:   PPU-ZW810E   (UUID:  PPU-aaaa)\r\n"
        "  MIG 4u.4g48gb Device 0: (UUID: MIG-4416c2c4-534e-4236-b26a-24692af597a1)\r\n"
        "\r\n"
        "PPU 1: PPU-ZW810E (UUID: PPU-bbbb)\r\n"
    )
    data = parse("ppu-smi-list", raw)
    assert [p["uuid"] for p in data["ppus"]] == ["PPU-aaaa", "PPU-bbbb"]
    assert data["ppus"][0]["migs"] == [
        {"name": "4u.4g48gb", "device": 0, "uuid": "MIG-4416c2c4-534e-4236-b26a-24692af597a1"}
    ]
    assert data["ppus"][1]["migs"] == []


def test_q_gives_versions_and_every_device():
    data = parse("ppu-smi-q", text("ppu_smi_q_zw810e_x16.txt"))
    assert (data["driver_version"], data["smi_version"], data["sdk_version"]) == (
        "1.3.2-d7f5a2",
        "1.22",
        "2.1.0-a5f865",
    )
    assert data["attached"] == 16 and len(data["ppus"]) == 16
    dev = data["ppus"][3]
    assert dev["index"] == 3 and dev["bus_id"] == "0000:1c:00.0" and dev["name"] == "PPU-ZW810E"
    assert (dev["memory_total_mib"], dev["memory_used_mib"]) == (97920, 2)
    assert dev["temperature_c"] == 36.0 and dev["power_draw_w"] == 88.0
    assert (dev["health"], dev["ecc_uncorrectable_volatile"], dev["ecc_correctable_volatile"]) == ("OK", 0, 0)


def test_q_device_error_fixture_shows_the_faults():
    ppus = parse("ppu-smi-q", text("ppu_smi_q_zw810e_x16_device_error.txt"))["ppus"]
    assert (
        ppus[5]["health"],
        ppus[5]["ecc_uncorrectable_volatile"],
        ppus[5]["ecc_correctable_volatile"],
    ) == (
        "Critical",
        3,
        12,
    )
    assert ppus[9]["health"] == "Warning"
    assert all(p["health"] == "OK" for i, p in enumerate(ppus) if i not in (5, 9))


def test_q_tolerates_crlf_tabs_other_indent_key_order_unknown_keys_and_na():
    raw = (
        "==============PPU-SMI LOG==============\r\n"
        "SDK Version : 2.1.0\r\n"
        "Some Future Key : whatever\r\n"
        "Driver Version : 1.3.2\r\n"
        "PPU 00000000:3B:00.0\r\n"
        "  Health : Warning\r\n"
        "  New Section\r\n"
        "    Nested Unknown : 7\r\n"
        "  FB Memory Usage\r\n"
        "    Used : N/A\r\n"
        "    Total : 97920 MiB\r\n"
        "  Product Name : PPU-ZW810E\r\n"
        "  PPU UUID : PPU-cccc\r\n"
    )
    data = parse("ppu-smi-q", raw)
    dev = data["ppus"][0]
    assert (
        data["sdk_version"] == "2.1.0" and data["driver_version"] == "1.3.2" and data["smi_version"] is None
    )
    assert (dev["index"], dev["bus_id"], dev["name"], dev["uuid"]) == (
        0,
        "0000:3b:00.0",
        "PPU-ZW810E",
        "PPU-cccc",
    )
    assert (dev["memory_total_mib"], dev["memory_used_mib"], dev["health"]) == (97920, None, "Warning")
    assert dev["temperature_c"] is None and dev["ecc_uncorrectable_volatile"] is None


def test_q_tolerates_tab_indentation():
    raw = "PPU 00000000:3B:00.0\n\tProduct Name\t: PPU-ZW810E\n\tFB Memory Usage\n\t\tTotal : 97920 MiB\n"
    dev = parse("ppu-smi-q", raw)["ppus"][0]
    assert (dev["name"], dev["memory_total_mib"]) == ("PPU-ZW810E", 97920)


NVIDIA_L = "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-f3a3c571-7476-4899-b5a3-adb3254a9493)\n"
NVIDIA_Q = "\n==============NVSMI LOG==============\n\nDriver Version : 535.183.01\nGPU 00000000:1B:00.0\n"


@pytest.mark.parametrize(
    ("kind", "raw", "message"),
    [
        ("ppu-smi-list", "", "empty input"),
        ("ppu-smi-list", "   \n\n", "empty input"),
        ("ppu-smi-list", "<!DOCTYPE html><html>", "HTML"),
        ("ppu-smi-list", NVIDIA_L, "nvidia-smi -L"),
        ("ppu-smi-list", "bash: ppu-smi: command not found\n", "not ppu-smi -L output"),
        ("ppu-smi-list", "PPU 0: PPU-ZW810E (UUID: PPU-a)\nsegfault here\n", "unexpected line"),
        ("ppu-smi-list", "PPU 0: PPU-ZW810E (UUID: PPU-a)\nPPU 0: PPU-ZW810E (UUID: PPU-b)\n", "twice"),
        ("ppu-smi-list", "Failed to initialize HGML: Driver Not Loaded\n", "could not talk"),
        ("ppu-smi-list", "No devices were found\n", "found no PPU"),
        ("ppu-smi-q", "", "empty input"),
        ("ppu-smi-q", NVIDIA_Q, "nvidia-smi -q"),
        ("ppu-smi-q", "==============PPU-SMI LOG==============\nDriver Version : 1\n", "no 'PPU <bus id>'"),
        ("ppu-smi-q", "HEALTH_OK\ncluster:\n  id: 1\n", "not ppu-smi -q output"),
        ("ppu-smi-q", "PPU 00000000:3B:00.0\n    Health : OK\n", "without Product Name or UUID"),
        ("ppu-smi-q", "Failed to initialize HGML: Driver Not Loaded\n", "could not talk"),
    ],
)
def test_other_input_is_a_parse_error_with_a_fix(kind, raw, message):
    with pytest.raises(ParseError) as caught:
        parse(kind, raw)
    assert message in str(caught.value)
    assert caught.value.kind == kind and caught.value.fix


def test_driver_failure_fixture_is_refused_by_both():
    for kind in ("ppu-smi-list", "ppu-smi-q"):
        with pytest.raises(ParseError, match="could not talk to the PPU driver"):
            parse(kind, text("ppu_smi_error_driver_not_loaded.txt"))


def test_the_two_ppu_outputs_are_not_each_other():
    with pytest.raises(ParseError):
        parse("ppu-smi-list", text("ppu_smi_q_zw810e_x16.txt"))
    with pytest.raises(ParseError):
        parse("ppu-smi-q", text("ppu_smi_L_zw810e_x16.txt"))


@pytest.mark.parametrize(
    "path", sorted(p for p in (FIXTURES / "parsers").rglob("*") if p.is_file()), ids=lambda p: p.name
)
def test_every_other_tools_fixture_is_refused(path):
    raw = path.read_text(errors="replace")
    for kind in ("ppu-smi-list", "ppu-smi-q"):
        with pytest.raises(ParseError):
            parse(kind, raw)


@pytest.mark.parametrize("name", ["ppu_smi_L_zw810e_x16.txt", "ppu_smi_q_zw810e_x16.txt"])
def test_cut_anywhere_is_a_result_or_a_parse_error(name):
    kind = "ppu-smi-list" if "_L_" in name else "ppu-smi-q"
    raw = text(name)
    for fraction in (0.01, 0.1, 0.3, 0.5, 0.77, 0.99):
        with contextlib.suppress(ParseError):
            parse(kind, raw[: int(len(raw) * fraction)])


def test_kinds_are_registered_with_their_capture_commands():
    assert KINDS["ppu-smi-list"].capture == "ppu-smi -L"
    assert KINDS["ppu-smi-q"].capture == "ppu-smi -q"
