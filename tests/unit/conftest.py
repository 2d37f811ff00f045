"""Fixtures shared by every unit test folder."""

from __future__ import annotations

import signal

import pytest
from patience import HANG_S


@pytest.fixture
def watchdog():
    """Fail instead of hanging: a FIFO read by mistake, or an alias bomb walked, would block forever."""

    def expired(_signum, _frame):
        raise TimeoutError(f"the command under test hung (watchdog: {HANG_S} s)")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(HANG_S)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)
