"""What an operator watches during a bring-up, on stderr (stdout carries the summary).

On a terminal (and not in CI): a live panel with the stage, the current task,
the hosts' ok/changed/failed/unreachable counts and the elapsed time. Otherwise
(a pipe, a log file, CI=true): plain timestamped lines, one when a stage starts
and ends, one per host that failed or could not be reached, and a heartbeat naming
the current task every HEARTBEAT_S, so a log shows where a run stands without
the thousand lines of Ansible's own output.
"""

from __future__ import annotations

import os
import time
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.markup import escape
from rich.text import Text

from clusterforge.bringup.recorder import BAD, StageRecorder

HEARTBEAT_S = 30.0


def wants_live(console: Console) -> bool:
    return console.is_terminal and not os.environ.get("CI")


class BringupDisplay:
    def __init__(self, console: Console, *, live: bool | None = None):
        self.console = console
        self.live_mode = wants_live(console) if live is None else live
        self.started = time.monotonic()
        self._live: Live | None = None
        self._stage = ""
        self._position = ""
        self._hosts = 0
        self._last_beat = 0.0

    def _stamp(self) -> str:
        seconds = int(time.monotonic() - self.started)
        return f"[{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}]"

    def line(self, text: str) -> None:
        self.console.print(f"{self._stamp()} {text}", markup=False, highlight=False, soft_wrap=True)

    def stage_started(self, index: int, total: int, stage: str, hosts: int, note: str = "") -> None:
        self._stage, self._position, self._hosts = stage, f"{index}/{total}", hosts
        self._last_beat = time.monotonic()
        self.line(f"stage {stage} ({self._position}): {hosts} host(s){note}")
        if self.live_mode:
            self._live = Live(self._panel(None), console=self.console, refresh_per_second=4, transient=True)
            self._live.start()

    def update(self, recorder: StageRecorder) -> None:
        if self._live is not None:
            self._live.update(self._panel(recorder))
        elif time.monotonic() - self._last_beat >= HEARTBEAT_S:
            self._last_beat = time.monotonic()
            self.line(f"{self._stage}: {_task_label(recorder)} ({_counts(recorder)})")

    def stage_finished(self, record: dict[str, Any]) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None
        tally: dict[str, int] = {}
        for host in record["hosts"].values():
            tally[host["result"]] = tally.get(host["result"], 0) + 1
        summary = ", ".join(f"{count} {result}" for result, count in sorted(tally.items())) or "no host"
        for host, result in record["hosts"].items():
            if result["result"] in BAD and result.get("attempt") == record.get("attempt"):
                self.line(f"{record['stage']}: {host} {result['result']} in {result['failed_task']!r}: "
                          f"{result['message']}")  # fmt: skip
        took = record.get("duration_s")
        self.line(
            f"stage {record['stage']} {record['status']}{f' in {took:.0f} s' if took else ''}: {summary}"
        )

    def note(self, text: str) -> None:
        self.line(text)

    def close(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    def _panel(self, recorder: StageRecorder | None) -> Group:
        elapsed = int(time.monotonic() - self.started)
        head = Text.from_markup(
            f"[bold]stage {escape(self._stage)}[/] ({self._position}) · {self._hosts} host(s) · "
            f"{elapsed // 60}:{elapsed % 60:02d} elapsed"
        )
        if recorder is None:
            return Group(head, Text("starting ansible-playbook ..."))
        return Group(head, Text(f"task: {_task_label(recorder)}"), Text(_counts(recorder)))


def _task_label(recorder: StageRecorder) -> str:
    if not recorder.task:
        return "starting"
    return f"{recorder.role} : {recorder.task}" if recorder.role else recorder.task


def _counts(recorder: StageRecorder) -> str:
    c = recorder.counts
    return f"ok {c.ok}, changed {c.changed}, failed {c.failed}, unreachable {c.unreachable}"
