"""Exit codes and the one error type the CLI reports to operators.

Every command exits with one of these codes (README documents them):
  0  success
  1  internal error: a bug or an unexpected failure; the message says what to report
  2  invalid input: bad flags, an invalid inventory or variables, an unparseable file
  3  checks failed: the command ran and found unhealthy nodes or failed checks
  4  environment not ready: a prerequisite is missing (podman, the node image, SSH reachability)
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_INVALID = 2
EXIT_FAILED = 3
EXIT_ENV = 4


class ClusterForgeError(Exception):
    """An error the operator can act on: what is wrong, where, and how to fix it."""

    exit_code = EXIT_INTERNAL

    def __init__(self, message: str, fix: str | None = None):
        super().__init__(message)
        self.message = message
        self.fix = fix

    def render(self) -> str:
        text = f"error: {self.message}"
        if self.fix:
            text += f"\n  fix: {self.fix}"
        return text


class InvalidInput(ClusterForgeError):
    exit_code = EXIT_INVALID


class ChecksFailed(ClusterForgeError):
    exit_code = EXIT_FAILED


class EnvironmentNotReady(ClusterForgeError):
    exit_code = EXIT_ENV
