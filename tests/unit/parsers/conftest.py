"""Fixtures of the parser tests: outputs written for ClusterForge in the tools' real formats."""

from __future__ import annotations

from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "parsers"


def fixture_text(name: str) -> str:
    """The text of tests/fixtures/parsers/<name>."""
    return (FIXTURES / name).read_text(encoding="utf-8")


@pytest.fixture
def load():
    return fixture_text
