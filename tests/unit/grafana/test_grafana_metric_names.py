"""tests/monitoring/metric_names.py: the metric names of PromQL expressions, on tricky ones."""

from __future__ import annotations

import pytest
from metric_names import AGGREGATIONS, FUNCTIONS, PromQLTokenError, grafana_query_names, metric_names


@pytest.mark.parametrize(
    ("expr", "names"),
    [
        ("up", {"up"}),
        ('up{job="node"} == 0', {"up"}),
        # label values that look like metrics, and escaped quotes, are strings
        (r'up{job="node_cpu_seconds_total", a="x\"y}", b=~"rate(z)"}', {"up"}),
        ("DCGM_FI_DEV_GPU_TEMP{node=~'$node'}", {"DCGM_FI_DEV_GPU_TEMP"}),
        (
            "rack:clusterforge_gpus_healthy:sum / rack:clusterforge_gpus:sum",
            {"rack:clusterforge_gpus_healthy:sum", "rack:clusterforge_gpus:sum"},
        ),
        # by/without label lists are labels, not metrics, before or after the argument
        (
            "sum by (rack, node) (rate(node_infiniband_link_downed_total[5m]))",
            {"node_infiniband_link_downed_total"},
        ),
        (
            "sum(rate(node_infiniband_link_downed_total[5m])) without (device, port)",
            {"node_infiniband_link_downed_total"},
        ),
        ("SUM BY (rack) (up)", {"up"}),
        # vector matching: on/ignoring/group_left label lists
        ("a * on (node) group_left (rack, node_sku) b", {"a", "b"}),
        ("a / ignoring(level) group_right b", {"a", "b"}),
        ("a and b or c unless d", {"a", "b", "c", "d"}),
        ("a > bool 1", {"a"}),
        ("atan2(a, b)", {"a", "b"}),
        ("a atan2 b", {"a", "b"}),
        # offsets, @, subqueries, ranges
        ("rate(x_total[5m] offset 1h30m)", {"x_total"}),
        ("x offset -5m", {"x"}),
        ("max_over_time(rate(x_total[1m])[1h:5m])", {"x_total"}),
        ("max_over_time(x[1h:])", {"x"}),
        ("x @ 1609746000", {"x"}),
        ("x @ start() - y @ end()", {"x", "y"}),
        # numbers: scientific, hex, Inf/NaN
        ("x * 1e3 + 0x1F - .5 + Inf - NaN", {"x"}),
        # __name__ matchers
        ('{__name__="ALERTS", alertstate="firing"}', {"ALERTS"}),
        ('{__name__=~"up|ALERTS_FOR_STATE"}', {"up", "ALERTS_FOR_STATE"}),
        ('x{__name__!="y"}', {"x"}),
        # functions with string arguments
        ('label_replace(up, "host", "$1", "instance", "(.*):.*")', {"up"}),
        ('count_values("status", clusterforge_validation_status)', {"clusterforge_validation_status"}),
        ("topk(5, x) + quantile(0.9, y)", {"x", "y"}),
        (
            "time() - clusterforge_validation_last_run_timestamp_seconds",
            {"clusterforge_validation_last_run_timestamp_seconds"},
        ),
        ("vector(1)", set()),
        ("histogram_quantile(0.99, sum by (le) (rate(h_bucket[5m])))", {"h_bucket"}),
        # comments
        ("up # not_a_metric\n + down", {"up", "down"}),
        # a metric named like a function when not called
        ("rate + 1", {"rate"}),
        # a keyword-looking prefix is still a metric name
        ("bytes_total and offset_seconds", {"bytes_total", "offset_seconds"}),
    ],
)
def test_metric_names(expr, names):
    assert metric_names(expr) == names


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("foo(x)", "not a PromQL function"),
        ("mad_over_time(x[5m])", "not a PromQL function"),  # 2.48, not in Debian 12's 2.42
        ('x{job="a}', "unterminated string"),
        ('x{job="a"', "unterminated label matcher"),
        ("x{job}", "matcher operator"),
        ("x[5m", "unterminated"),
        ("x[five]", "not a range"),
        ("x offset y", "duration after offset"),
        ("x + 5m", "duration outside"),
        ("x @ now", "after @"),
        ('{__name__=~"DCGM_.*"}', "plain list of names"),
        ("x $ y", "unexpected character"),
        ("sum by (a-b) (x)", "not a label name"),
    ],
)
def test_errors(expr, message):
    with pytest.raises(PromQLTokenError, match=message):
        metric_names(expr)


def test_function_and_aggregation_lists():
    # Spot checks on the 2.42 lists: present, and nothing later.
    assert {"rate", "irate", "increase", "label_replace", "present_over_time", "holt_winters"} <= FUNCTIONS
    assert {"histogram_count", "histogram_sum", "histogram_fraction"} <= FUNCTIONS
    assert not {"histogram_avg", "mad_over_time", "sort_by_label", "limitk"} & (FUNCTIONS | AGGREGATIONS)
    assert len(FUNCTIONS) == 70
    assert {
        "sum",
        "min",
        "max",
        "avg",
        "group",
        "stddev",
        "stdvar",
        "count",
        "count_values",
        "bottomk",
        "topk",
        "quantile",
    } == AGGREGATIONS


@pytest.mark.parametrize(
    ("query", "names"),
    [
        ('label_values(up{job="node"}, rack)', {"up"}),
        ('label_values(up{job="node", rack=~"$rack"}, node)', {"up"}),
        ("label_values(node)", set()),
        ("label_values(sum by (node) (DCGM_FI_DEV_GPU_TEMP), node)", {"DCGM_FI_DEV_GPU_TEMP"}),
        ("query_result(topk(3, up))", {"up"}),
        ("label_names()", set()),
        ("up", {"up"}),
    ],
)
def test_grafana_query_names(query, names):
    assert grafana_query_names(query) == names


def test_grafana_query_errors():
    with pytest.raises(PromQLTokenError, match="regex"):
        grafana_query_names("metrics(DCGM_.*)")
    with pytest.raises(PromQLTokenError, match="label name"):
        grafana_query_names("label_values(up, 3)")
