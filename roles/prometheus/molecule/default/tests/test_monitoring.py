"""The monitoring stack on the scenario's nodes: the real state, read over SSH and
through Prometheus's and Alertmanager's HTTP APIs.

Expectations come from the scenario's inventory, the role files (rules) and the
reference list of exporter metrics (tests/monitoring/exporter_metrics.yml), never
from what the roles report about themselves: every test fails on nodes the roles
have not touched.
"""

from __future__ import annotations

import json
from pathlib import Path

import cfmol_testinfra as cfmol
import pytest
import yaml

REPO = Path(__file__).resolve().parents[5]
ALERT_RULES = REPO / "roles" / "prometheus" / "files" / "rules" / "clusterforge-alerts.yml"
RECORD_RULES = REPO / "roles" / "prometheus" / "files" / "rules" / "clusterforge-records.yml"
EXPORTER_METRICS = yaml.safe_load((REPO / "tests" / "monitoring" / "exporter_metrics.yml").read_text())
PROMETHEUS_NODE = "cfmol-mon-prom"
NODES = ("cfmol-mon-prom", "cfmol-mon-gpu")
# The node image has no curl: Python's urllib on the node.
GET = (
    "python3 -c 'import sys, urllib.request;"
    " print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())' %s"
)
# node_exporter collectors that need hardware or kernel parts a container lacks.
NEEDS_HARDWARE = ("node_infiniband_",)


def rule_names(path: Path, key: str) -> set:
    groups = yaml.safe_load(path.read_text())["groups"]
    return {rule[key] for group in groups for rule in group["rules"] if key in rule}


def get_json(host, url: str):
    result = host.run(GET, url)
    assert result.rc == 0, f"GET {url}: {result.stderr.strip()[-500:]}"
    return json.loads(result.stdout)


def prometheus(host, path: str):
    port = cfmol.node_vars(host).get("prometheus_port", 9090)
    answer = get_json(host, f"http://127.0.0.1:{port}{path}")
    assert answer["status"] == "success", answer
    return answer["data"]


def query(host, promql: str) -> list:
    from urllib.parse import quote

    return prometheus(host, f"/api/v1/query?query={quote(promql)}")["result"]


@pytest.mark.parametrize("service", ["prometheus-node-exporter", "clusterforge-healthcheck.timer"])
def test_every_node_runs_the_exporter_and_its_validation_timer(host, service):
    assert host.service(service).is_running
    assert host.service(service).is_enabled


def test_node_exporter_serves_the_validation_metrics_of_the_node(host):
    metrics = host.run(GET, "http://127.0.0.1:9100/metrics").stdout
    assert 'clusterforge_validation_status{level="quick",status=' in metrics
    assert "clusterforge_validation_check_status{" in metrics
    assert "node_textfile_scrape_error 0" in metrics


@pytest.mark.parametrize("service", ["prometheus", "prometheus-alertmanager"])
def test_the_monitoring_node_runs_prometheus_and_alertmanager(host, service):
    cfmol.on(host, PROMETHEUS_NODE)
    assert host.service(service).is_running
    assert host.service(service).is_enabled


def test_every_node_is_an_up_target_with_its_inventory_labels(host):
    cfmol.on(host, PROMETHEUS_NODE)
    targets = {
        t["labels"]["node"]: t
        for t in prometheus(host, "/api/v1/targets?state=active")["activeTargets"]
        if t["labels"].get("job") == "node"
    }
    for node in NODES:
        wanted = cfmol.node_vars(host, node)
        assert node in targets, f"{node} is no target of the node job: {sorted(targets)}"
        labels = targets[node]["labels"]
        assert targets[node]["health"] == "up", targets[node].get("lastError")
        assert labels["rack"] == str(wanted["rack"])
        assert labels["node_sku"] == wanted["node_sku"]
        assert targets[node]["scrapeUrl"].startswith(f"http://{wanted['ansible_host']}:9100/")
    assert targets["cfmol-mon-gpu"]["labels"]["cluster_groups"] == ",gpu_nvidia,"
    assert targets[PROMETHEUS_NODE]["labels"]["cluster_groups"] == ",monitoring,"


def test_targets_come_from_file_based_discovery(host):
    cfmol.on(host, PROMETHEUS_NODE)
    config = yaml.safe_load(prometheus(host, "/api/v1/status/config")["yaml"])
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    assert jobs["node"]["file_sd_configs"][0]["files"] == ["/etc/prometheus/file_sd/node.json"]
    entries = json.loads(cfmol.root(host, "cat /etc/prometheus/file_sd/node.json"))
    assert {e["labels"]["node"] for e in entries} >= set(NODES)


def test_every_rule_of_the_role_is_loaded_and_healthy(host):
    cfmol.on(host, PROMETHEUS_NODE)
    loaded = [rule for group in prometheus(host, "/api/v1/rules")["groups"] for rule in group["rules"]]
    assert {r["name"] for r in loaded if r["type"] == "alerting"} == rule_names(ALERT_RULES, "alert")
    assert {r["name"] for r in loaded if r["type"] == "recording"} >= rule_names(RECORD_RULES, "record")
    assert [r["name"] for r in loaded if r["health"] != "ok"] == []


def test_the_validation_metrics_of_both_nodes_are_in_prometheus(host):
    cfmol.on(host, PROMETHEUS_NODE)
    result = query(host, 'clusterforge_validation_check_status{level="quick",check="gpu.xid"} == 1')
    statuses = {r["metric"]["node"]: r["metric"]["status"] for r in result}
    assert statuses["cfmol-mon-gpu"] == "pass"  # healthy again after side_effect's fault
    assert statuses[PROMETHEUS_NODE] == "skip"  # a CPU node has no GPU to check
    accelerators = query(host, 'clusterforge_validation_accelerators{level="quick"}')
    assert [(r["metric"]["node"], r["metric"]["vendor"], r["value"][1]) for r in accelerators] == [
        ("cfmol-mon-gpu", "nvidia", "8")
    ]


def test_the_recording_rules_count_the_replayed_gpus_per_rack(host):
    cfmol.on(host, PROMETHEUS_NODE)
    healthy = cfmol.wait_for(lambda: query(host, "rack:clusterforge_gpus_healthy:sum"), timeout=30)
    assert [(r["metric"]["rack"], r["value"][1]) for r in healthy] == [("r2", "8")]


def test_the_node_exporter_metrics_the_rules_and_dashboards_name_exist(host):
    """tests/monitoring/exporter_metrics.yml against a real node_exporter (Debian's 1.5)."""
    cfmol.on(host, PROMETHEUS_NODE)
    names = {r["metric"]["__name__"] for r in query(host, 'count by (__name__) ({job="node"})')}
    wanted = [n for n in EXPORTER_METRICS["node_exporter"] if not n.startswith(NEEDS_HARDWARE)]
    assert wanted, "the reference list names no node_exporter metric"
    assert sorted(set(wanted) - names) == []


def test_alertmanager_keeps_its_receivers_secret(host):
    cfmol.on(host, PROMETHEUS_NODE)
    config = host.file("/etc/prometheus/alertmanager.yml")
    assert (config.user, config.group, config.mode) == ("root", "prometheus", 0o640)
    assert "http://127.0.0.1:9099/pager" in cfmol.root(host, "cat /etc/prometheus/alertmanager.yml")
    status = get_json(host, "http://127.0.0.1:9093/api/v2/status")
    route = yaml.safe_load(status["config"]["original"])["route"]
    assert route["receiver"] == "ops-chat"
    assert {r["receiver"] for r in route["routes"]} >= {"ops-pager", "ops-chat"}


def test_prometheus_runs_with_the_retention_of_the_inventory(host):
    cfmol.on(host, PROMETHEUS_NODE)
    flags = prometheus(host, "/api/v1/status/flags")
    wanted = cfmol.node_vars(host)
    assert flags["storage.tsdb.retention.time"] == wanted.get("prometheus_retention_time", "30d")
    assert flags["storage.tsdb.path"] == wanted.get("prometheus_storage_path", "/var/lib/prometheus/metrics2")
