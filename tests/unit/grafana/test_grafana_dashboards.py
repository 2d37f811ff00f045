"""roles/grafana/files/dashboards/*.json and roles/prometheus/files/rules/*.yml against the metrics
ClusterForge produces.

KNOWN, the metrics a query may name: every name listed in tests/monitoring/exporter_metrics.yml
(node_exporter and npu-exporter, checked against a real node_exporter in Molecule), the validation
writer's cfcore.validation_metrics.METRIC_NAMES, the DCGM_FI_ fields of dcgm-exporter's counters file
(roles/exporters/files/clusterforge-counters.csv), the recording rules' `record:` names, and what
Prometheus itself writes (ALERTS, ALERTS_FOR_STATE).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from cfcore import validation_metrics
from metric_names import PromQLTokenError, grafana_query_names, metric_names
from patience import HANG_S

REPO = Path(__file__).resolve().parents[3]
DASHBOARDS = REPO / "roles" / "grafana" / "files" / "dashboards"
RULES = REPO / "roles" / "prometheus" / "files" / "rules"
EXPORTER_METRICS = REPO / "tests" / "monitoring" / "exporter_metrics.yml"
COUNTERS = REPO / "roles" / "exporters" / "files" / "clusterforge-counters.csv"
RECORDS = RULES / "clusterforge-records.yml"
PROMTOOL = REPO / ".venv" / "bin" / "promtool"
DATASOURCE_UID = "clusterforge-prometheus"

# The alerting series Prometheus writes itself (up and scrape_* are in exporter_metrics.yml).
PROMETHEUS_SERIES = {"ALERTS", "ALERTS_FOR_STATE"}


def _required(path: Path) -> Path:
    assert path.is_file(), f"{path.relative_to(REPO)} is missing: the metric checks read it"
    return path


def _strings(node) -> set[str]:
    """Every string in the lists of a YAML document (the exporter metric lists, at any depth)."""
    if isinstance(node, dict):
        return set().union(*(_strings(value) for value in node.values())) if node else set()
    if isinstance(node, list):
        found = set()
        for item in node:
            found |= {item} if isinstance(item, str) else _strings(item)
        return found
    return set()


def exporter_metrics() -> set[str]:
    return _strings(yaml.safe_load(_required(EXPORTER_METRICS).read_text()))


def dcgm_fields() -> set[str]:
    fields = set()
    for line in _required(COUNTERS).read_text().splitlines():
        first = line.split(",", 1)[0].strip()
        if first.startswith("DCGM_FI_"):
            fields.add(first)
    return fields


def recorded() -> set[str]:
    document = yaml.safe_load(_required(RECORDS).read_text())
    return {rule["record"] for group in document["groups"] for rule in group["rules"] if "record" in rule}


def known_metrics() -> set[str]:
    return (
        exporter_metrics()
        | set(validation_metrics.METRIC_NAMES)
        | dcgm_fields()
        | recorded()
        | PROMETHEUS_SERIES
    )


# ------------------------------------------------------------ dashboards ----
# Grafana's variables in a query, replaced by values PromQL accepts: intervals by durations,
# every other variable (used inside =~"..." matchers) by a plain word.
_INTERVALS = {"__rate_interval": "5m", "__interval": "1m", "__range": "1h"}
_VARIABLE = re.compile(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)|\[\[(\w+)\]\]")


def substitute(expr: str) -> str:
    def value(match: re.Match) -> str:
        name = next(group for group in match.groups() if group)
        return _INTERVALS.get(name, "cfvalue")

    return _VARIABLE.sub(value, expr)


def load(path: Path) -> dict:
    return json.loads(path.read_text())


def panels(dashboard: dict):
    """Every panel, those inside collapsed rows too."""
    for panel in dashboard.get("panels", []):
        yield panel
        yield from panel.get("panels", [])


def queries(dashboard: dict):
    """(where, expression, is_template_query) for every query of the dashboard."""
    for variable in dashboard.get("templating", {}).get("list", []):
        if variable.get("type") == "query":
            query = variable.get("query")
            text = query.get("query", "") if isinstance(query, dict) else query
            yield f"variable {variable['name']!r}", text, True
    for panel in panels(dashboard):
        for target in panel.get("targets", []):
            yield (
                f"panel {panel.get('title')!r} (target {target.get('refId')})",
                target.get("expr", ""),
                False,
            )


def unknown_metrics(name: str, dashboard: dict, known: set[str]) -> list[str]:
    """One line per query naming a metric outside `known`, or that cannot be read."""
    problems = []
    for where, expr, template in queries(dashboard):
        try:
            names = (grafana_query_names if template else metric_names)(substitute(expr))
        except PromQLTokenError as error:
            problems.append(f"{name}: {where}: {error}")
            continue
        for metric in sorted(names - known):
            problems.append(f"{name}: {where}: unknown metric {metric!r} in {expr!r}")
    return problems


DASHBOARD_FILES = sorted(DASHBOARDS.glob("*.json"))
IDS = [path.name for path in DASHBOARD_FILES]


def test_the_designed_dashboards_exist():
    assert set(IDS) == {
        "fleet-overview.json",
        "node-accelerators.json",
        "fabric.json",
        "storage.json",
        "validation.json",
    }


@pytest.mark.parametrize("path", DASHBOARD_FILES, ids=IDS)
def test_dashboard_is_valid_json_with_uid_and_title(path):
    dashboard = load(path)
    assert isinstance(dashboard.get("uid"), str) and re.fullmatch(r"[a-zA-Z0-9_-]{1,40}", dashboard["uid"]), (
        f"{path.name}: uid must be 1-40 letters, digits, - or _ (Grafana's limit)"
    )
    assert dashboard.get("title"), f"{path.name}: no title"
    assert dashboard.get("schemaVersion", 0) >= 36, f"{path.name}: schemaVersion too old for datasource uids"
    assert "id" not in dashboard or dashboard["id"] is None, f"{path.name}: a provisioned dashboard has no id"
    assert list(panels(dashboard)), f"{path.name}: no panels"


def test_dashboard_uids_and_titles_are_unique():
    uids = [load(path)["uid"] for path in DASHBOARD_FILES]
    titles = [load(path)["title"] for path in DASHBOARD_FILES]
    assert len(set(uids)) == len(uids), f"duplicate dashboard uids: {uids}"
    assert len(set(titles)) == len(titles), f"duplicate dashboard titles: {titles}"


@pytest.mark.parametrize("path", DASHBOARD_FILES, ids=IDS)
def test_panel_ids_unique_and_grid_fits(path):
    dashboard = load(path)
    ids = [panel["id"] for panel in panels(dashboard)]
    assert len(set(ids)) == len(ids), f"{path.name}: duplicate panel ids"
    for panel in panels(dashboard):
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24, (
            f"{path.name}: panel {panel.get('title')!r} is wider than the grid"
        )


@pytest.mark.parametrize("path", DASHBOARD_FILES, ids=IDS)
def test_every_query_uses_the_clusterforge_datasource(path):
    dashboard = load(path)
    for panel in panels(dashboard):
        if panel.get("type") == "row":
            assert not panel.get("targets"), f"{path.name}: row {panel.get('title')!r} has queries"
            continue
        title = panel.get("title")
        assert panel.get("targets"), f"{path.name}: panel {title!r} has no query"
        assert (panel.get("datasource") or {}).get("uid") == DATASOURCE_UID, (
            f"{path.name}: panel {title!r} must name the datasource by uid {DATASOURCE_UID}"
        )
        for target in panel["targets"]:
            source = target.get("datasource", panel["datasource"])
            assert source.get("uid") == DATASOURCE_UID, (
                f"{path.name}: panel {title!r} target {target.get('refId')}"
            )
            assert target.get("expr"), (
                f"{path.name}: panel {title!r} target {target.get('refId')} has no expr"
            )
    for variable in dashboard.get("templating", {}).get("list", []):
        if variable.get("type") == "query":
            assert variable["datasource"]["uid"] == DATASOURCE_UID, (
                f"{path.name}: variable {variable['name']}"
            )


@pytest.mark.parametrize("path", DASHBOARD_FILES, ids=IDS)
def test_every_query_names_only_known_metrics(path):
    problems = unknown_metrics(path.name, load(path), known_metrics())
    assert not problems, "\n".join(problems)


def test_an_unknown_metric_is_reported_with_dashboard_panel_and_name():
    dashboard = {
        "templating": {"list": [{"type": "query", "name": "node", "query": "label_values(bogus_up, node)"}]},
        "panels": [
            {"title": "GPU temperature", "targets": [{"refId": "A", "expr": "DCGM_FI_DEV_GPU_TEMPERATURE"}]}
        ],
    }
    problems = unknown_metrics("demo.json", dashboard, {"DCGM_FI_DEV_GPU_TEMP"})
    assert problems == [
        "demo.json: variable 'node': unknown metric 'bogus_up' in 'label_values(bogus_up, node)'",
        "demo.json: panel 'GPU temperature' (target A): unknown metric 'DCGM_FI_DEV_GPU_TEMPERATURE' "
        "in 'DCGM_FI_DEV_GPU_TEMPERATURE'",
    ]


def test_dashboards_show_what_the_design_names():
    used = set()
    for path in DASHBOARD_FILES:
        for _where, expr, template in queries(load(path)):
            used |= (grafana_query_names if template else metric_names)(substitute(expr))
    assert {
        "rack:clusterforge_gpus_healthy:sum",
        "rack:clusterforge_gpus:sum",
        "node_sku:npu_chip_health:ratio",
        "node_sku:clusterforge_npus_healthy:sum",
        "clusterforge:validation_status:count",
        "clusterforge_validation_check_status",
        "DCGM_FI_DEV_GPU_TEMP",
        "DCGM_FI_DEV_POWER_USAGE",
        "DCGM_FI_DEV_GPU_UTIL",
        "DCGM_FI_DEV_XID_ERRORS",
        "npu_chip_info_temperature",
        "npu_chip_info_health_status",
        "node_infiniband_state_id",
        "node_infiniband_link_downed_total",
        "clusterforge_expected_mount",
        "node_filesystem_avail_bytes",
        "node_filesystem_size_bytes",
        "ALERTS",
        "up",
    } <= used


def test_node_accelerators_has_node_variable_and_vendor_rows():
    dashboard = load(DASHBOARDS / "node-accelerators.json")
    assert "node" in {variable["name"] for variable in dashboard["templating"]["list"]}
    rows = [panel["title"] for panel in dashboard["panels"] if panel["type"] == "row"]
    assert any("NVIDIA" in row for row in rows) and any("Ascend" in row for row in rows), rows
    for _where, expr, template in queries(dashboard):
        if not template and re.search(r"DCGM_FI_|npu_chip_info_", expr):
            assert 'node=~"$node"' in expr, f"node-accelerators: {expr!r} ignores the node variable"


def test_failing_checks_table_reads_failing_statuses():
    dashboard = load(DASHBOARDS / "validation.json")
    [panel] = [panel for panel in panels(dashboard) if panel.get("title") == "Failing checks"]
    [target] = panel["targets"]
    assert 'status=~"fail|error"' in target["expr"] and target["expr"].endswith("== 1")
    assert target.get("instant") and target.get("format") == "table"


def test_substitute_replaces_grafana_variables():
    assert substitute('rate(x{node=~"$node", a="${rack}", b="[[sku]]"}[$__rate_interval])') == (
        'rate(x{node=~"cfvalue", a="cfvalue", b="cfvalue"}[5m])'
    )


# ------------------------------------------------------------------ rules ----
RULE_FILES = sorted(RULES.glob("*.yml")) if RULES.is_dir() else []


def rule_exprs():
    for path in RULE_FILES:
        for group in yaml.safe_load(path.read_text())["groups"]:
            for rule in group["rules"]:
                yield path.name, rule.get("record") or rule.get("alert"), rule["expr"]


def test_there_are_rule_files():
    assert {path.name for path in RULE_FILES} >= {"clusterforge-records.yml", "clusterforge-alerts.yml"}


def test_every_rule_names_only_known_metrics():
    known = known_metrics()
    problems = []
    for name, rule, expr in rule_exprs():
        try:
            names = metric_names(expr)
        except PromQLTokenError as error:
            problems.append(f"{name}: rule {rule!r}: {error}")
            continue
        problems += [f"{name}: rule {rule!r}: unknown metric {metric!r}" for metric in sorted(names - known)]
    assert not problems, "\n".join(problems)


# -------------------------------------------------------------- promtool ----
def promtool() -> str | None:
    return str(PROMTOOL) if PROMTOOL.exists() else shutil.which("promtool")


def _promtool_check(tmp_path: Path, exprs: list[str]) -> subprocess.CompletedProcess:
    """`promtool check rules` on a rules file recording each expression."""
    rules = {
        "groups": [
            {
                "name": "grafana_dashboard_exprs",
                "rules": [
                    {"record": f"cf_dashboard_check_{index}", "expr": expr}
                    for index, expr in enumerate(exprs)
                ],
            }
        ]
    }
    path = tmp_path / "dashboard-exprs.yml"
    path.write_text(yaml.safe_dump(rules, sort_keys=False))
    return subprocess.run(
        [promtool(), "check", "rules", str(path)], capture_output=True, text=True, timeout=HANG_S, check=False
    )


@pytest.mark.skipif(promtool() is None, reason="promtool is not installed (.venv/bin/promtool or on PATH)")
def test_every_dashboard_expr_is_valid_promql(tmp_path):
    entries = [
        (f"{path.name}: {where}", substitute(expr))
        for path in DASHBOARD_FILES
        for where, expr, template in queries(load(path))
        if not template
    ]
    assert entries
    result = _promtool_check(tmp_path, [expr for _where, expr in entries])
    if result.returncode == 0:
        assert f"SUCCESS: {len(entries)} rules found" in result.stdout, result.stdout
        return
    refused = []
    for where, expr in entries:  # name each expression promtool refuses
        single = _promtool_check(tmp_path, [expr])
        if single.returncode != 0:
            refused.append(f"{where}: {expr!r}: {(single.stdout + single.stderr).strip()}")
    pytest.fail("promtool check rules refused:\n" + "\n".join(refused or [result.stdout + result.stderr]))


@pytest.mark.skipif(promtool() is None, reason="promtool is not installed (.venv/bin/promtool or on PATH)")
def test_promtool_agrees_the_function_list_is_2_42(tmp_path):
    """Each of FUNCTIONS is a function promtool knows (an unknown name fails whatever the arguments)."""
    from metric_names import FUNCTIONS

    for function in sorted(FUNCTIONS):
        output = _promtool_check(tmp_path, [f"{function}()"])
        assert "unknown function" not in (output.stdout + output.stderr), function
    output = _promtool_check(tmp_path, ["mad_over_time()"])
    assert "unknown function" in (output.stdout + output.stderr)
