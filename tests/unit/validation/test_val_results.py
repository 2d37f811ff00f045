from clusterforge.validation.results import (
    CHECK_MODULE_RAN,
    CHECK_REACHABLE,
    first_message,
    normalise,
    summarise,
    unreachable_result,
    worst,
)
from valfactory import check, node


def test_worst_orders_fail_over_error_over_warn_and_skip_only_when_all_skip():
    assert worst(["pass", "warn", "error", "fail"]) == "fail"
    assert worst(["pass", "error", "warn"]) == "error"
    assert worst(["pass", "skip", "warn"]) == "warn"
    assert worst(["skip", "pass"]) == "pass"
    assert worst(["skip", "skip"]) == "skip"
    assert worst([]) == "error"


def test_normalise_puts_inventory_name_and_keeps_node_hostname_in_facts():
    raw = node(
        "gpu01.node.local", checks=[check("gpu.count", "pass"), check("gpu.ecc", "warn")], status="pass"
    )
    result = normalise("gpu-r1-n01", raw, "quick", "hgx-h100-8gpu")
    assert result["host"] == "gpu-r1-n01"
    assert result["facts"]["hostname"] == "gpu01.node.local"
    # The status is recomputed from the checks: a module that says pass with a warn check reads warn.
    assert result["status"] == "warn"
    assert raw["host"] == "gpu01.node.local"  # the input is not modified


def test_malformed_module_output_is_an_error_never_a_pass():
    for raw in (
        None,
        "ok",
        {"checks": []},
        {"checks": [{"id": "gpu.count", "status": "great"}]},
        {"status": "pass"},
    ):
        result = normalise("n1", raw, "quick", "cpu-generic")
        assert result["status"] == "error"
        assert result["checks"][0]["id"] == CHECK_MODULE_RAN
        assert "unusable result" in result["checks"][0]["message"]


def test_unreachable_result_is_error_with_reason_and_remedy():
    result = unreachable_result(
        "n1", "hgx-h100-8gpu", "quick", "ssh: connect to host 10.0.0.1 port 22: No route"
    )
    assert result["status"] == "error"
    only = result["checks"][0]
    assert only["id"] == CHECK_REACHABLE
    assert only["message"] == "unreachable: ssh: connect to host 10.0.0.1 port 22: No route"
    assert "SSH" in only["remedy"]


def test_summary_counts_statuses_and_failing_checks():
    results = [
        node("a"),
        node("b", checks=[check("gpu.xid", "fail"), check("gpu.ecc", "fail")]),
        node("c", checks=[check("gpu.xid", "fail"), check("gpu.tool", "error")]),
        unreachable_result("d", None, "quick", "timeout"),
    ]
    summary = summarise(results)
    assert summary["nodes"] == 4
    assert summary["status_counts"] == {"pass": 1, "warn": 0, "fail": 2, "error": 1, "skip": 0}
    assert summary["overall"] == "fail"
    assert summary["unhealthy_nodes"] == ["b", "c", "d"]
    assert summary["check_failures"] == {"gpu.xid": 2, "gpu.ecc": 1}
    assert summary["check_errors"] == {"gpu.tool": 1, "node.reachable": 1}


def test_first_message_is_the_worst_checks():
    result = node("a", checks=[check("gpu.ecc", "warn", "1 corrected"), check("gpu.xid", "fail", "Xid 79")])
    assert first_message(result) == "Xid 79"
    assert first_message(node("b")) == ""
