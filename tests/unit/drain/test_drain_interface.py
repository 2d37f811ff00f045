"""cfcore/scheduler_drain.py: the argument vectors of both schedulers, every name and reason checked."""

from __future__ import annotations

import pytest
from cfcore import scheduler_drain as sd


def test_slurm_commands():
    assert sd.slurm_drain("gpu-r1-n01", "clusterforge-health: gpu.xid") == [
        "scontrol",
        "update",
        "NodeName=gpu-r1-n01",
        "State=DRAIN",
        "Reason=clusterforge-health: gpu.xid",
    ]
    assert sd.slurm_resume("gpu-r1-n01") == ["scontrol", "update", "NodeName=gpu-r1-n01", "State=RESUME"]
    assert sd.slurm_show("gpu-r1-n01") == ["scontrol", "show", "node", "-o", "gpu-r1-n01"]


def test_kubernetes_commands():
    assert sd.k8s_cordon("gpu-r1-n01.dc1") == ["kubectl", "cordon", "gpu-r1-n01.dc1"]
    assert sd.k8s_uncordon("gpu-r1-n01") == ["kubectl", "uncordon", "gpu-r1-n01"]
    assert sd.k8s_drain("gpu-r1-n01", 900) == [
        "kubectl",
        "drain",
        "gpu-r1-n01",
        "--ignore-daemonsets",
        "--delete-emptydir-data",
        "--timeout=900s",
    ]
    assert "--disable-eviction" not in sd.k8s_drain("gpu-r1-n01")  # evictions: PodDisruptionBudgets hold
    assert sd.k8s_drain("n1")[-1] == "--timeout=600s"
    assert sd.k8s_taint("gpu-r1-n01", "gpu.xid") == [
        "kubectl",
        "taint",
        "nodes",
        "gpu-r1-n01",
        "clusterforge.io/unhealthy=gpu.xid:NoSchedule",
        "--overwrite",
    ]
    assert sd.k8s_label("gpu-r1-n01") == [
        "kubectl",
        "label",
        "nodes",
        "gpu-r1-n01",
        "clusterforge.io/validation=failed",
        "--overwrite",
    ]


@pytest.mark.parametrize(
    ("build", "words"),
    [
        (lambda: sd.slurm_drain("node[1-4]", "r"), "slurm node refused: name 'node[1-4]' is not one Slurm"),
        (lambda: sd.slurm_drain("a,b", "r"), "is not one Slurm node name"),
        (lambda: sd.slurm_drain("--all", "r"), "is not one Slurm node name"),
        (lambda: sd.slurm_drain("n1", "r\nState=RESUME"), "slurm drain reason refused: reason 'r\\nState"),
        (lambda: sd.slurm_drain("n1", ""), "one line of printable ASCII"),
        (lambda: sd.slurm_drain("n1", None), "reason None is not"),
        (lambda: sd.slurm_resume("n1 State=DOWN"), "is not one Slurm node name"),
        (lambda: sd.slurm_show(7), "name 7 is not"),
        (lambda: sd.k8s_cordon("Gpu-01"), "kubernetes node refused: name 'Gpu-01'"),
        (lambda: sd.k8s_drain("n1", 0), "timeout_s must be a whole number of seconds, 1 to 86400, got 0"),
        (lambda: sd.k8s_drain("n1", "600"), "got '600'"),
        (lambda: sd.k8s_drain("n1", True), "got True"),
        (lambda: sd.k8s_taint("n1", "gpu.xid:NoExecute"), "kubernetes drain reason refused"),
        (lambda: sd.k8s_label("n1;reboot"), "is not one Kubernetes node name"),
        (lambda: sd.argv("shell", "drain", "n1"), "scheduler 'shell' is not one of slurm, kubernetes"),
        (lambda: sd.argv("slurm", "cordon", "n1"), "slurm: kind 'cordon' is not one of drain, resume, show"),
    ],
)
def test_bad_names_reasons_and_timeouts_are_refused(build, words):
    with pytest.raises(ValueError) as refused:
        build()
    assert words in str(refused.value)


def test_argv_dispatches_to_the_builders():
    assert sd.argv("slurm", "drain", "n1", "r") == sd.slurm_drain("n1", "r")
    assert sd.argv("slurm", "resume", "n1") == sd.slurm_resume("n1")
    assert sd.argv("slurm", "show", "n1") == sd.slurm_show("n1")
    assert sd.argv("kubernetes", "drain", "n1", timeout_s=30) == sd.k8s_drain("n1", 30)
    assert sd.argv("kubernetes", "cordon", "n1") == sd.k8s_cordon("n1")
    assert sd.argv("kubernetes", "uncordon", "n1") == sd.k8s_uncordon("n1")
    assert sd.argv("kubernetes", "taint", "n1", "gpu.xid") == sd.k8s_taint("n1", "gpu.xid")
    assert sd.argv("kubernetes", "label", "n1") == sd.k8s_label("n1")


def test_plan_builds_one_command_per_entry():
    nodes = [
        {"name": "gpu-01", "scheduler": "slurm", "reason": "upgrade 2026-12"},
        {"name": "gpu-01", "scheduler": "kubernetes", "reason": "upgrade"},
    ]
    drained = sd.plan(nodes, "drain", 120)
    assert [entry["argv"] for entry in drained] == [
        sd.slurm_drain("gpu-01", "upgrade 2026-12"),
        sd.k8s_drain("gpu-01", 120),
    ]
    assert drained[0]["name"] == "gpu-01" and drained[0]["scheduler"] == "slurm"
    resumed = sd.plan(
        [{"name": "gpu-01", "scheduler": "slurm"}, {"name": "gpu-01", "scheduler": "kubernetes"}], "resume"
    )
    assert [entry["argv"] for entry in resumed] == [sd.slurm_resume("gpu-01"), sd.k8s_uncordon("gpu-01")]
    assert sd.plan([], "drain") == []


@pytest.mark.parametrize(
    ("nodes", "action", "words"),
    [
        ([], "reboot", "scheduler_drain_action must be one of drain, resume, got 'reboot'"),
        ("gpu-01", "drain", "scheduler_drain_nodes must be a list"),
        (["gpu-01"], "drain", "scheduler_drain_nodes[0] must be a mapping"),
        ([{"name": "n1", "scheduler": "slurm", "reason": "r", "argv": ["sh"]}], "drain", "unknown keys argv"),
        (
            [{"name": "n1", "scheduler": "slurm"}],
            "drain",
            "scheduler_drain_nodes[0]: slurm drain reason refused",
        ),
        ([{"name": "n1", "scheduler": "pbs", "reason": "r"}], "drain", "scheduler 'pbs' is not one of"),
        (
            [{"name": "n1", "scheduler": "slurm", "reason": "r"}, {"name": "n[1-2]", "scheduler": "slurm"}],
            "resume",
            "scheduler_drain_nodes[1]: slurm node refused",
        ),
    ],
)
def test_plan_refuses_the_whole_request_on_one_bad_entry(nodes, action, words):
    with pytest.raises(ValueError) as refused:
        sd.plan(nodes, action)
    assert words in str(refused.value)
