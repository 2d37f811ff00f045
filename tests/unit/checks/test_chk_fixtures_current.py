"""The committed capture fixtures are what make_captures.py writes (regenerate after editing it)."""

from __future__ import annotations

import filecmp
import importlib.util

from chkdata import CAPTURES


def test_committed_captures_match_the_generator(tmp_path):
    spec = importlib.util.spec_from_file_location("make_captures", CAPTURES / "make_captures.py")
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    generator.main(tmp_path)
    for name in generator.captures():
        fresh = sorted(p.relative_to(tmp_path / name) for p in (tmp_path / name).rglob("*") if p.is_file())
        committed = sorted(
            p.relative_to(CAPTURES / name) for p in (CAPTURES / name).rglob("*") if p.is_file()
        )
        assert fresh == committed, f"{name}: run tests/fixtures/captures/make_captures.py"
        for rel in fresh:
            assert filecmp.cmp(tmp_path / name / rel, CAPTURES / name / rel, shallow=False), (
                f"{name}/{rel} is stale: run tests/fixtures/captures/make_captures.py"
            )
