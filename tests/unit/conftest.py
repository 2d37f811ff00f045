"""Fixtures shared by every unit test folder."""

from __future__ import annotations

import os
import signal
import tempfile

import pytest

# Playbooks the tests run would share Ansible's fact cache (ansible.cfg: jsonfile under
# ~/.cache/clusterforge/facts) with each other and with the operator's runs; two test processes
# (pytest -n) writing one host's entry at once can read half a file. Each process gets its own.
os.environ.setdefault("ANSIBLE_CACHE_PLUGIN_CONNECTION", tempfile.mkdtemp(prefix="cf-unit-facts-"))


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
