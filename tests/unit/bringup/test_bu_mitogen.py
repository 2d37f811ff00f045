"""The CLI's Ansible runs use Mitogen's strategy unless switched off (ansible_env.mitogen_strategy)."""

from __future__ import annotations

from pathlib import Path

import pytest
from clusterforge.ansible_env import MITOGEN_SWITCH, ansible_env, mitogen_strategy


def test_the_bringup_runs_ansible_with_mitogens_linear_strategy_from_the_venv():
    env = ansible_env({"PATH": "/usr/bin"}, mitogen=True)
    assert env["ANSIBLE_STRATEGY"] == "mitogen_linear"
    assert (Path(env["ANSIBLE_STRATEGY_PLUGINS"]) / "mitogen_linear.py").is_file()


@pytest.mark.parametrize("value", ["0", "false", "OFF", " no "])
def test_the_switch_turns_it_off(value):
    assert mitogen_strategy({MITOGEN_SWITCH: value}) == {}
    assert "ANSIBLE_STRATEGY" not in ansible_env({"PATH": "/usr/bin", MITOGEN_SWITCH: value}, mitogen=True)


def test_an_operators_own_strategy_wins():
    env = ansible_env({"PATH": "/usr/bin", "ANSIBLE_STRATEGY": "free"}, mitogen=True)
    assert env["ANSIBLE_STRATEGY"] == "free" and "ANSIBLE_STRATEGY_PLUGINS" not in env


def test_other_runs_keep_ansibles_own_strategy():
    assert "ANSIBLE_STRATEGY" not in ansible_env({"PATH": "/usr/bin"})
