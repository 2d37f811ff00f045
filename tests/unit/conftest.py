"""Fixtures shared by every unit test folder."""

from __future__ import annotations

import signal

import pytest


@pytest.fixture
def watchdog():
    """Fail instead of hanging: a FIFO read by mistake, or an alias bomb walked, would block forever."""

    def expired(_signum, _frame):
        raise TimeoutError("the command under test hung (watchdog: 60 s)")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)
