"""One stage's results from ansible-runner's event stream (never Ansible's text output).

Per host: the changed tasks (with the diff, which `--check --diff` carries), the
failed task and its message (the last failure: a rescued one comes before the one that stops
the host), and, from the play recap, the host's result
in the stage: unreachable, failed (rescued failures do not count), changed, ok,
or none when no play of the stage applied to it. Without a recap (the playbook
died, or the controller was killed) no host has finished the stage.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

FINISHED = frozenset({"ok", "changed", "none"})
BAD = frozenset({"failed", "unreachable"})
MAX_DIFF_CHARS = 20000  # per changed task: a diff of a huge file is cut, with a note saying so


@dataclass
class Counts:
    ok: int = 0
    changed: int = 0
    failed: int = 0
    unreachable: int = 0
    skipped: int = 0


@dataclass
class StageRecorder:
    """Consumes one stage's events; `on_update` is told of every change worth showing."""

    stage: str
    hosts: list[str]
    on_update: Callable[[StageRecorder], None] = lambda _recorder: None
    task: str = ""
    role: str = ""
    counts: Counts = field(default_factory=Counts)
    records: dict[str, dict[str, Any]] = field(default_factory=dict)
    recap: dict[str, Any] | None = None  # the play recaps, merged over the shards that gave one
    recapped: set[str] = field(default_factory=set)  # the hosts of those shards
    started: float = field(default_factory=time.monotonic)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __call__(self, name: str, data: dict[str, Any], shard: list[str] | None = None) -> None:
        """One event of the stage's ansible-playbook, or of one shard's (`shard`: its hosts)."""
        handler = _HANDLERS.get(name)
        if handler is None:
            return
        with self._lock:  # shards run in threads
            if name == "playbook_on_stats":
                self._stats(data, shard if shard is not None else self.hosts)
            else:
                handler(self, data)
            self.on_update(self)

    def shard(self, hosts: list[str]) -> Callable[[str, dict[str, Any]], None]:
        """The event handler of one shard's ansible-playbook."""
        return lambda name, data: self(name, data, hosts)

    def _record(self, host: str) -> dict[str, Any]:
        return self.records.setdefault(host, {"changed_tasks": [], "failed_task": None, "message": None})

    def _task_start(self, data: dict[str, Any]) -> None:
        self.task = str(data.get("task") or data.get("name") or "")
        self.role = str(data.get("role") or "")

    def _ok(self, data: dict[str, Any]) -> None:
        res = data.get("res") or {}
        if res.get("changed"):
            self.counts.changed += 1
            change: dict[str, Any] = {"task": str(data.get("task", "")), "role": str(data.get("role") or "")}
            diff = res.get("diff") or [
                item["diff"]
                for item in res.get("results") or []
                if isinstance(item, dict) and item.get("diff")
            ]  # a loop's diffs are its items'
            if diff:
                change["diff"] = _bounded(diff)
            else:
                change["would"] = _what_changes(res)
            self._record(str(data.get("host")))["changed_tasks"].append(change)
        else:
            self.counts.ok += 1

    def _failed(self, data: dict[str, Any]) -> None:
        if data.get("ignore_errors"):
            return
        self.counts.failed += 1
        # The last failure: a failed host stops at its unrescued one; a rescued one came before it.
        record = self._record(str(data.get("host")))
        record["failed_task"] = str(data.get("task", ""))
        record["message"] = _message(data.get("res") or {})

    def _unreachable(self, data: dict[str, Any]) -> None:
        self.counts.unreachable += 1
        record = self._record(str(data.get("host")))
        record["failed_task"] = str(data.get("task", ""))
        record["message"] = _message(data.get("res") or {})

    def _skipped(self, _data: dict[str, Any]) -> None:
        self.counts.skipped += 1

    def _stats(self, data: dict[str, Any], hosts: list[str]) -> None:
        merged = self.recap or {}
        for key, per_host in data.items():
            if isinstance(per_host, dict):
                merged.setdefault(key, {}).update(per_host)
        self.recap = merged
        self.recapped.update(hosts)

    def results(self) -> dict[str, dict[str, Any]]:
        """host -> {result, changed_tasks, failed_task, message} for every host of the stage."""
        out: dict[str, dict[str, Any]] = {}
        for host in self.hosts:
            record = dict(self._record(host))
            record["result"] = self.result_of(host)
            if record["result"] not in BAD:  # a rescued failure is not the host's
                record["failed_task"] = record["message"] = None
            out[host] = record
        return out

    def result_of(self, host: str) -> str:
        if self.recap is None or host not in self.recapped:
            return "unfinished"
        if host in (self.recap.get("dark") or {}):
            return "unreachable"
        if (self.recap.get("failures") or {}).get(host):
            return "failed"
        if host not in (self.recap.get("processed") or {}):
            return "none"
        return "changed" if (self.recap.get("changed") or {}).get(host) else "ok"


_HANDLERS: dict[str, Callable[..., None]] = {
    "playbook_on_task_start": StageRecorder._task_start,
    "runner_on_ok": StageRecorder._ok,
    "runner_on_failed": StageRecorder._failed,
    "runner_on_unreachable": StageRecorder._unreachable,
    "runner_on_skipped": StageRecorder._skipped,
    "playbook_on_stats": StageRecorder._stats,  # called with the shard's hosts, in __call__
}


def _message(res: dict[str, Any]) -> str:
    text = res.get("msg") or res.get("stderr") or res.get("reason") or ""
    if not text and res.get("rc") is not None:
        text = f"exit status {res['rc']}"
    return str(text).strip()[:2000]


def _what_changes(res: dict[str, Any]) -> str:
    """What a changed task without a diff would do, from the module's own result keys."""
    parts = [f"{key}: {res[key]}" for key in ("state", "enabled", "name", "path", "dest") if key in res]
    for key in ("cmd", "msg"):
        if not parts and res.get(key):
            parts.append(f"{key}: {res[key]}")
    return ", ".join(str(p) for p in parts)[:500] or "changed (the module gave no detail)"


def _bounded(diff: Any) -> Any:
    """The module's diff (a dict, or a list of them), each text field cut at MAX_DIFF_CHARS."""
    if isinstance(diff, list):
        return [_bounded(item) for item in diff]
    if isinstance(diff, dict):
        out = {}
        for key, value in diff.items():
            if isinstance(value, str) and len(value) > MAX_DIFF_CHARS:
                value = value[:MAX_DIFF_CHARS] + f"\n[... cut: {len(value) - MAX_DIFF_CHARS} more characters]"
            out[key] = value
        return out
    return diff
