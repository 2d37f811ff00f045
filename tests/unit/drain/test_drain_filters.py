"""The drain interface's filters (plugins/filter/quarantine.py), loaded as Ansible loads them."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from ansible.plugins.loader import filter_loader, init_plugin_loader
from cfcore import scheduler_drain
from clusterforge.ansible_env import ensure_collection_link

init_plugin_loader([str(ensure_collection_link().parents[2])])


def load(name):
    return filter_loader.get(f"clusterforge.cluster.{name}").j2_function


def test_argv_filter_is_the_interface():
    argv = load("cf_drain_argv")
    assert argv("gpu-01", "kubernetes", "taint", "gpu.xid") == scheduler_drain.k8s_taint("gpu-01", "gpu.xid")
    assert argv("gpu-01", "kubernetes", "label") == scheduler_drain.k8s_label("gpu-01")
    assert argv("gpu-01", "slurm", "show") == ["scontrol", "show", "node", "-o", "gpu-01"]
    assert argv("gpu-01", "kubernetes", "drain", timeout_s="90")[-1] == "--timeout=90s"
    with pytest.raises(AnsibleFilterError, match="cf_drain_argv: kubernetes node refused: name 'gpu 01'"):
        argv("gpu 01", "kubernetes", "label")


def test_plan_filter_refuses_with_nothing_run():
    plan = load("cf_drain_plan")
    assert plan([{"name": "n1", "scheduler": "slurm", "reason": "r"}], "drain", 60)[0]["argv"] == [
        "scontrol",
        "update",
        "NodeName=n1",
        "State=DRAIN",
        "Reason=r",
    ]
    with pytest.raises(AnsibleFilterError, match=r"^nothing was run: scheduler_drain_nodes\[0\]"):
        plan([{"name": "n1;id", "scheduler": "slurm", "reason": "r"}], "drain", 60)


def test_state_filter_parses_or_fails_loudly():
    state = load("cf_slurm_node_state")
    assert state("NodeName=n1 State=IDLE+DRAIN Reason=r [root@t]\n")["drained"] is True
    with pytest.raises(AnsibleFilterError, match="cf_slurm_node_state: not scontrol show node output"):
        state("slurm_load_node error: Unable to contact slurm controller")
