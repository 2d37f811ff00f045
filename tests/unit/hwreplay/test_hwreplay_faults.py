"""Each faulty profile differs from its healthy base only in lines about its fault.

For every fault, every replayed command is rendered for the base and for the
faulty profile; the test pins down exactly which commands change and what every
changed line says.
"""

from __future__ import annotations

import difflib
import json
import re
from pathlib import Path

import pytest
from hwreplay_testlib import FAULTY, PERF_FAULTS, commands_for, perf_commands
from replaylib import control, perf
from replaylib.infiniband import PEERMEM_DIR
from replaylib.profiles import resolve

# Faults that live only in the sysfs tree: no replayed tool prints them.
SYSFS_ONLY = {"h100-peermem-missing"}


def diff_lines(before: str, after: str) -> tuple:
    """(removed lines, added lines) between two outputs."""
    removed, added = [], []
    matcher = difflib.SequenceMatcher(a=before.splitlines(), b=after.splitlines(), autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            removed += matcher.a[i1:i2]
            added += matcher.b[j1:j2]
    return removed, added


def fault_diff(ctx, render, name: str, benchmarks: bool = False) -> dict:
    """' '.join(command) -> (removed, added) for every command whose output the fault changes.

    `benchmarks`: perf validation's single-node benchmarks too (hwreplay_testlib.perf_commands)."""
    base = FAULTY[name]
    commands = commands_for(resolve(ctx, base)) + (perf_commands(resolve(ctx, base)) if benchmarks else [])
    faulty = commands_for(resolve(ctx, name)) + (perf_commands(resolve(ctx, name)) if benchmarks else [])
    assert commands == faulty, "a fault must not add or remove tools"
    changes = {}
    for command in commands:
        healthy, faulty = render(base, *command), render(name, *command)
        assert (healthy.rc, faulty.rc) == (0, 0), command
        removed, added = diff_lines(healthy.stdout, faulty.stdout)
        if removed or added:
            changes[" ".join(command)] = (removed, added)
    return changes


def gpu_block(text: str, bus_id: str) -> str:
    return text.split("GPU " + bus_id, 1)[1].split("\nGPU ", 1)[0]


def csv_key(changes: dict) -> str:
    return next(key for key in changes if key.startswith("nvidia-smi --query-gpu"))


def test_every_faulty_profile_names_its_fault_and_base(ctx):
    for name, base in FAULTY.items():
        meta = resolve(ctx, name)["profile"]
        assert meta["base"] == base and meta["fault"], name
        assert resolve(ctx, base)["profile"]["fault"] is None


def test_xid79_only_adds_kernel_log_lines(ctx, render):
    changes = fault_diff(ctx, render, "h100-xid79")
    assert set(changes) == {"dmesg", "dmesg -T"}
    for removed, added in changes.values():
        assert removed == []
        assert len(added) == 7 and all("NVRM: " in line for line in added)
    plain = changes["dmesg"][1]
    gpu2 = resolve(ctx, "h100-xid79")["nvidia"]["gpus"][2]
    assert any(
        line.endswith(
            "NVRM: Xid (PCI:0000:52:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
        )
        for line in plain
    )
    assert any(line.endswith("NVRM: GPU at PCI:0000:52:00: " + gpu2["uuid"]) for line in plain)


def test_pcie_x8_only_changes_gpu3_link_width(ctx, render):
    changes = fault_diff(ctx, render, "h100-pcie-x8")
    csv_command = csv_key(changes)
    assert set(changes) == {
        "nvidia-smi -q",
        "nvidia-smi -q -x",
        csv_command,
        "lspci -vvv",
        "dmesg",
        "dmesg -T",
    }
    assert changes["nvidia-smi -q"] == (
        ["                Current                   : 16x"],
        ["                Current                   : 8x"],
    )
    assert changes["nvidia-smi -q -x"] == (
        ["\t\t\t\t\t<current_link_width>16x</current_link_width>"],
        ["\t\t\t\t\t<current_link_width>8x</current_link_width>"],
    )
    (before,), (after,) = changes[csv_command]
    assert before.startswith("3, ") and after == before.replace(", 5, 5, 16, 16, ", ", 5, 5, 16, 8, ")
    assert changes["lspci -vvv"] == (
        ["\t\tLnkSta:\tSpeed 32GT/s (ok), Width x16 (ok)"],
        ["\t\tLnkSta:\tSpeed 32GT/s (ok), Width x8 (downgraded)"],
    )
    for key in ("dmesg", "dmesg -T"):
        removed, (line,) = changes[key]
        assert removed == [] and "pci 0000:61:00.0: " in line and "PCIe x8 link" in line
    # The change sits in GPU 3's block of nvidia-smi -q.
    text = render("h100-pcie-x8", "nvidia-smi", "-q").stdout
    assert "Current                   : 8x" in gpu_block(text, "00000000:61:00.0")


def test_ib_port_down_only_changes_mlx5_3(ctx, render):
    changes = fault_diff(ctx, render, "h100-ib-port-down")
    assert set(changes) == {"ibstat"}
    assert changes["ibstat"] == (
        ["\t\tState: Active", "\t\tPhysical state: LinkUp", "\t\tRate: 400"],
        ["\t\tState: Down", "\t\tPhysical state: Polling", "\t\tRate: 40"],
    )
    text = render("h100-ib-port-down", "ibstat").stdout
    mlx5_3 = text.split("CA 'mlx5_3'", 1)[1].split("CA '", 1)[0]
    assert "State: Down" in mlx5_3


def test_remapped_rows_pending_only_changes_gpu5_memory_errors(ctx, render):
    changes = fault_diff(ctx, render, "h100-remapped-rows-pending")
    csv_command = csv_key(changes)
    assert set(changes) == {
        "nvidia-smi",
        "nvidia-smi -q",
        "nvidia-smi -q -x",
        csv_command,
        "dmesg",
        "dmesg -T",
    }
    removed, added = changes["nvidia-smi"]
    assert len(removed) == len(added) == 1
    assert re.match(r"^\|   5  NVIDIA H100 80GB HBM3 .*\| 00000000:C3:00\.0 Off \|\s+1 \|$", added[0])
    removed, added = changes["nvidia-smi -q"]
    assert sorted(added) == sorted(
        [
            "            DRAM Uncorrectable            : 1",
            "            DRAM Uncorrectable            : 1",
            "        Uncorrectable Error               : 1",
            "        Pending                           : Yes",
            "            Max                           : 2559 bank(s)",
            "            High                          : 1 bank(s)",
        ]
    )
    assert len(removed) == 6
    text = render("h100-remapped-rows-pending", "nvidia-smi", "-q").stdout
    assert "Pending                           : Yes" in gpu_block(text, "00000000:C3:00.0")
    assert text.count("Pending                           : Yes") == 1
    xml_added = changes["nvidia-smi -q -x"][1]
    assert "\t\t\t<remapped_row_pending>Yes</remapped_row_pending>" in xml_added and len(xml_added) == 6
    (before,), (after,) = changes[csv_command]
    assert before.startswith("5, ") and ", 1, [N/A], Yes, " in after
    for key in ("dmesg", "dmesg -T"):
        removed, (line,) = changes[key]
        assert removed == [] and "NVRM: Xid (PCI:0000:c3:00): 63, " in line and "Row Remapper" in line


def test_fabricmanager_failed_only_changes_fabric_state(ctx, render):
    changes = fault_diff(ctx, render, "h100-fabricmanager-failed")
    csv_command = csv_key(changes)
    assert set(changes) == {"nvidia-smi -q", "nvidia-smi -q -x", csv_command}
    removed, added = changes["nvidia-smi -q"]
    assert sorted(set(added)) == [
        "        State                             : In Progress",
        "        Status                            : N/A",
    ]
    assert len(added) == 16 and len(removed) == 16
    assert all(row.endswith(", In Progress") for row in changes[csv_command][1])
    assert resolve(ctx, "h100-fabricmanager-failed")["nvidia"]["fabric_manager"] == "failed"


def test_npu_health_alarm_only_changes_npu5(ctx, render):
    changes = fault_diff(ctx, render, "910b-health-alarm")
    assert set(changes) == {"npu-smi info", "npu-smi info -t health -i 5"}
    removed, added = changes["npu-smi info"]
    assert len(removed) == len(added) == 1
    assert re.match(r"^\| 5     910B3               \| Alarm         \| ", added[0])
    assert changes["npu-smi info -t health -i 5"][1] == [
        "\tHealth Status                  : Alarm",
        "\tError Code                     : 80E18402",
        "\tError Information              : "
        "node type=SoC, sensor type=General Purpose, event state=check fail",
    ]


def test_nic_net_health_fail_only_changes_npu3_net_health(ctx, render):
    changes = fault_diff(ctx, render, "910b-nic-net-health-fail")
    assert changes == {
        "hccn_tool -i 3 -net_health -g": (
            ["net health status: Success"],
            ["net health status: Receive timeout"],
        )
    }


def test_ib_wrong_rate_only_changes_mlx5_5_rate(ctx, render):
    changes = fault_diff(ctx, render, "h100-ib-wrong-rate")
    assert changes == {"ibstat": (["\t\tRate: 400"], ["\t\tRate: 200"])}
    text = render("h100-ib-wrong-rate", "ibstat").stdout
    mlx5_5 = text.split("CA 'mlx5_5'", 1)[1].split("CA '", 1)[0]
    assert "Rate: 200" in mlx5_5 and "State: Active" in mlx5_5


def test_ib_link_layer_eth_only_changes_mlx5_2_to_ethernet(ctx, render):
    changes = fault_diff(ctx, render, "h100-ib-link-layer-eth")
    assert set(changes) == {"ibstat", "lspci", "lspci -vvv"}
    assert changes["ibstat"] == (
        ["\t\tBase lid: 134", "\t\tSM lid: 1", "\t\tLink layer: InfiniBand"],
        ["\t\tBase lid: 0", "\t\tSM lid: 0", "\t\tLink layer: Ethernet"],
    )
    for key in ("lspci", "lspci -vvv"):  # the PCI class follows the port's link type
        (before,), (after,) = changes[key]
        assert before.startswith("4f:00.0 Infiniband controller: ")
        assert after == before.replace("Infiniband controller", "Ethernet controller")
    text = render("h100-ib-link-layer-eth", "ibstat").stdout
    assert "Link layer: Ethernet" in text.split("CA 'mlx5_2'", 1)[1].split("CA '", 1)[0]


def test_peermem_missing_changes_no_tool_output_only_sysfs(ctx, render, tmp_path):
    assert fault_diff(ctx, render, "h100-peermem-missing") == {}
    assert resolve(ctx, "h100-peermem-missing")["nvidia"]["peermem"] is False
    module = Path(ctx.sysroot) / PEERMEM_DIR
    control.set_profile(ctx, "h100-healthy")
    assert module.is_dir()
    control.set_profile(ctx, "h100-peermem-missing")
    assert not module.exists()
    # The rest of the tree is the healthy node's.
    assert (Path(ctx.sysroot) / "sys/class/infiniband/mlx5_0/ports/1/state").read_text() == "4: ACTIVE\n"


def test_roce_pfc_off_only_clears_priority_3_in_mlnx_qos(ctx, render):
    changes = fault_diff(ctx, render, "roce-pfc-off")
    netdevs = [netdev["name"] for netdev in resolve(ctx, "roce-healthy")["roce"]["netdevs"]]
    assert set(changes) == {f"mlnx_qos -i {name}" for name in netdevs}
    on, off = "0   0   0   1   0   0   0   0   ", "0   0   0   0   0   0   0   0   "
    for removed, added in changes.values():
        assert removed == [f"\tenabled     {on}", f"\tbuffer      {on}"]
        assert added == [f"\tenabled     {off}", f"\tbuffer      {off}"]


def test_perf_degraded_only_slows_hccl_test(ctx, render):
    assert fault_diff(ctx, render, "910b-perf-degraded") == {}  # every NPU still reports healthy
    changes = fault_diff(ctx, render, "910b-perf-degraded", benchmarks=True)
    assert list(changes) == ["mpirun --allow-run-as-root -n 8 all_reduce_test -b 8K -e 1G -f 2 -p 8"]
    removed, added = next(iter(changes.values()))
    assert len(removed) == len(added) == 18  # every row slower, the parameters line as it was
    assert removed[-1].startswith("1073741824         | ") and "| 170.00000 " in removed[-1]
    assert added[-1].startswith("1073741824         | ") and "| 57.00000 " in added[-1]
    assert all(line.endswith("| success") for line in added)


def test_perf_bad_rail_changes_no_local_output_only_the_wire_figure(ctx, render):
    assert fault_diff(ctx, render, "h100-perf-bad-rail", benchmarks=True) == {}
    healthy = perf.figures(resolve(ctx, "h100-healthy"))
    faulty = perf.figures(resolve(ctx, "h100-perf-bad-rail"))
    assert healthy["rails"]["mlx5_3"] == {"loopback_gbps": 391.2, "wire_gbps": 391.2}
    assert faulty["rails"]["mlx5_3"] == {"loopback_gbps": 391.2, "wire_gbps": 118.4}
    faulty["rails"]["mlx5_3"]["wire_gbps"] = 391.2
    assert faulty == healthy  # the NCCL pair figure included: the verdict names the rail, not the node


def test_fabricmanager_failed_stops_the_gpu_benchmarks(ctx, render):
    """No GPU joined the NVLink fabric: CUDA cannot initialise, as on a real node."""
    profile = resolve(ctx, "h100-fabricmanager-failed")
    for command in perf_commands(profile):
        result = render("h100-fabricmanager-failed", *command)
        assert result.rc == 1 and "system not yet initialized" in result.stdout, command


@pytest.mark.parametrize("name", sorted(FAULTY))
def test_fault_survives_host_overrides(ctx, render, tmp_path, name):
    """Host overrides apply to the base hardware; the fault patch still wins."""
    plan = {"id": 3, "address": "10.20.0.13", "netmask": "255.255.255.0", "gateway": "10.20.0.1"}
    overrides = {"nvidia_driver_version": "550.90.07", "hccn_devices": [dict(plan, netdetect="10.20.0.1")]}
    (tmp_path / "no-overrides.json").write_text(json.dumps(overrides))
    if name == "h100-perf-bad-rail":  # only a figure on the wire (test_perf_bad_rail_...)
        assert perf.figures(resolve(ctx, name))["rails"]["mlx5_3"]["wire_gbps"] == 118.4
        assert resolve(ctx, name)["nvidia"]["driver_version"] == "550.90.07"
        return
    if name not in SYSFS_ONLY:
        assert fault_diff(ctx, render, name, benchmarks=name in PERF_FAULTS), name
        return
    # The fault is only in the sysfs tree: the base has sys/module/nvidia_peermem, the fault none.
    module = Path(ctx.sysroot) / PEERMEM_DIR
    control.set_profile(ctx, FAULTY[name])
    assert module.is_dir()
    control.set_profile(ctx, name)
    assert not module.exists()
    assert resolve(ctx, name)["nvidia"]["driver_version"] == "550.90.07"  # the override applied
