import shlex
from datetime import UTC, datetime

import pytest
from cfcore import quarantine_rules
from clusterforge.validation.quarantine import (
    k8s_label,
    k8s_taint,
    label_value,
    plan,
    slurm_drain,
    slurm_reason,
)
from clusterforge.validation.results import unreachable_result
from valfactory import check, node, xid79_node

WHEN = datetime(2026, 11, 30, 12, 5, tzinfo=UTC)


def test_drain_command_matches_the_documented_form():
    reason = slurm_reason(["gpu.xid", "gpu.ecc"], WHEN)
    assert reason == "clusterforge: gpu.xid,gpu.ecc 2026-11-30T12:05Z"
    argv = slurm_drain("gpu-r1-n01", reason)
    assert shlex.join(argv) == (
        "scontrol update NodeName=gpu-r1-n01 State=DRAIN "
        "'Reason=clusterforge: gpu.xid,gpu.ecc 2026-11-30T12:05Z'"
    )


def test_reason_is_bounded_and_stripped_of_shell_and_slurm_syntax():
    ids = ["gpu.xid", "x$(rm -rf /)", "a;b", "`id`", "gpu.ecc", "gpu.nvlink"]
    reason = slurm_reason(ids, WHEN)
    assert reason == "clusterforge: gpu.xid,x-rm--rf,a-b,id+2 2026-11-30T12:05Z"
    for bad in "$();`'\"|&<>":
        assert bad not in reason


def test_kubernetes_commands():
    assert k8s_taint("gpu-r1-n01", label_value("gpu.xid")) == [
        "kubectl",
        "taint",
        "nodes",
        "gpu-r1-n01",
        "clusterforge.io/unhealthy=gpu.xid:NoSchedule",
        "--overwrite",
    ]
    assert k8s_label("gpu-r1-n01") == [
        "kubectl",
        "label",
        "nodes",
        "gpu-r1-n01",
        "clusterforge.io/validation=failed",
        "--overwrite",
    ]


def test_label_values_are_valid_kubernetes_label_values():
    assert label_value("gpu.xid") == "gpu.xid"
    assert label_value("fleet.outlier.gpu temp °C!") == "fleet.outlier.gpu-temp-C"
    assert label_value("-._") == "unknown"
    assert len(label_value("x" * 100)) == 63


def test_plan_quarantines_failed_nodes_only_by_default():
    results = [
        node("ok-node"),
        xid79_node("gpu-r1-n01.dc1.example.com"),
        unreachable_result("gpu-r1-n02", "hgx-h100-8gpu", "quick", "timed out"),
        node("warn-node", checks=[check("gpu.ecc", "warn")]),
    ]
    made = plan(results, {}, when=WHEN)
    assert [(a.scheduler, a.host, a.target) for a in made.actions] == [
        ("slurm", "gpu-r1-n01.dc1.example.com", "gpu-r1-n01"),  # Slurm: the short hostname
        ("kubernetes", "gpu-r1-n01.dc1.example.com", "gpu-r1-n01.dc1.example.com"),
        ("kubernetes", "gpu-r1-n01.dc1.example.com", "gpu-r1-n01.dc1.example.com"),
    ]
    assert made.actions[0].argv[-1] == "Reason=clusterforge: gpu.xid 2026-11-30T12:05Z"
    assert made.actions[1].argv[4] == "clusterforge.io/unhealthy=gpu.xid:NoSchedule"
    assert any("--quarantine-on-error" in note for note in made.notes)


def test_plan_on_error_includes_unreachable_nodes_with_their_check_id():
    results = [unreachable_result("gpu-r1-n02", "hgx-h100-8gpu", "quick", "timed out")]
    made = plan(results, {}, on_error=True, when=WHEN)
    assert made.actions[0].argv[-1] == "Reason=clusterforge: node.reachable 2026-11-30T12:05Z"
    assert made.notes == []


def test_inventory_names_win_and_bad_names_are_refused():
    results = [xid79_node("a"), xid79_node("b"), xid79_node("C-Upper")]
    hostvars = {
        "a": {"slurm_node_name": "sn-a", "k8s_node_name": "kn-a"},
        "b": {"slurm_node_name": "node[1-100]", "k8s_node_name": "Bad_Name"},
    }
    made = plan(results, hostvars, when=WHEN)
    targets = [(a.scheduler, a.host, a.target) for a in made.actions]
    assert ("slurm", "a", "sn-a") in targets
    assert ("kubernetes", "a", "kn-a") in targets
    assert not [t for t in targets if t[1] == "b"]
    assert ("kubernetes", "C-Upper", "c-upper") in targets  # the kubelet registers lower case
    assert any(
        n.startswith("b: not quarantined in Slurm: name 'node[1-100]' is not one Slurm node name")
        and n.endswith("set slurm_node_name for the host in the inventory")
        for n in made.notes
    )
    assert any("name 'Bad_Name' is not one Kubernetes node name" in n for n in made.notes)


@pytest.mark.parametrize(
    "name",
    [
        "gpu-01;reboot",
        "gpu 01",
        "gpu-01\n",
        "-gpu01",
        "gpu-01,gpu-02",
        "gpü-01",
        "gpu-01 State=RESUME",
        "node[1-4]",
    ],
)
def test_names_the_playbook_would_refuse_are_notes_not_commands(name):
    hostvars = {"a": {"slurm_node_name": name, "k8s_node_name": name}}
    made = plan([xid79_node("a")], hostvars, when=WHEN)
    assert made.actions == []
    assert [n.split(":")[0] for n in made.notes] == ["a", "a"]


def test_request_carries_names_and_reasons_only():
    made = plan([xid79_node("gpu-01")], {}, when=WHEN)
    assert [a.kind for a in made.actions] == ["drain", "taint", "label"]
    assert made.request("slurm") == [
        {"name": "gpu-01", "reason": "clusterforge: gpu.xid 2026-11-30T12:05Z", "scheduler": "slurm"}
    ]
    # taint and label of one node: one entry, the taint value as its reason
    assert made.request("kubernetes") == [{"name": "gpu-01", "reason": "gpu.xid", "scheduler": "kubernetes"}]


def test_long_reasons_fit_what_the_playbook_accepts():
    ids = [f"fleet.outlier.{'x' * 60}{i}" for i in range(6)]
    reason = slurm_reason(ids, WHEN)
    assert len(reason) <= quarantine_rules.SLURM_REASON_MAX
    assert reason.startswith("clusterforge: fleet.outlier.") and reason.endswith(" 2026-11-30T12:05Z")
    assert quarantine_rules.entry_problem({"name": "n1", "reason": reason, "scheduler": "slurm"}) is None


def test_nodes_are_quarantined_only_by_the_schedulers_they_work_for():
    results = [xid79_node("gpu-01"), xid79_node("npu-01"), xid79_node("ctl-01")]
    workers = {"slurm": {"gpu-01"}, "kubernetes": {"npu-01"}}
    made = plan(results, {}, when=WHEN, workers=workers)
    assert [(a.scheduler, a.host) for a in made.actions] == [
        ("slurm", "gpu-01"),
        ("kubernetes", "npu-01"),
        ("kubernetes", "npu-01"),
    ]
    assert any(n.startswith("ctl-01: in neither slurm_workers nor k8s_workers") for n in made.notes)


def test_a_node_of_both_schedulers_is_taken_out_of_both():
    made = plan(
        [xid79_node("gpu-01")], {}, when=WHEN, workers={"slurm": {"gpu-01"}, "kubernetes": {"gpu-01"}}
    )
    assert [a.scheduler for a in made.actions] == ["slurm", "kubernetes", "kubernetes"]
