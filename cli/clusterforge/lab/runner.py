"""Running external commands (podman, ssh, ansible-playbook) behind one small interface.

The lab code never calls subprocess itself: it gets a Runner, so unit tests can
hand it a fake that records every command line and answers like the real tools.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


@dataclass(frozen=True)
class Result:
    argv: tuple[str, ...]
    returncode: int
    stdout: str = ""
    stderr: str = ""

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def last_error_line(self) -> str:
        """The most telling line of a failed command: its last non-empty stderr (or stdout) line."""
        for text in (self.stderr, self.stdout):
            lines = [line.strip() for line in text.splitlines() if line.strip()]
            if lines:
                return lines[-1]
        return f"exit status {self.returncode}"


class Runner(Protocol):
    def __call__(
        self,
        argv: Sequence[str],
        *,
        input: str | None = None,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        timeout: float | None = None,
    ) -> Result: ...


TIMED_OUT = 124
NOT_FOUND = 127


def run_command(
    argv: Sequence[str],
    *,
    input: str | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float | None = None,
) -> Result:
    """The real Runner: run argv, capture its output; never raises for a failing command."""
    try:
        proc = subprocess.run(
            list(argv),
            input=input,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            timeout=timeout,
            capture_output=True,
            text=True,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return Result(tuple(argv), TIMED_OUT, "", f"timed out after {timeout:g}s")
    except FileNotFoundError:
        return Result(tuple(argv), NOT_FOUND, "", f"{argv[0]}: command not found")
    return Result(tuple(argv), proc.returncode, proc.stdout, proc.stderr)
