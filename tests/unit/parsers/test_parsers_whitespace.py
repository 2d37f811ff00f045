"""Table outputs pasted from a terminal or a ticket: runs of spaces instead of tabs, indentation, CRLF.

Each parser must read such text as it reads the tool's own output, and still refuse
what is not the tool's output at all.
"""

# The topo text reproduces the tool's lines, wider than the project's 110 columns.
# ruff: noqa: E501

from __future__ import annotations

import re

import pytest
from cfcore.parsers import ParseError, parse


def spaced(text: str) -> str:
    """The text as a terminal shows it: tabs expanded to spaces, ANSI escapes gone."""
    return re.sub(r"\x1b\[[0-9;]*m", "", text).expandtabs(8)


def crlf(text: str) -> str:
    return text.replace("\n", "\r\n")


def indented(text: str, prefix: str = "    ") -> str:
    return "".join(prefix + line if line.strip() else line for line in text.splitlines(True))


TOPO_7_GPUS = """GPU0    GPU1    GPU2    GPU3    GPU4    GPU5    GPU6    CPU Affinity    NUMA Affinity   GPU NUMA ID
GPU0     X      NV18    NV18    NV18    NV18    NV18    NV18    0-55,112-167    0               N/A
GPU1    NV18     X      NV18    NV18    NV18    NV18    NV18    0-55,112-167    0               N/A
GPU2    NV18    NV18     X      NV18    NV18    NV18    NV18    0-55,112-167    0               N/A
GPU3    NV18    NV18    NV18     X      NV18    NV18    NV18    0-55,112-167    0               N/A
GPU4    NV18    NV18    NV18    NV18     X      NV18    NV18    56-111,168-223  1               N/A
GPU5    NV18    NV18    NV18    NV18    NV18     X      NV18    56-111,168-223  1               N/A
GPU6    NV18    NV18    NV18    NV18    NV18    NV18     X      56-111,168-223  1               N/A

Legend:

  X    = Self
  NV#  = Connection traversing a bonded set of # NVLinks
"""


def test_topo_of_a_7_gpu_node_whose_first_line_starts_with_gpu0():
    facts = parse("nvidia-smi-topo", TOPO_7_GPUS)
    assert [gpu["index"] for gpu in facts["gpus"]] == list(range(7))
    assert facts["gpus"][6]["links"] == {f"GPU{i}": "NV18" for i in range(6)}
    assert (facts["gpus"][4]["cpu_affinity"], facts["gpus"][4]["numa_affinity"]) == ("56-111,168-223", 1)
    assert facts["gpus"][4]["gpu_numa_id"] is None


@pytest.mark.parametrize("variant", [spaced, lambda t: crlf(spaced(t)), lambda t: indented(spaced(t))])
def test_topo_fixture_with_spaces_parses_like_the_tab_original(load, variant):
    original = parse("nvidia-smi-topo", load("nvidia/topo_h100x8.txt"))
    assert parse("nvidia-smi-topo", variant(load("nvidia/topo_h100x8.txt"))) == original


def test_topo_refuses_a_table_that_is_not_topo(load):
    with pytest.raises(ParseError, match="no GPU0 header row"):
        parse("nvidia-smi-topo", spaced(load("nvidia/nvlink_h100x8.txt")))
    with pytest.raises(ParseError, match="no GPU0 header row"):
        parse("nvidia-smi-topo", "NAME   READY   STATUS\nweb-0  1/1     Running\n")


def test_nvlink_with_spaces_crlf_and_extra_blanks(load):
    text = load("nvidia/nvlink_h100x8.txt")
    original = parse("nvidia-smi-nvlink", text)
    loose = crlf(spaced(text)).replace("Link 3: ", "Link  3 :  ").replace("GPU 1: ", "GPU 1 :  ")
    assert parse("nvidia-smi-nvlink", indented(loose)) == original


@pytest.mark.parametrize(
    "name",
    ["ascend/npu_smi_info_910b_x8.txt", "ascend/npu_smi_info_a3_x16.txt", "ascend/npu_smi_info_310p_duo.txt"],
)
def test_npu_smi_info_with_tabs_crlf_and_indentation(load, name):
    text = load(name)
    original = parse("npu-smi-info", text)
    loose = indented(crlf(text.replace("    ", "\t")), "  ")
    assert parse("npu-smi-info", loose) == original


@pytest.mark.parametrize(
    "kind,name",
    [
        ("hccn-ip", "ascend/hccn_ip.txt"),
        ("hccn-link", "ascend/hccn_link_up.txt"),
        ("hccn-net-health", "ascend/hccn_net_health_success.txt"),
    ],
)
def test_hccn_outputs_with_crlf_and_indentation(load, kind, name):
    text = load(name)
    assert parse(kind, indented(crlf(text), "\t")) == parse(kind, text)


@pytest.mark.parametrize("name", ["ib/ibstat_h100_all_active.txt", "ib/ibstat_h100_down_polling.txt"])
def test_ibstat_with_spaces_or_without_indentation(load, name):
    text = load(name)
    original = parse("ibstat", text)
    assert parse("ibstat", crlf(spaced(text))) == original
    flat = "\n".join(line.strip() for line in text.splitlines())
    assert parse("ibstat", flat)["cas"] == original["cas"]


def test_lspci_indented_as_a_whole_or_flattened(load):
    text = load("pci/lspci_vvv_h100_cx7.txt")
    original = parse("lspci", text)
    moved = parse("lspci", crlf(indented(spaced(text), "  ")))
    assert [d["bus_id"] for d in moved["devices"]] == [d["bus_id"] for d in original["devices"]]
    assert [d["link_sta_width"] for d in moved["devices"]] == [
        d["link_sta_width"] for d in original["devices"]
    ]
    flat = parse("lspci", "\n".join(line.strip() for line in text.splitlines()))
    assert [d["link_cap_speed_gts"] for d in flat["devices"]] == [
        d["link_cap_speed_gts"] for d in original["devices"]
    ]


def test_csv_with_spaces_and_crlf(load):
    text = load("nvidia/csv_h100x8.csv")
    loose = crlf("\n".join("  " + line.replace(", ", " ,   ") + "  " for line in text.splitlines()))
    assert parse("nvidia-smi-csv", loose)["gpus"] == parse("nvidia-smi-csv", text)["gpus"]


def test_kernel_log_indented_and_crlf(load):
    text = load("kernel/dmesg_xid_new_form.txt")
    original = parse("xid", text)
    moved = parse("xid", indented(crlf(text)))
    assert [(e["xid"], e["pci_bus_id"], e["timestamp"]) for e in moved["events"]] == [
        (e["xid"], e["pci_bus_id"], e["timestamp"]) for e in original["events"]
    ]


@pytest.mark.parametrize(
    "kind", ["nvidia-smi-topo", "nvidia-smi-nvlink", "npu-smi-info", "ibstat", "lspci", "hccn-link"]
)
def test_whitespace_tolerance_does_not_accept_other_output(load, kind):
    with pytest.raises(ParseError):
        parse(kind, indented(crlf(load("garbage/ceph_status.txt"))))
