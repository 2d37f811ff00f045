"""Every replayed command renders for every profile, in structurally right formats."""

from __future__ import annotations

import csv
import io
import re
import xml.etree.ElementTree as ET

import pytest
from hwreplay_testlib import ALL_PROFILES, commands_for
from replaylib.profiles import resolve
from replaylib.tools import TOOLS, installed


@pytest.mark.parametrize("name", ALL_PROFILES)
def test_every_command_renders(ctx, render, name):
    profile = resolve(ctx, name)
    commands = commands_for(profile)
    assert commands, name
    for command in commands:
        result = render(name, *command)
        assert result.rc == 0, (command, result.stderr, result.stdout)
        assert result.stdout.strip(), command
        assert result.stdout.endswith("\n"), command
        assert result.stderr == "", command


@pytest.mark.parametrize("name", ALL_PROFILES)
def test_tools_missing_from_the_hardware_are_not_installed(ctx, render, name):
    profile = resolve(ctx, name)
    for tool in TOOLS:
        if installed(profile, tool):
            continue
        result = render(name, tool, "-h")
        assert result.rc == 127
        assert result.stdout == ""
        assert result.stderr == f"{tool}: command not found\n"


def test_cpu_none_has_no_accelerator_tools(ctx):
    profile = resolve(ctx, "cpu-none")
    assert [tool for tool in TOOLS if installed(profile, tool)] == ["lspci", "dmesg"]


@pytest.mark.parametrize("name", ["h100-healthy", "h200-healthy"])
def test_nvidia_xml_parses_and_matches_text(ctx, render, name):
    xml_text = render(name, "nvidia-smi", "-q", "-x").stdout
    assert xml_text.splitlines()[:2] == [
        '<?xml version="1.0" ?>',
        '<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">',
    ]
    root = ET.fromstring(xml_text.split("\n", 2)[2])
    gpus = root.findall("gpu")
    assert root.findtext("attached_gpus") == "8"
    assert root.findtext("driver_version") == resolve(ctx, name)["nvidia"]["driver_version"]
    assert len(gpus) == 8
    text = render(name, "nvidia-smi", "-q").stdout
    assert re.search(r"^Attached GPUs\s+: 8$", text, re.M)
    sections = re.findall(r"^GPU (\S+)$", text, re.M)
    assert sections == [gpu.get("id") for gpu in gpus]
    for gpu in gpus:
        block = text.split("GPU " + gpu.get("id"), 1)[1]
        assert f"GPU UUID                              : {gpu.findtext('uuid')}" in block
        assert f"Serial Number                         : {gpu.findtext('serial')}" in block
        width = gpu.findtext("pci/pci_gpu_link_info/link_widths/current_link_width")
        assert width == "16x"
        assert gpu.findtext("remapped_rows/remapped_row_pending") == "No"
        assert gpu.findtext("retired_pages/pending_retirement") == "N/A"  # Hopper: row remapping instead


def test_nvidia_query_text_aligns_values_in_column_43(render):
    text = render("h100-healthy", "nvidia-smi", "-q").stdout
    for line in text.splitlines():
        if " : " in line:
            assert line.index(": ") == 42, line


def test_nvidia_csv_header_rows_and_units(render):
    fields = "index,name,pci.bus_id,pcie.link.width.current,power.draw,memory.total,retired_pages.pending"
    result = render("h100-healthy", "nvidia-smi", "--query-gpu=" + fields, "--format=csv")
    rows = list(csv.reader(io.StringIO(result.stdout), skipinitialspace=True))
    assert rows[0] == [
        "index",
        "name",
        "pci.bus_id",
        "pcie.link.width.current",
        "power.draw [W]",
        "memory.total [MiB]",
        "retired_pages.pending",
    ]
    assert len(rows) == 9
    assert [row[0] for row in rows[1:]] == [str(i) for i in range(8)]
    assert all(row[5] == "81559 MiB" and row[4].endswith(" W") and row[6] == "[N/A]" for row in rows[1:])
    bare = render(
        "h100-healthy", "nvidia-smi", "--query-gpu=" + fields, "--format=csv,noheader,nounits"
    ).stdout
    first = next(csv.reader(io.StringIO(bare), skipinitialspace=True))
    assert first[0] == "0" and first[5] == "81559" and not first[4].endswith("W")


def test_nvidia_csv_aliases_and_gpu_selection(render):
    result = render(
        "h200-healthy", "nvidia-smi", "-i", "3", "--query-gpu=gpu_name,gpu_bus_id", "--format=csv,noheader"
    )
    assert result.stdout == "NVIDIA H200, 00000000:61:00.0\n"


def test_nvidia_errors_like_the_real_tool(render):
    unknown = render("h100-healthy", "nvidia-smi", "--query-gpu=index,bogus.field", "--format=csv")
    assert unknown.rc == 2
    assert unknown.stdout.startswith('Field "bogus.field" is not a valid field to query.')
    for args in (
        ["--bogus"],
        ["topo", "-x"],
        ["nvlink", "-e"],
        ["-x"],
        ["--query-gpu=index"],
        ["-q", "-d", "NOPE"],
    ):
        result = render("h100-healthy", "nvidia-smi", *args)
        assert result.rc == 2, args
        assert "Invalid combination of input arguments" in result.stdout, args
    missing = render("h100-healthy", "nvidia-smi", "-i", "8", "-q")
    assert (missing.rc, missing.stdout) == (6, "No devices were found\n")


def test_nvidia_default_table_has_eight_gpus(render):
    table = render("h100-healthy", "nvidia-smi").stdout
    rows = re.findall(r"^\|\s+(\d)\s+NVIDIA H100 80GB HBM3\s+On\s+\| (\S+) Off \|", table, re.M)
    assert [index for index, _ in rows] == [str(i) for i in range(8)]
    widths = {len(line) for line in table.splitlines()[1:] if line.strip()}
    assert widths == {89}  # the 535 driver's table


def test_nvidia_default_table_follows_driver_branch(ctx, render, tmp_path):
    (tmp_path / "no-overrides.json").write_text('{"nvidia_driver_version": "550.90.07"}')
    table = render("h100-healthy", "nvidia-smi").stdout
    assert (
        "| NVIDIA-SMI 550.90.07              Driver Version: 550.90.07      CUDA Version: 12.4     |" in table
    )
    assert {len(line) for line in table.splitlines()[1:] if line.strip()} == {91}


def test_power_draw_fields_follow_driver_branch(render):
    r535 = render("h100-healthy", "nvidia-smi", "-q", "-d", "POWER").stdout
    r550 = render("h200-healthy", "nvidia-smi", "-q", "-d", "POWER").stdout
    assert r535.count("        Power Draw                        : ") == 16
    assert "Average Power Draw" not in r535
    assert r550.count("        Average Power Draw                : ") == 16
    assert r550.count("        Instantaneous Power Draw          : ") == 16
    assert "<instant_power_draw>" in render("h200-healthy", "nvidia-smi", "-q", "-x").stdout


def test_nvidia_query_sections_with_d(render):
    text = render("h100-healthy", "nvidia-smi", "-q", "-d", "ROW_REMAPPER").stdout
    assert text.count("    Remapped Rows") == 8
    assert "Product Name" not in text and "Temperature" not in text


def test_topology_matrix(render):
    text = render("h100-healthy", "nvidia-smi", "topo", "-m").stdout
    lines = text.splitlines()
    header = lines[0].replace("\x1b[4m", "").replace("\x1b[0m", "").split("\t")[1:]
    assert header[:8] == [f"GPU{i}" for i in range(8)]
    assert header[8:18] == [f"NIC{i}" for i in range(10)]
    gpu0 = lines[1].split("\t")
    assert gpu0[1] == " X " and gpu0[2:9] == ["NV18"] * 7 and gpu0[9] == "PXB"
    assert "  NIC3: mlx5_3" in lines


def test_nvlink_status(render):
    text = render("h100-healthy", "nvidia-smi", "nvlink", "-s").stdout
    assert len(re.findall(r"^GPU \d: NVIDIA H100 80GB HBM3 \(UUID: GPU-[0-9a-f-]{36}\)$", text, re.M)) == 8
    assert len(re.findall(r"^\t Link \d+: 26\.562 GB/s$", text, re.M)) == 8 * 18


def test_npu_smi_table(render):
    text = render("910b-healthy", "npu-smi", "info").stdout
    lines = text.splitlines()
    assert lines[1].startswith("| npu-smi 24.1.rc2 ") and "Version: 24.1.rc2" in lines[1]
    assert {len(line) for line in lines} == {98}
    npus = re.findall(r"^\| (\d)\s+910B3\s+\| OK\s+\|", text, re.M)
    assert npus == [str(i) for i in range(8)]
    buses = re.findall(r"^\| 0\s+\| (0000:[0-9A-F]{2}:00\.0)\s+\|", text, re.M)
    assert len(buses) == 8 and buses[0] == "0000:C1:00.0"
    assert text.count("No running processes found in NPU") == 8


def test_npu_smi_details(render):
    board = render("910b-healthy", "npu-smi", "info", "-t", "board", "-i", "2").stdout
    assert "\tSoftware Version               : 24.1.rc2\n" in board
    assert "\tPCI Device ID                  : 0xD802\n" in board
    assert "\tPCIe Bus Info                  : 0000:C2:00.0\n" in board
    health = render("910b-healthy", "npu-smi", "info", "-t", "health", "-i", "2", "-c", "0").stdout
    assert health == (
        "\tHealth Status                  : OK\n\tError Code                     : NA\n"
        "\tError Information              : NA\n"
    )


def test_ascend_errors(render):
    assert render("910b-healthy", "npu-smi", "info", "-t", "board", "-i", "8").rc == 1
    assert render("910b-healthy", "npu-smi", "info", "-t", "bogus", "-i", "0").rc == 1
    assert render("910b-healthy", "npu-smi", "set", "-t", "x").rc == 1
    assert render("910b-healthy", "hccn_tool", "-i", "0", "-ip", "-s", "address", "1.2.3.4").rc == 1
    assert render("910b-healthy", "hccn_tool", "-i", "9", "-ip", "-g").rc == 1


def test_hccn_tool(render):
    assert render("910b-healthy", "hccn_tool", "-i", "3", "-ip", "-g").stdout == (
        "ipaddr:10.10.0.14\nnetmask:255.255.255.0\n"
    )
    assert render("910b-healthy", "hccn_tool", "-i", "3", "-link", "-g").stdout == "link status: UP\n"
    assert (
        render("910b-healthy", "hccn_tool", "-i", "3", "-net_health", "-g").stdout
        == "net health status: Success\n"
    )
    assert (
        render("910b-healthy", "hccn_tool", "-i", "3", "-netdetect", "-g").stdout
        == "netdetect address: 10.10.0.1\n"
    )


def test_ibstat(render):
    text = render("h100-healthy", "ibstat").stdout
    assert re.findall(r"^CA '(mlx5_\d+)'$", text, re.M) == [f"mlx5_{i}" for i in range(10)]
    assert text.count("\t\tLink layer: InfiniBand\n") == 8
    assert text.count("\t\tLink layer: Ethernet\n") == 2
    assert text.count("\t\tState: Active\n") == 10
    assert render("h100-healthy", "ibstat", "-l").stdout.split() == [f"mlx5_{i}" for i in range(10)]
    one = render("h100-healthy", "ibstat", "mlx5_3").stdout
    assert one.startswith("CA 'mlx5_3'\n\tCA type: MT4129\n") and "\t\tRate: 400\n" in one
    bad = render("h100-healthy", "ibstat", "mlx5_42")
    assert bad.rc == 255 and "stat of IB device 'mlx5_42' failed" in bad.stderr


def test_lspci_devices_and_links(render):
    full = render("h100-healthy", "lspci", "-vvv").stdout
    assert (
        len(
            re.findall(
                r"^[0-9a-f]{2}:00\.0 3D controller: NVIDIA Corporation GH100 \[H100 SXM5 80GB\]", full, re.M
            )
        )
        == 8
    )
    assert (
        len(re.findall(r"Infiniband controller: Mellanox Technologies MT2910 Family \[ConnectX-7\]", full))
        == 8
    )
    assert full.count("\t\tLnkSta:\tSpeed 32GT/s (ok), Width x16 (ok)\n") == 8 + 10
    nvidia_only = render("h100-healthy", "lspci", "-d", "10de:").stdout.splitlines()
    assert len(nvidia_only) == 8 + 4  # GPUs and NVSwitches
    one = render("h100-healthy", "lspci", "-vvv", "-s", "0000:61:00.0").stdout
    assert one.startswith("61:00.0 3D controller") and one.count("LnkSta:") == 1
    numeric = render("910b-healthy", "lspci", "-nn", "-d", "19e5:d802").stdout.splitlines()
    assert len(numeric) == 8
    assert numeric[0] == (
        "01:00.0 Processing accelerators [1200]: Huawei Technologies Co., Ltd. Device d802 [19e5:d802] "
        "(rev 20)"
    )
    assert render("h100-healthy", "lspci", "-D", "-s", "1b:00.0").stdout.startswith("0000:1b:00.0 ")
    bad = render("h100-healthy", "lspci", "-Z")
    assert bad.rc == 2 and "invalid option -- 'Z'" in bad.stderr


def test_dmesg_time_formats(render):
    plain = render("h100-healthy", "dmesg").stdout.splitlines()
    assert all(re.match(r"^\[ {0,4}\d+\.\d{6}\] ", line) for line in plain)
    assert "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.183.01 " in "\n".join(plain)
    ctime_lines = render("h100-healthy", "dmesg", "-T").stdout.splitlines()
    assert all(re.match(r"^\[\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}\] ", line) for line in ctime_lines)
    iso = render("h100-healthy", "dmesg", "--time-format", "iso").stdout.splitlines()
    assert all(re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d,\d{6}[+-]\d\d:\d\d ", line) for line in iso)
    assert len(plain) == len(ctime_lines) == len(iso)
    assert render("h100-xid79", "dmesg", "--level", "err").stdout.count("NVRM:") == 7
    bad = render("h100-healthy", "dmesg", "--bogus")
    assert bad.rc == 1 and "unrecognized option '--bogus'" in bad.stderr
