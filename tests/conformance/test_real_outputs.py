"""Conformance: the parsers against outputs captured on real hardware.

Reads every file under the shared real-outputs folder (env CLUSTERFORGE_REAL_OUTPUTS,
default <repo>/../shared/real-outputs) and decides, file by file, what it is:
- the output of a KIND: it must parse, with plausible facts (GPU count and driver
  version as the file name and source header state them, NPU ids, port states...),
  and every other parser must refuse it;
- a capture of several commands: each command of a KIND is checked the same way;
- a known-bad capture (PARTIAL, NEGATIVE, another tool's output, a masked value): it
  must raise ParseError, or parse with the documented nulls;
- anything else is reported as skipped, 'not applicable', with the reason.
The module is skipped, saying so, when the folder does not exist.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from cfcore.parsers import KINDS, ParseError, parse, read_sysfs_infiniband, strip_source_header
from real_captures import sections, write_flattened_tree, write_ttar_tree

REPO = Path(__file__).resolve().parents[2]
REAL = Path(os.environ.get("CLUSTERFORGE_REAL_OUTPUTS", REPO.parent / "shared" / "real-outputs"))

if not REAL.is_dir():
    pytest.skip(
        f"no real outputs at {REAL} (set CLUSTERFORGE_REAL_OUTPUTS to the folder)", allow_module_level=True
    )

FILES = sorted(str(path.relative_to(REAL)) for path in REAL.rglob("*") if path.is_file())

# Files (regex on the path under the folder) that no ClusterForge parser reads, and why.
NOT_APPLICABLE = [
    (r"^README\.md$", "the folder's README"),
    (r"^dcgm/", "dcgmi diag output: read by the DCGM integration, not a facts parser"),
    (
        r"^storage/",
        "JuiceFS/Ceph output: checked against its stated health and sessions by test_real_storage_outputs.py",
    ),
    (r"^sched/", "Kubernetes node descriptions: read by the scheduler checks, not a facts parser"),
]

# Known-bad inputs: (path regex, KIND, what the ParseError must say).
MUST_REFUSE = [
    (r"PARTIAL-invalid", "nvidia-smi-q", "truncated"),
    (r"^nvidia/query-retired-pages-csv_", "nvidia-smi-csv", "--query-retired-pages"),
    (r"^nvidia/help-query-gpu_", "nvidia-smi-csv", "no header row"),
    (r"^nvidia/nvidia-smi-default-table_", "nvidia-smi-q", "not nvidia-smi -q output"),
    (r"^nvidia/nv-fabricmanager-log_", "xid", "no line looks like a kernel log line"),
    (r"^ib/ibstatus\.", "ibstat", "ibstatus"),
]

# Whole files that are the output of one KIND.
WHOLE_FILES = [
    (r"^nvidia/nvidia-smi-q", "nvidia-smi-q"),
    (r"^nvidia/query-gpu-ALLFIELDS-csv_", "nvidia-smi-csv"),
    (r"^nvidia/topo-m_", "nvidia-smi-topo"),
    (r"^nvidia/(nvlink-s_|nvidia-smi-nvlink-status_)", "nvidia-smi-nvlink"),
    (r"^nvidia/lspci-vvv_", "lspci"),
    (r"^nvidia/(dmesg_NVRM-Xid|az-nhc_health-log)", "xid"),
    (r"^ib/syslog_", "xid"),
    (r"^ib/ibstat\.", "ibstat"),
    (r"^ascend/npu-smi-info_", "npu-smi-info"),
    (r"^nccl/", "nccl-tests"),
    (r"^ib/ib_write_bw_", "ib-perftest"),
    (r"^nvidia/nvbandwidth_", "nvbandwidth"),
]

# Commands of multi-command captures -> KIND.
COMMAND_KINDS = [
    (r"^npu-smi info$", "npu-smi-info"),
    (r"^npu-smi info (?=.*-t board)(?=.*-i \d+)", "npu-smi-board"),
    (r"^npu-smi info (?=.*-t health)", "npu-smi-health"),
    (r"^hccn_tool -i \d+ -ip -g$", "hccn-ip"),
    (r"^hccn_tool -i \d+ -link -g$", "hccn-link"),
    (r"^hccn_tool -i \d+ -net_health -g$", "hccn-net-health"),
    (r"^hccn_tool -i \d+ -ping -g address \S+$", "hccn-ping"),
]


def _first(rules, path):
    return next((rule for rule in rules if re.search(rule[0], path)), None)


def _read(path: str) -> tuple[str, str]:
    """(the source header, the capture without it)."""
    raw = (REAL / path).read_text(encoding="utf-8", errors="replace")
    return raw.splitlines()[0], strip_source_header(raw)


def _expected_gpus(path: str, header: str) -> int | None:
    match = re.search(r"(\d+)x(?:nvidia-|H100|H200|A100)", path) or re.search(r"(\d+)gpu", path)
    if match:
        return int(match.group(1))
    single = re.search(r"nvlink -s -i (\d+)", header)
    return 1 if single else None


def _expected_driver(path: str, header: str) -> str | None:
    match = re.search(r"drv(\d+\.\d+(?:\.\d+)?)", path) or re.search(r"driver (\d{3}\.\d+(?:\.\d+)?)", header)
    return match.group(1) if match else None


def _others_refuse(text: str, own: str, where: str) -> None:
    """Fail loudly: no other parser may accept this output."""
    for kind in KINDS:
        if kind == own:
            continue
        try:
            parse(kind, text)
        except ParseError:
            continue
        pytest.fail(f"{where}: parsed as {kind} although it is {own} output")


# --- plausibility per KIND -------------------------------------------------------------


def _check_gpu_inventory(facts, path, header):
    gpus = facts["gpus"]
    expected = _expected_gpus(path, header)
    assert gpus, path
    if expected is not None:
        assert len(gpus) == expected, f"{path}: {len(gpus)} GPUs, the capture is of {expected}"
    driver = _expected_driver(path, header)
    if driver:
        assert facts["driver_version"] == driver
    for gpu in gpus:
        assert re.match(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$", gpu["pci_bus_id"])
    if "PAGE_RETIREMENT" in path:  # `-q -d PAGE_RETIREMENT`: the documented nulls elsewhere
        assert all(gpu["name"] is None and gpu["memory_total_mib"] is None for gpu in gpus)
        pending = [gpu["retired_pages_pending"] for gpu in gpus]
        # the edited copy marks GPUs 2, 4, 6 and 8 (1-based) as having pages pending retirement
        assert pending == ([False, True] * 4 if "NEGATIVE" in path else [False] * 8)
        return
    model = "H200" if "h200" in path.lower() else "H100"
    for gpu in gpus:
        assert model in gpu["name"]
        assert gpu["memory_total_mib"] > 70000
        assert gpu["pcie_width_max"] == 16 and gpu["pcie_gen_max"] == 5
        assert gpu["ecc_mode"] == "Enabled"
        assert gpu["remapped_rows_pending"] is False
        assert 10 <= gpu["temperature_c"] <= 90
        assert 30 <= gpu["power_draw_w"] <= 750


def _check_topo(facts, path, header):
    assert len(facts["gpus"]) == _expected_gpus(path, header)
    assert facts["gpus"][0]["cpu_affinity"]


def _check_nvlink(facts, path, header):
    gpus = facts["gpus"]
    assert len(gpus) == _expected_gpus(path, header) or (len(gpus) == 8 and "8xA100" in path)
    if "all-links-inactive" in path:
        assert gpus[0]["links"] == [] and "inactive" in gpus[0]["nvlink_error"]
        return
    links_per_gpu = 12 if "a100" in path.lower() else 18  # NVLink3 A100: 12, NVLink4 H100/H200: 18
    for gpu in gpus:
        assert len(gpu["links"]) == links_per_gpu
        assert all(link["state"] == "active" and link["speed_gbps"] >= 25 for link in gpu["links"])


def _check_lspci(facts, path, header):
    devices = facts["devices"]
    gpus = [device for device in devices if (device["vendor_id"], device["device_id"]) == ("10de", "2330")]
    assert len(gpus) == 8
    assert all(gpu["link_cap_width"] == 16 and gpu["downgraded"] is False for gpu in gpus)
    marked = [device for device in devices if device["link_sta_marks"]]
    assert marked
    for device in marked:  # our comparison agrees with lspci's own (ok)/(downgraded) marks
        assert device["downgraded"] == any("downgraded" in mark for mark in device["link_sta_marks"]), device


def _check_xid(facts, path, header):
    events = facts["events"]
    if path.startswith("ib/syslog_"):
        assert events == []
        return
    assert events and {event["xid"] for event in events} == {119}
    bus_ids = {event["pci_bus_id"] for event in events}
    if path.startswith("nvidia/dmesg_"):
        assert bus_ids == {"0000:9b:00.0"} and len(events) == 5
        assert facts["gpu_uuids"] == {"0000:9b:00.0": "GPU-509665ad-b600-ac93-3616-d754b23d636d"}
    else:
        assert bus_ids == {"0002:00:00.0"}


def _check_ibstat(facts, path, header):
    cas = facts["cas"]
    assert cas
    ports = [port for ca in cas for port in ca["ports"]]
    assert all(port["state"] in ("Active", "Down", "Initializing", "Armed") for port in ports)
    assert all(port["link_layer"] in ("InfiniBand", "Ethernet") for port in ports)
    if ".all.active." in path:
        assert all(port["state"] == "Active" and port["physical_state"] == "LinkUp" for port in ports)
    if ".some.down." in path:
        assert any(port["state"] == "Down" for port in ports)
    if "ibpanic" in path:
        assert any(message.startswith("ibpanic:") for message in facts["tool_messages"])


def _check_npu_table(facts, path, header):
    npus = facts["npus"]
    assert npus
    version = re.search(r"_(\d+\.\d+\.[0-9a-z.]+?)(?:_|\.txt)", path)
    if version:
        assert facts["version"] == version.group(1)
    assert all(chip["npu_id"] is not None and chip["chip_id"] is not None for chip in npus)
    assert all(chip["health"] in ("OK", "Warning", "Alarm", "Critical") for chip in npus)
    if "A3" in path:
        assert (facts["npu_count"], facts["chip_count"]) == (2, 4)
        assert [chip["phy_id"] for chip in npus] == [0, 1, 2, 3]
    if "310B4" in path:
        assert npus[0]["health"] == "Alarm" and npus[0]["hbm_total_mb"] is None
    if "910B" in path:
        assert all(chip["hbm_total_mb"] == 65536 and chip["bus_id"] for chip in npus)


def _check_board(facts, path, header):
    assert facts["npu_id"] == 0
    assert facts["firmware_version"] == "7.1.0.7.220"
    assert facts["bus_id"] == "0000:61:00.0"


def _check_health(facts, path, header):
    assert facts["health"] == "OK" and facts["error_codes"] == []


def _check_hccn(facts, path, header, command):
    device = int(re.search(r"-i (\d+)", command).group(1))
    assert facts["device"] == device
    if "-ip" in command:
        assert facts["address"] and facts["netmask"] and facts["prefix_length"] in (16, 24)
    elif "-link" in command:
        assert facts["link_status"] in ("UP", "DOWN")
    elif "-ping" in command:
        assert facts["address"] == command.split()[-1]
        assert facts["transmitted"] == facts["received"] == len(facts["times_ms"]) and facts["loss_pct"] == 0
    else:
        assert facts["net_health"] in ("Success", "Init", "Socket failed")


def _check_nccl(facts, path, header):
    expected = _expected_gpus(path, header)
    rows = facts["rows"]
    assert facts["test"] in (None, "all_reduce_perf")
    assert facts["n_ranks"] == expected == len(facts["devices"])
    assert [device["rank"] for device in facts["devices"]] == list(range(expected))
    model = "H100" if "H100" in path else "A100"
    assert all(model in device["name"] for device in facts["devices"])
    # the header of both captures states -f 2: each size doubles the one before (0-byte rows aside)
    sizes = [row["size_bytes"] for row in rows if row["size_bytes"]]
    assert sizes == [sizes[0] * 2**index for index in range(len(sizes))] and sizes[-1] == 8 * 1024**3
    assert all(row["type"] == "float" and row["redop"] == "sum" for row in rows)
    assert (facts["errors"], facts["wrong_results"], facts["completed"]) == (0, False, True)
    # nccl-tests' "Avg bus bandwidth" is the mean busbw of both sides of every row
    sides = [row[side]["busbw_gbps"] for row in rows for side in ("out_of_place", "in_place")]
    assert abs(sum(sides) / len(sides) - facts["avg_busbw_gbps"]) < 0.01
    if "2node" in path:
        hosts = {device["host"] for device in facts["devices"]}
        assert len(hosts) == 2
        assert all(device["bus_id"] and device["bus_id"].endswith(":00.0") for device in facts["devices"])
        assert facts["avg_busbw_gbps"] == 70.742 and facts["max_busbw_gbps"] == 338.82
    else:
        assert all(row["out_of_place"]["errors"] is None for row in rows)  # validation: 0 prints N/A
        assert facts["avg_busbw_gbps"] == 68.4048


def _check_perftest(facts, path, header):
    assert (facts["test"], facts["kind"], facts["link_type"]) == ("RDMA_Write BW", "bw", "IB")
    assert (facts["device"], facts["qps"], facts["mtu_bytes"]) == ("ib0", 1, 4096)
    assert facts["errors"] == [] and facts["gpudirect"] is False
    # server and client output in one file: the one message size is kept once
    assert [row["size_bytes"] for row in facts["rows"]] == [8 * 1024 * 1024]
    row = facts["rows"][0]
    # perftest's MB/sec is 2^20 bytes/s: the message rate gives the same Gb/s
    assert abs(row["msg_rate_mpps"] * 1e6 * row["size_bytes"] * 8 / 1e9 - row["bw_avg_gbps"]) < 0.5
    assert 150 < facts["bw_avg_gbps"] < 215  # HDR 200G, loopback


def _check_nvbandwidth(facts, path, header):
    assert facts["errors"] == []
    measured = [t for t in facts["testcases"].values() if t.get("per_gpu_gbps")]
    assert measured, facts["testcases"].keys()
    for testcase in measured:
        per_gpu = testcase["per_gpu_gbps"]
        assert per_gpu and all(value > 0 for value in per_gpu.values())
        assert testcase["sum_gbps"] is None or testcase["sum_gbps"] >= max(per_gpu.values())


CHECKS = {
    "nvbandwidth": _check_nvbandwidth,
    "nvidia-smi-q": _check_gpu_inventory,
    "nvidia-smi-csv": _check_gpu_inventory,
    "nvidia-smi-topo": _check_topo,
    "nvidia-smi-nvlink": _check_nvlink,
    "lspci": _check_lspci,
    "xid": _check_xid,
    "ibstat": _check_ibstat,
    "npu-smi-info": _check_npu_table,
    "npu-smi-board": _check_board,
    "npu-smi-health": _check_health,
    "nccl-tests": _check_nccl,
    "ib-perftest": _check_perftest,
}


# --- the tests ---------------------------------------------------------------------------


@pytest.mark.parametrize("path", FILES)
def test_real_output(path, tmp_path):
    header, text = _read(path)
    refuse = _first(MUST_REFUSE, path)
    if refuse:
        with pytest.raises(ParseError, match=re.escape(refuse[2])):
            parse(refuse[1], text)
        return
    whole = _first(WHOLE_FILES, path)
    if whole:
        kind = whole[1]
        CHECKS[kind](parse(kind, text), path, header)
        _others_refuse(text, kind, path)
        return
    if path.startswith("ib/sysfs_class_infiniband_"):
        _check_sysfs(path, text, tmp_path)
        return
    na = _first(NOT_APPLICABLE, path)
    if na:
        pytest.skip(f"not applicable: {na[1]}")
    _check_sections(path, header, text)


def _check_sysfs(path, text, tmp_path):
    if path.endswith(".ttar.txt"):
        facts = read_sysfs_infiniband(str(write_ttar_tree(text, tmp_path)))
        assert [ca["name"] for ca in facts["cas"]] == ["mlx4_0", "mlx5_0"]
        assert [port["port"] for port in facts["cas"][0]["ports"]] == [1, 2]
        assert facts["cas"][1]["node_guid"].startswith("0x")
        return
    facts = read_sysfs_infiniband(str(write_flattened_tree(text, tmp_path)))
    names = sorted(
        {line.split("/", 1)[0] for line in text.splitlines() if "/" in line and not line.startswith("#")}
    )
    assert sorted(ca["name"] for ca in facts["cas"]) == sorted(names)
    ports = [(ca["name"], port) for ca in facts["cas"] for port in ca["ports"]]
    assert all(port["state"] == "Active" and port["physical_state"] == "LinkUp" for _name, port in ports)
    assert {port["rate_gbps"] for _name, port in ports} == {400, 200}
    bond = next(port for name, port in ports if name == "mlx5_bond_0")
    assert bond["link_layer"] == "Ethernet"


def _check_sections(path, header, text):
    checked, skipped = 0, []
    for section in sections(text):
        rule = _first(COMMAND_KINDS, section.command)
        where = f"{path} line {section.line} ({section.command})"
        if rule is None:
            skipped.append(section.command)
            continue
        kind = rule[1]
        device = re.search(r"-i (\d+)", section.command)
        if not section.text.strip() or re.search(r"\d+\.xx\.", section.text):
            # the capture holds no output for this command, or the publisher masked the address
            with pytest.raises(ParseError):
                parse(kind, section.text)
            checked += 1
            continue
        facts = parse(
            kind, section.text, device=int(device.group(1)) if device and kind.startswith("hccn") else None
        )
        if kind.startswith("hccn"):
            _check_hccn(facts, path, header, section.command)
        else:
            CHECKS[kind](facts, where, header)
        _others_refuse(section.text, kind, where)
        checked += 1
    if not checked:
        pytest.skip(
            f"not applicable: no command of a parsed kind ({', '.join(skipped)})"
            if skipped
            else "not applicable: no command output"
        )


def test_every_real_file_is_classified():
    """A new capture must be placed in one of the tables above, not silently passed over."""
    unknown = []
    for path in FILES:
        if _first(MUST_REFUSE, path) or _first(WHOLE_FILES, path) or _first(NOT_APPLICABLE, path):
            continue
        if path.startswith(("ib/sysfs_class_infiniband_", "ascend/")):
            continue  # sysfs trees and multi-command captures: decided per command in test_real_output
        unknown.append(path)
    assert unknown == []
