"""scripts/testrun.py, the test command's runner: its plan, the command line's selection, and the
scheduler on fake parts (real processes, seconds long)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SPEC = importlib.util.spec_from_file_location("testrun", ROOT / "scripts" / "testrun.py")
testrun = importlib.util.module_from_spec(SPEC)
sys.modules["testrun"] = testrun
SPEC.loader.exec_module(testrun)


def names(parts):
    return [p.name for p in parts]


def test_every_molecule_scenario_of_the_tree_is_a_part():
    scenarios = {
        f"molecule {p.parts[-4]}/{p.parts[-2]}" for p in ROOT.glob("roles/*/molecule/*/molecule.yml")
    }
    planned = {p.name for p in testrun.plan() if p.group == "molecule"}
    assert scenarios and planned == scenarios


def test_budgets_name_only_scenarios_that_exist():
    for role, scenario in testrun.MOLECULE_BUDGET:
        assert (ROOT / "roles" / role / "molecule" / scenario / "molecule.yml").is_file(), (role, scenario)


def test_needs_name_parts_of_the_plan_and_the_lab_runs_at_normal_priority():
    parts = testrun.plan()
    known = set(names(parts))
    assert all(need in known for part in parts for need in part.needs)
    lab = next(p for p in parts if p.group == "lab")
    assert lab.nice == 0 and all(p.nice == 0 for p in parts if p.setup)
    assert all(p.nice > 0 for p in parts if p.group in ("unit", "lint", "molecule"))


@pytest.mark.parametrize(
    ("words", "wanted"),
    [
        (["molecule:slurm"], ["molecule slurm/default"]),
        (["molecule:nvidia_driver/distro"], ["molecule nvidia_driver/distro"]),
        (["molecule:storage"], ["molecule ceph/default"]),  # a stack
        (["unit", "lint"], ["unit + conformance", "lint"]),
    ],
)
def test_selection_takes_the_parts_named_and_their_setup(words, wanted):
    chosen = testrun.select(testrun.plan(), words)
    tests = [p.name for p in chosen if not p.setup]
    assert sorted(tests) == sorted(wanted)
    by_name = {p.name: p for p in chosen}
    assert all(need in by_name for part in chosen for need in part.needs)


def test_lab_module_selection_runs_that_module(capsys):
    modules = testrun.lab_modules(["lab:storage"])
    assert modules == ["tests/integration/test_storage_lab.py"]
    lab = next(p for p in testrun.plan(modules) if p.group == "lab")
    assert lab.argv[-1] == "tests/integration/test_storage_lab.py"


@pytest.mark.parametrize("word", ["bogus", "molecule:nosuchrole", "lab:nosuchmodule"])
def test_an_unknown_part_is_exit_2_with_a_fix(word, capsys):
    with pytest.raises(SystemExit) as exit_:
        testrun.select(testrun.plan(testrun.lab_modules([word]) if word.startswith("lab:") else None), [word])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "\n  fix: " in err


def fake(name, script, needs=(), cores=1, group="unit", lock=""):
    return testrun.Part(name, [sys.executable, "-c", script], needs=needs, budget_s=1, cores=cores,
                        group=group, lock=lock)  # fmt: skip


def test_scheduler_runs_side_by_side_within_slots_and_skips_what_a_failure_blocks(tmp_path, monkeypatch):
    monkeypatch.setattr(testrun, "LOGS", tmp_path)
    nap = "import time; time.sleep(1)"
    parts = [
        fake("a", nap),
        fake("b", nap),
        fake("c", "import sys; sys.exit(3)"),
        fake("d", "print('never')", needs=("c",)),
        fake("e", nap, lock="x"),
        fake("f", nap, lock="x"),
        fake("g", nap, cores=2, needs=("a",)),
    ]
    testrun.run(parts, slots=2, molecule_at_once=2, env={})
    state = {p.name: p.state for p in parts}
    assert state == {"a": "ok", "b": "ok", "c": "failed", "d": "skipped", "e": "ok", "f": "ok", "g": "ok"}
    at = {p.name: p for p in parts}
    assert abs(at["a"].started - at["b"].started) < 0.5  # side by side: both fit in 2 slots
    assert at["f"].started >= at["e"].started + at["e"].seconds  # one lock: one after the other
    assert at["g"].started >= at["a"].started + at["a"].seconds  # after what it needs


def test_summary_flags_a_part_over_its_budget_and_writes_json(tmp_path):
    part = fake("slow", "")
    part.state, part.seconds, part.started, part.rc = "ok", 5.0, testrun.T0 + 1, 0
    result = testrun.summary([part], wall=6.0, slots=2)
    row = result["parts"][0]
    assert row["over_budget"] is True and row["status"] == "ok"
    json.dumps(result)
