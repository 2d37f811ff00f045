"""nvidia-smi topo -m and nvidia-smi nvlink -s."""

from __future__ import annotations

import pytest
from cfcore.parsers import ParseError, parse


def test_topo_matrix_of_an_hgx_h100(load):
    facts = parse("nvidia-smi-topo", load("nvidia/topo_h100x8.txt"))
    assert facts["devices"][:8] == [f"GPU{i}" for i in range(8)]
    assert len(facts["gpus"]) == 8
    assert len(facts["nics"]) == 10
    gpu0 = facts["gpus"][0]
    assert gpu0["index"] == 0
    assert {gpu0["links"][f"GPU{i}"] for i in range(1, 8)} == {"NV18"}
    assert "GPU0" not in gpu0["links"]  # the X of the diagonal is not a link
    assert gpu0["links"]["NIC0"] == "PIX"
    assert gpu0["links"]["NIC4"] == "SYS"
    assert (gpu0["cpu_affinity"], gpu0["numa_affinity"], gpu0["gpu_numa_id"]) == ("0-55,112-167", 0, None)
    assert facts["gpus"][5]["numa_affinity"] == 1
    nic0 = facts["nics"][0]
    assert (nic0["name"], nic0["device"]) == ("NIC0", "mlx5_0")
    assert nic0["links"]["GPU0"] == "PIX"
    assert facts["nics"][9]["device"] == "mlx5_2"


def test_topo_of_a_single_gpu_vm_without_escapes():
    text = (
        "\tGPU0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
        "GPU0\t X \t0-19\t0\t\tN/A\n\nLegend:\n\n  X    = Self\n"
    )
    facts = parse("nvidia-smi-topo", text)
    assert facts["gpus"][0]["links"] == {}
    assert facts["gpus"][0]["cpu_affinity"] == "0-19"
    assert facts["nics"] == []


def test_topo_truncated_or_foreign_is_refused(load):
    lines = load("nvidia/topo_h100x8.txt").splitlines()
    with pytest.raises(ParseError, match="no row for"):
        parse("nvidia-smi-topo", "\n".join(lines[:5]))
    broken = lines[:]
    broken[3] = "GPU2\tNV18\tNV18"
    with pytest.raises(ParseError, match="malformed nvidia-smi topo -m row") as caught:
        parse("nvidia-smi-topo", "\n".join(broken))
    assert caught.value.line == 4
    with pytest.raises(ParseError, match="no GPU0 header row"):
        parse("nvidia-smi-topo", load("nvidia/nvlink_h100x8.txt"))


def test_nvlink_all_links_up(load):
    facts = parse("nvidia-smi-nvlink", load("nvidia/nvlink_h100x8.txt"))
    gpus = facts["gpus"]
    assert [gpu["index"] for gpu in gpus] == list(range(8))
    assert gpus[0]["name"] == "NVIDIA H100 80GB HBM3"
    assert gpus[0]["uuid"] == "GPU-3f2c8a41-7d0e-4b6a-9c55-1e8d2f47a0b1"
    for gpu in gpus:
        assert [link["link"] for link in gpu["links"]] == list(range(18))
        assert {(link["state"], link["speed_gbps"]) for link in gpu["links"]} == {("active", 26.562)}
        assert gpu["nvlink_error"] is None


def test_nvlink_inactive_links(load):
    gpus = parse("nvidia-smi-nvlink", load("nvidia/nvlink_h100x8_two_inactive.txt"))["gpus"]
    inactive = [
        (gpu["index"], link["link"]) for gpu in gpus for link in gpu["links"] if link["state"] != "active"
    ]
    assert inactive == [(2, 4), (2, 5)]
    assert gpus[2]["links"][4] == {"link": 4, "state": "inactive", "speed_gbps": None}


def test_nvlink_all_links_inactive_message_is_kept():
    text = (
        "GPU 6: NVIDIA A100-SXM4-80GB (UUID: GPU-0b5c2e7a-91d4-4f60-a3e8-7c1f2d9b4e06)\n"
        "NVML: Unable to retrieve NVLink information as all links are inactive\n"
    )
    gpu = parse("nvidia-smi-nvlink", text)["gpus"][0]
    assert gpu["index"] == 6
    assert gpu["links"] == []
    assert gpu["nvlink_error"].startswith("NVML: Unable to retrieve NVLink information")


def test_nvlink_refuses_other_output(load):
    with pytest.raises(ParseError, match="not nvidia-smi nvlink -s output"):
        parse("nvidia-smi-nvlink", load("nvidia/q_h100x8_535.txt"))
