"""Monitoring on the shared lab (conftest.py): what site.yml's monitoring part left running, judged
through Prometheus's and Alertmanager's HTTP APIs on the control node.

Every node runs node_exporter; the GPU nodes run dcgm-exporter (NVIDIA's package from the test
repository, tests/nvidia_repo) and the NPU nodes npu-exporter (the Ascend stack's); Prometheus
and Alertmanager run on the control node. The lab starts with three replayed faults
(labkit.PROFILES); each must be an alert on its node, and the healthy nodes must page for
nothing. Runs first (LAB_ORDER): test_validate_lab switches the replay profiles afterwards.
"""

from __future__ import annotations

import json
import time
from urllib.parse import quote

import pytest
from labkit import CLIENTS, HOSTS, LAB, PROFILES, sh

pytestmark = pytest.mark.lab
LAB_ORDER = 5  # reads only, and needs the replay profiles the lab was created with
CONTROL = f"{LAB}-ctl-01"
GPU_NODES = [host for host in CLIENTS if "-gpu-" in host]
NPU_NODES = [host for host in CLIENTS if "-npu-" in host]
# The alert each fault of labkit.PROFILES raises (docs/design.md, "Monitoring").
FAULT_ALERTS = {
    f"{LAB}-gpu-02": "GPUFatalXid",  # h100-xid79
    f"{LAB}-gpu-03": "IBPortDown",  # h100-ib-port-down
    f"{LAB}-npu-02": "NPUHealthNotOK",  # 910b-health-alarm
}
assert set(FAULT_ALERTS) == set(PROFILES), "one expected alert per faulty node of the lab"
# A node's first validation result reaches Prometheus within a timer or health-check run, a
# scrape and a rule evaluation (sitevars: 15 s each); bounded well above, polled.
PATIENCE_S = 180
GET = "import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())"


def api(path: str, port: int = 9090):
    answer = json.loads(sh(CONTROL, f"python3 -c '{GET}' 'http://127.0.0.1:{port}{path}'"))
    if port == 9090:
        assert answer["status"] == "success", answer
        return answer["data"]
    return answer


def query(promql: str) -> list:
    return api(f"/api/v1/query?query={quote(promql)}")["result"]


def eventually(read, done, timeout: float = PATIENCE_S):
    """read() until done(value) or the timeout; returns the last value for the assert."""
    deadline = time.monotonic() + timeout
    value = read()
    while not done(value) and time.monotonic() < deadline:
        time.sleep(5)
        value = read()
    return value


def firing() -> dict:
    """node -> sorted names of the alerts firing for it."""
    alerts: dict = {}
    for alert in api("/api/v1/alerts")["alerts"]:
        if alert["state"] == "firing" and "node" in alert["labels"]:
            alerts.setdefault(alert["labels"]["node"], set()).add(alert["labels"]["alertname"])
    return {node: sorted(names) for node, names in alerts.items()}


def up_targets() -> dict:
    """job -> sorted nodes whose target is up."""
    jobs: dict = {}
    for target in api("/api/v1/targets?state=active")["activeTargets"]:
        if target["health"] == "up" and "node" in target["labels"]:
            jobs.setdefault(target["labels"]["job"], set()).add(target["labels"]["node"])
    return {job: sorted(nodes) for job, nodes in jobs.items()}


def test_every_exporter_of_the_lab_is_an_up_target(lab):
    wanted = {"node": sorted(HOSTS), "dcgm": sorted(GPU_NODES), "npu": sorted(NPU_NODES)}
    jobs = eventually(up_targets, lambda jobs: all(jobs.get(j) == n for j, n in wanted.items()), 60)
    assert {job: jobs.get(job) for job in wanted} == wanted


def test_every_node_reports_its_validation(lab):
    def reported():
        return {r["metric"]["node"] for r in query('clusterforge_validation_status{level="quick"} == 1')}

    assert eventually(reported, lambda nodes: nodes >= set(HOSTS)) >= set(HOSTS)


def test_each_replayed_fault_fires_its_alert_and_healthy_nodes_page_for_nothing(lab):
    alerts = eventually(firing, lambda a: all(name in a.get(n, []) for n, name in FAULT_ALERTS.items()))
    for node, name in FAULT_ALERTS.items():
        assert name in alerts.get(node, []), f"{node}: {name} does not fire; firing: {alerts}"
    healthy = [host for host in HOSTS if host not in FAULT_ALERTS]
    assert {node: alerts[node] for node in healthy if node in alerts} == {}


def test_dcgm_exporter_reports_every_gpu_and_the_replayed_xid(lab):
    temps = query("count by (node) (DCGM_FI_DEV_GPU_TEMP)")
    assert {r["metric"]["node"]: r["value"][1] for r in temps} == {node: "8" for node in GPU_NODES}
    xids = query(f'max by (node) (DCGM_FI_DEV_XID_ERRORS{{node="{LAB}-gpu-02"}})')
    assert [r["value"][1] for r in xids] == ["79"]


def test_alertmanager_holds_the_critical_alerts(lab):
    def held():
        alerts = api("/api/v2/alerts?filter=" + quote('severity="critical"'), port=9093)
        return {a["labels"].get("node") for a in alerts}

    assert eventually(held, lambda nodes: nodes >= set(FAULT_ALERTS), 90) >= set(FAULT_ALERTS)


def test_node_exporter_sees_every_mount_a_node_must_have(lab):
    """The exporter side of SharedMountMissing: node_exporter (an unprivileged user) must be able
    to statfs the FUSE mounts (JuiceFS, ceph-fuse), or the alert would fire for mounts that are
    there once its hold has passed."""
    expected = query("clusterforge_expected_mount == 1")
    assert {r["metric"]["node"] for r in expected} == set(CLIENTS)
    missing = query(
        "clusterforge_expected_mount == 1 unless on (instance, mountpoint) node_filesystem_size_bytes"
    )
    assert [(r["metric"]["node"], r["metric"]["mountpoint"]) for r in missing] == []
