"""Turn the events of a validate playbook run into one node result per target host."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from clusterforge.validation.results import module_failed_result, normalise, unreachable_result


class ResultCollector:
    """Feeds on ansible-runner events; `results()` gives every target host a result.

    A host's result is the `node_result` of its node_validate task. A host
    without one is an `error`: unreachable, a task failure before or in
    node_validate, or no event at all (the run stopped early).
    """

    def __init__(
        self,
        targets: list[str],
        node_skus: dict[str, str | None],
        level: str,
        on_done: Callable[[str, str], None] | None = None,
    ) -> None:
        self.targets = targets
        self.node_skus = node_skus
        self.level = level
        self.on_done = on_done
        self._results: dict[str, dict[str, Any]] = {}
        self._problems: dict[str, dict[str, Any]] = {}

    def __call__(self, event: str, data: dict[str, Any]) -> None:
        host = data.get("host")
        if not host:
            return
        res = data.get("res") or {}
        if isinstance(res, dict) and "node_result" in res and event in ("runner_on_ok", "runner_on_failed"):
            # A module that fails the task on an unhealthy node still reports it.
            self._record(host, normalise(host, res["node_result"], self.level, self.node_skus.get(host)))
        elif event == "runner_on_unreachable" and host not in self._results:
            reason = _reason(res) or "no reason given"
            self._problems[host] = unreachable_result(host, self.node_skus.get(host), self.level, reason)
            self._notify(host, "error")
        elif event == "runner_on_failed" and not data.get("ignore_errors") and host not in self._results:
            task = str(data.get("task") or "?")
            self._problems.setdefault(
                host,
                module_failed_result(host, self.node_skus.get(host), self.level, task, _reason(res) or "?"),
            )
            self._notify(host, "error")

    def _record(self, host: str, result: dict[str, Any]) -> None:
        first = host not in self._results and host not in self._problems
        self._results[host] = result
        self._problems.pop(host, None)
        if first:
            self._notify(host, result["status"])

    def _notify(self, host: str, status: str) -> None:
        if self.on_done:
            self.on_done(host, status)

    def heard_from_any(self) -> bool:
        return bool(self._results or self._problems)

    def results(self, missing_reason: str) -> list[dict[str, Any]]:
        """Results in target order; hosts the run never reached get `missing_reason`."""
        out = []
        for host in self.targets:
            result = self._results.get(host) or self._problems.get(host)
            if result is None:
                result = module_failed_result(
                    host, self.node_skus.get(host), self.level, "validate playbook", missing_reason
                )
            out.append(result)
        return out


def _reason(res: Any) -> str:
    if not isinstance(res, dict):
        return str(res)
    parts = [str(res.get("msg") or "").strip()]
    for key in ("module_stderr", "stderr"):
        text = str(res.get(key) or "").strip()
        if text:
            parts.append(text.splitlines()[-1])
            break
    return ": ".join(p for p in parts if p)[:2000]
