"""Fixtures of the hardware replay tool's tests: a controller-side context and an in-process renderer."""

from __future__ import annotations

import pytest
from hwreplay_testlib import replay_env  # also puts tests/hwreplay (replaylib) on sys.path
from replaylib.common import Context
from replaylib.profiles import resolve
from replaylib.tools import run_tool


@pytest.fixture
def ctx(tmp_path) -> Context:
    """A context with no host overrides, no state and a pinned clock."""
    return Context(env=replay_env(tmp_path))


@pytest.fixture
def render(ctx):
    """render(profile_name, tool, *args) -> ToolResult, against the profile (no state needed)."""

    def _render(name: str, tool: str, *args: str):
        return run_tool(ctx, tool, list(args), resolve(ctx, name))

    return _render
