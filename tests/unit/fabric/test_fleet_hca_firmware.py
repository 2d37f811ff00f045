"""The fleet rule fleet.hca_firmware (cfcore/fleet.py), its filter, and the CLI's use of it."""

from __future__ import annotations

import pytest
from cfcore import fleet
from fabric_plugins import load_plugin

SKU = "hgx-h100-8gpu"
GOOD, OLD, NEW = "28.39.2048", "28.36.1010", "28.40.1000"


def node(host, firmware=GOOD, sku=SKU, odd=None, front_end="22.41.1000", compute_flag=True):
    """A node result: 8 compute CX-7 on `firmware` (`odd`: {index: version}) and a front-end NIC."""
    hcas = [
        {
            "name": f"mlx5_{n}",
            "type": "MT4129",
            "firmware": (odd or {}).get(n, firmware),
            "compute": compute_flag,
        }
        for n in range(8)
    ]
    hcas.append(
        {
            "name": "mlx5_8",
            "type": "MT4125",
            "firmware": front_end,
            "compute": False if compute_flag else None,
        }
    )
    return {"host": host, "node_sku": sku, "status": "pass", "checks": [], "facts": {"hcas": hcas}}


def by_host(report):
    return {finding["host"]: finding["check"] for finding in report["findings"]}


def test_one_version_across_the_sku_gives_no_finding():
    report = fleet.hca_firmware([node(f"gpu-{n}") for n in range(4)])
    assert report == {"findings": [], "notes": []}


def test_a_node_off_the_majority_warns_with_the_versions_and_their_node_counts():
    results = [node(f"gpu-{n}") for n in range(3)] + [node("gpu-3", odd={3: OLD})]
    found = by_host(fleet.hca_firmware(results))
    assert list(found) == ["gpu-3"]
    check = found["gpu-3"]
    assert check["id"] == "fleet.hca_firmware" and check["status"] == "warn"
    assert check["message"] == (
        f"MT4129 HCA firmware differs from the {SKU} fleet: mlx5_3 {OLD}; 4 of 4 nodes run {GOOD}"
    )
    assert check["evidence"]["versions"] == {GOOD: 4, OLD: 1}
    assert check["evidence"]["lines"][:2] == [f"{GOOD}: 4 of 4 node(s)", f"{OLD}: 1 of 4 node(s) (gpu-3)"]
    assert check["evidence"]["lines"][2].startswith("this node: mlx5_0 28.39.2048")
    assert "mlxfwmanager --online -u" in check["remedy"] and "pinned image" in check["remedy"]


def test_a_whole_node_on_another_version_warns_and_front_end_nics_never_count():
    results = [node("gpu-0"), node("gpu-1"), node("gpu-2", firmware=OLD, front_end="22.39.1002")]
    found = by_host(fleet.hca_firmware(results))
    assert list(found) == ["gpu-2"]
    assert "2 of 3 nodes run 28.39.2048" in found["gpu-2"]["message"]
    assert "mlx5_8" not in found["gpu-2"]["evidence"]["lines"][-1]


def test_a_tie_has_no_majority_and_every_node_warns():
    results = [node("gpu-0"), node("gpu-1"), node("gpu-2", firmware=NEW), node("gpu-3", firmware=NEW)]
    found = by_host(fleet.hca_firmware(results))
    assert sorted(found) == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]
    message = found["gpu-0"]["message"]
    assert message.startswith(f"MT4129 HCA firmware has no majority across 4 {SKU} nodes")
    assert f"{GOOD} on 2" in message and f"{NEW} on 2" in message
    assert "pin one firmware version" in found["gpu-0"]["remedy"]


def test_skus_are_compared_apart_and_a_lone_node_gives_a_note_only():
    results = [node("gpu-0"), node("gpu-1"), node("h200-0", firmware=OLD, sku="hgx-h200-8gpu")]
    report = fleet.hca_firmware(results)
    assert report["findings"] == []
    assert report["notes"] == [
        "fleet.hca_firmware: hgx-h200-8gpu MT4129: 1 node(s) report HCA firmware, fewer than 2: not compared"
    ]


def test_nodes_without_hca_facts_are_left_out_and_results_without_the_compute_flag_count_every_ca():
    blind = {"host": "gpu-x", "node_sku": SKU, "facts": {"hcas": []}, "checks": []}
    unknown_fw = node("gpu-y", odd={n: None for n in range(8)})
    assert fleet.hca_firmware([node("gpu-0"), blind, unknown_fw])["findings"] == []
    old_module = [node(f"gpu-{n}", compute_flag=None) for n in range(2)] + [
        node("gpu-2", compute_flag=None, front_end="22.39.1002")
    ]
    found = by_host(fleet.hca_firmware(old_module))
    assert list(found) == ["gpu-2"] and "MT4125 HCA firmware differs" in found["gpu-2"]["message"]


def test_apply_adds_the_warn_check_and_keeps_a_worse_status():
    results = [node("gpu-0"), node("gpu-1"), node("gpu-2", firmware=OLD), node("gpu-3", firmware=OLD)]
    results[2]["status"] = "fail"
    fleet.apply(results, fleet.hca_firmware(results))  # a tie, 2 nodes on each: every node warns
    assert [c["id"] for c in results[2]["checks"]] == ["fleet.hca_firmware"]
    assert [r["status"] for r in results] == ["warn", "warn", "fail", "warn"]
    report = fleet.hca_firmware([node("a"), node("b"), node("c", firmware=OLD)])
    ours = [node("a"), node("b"), node("c", firmware=OLD)]
    fleet.apply(ours, report)
    assert [r["status"] for r in ours] == ["pass", "pass", "warn"]


def test_summary_lines_say_what_the_playbook_prints():
    report = fleet.hca_firmware([node("a"), node("b"), node("c", firmware=OLD)])
    lines = fleet.summary_lines(report, 3)
    assert len(lines) == 1 and lines[0].startswith(f"c ({SKU}): warn fleet.hca_firmware: MT4129 HCA firmware")
    assert "; fix: bring the node's HCAs" in lines[0]
    assert fleet.summary_lines({"findings": [], "notes": []}, 5) == [
        "fleet.hca_firmware: no node's compute HCA firmware differs from its SKU's (5 node results)"
    ]


# ------------------------------------------------------------------------ the filter


class HostVars(dict):
    """What Ansible's hostvars answer: host -> that host's variables."""


def test_filter_reads_each_hosts_registered_result_by_inventory_name():
    module = load_plugin("filter", "fleet")
    assert set(module.FilterModule().filters()) == {"cf_fleet_hca_firmware"}
    hostvars = HostVars(
        {
            "n1": {"validate_outcome": {"node_result": node("node-hostname-1")}},
            "n2": {"validate_outcome": {"node_result": node("node-hostname-2")}},
            "n3": {"validate_outcome": {"node_result": node("node-hostname-3", odd={0: OLD})}},
            "down": {},
            "broken": {"validate_outcome": {"failed": True, "msg": "bad parameters"}},
        }
    )
    report = module.cf_fleet_hca_firmware(["n1", "n2", "n3", "down", "broken"], hostvars)
    assert [f["host"] for f in report["findings"]] == ["n3"]
    assert report["lines"][0].startswith("n3 (hgx-h100-8gpu): warn fleet.hca_firmware")
    direct = module.cf_fleet_hca_firmware([node("a"), node("b")])
    assert direct["findings"] == [] and "2 node results" in direct["lines"][0]


def test_filter_refuses_what_is_not_a_list():
    from ansible.errors import AnsibleFilterError

    module = load_plugin("filter", "fleet")
    with pytest.raises(AnsibleFilterError, match="expects a list of host names or node results"):
        module.cf_fleet_hca_firmware("n1")


# ------------------------------------------------------------------ the CLI's finish()


def test_cli_finish_applies_the_rule_as_fleet_checks(tmp_path):
    import io

    from clusterforge.validation import workflow
    from clusterforge.validation.results import normalise
    from rich.console import Console

    results = []
    for host, firmware in (("a", GOOD), ("b", GOOD), ("c", OLD)):
        raw = node(host, firmware=firmware)
        raw["checks"] = [
            {"id": "node.mounts", "status": "pass", "message": "ok", "evidence": None, "remedy": None}
        ]
        raw["level"], raw["metrics"] = "quick", {}
        results.append(normalise(host, raw, "quick", SKU))
    out = workflow.Output(tmp_path / "out", "json", Console(file=io.StringIO()), Console(file=io.StringIO()))
    workflow.finish(results, {"source": "test"}, 0.0, out)  # warnings only: no ChecksFailed
    by_name = {r["host"]: r for r in results}
    assert by_name["c"]["status"] == "warn"
    assert [c["id"] for c in by_name["c"]["checks"]] == ["node.mounts", "fleet.hca_firmware"]
    assert by_name["a"]["status"] == "pass"
    report = (tmp_path / "out" / "report.json").read_text()
    assert "fleet.hca_firmware" in report
