"""Progress of lab commands: a spinner on a terminal, plain timed lines otherwise.

Progress goes to stderr so that stdout carries only results (a path, a table,
JSON) that scripts can use.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.markup import escape


class Reporter:
    def __init__(self, console: Console | None = None):
        self.console = console or Console(stderr=True, highlight=False, soft_wrap=True)
        self.started = time.monotonic()

    @property
    def interactive(self) -> bool:
        return self.console.is_terminal

    @contextmanager
    def step(self, title: str) -> Iterator[None]:
        """Run one step; print it with its duration when it ends (or fails)."""
        t0 = time.monotonic()
        ok = False
        try:
            if self.interactive:
                with self.console.status(escape(title)):
                    yield
            else:
                yield
            ok = True
        finally:
            mark = "[green]✓[/]" if ok else "[red]✗[/]"
            if not self.interactive:
                mark = "ok" if ok else "FAILED"
            self.console.print(f"{mark} {escape(title)} ({time.monotonic() - t0:.1f}s)")

    def note(self, text: str) -> None:
        self.console.print(escape(text))

    def warn(self, text: str) -> None:
        self.console.print(f"[yellow]warning:[/] {escape(text)}" if self.interactive else f"warning: {text}")

    def elapsed(self) -> float:
        return time.monotonic() - self.started
