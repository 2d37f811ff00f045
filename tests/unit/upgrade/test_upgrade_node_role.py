"""Role upgrade_node: its argument specs refuse bad variables before any phase runs, and its phase
markers are the ones the CLI records (cli/clusterforge/upgrade/run.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import yaml
from clusterforge.upgrade.run import PHASE_TASK, PHASES

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import role_specs

ROLE = role_specs.ROLES / "upgrade_node"
GOOD = {"upgrade_node_versions": {"g01": "590.48.01"}, "upgrade_node_run_id": "20261202T100000Z-upgrade-ab12"}


def test_a_run_s_variables_pass():
    assert role_specs.validate("upgrade_node", GOOD) == []


def test_an_unknown_component_and_missing_versions_are_refused():
    errors = role_specs.validate("upgrade_node", GOOD, upgrade_node_component="bios")
    assert any("upgrade_node_component" in error and "bios" in error for error in errors), errors
    errors = role_specs.validate("upgrade_node", {"upgrade_node_run_id": "r"})
    assert any("upgrade_node_versions" in error for error in errors), errors


def test_the_phases_open_with_the_tasks_the_cli_records_in_order():
    tasks = yaml.safe_load((ROLE / "tasks" / "main.yml").read_text())
    block = next(task["block"] for task in tasks if "block" in task)
    markers = [task["name"][len(PHASE_TASK) :] for task in block if task["name"].startswith(PHASE_TASK)]
    assert markers == list(PHASES)
    role_phases = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())["upgrade_node__phases"]
    assert role_phases == list(PHASES)


def test_every_component_has_its_services_and_modules():
    defaults = role_specs.defaults("upgrade_node")
    components = role_specs.spec("upgrade_node")["upgrade_node_component"]["choices"]
    assert sorted(defaults["upgrade_node_services"]) == sorted(components)
    assert sorted(defaults["upgrade_node_modules"]) == sorted(components)
