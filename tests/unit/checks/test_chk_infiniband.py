"""ib.* check logic on parsed ibstat/sysfs dicts: compute ports only, states and rates."""

from __future__ import annotations

from cfcore.checks import infiniband
from cfcore.outputs import Output
from chkdata import failed_output

HCA = {"count": 8, "rate_gbps": 400, "link_layer": "InfiniBand"}


def ca(name, state="Active", phys="LinkUp", rate=400, layer="InfiniBand", ca_type="MT4129"):
    port = {"port": 1, "state": state, "physical_state": phys, "rate_gbps": rate, "link_layer": layer}
    return {"name": name, "type": ca_type, "firmware": "28.39.1002", "ports": [port]}


def node(**faults) -> Output:
    cas = [ca(f"mlx5_{n}", **faults.get(f"mlx5_{n}", {})) for n in range(8)]
    # Front-end Ethernet NICs of the same node: never judged against an InfiniBand SKU.
    cas.append(ca("mlx5_8", rate=100, layer="Ethernet", ca_type="MT4125"))
    cas.append(ca("mlx5_9", state="Down", phys="Disabled", rate=40, layer="Ethernet", ca_type="MT4125"))
    return Output.from_data("ibstat", {"cas": cas})


def test_healthy_node_passes_and_front_end_nics_are_ignored():
    hcas = node()
    assert infiniband.ib_hca_count(hcas, HCA)["status"] == "pass"
    assert infiniband.ib_port_state(hcas, HCA)["status"] == "pass"
    rate = infiniband.ib_port_rate(hcas, HCA)
    assert rate["status"] == "pass" and "8 active compute ports" in rate["message"]
    assert infiniband.metrics(hcas, HCA) == {"ib.hca_count": 8, "ib.ports_active": 8, "ib.rate_gbps_min": 400}


def test_port_down_names_the_ca_and_port():
    result = infiniband.ib_port_state(node(mlx5_3={"state": "Down", "phys": "Polling", "rate": 10}), HCA)
    assert result["status"] == "fail"
    assert result["message"] == "mlx5_3 port 1: Down / Polling"
    assert "cable" in result["remedy"]
    assert "mlx5_3/ports/1/state: Down" in result["evidence"]["lines"][0]


def test_link_up_without_subnet_manager_points_at_the_sm():
    result = infiniband.ib_port_state(node(mlx5_0={"state": "Initializing"}), HCA)
    assert result["status"] == "fail" and "subnet manager" in result["remedy"]


def test_sysfs_states_compare_like_ibstat_words():
    hcas = Output.from_data(
        "read /sys/class/infiniband", {"cas": [ca("mlx5_0", state="4: ACTIVE", phys="5: LinkUp")]}
    )
    assert infiniband.ib_port_state(hcas, {**HCA, "count": 1})["status"] == "pass"


def test_slow_port_fails_the_rate_check_only():
    hcas = node(mlx5_6={"rate": 200})
    assert infiniband.ib_port_state(hcas, HCA)["status"] == "pass"
    rate = infiniband.ib_port_rate(hcas, HCA)
    assert rate["status"] == "fail" and "mlx5_6 port 1 at 200 Gb/s" in rate["message"]


def test_missing_hca_fails_and_extra_hca_warns():
    fewer = Output.from_data("ibstat", {"cas": [ca(f"mlx5_{n}") for n in range(7)]})
    assert infiniband.ib_hca_count(fewer, HCA)["status"] == "fail"
    more = Output.from_data("ibstat", {"cas": [ca(f"mlx5_{n}") for n in range(9)]})
    assert infiniband.ib_hca_count(more, HCA)["status"] == "warn"


def test_device_patterns_select_the_compute_hcas_of_a_roce_sku():
    cas = [ca(f"mlx5_{n}", layer="Ethernet") for n in range(8)]
    cas.append(ca("mlx5_bond_0", layer="Ethernet", state="Down", phys="Disabled", rate=25))
    roce = {"count": 8, "rate_gbps": 400, "link_layer": "Ethernet", "devices": ["mlx5_[0-7]"]}
    hcas = Output.from_data("ibstat", {"cas": cas})
    assert infiniband.ib_hca_count(hcas, roce)["status"] == "pass"
    assert infiniband.ib_port_state(hcas, roce)["status"] == "pass"


def test_no_hca_in_sku_skips_and_missing_tool_errors():
    assert infiniband.ib_port_state(node(), None)["status"] == "skip"
    missing = failed_output("ibstat", "not_found", "ibstat not found on PATH")
    for check in (infiniband.ib_hca_count, infiniband.ib_port_state, infiniband.ib_port_rate):
        assert check(missing, HCA)["status"] == "error"
