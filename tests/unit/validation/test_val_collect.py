from clusterforge.validation.collect import ResultCollector
from valfactory import node


def make(targets=("a", "b", "c", "d")):
    seen = []
    collector = ResultCollector(
        list(targets),
        {h: "hgx-h100-8gpu" for h in targets},
        "quick",
        on_done=lambda h, s: seen.append((h, s)),
    )
    return collector, seen


def test_results_come_from_events_and_every_target_gets_one():
    collector, seen = make()
    collector("runner_on_start", {"host": "a", "task": "Validate the node"})
    collector(
        "runner_on_ok", {"host": "a", "task": "Validate the node", "res": {"node_result": node("a-real")}}
    )
    collector("runner_on_unreachable", {"host": "b", "res": {"msg": "Failed to connect to the host via ssh"}})
    collector(
        "runner_on_failed",
        {"host": "c", "task": "Work out what the node should look like", "res": {"msg": "unknown SKU 'x'"}},
    )
    collector("playbook_on_stats", {"changed": {}})
    results = {r["host"]: r for r in collector.results("the run stopped")}
    assert list(results) == ["a", "b", "c", "d"]
    assert results["a"]["status"] == "pass"
    assert results["a"]["facts"]["hostname"] == "a-real"
    assert results["b"]["checks"][0]["message"] == "unreachable: Failed to connect to the host via ssh"
    assert results["c"]["status"] == "error"
    assert (
        "task 'Work out what the node should look like' failed: unknown SKU 'x'"
        in results["c"]["checks"][0]["message"]
    )
    assert results["d"]["status"] == "error" and "the run stopped" in results["d"]["checks"][0]["message"]
    assert seen == [("a", "pass"), ("b", "error"), ("c", "error")]


def test_a_failed_task_carrying_a_node_result_keeps_the_result():
    collector, _ = make(["a"])
    bad = node("a", checks=[{"id": "gpu.xid", "status": "fail", "message": "Xid 79"}])
    collector("runner_on_failed", {"host": "a", "task": "Validate the node", "res": {"node_result": bad}})
    # A later failing task (the playbook's own stop-on-unhealthy) does not replace it.
    collector(
        "runner_on_failed", {"host": "a", "task": "Stop on an unhealthy node", "res": {"msg": "failed"}}
    )
    [result] = collector.results("x")
    assert result["status"] == "fail"
    assert result["checks"][0]["id"] == "gpu.xid"


def test_ignored_failures_and_module_stderr():
    collector, _ = make(["a", "b"])
    collector("runner_on_failed", {"host": "a", "task": "t", "ignore_errors": True, "res": {"msg": "meh"}})
    collector(
        "runner_on_failed",
        {
            "host": "b",
            "task": "Validate the node",
            "res": {"msg": "MODULE FAILURE", "module_stderr": "Trace\nKeyError: 'x'\n"},
        },
    )
    results = {r["host"]: r for r in collector.results("no result")}
    assert "no result" in results["a"]["checks"][0]["message"]
    assert results["b"]["checks"][0]["message"].endswith("MODULE FAILURE: KeyError: 'x'")
