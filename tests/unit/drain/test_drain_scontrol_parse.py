"""parse_slurm_node: `scontrol show node -o NAME` as Slurm 22.05-24.x print it, and what is not it."""

from __future__ import annotations

import pytest
from cfcore.scheduler_drain import SlurmParseError, parse_slurm_node

# Slurm 22.05.8 (Debian 12), one line; OS= holds spaces, CfgTRES holds '='.
IDLE = (
    "NodeName=lab-gpu-01 Arch=x86_64 CoresPerSocket=2 CPUAlloc=0 CPUEfctv=2 CPUTot=2 CPULoad=0.08 "
    "AvailableFeatures=(null) ActiveFeatures=(null) Gres=gpu:h100:8 NodeAddr=lab-gpu-01 "
    "NodeHostName=lab-gpu-01 Version=22.05.8 OS=Linux 6.1.0-26-amd64 #1 SMP PREEMPT_DYNAMIC Debian "
    "6.1.112-1 (2024-10-03) RealMemory=24105 AllocMem=0 FreeMem=20123 Sockets=1 Boards=1 State=IDLE "
    "ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A Partitions=gpu "
    "BootTime=2026-12-01T09:00:01 SlurmdStartTime=2026-12-01T09:10:00 LastBusyTime=2026-12-01T09:10:00 "
    "CfgTRES=cpu=2,mem=24105M,billing=2,gres/gpu=8 AllocTRES= CapWatts=n/a CurrentWatts=0 AveWatts=0 "
    "ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s\n"
)


def with_state(state: str, reason: str = "") -> str:
    return (
        IDLE.replace("State=IDLE ", f"State={state} ").rstrip("\n") + (f" {reason}" if reason else "") + "\n"
    )


def test_an_idle_node():
    node = parse_slurm_node(IDLE)
    assert (node["name"], node["state"], node["flags"]) == ("lab-gpu-01", "IDLE", [])
    assert not node["drain"] and not node["drained"] and not node["draining"] and not node["down"]
    assert node["reason"] is None
    assert node["fields"]["OS"] == "Linux 6.1.0-26-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.112-1 (2024-10-03)"
    assert node["fields"]["CfgTRES"] == "cpu=2,mem=24105M,billing=2,gres/gpu=8"
    assert node["fields"]["AllocTRES"] == ""


def test_drained_idle_node_with_reason_and_suffix():
    node = parse_slurm_node(
        with_state("IDLE+DRAIN", "Reason=clusterforge-health: gpu.xid,gpu.ecc [root@2026-12-01T10:05:00]")
    )
    assert node["state"] == "IDLE" and node["flags"] == ["DRAIN"]
    assert node["drain"] and node["drained"] and not node["draining"]
    assert node["reason"] == "clusterforge-health: gpu.xid,gpu.ecc"
    assert (node["reason_user"], node["reason_time"]) == ("root", "2026-12-01T10:05:00")


@pytest.mark.parametrize(
    ("state", "drained", "draining", "down"),
    [
        ("MIXED+DRAIN", False, True, False),
        ("ALLOCATED+DRAIN", False, True, False),
        ("IDLE+COMPLETING+DRAIN", False, True, False),
        ("DOWN+DRAIN", True, False, True),
        ("DOWN+DRAIN+NOT_RESPONDING", True, False, True),
        ("IDLE+DRAIN+NOT_RESPONDING", True, False, False),
        ("DRAINED", True, False, False),
        ("DRAINING", False, True, False),
        ("IDLE*+DRAIN", True, False, False),  # a suffix as sinfo prints it
        ("idle+drain", True, False, False),
    ],
)
def test_drain_states(state, drained, draining, down):
    node = parse_slurm_node(with_state(state, "Reason=maintenance [admin@2026-12-01T08:00:00]"))
    assert node["drain"] is True
    assert (node["drained"], node["draining"], node["down"]) == (drained, draining, down)
    assert node["reason"] == "maintenance"


def test_down_without_drain():
    node = parse_slurm_node(
        with_state("DOWN+NOT_RESPONDING", "Reason=Not responding [slurm@2026-12-01T10:00:00]")
    )
    assert node["down"] and not node["drain"] and not node["drained"]
    assert node["reason"] == "Not responding" and node["reason_user"] == "slurm"


def test_reason_odd_spacing_and_keys_after_it():
    # Newer Slurm prints Comment=/Extra= and more after Reason; a reason may hold '=' and '[...]'.
    text = with_state(
        "MIXED+DRAIN",
        "Reason=swap  DIMM B2 State=bad [x]   [jdoe@2026-12-01T11:00:00]  Comment=(null) Extra=(null)",
    )
    node = parse_slurm_node("  " + text.replace(" ", "   ", 3))
    assert node["reason"] == "swap  DIMM B2 State=bad [x]"
    assert node["reason_user"] == "jdoe"
    assert node["fields"]["Comment"] == "(null)" and node["state"] == "MIXED"


def test_reason_without_suffix_ends_at_the_next_key():
    node = parse_slurm_node(with_state("IDLE+DRAIN", "Reason=batch job complete failure Comment=x"))
    assert node["reason"] == "batch job complete failure"
    assert parse_slurm_node(with_state("IDLE+DRAIN", "Reason=(null)"))["reason"] is None


def test_multi_line_output_without_o_is_read_as_one_node():
    text = (
        "NodeName=n1 Arch=x86_64 CoresPerSocket=1\n"
        "   State=IDLE+DRAIN ThreadsPerCore=1\n"
        "   Reason=r1 [root@now]\n"
    )
    node = parse_slurm_node(text)
    assert (node["name"], node["drained"], node["reason"]) == ("n1", True, "r1")


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("", "printed nothing"),
        ("Node gpu-99 not found\n", "not scontrol show node output (no NodeName= first)"),
        ("<html>502 Bad Gateway</html>", "not scontrol show node output"),
        (IDLE + IDLE.replace("lab-gpu-01", "lab-gpu-02"), "printed 2 nodes, expected one"),
        ("NodeName=n1 Arch=x86_64\n", "without State="),
        ("NodeName=n1 State=IDLE;reboot\n", "is not a Slurm node state"),
        (None, "must be text, got NoneType"),
    ],
)
def test_anything_else_is_refused_loudly(text, words):
    with pytest.raises(SlurmParseError) as refused:
        parse_slurm_node(text)
    assert words in str(refused.value)
