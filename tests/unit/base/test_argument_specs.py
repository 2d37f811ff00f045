"""Role base's meta/argument_specs.yml: complete, consistent with the defaults,
and rejecting bad variables before the role does anything."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

REPO = Path(__file__).resolve().parents[3]
ROLE = REPO / "roles" / "base"
DEFAULTS = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
SPEC = yaml.safe_load((ROLE / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"]["options"]
# Per-host inventory variables the role reads without a default.
INVENTORY_ONLY = {"base_cluster_address"}


def validate(**overrides):
    result = ArgumentSpecValidator(SPEC).validate({**DEFAULTS, **overrides})
    return [str(error) for error in result.errors]


def test_every_default_has_a_spec_and_every_spec_a_default():
    assert set(SPEC) - INVENTORY_ONLY == set(DEFAULTS)


@pytest.mark.parametrize("name", sorted(set(SPEC) & set(DEFAULTS)))
def test_documented_defaults_match_defaults_main(name):
    if "default" in SPEC[name]:
        assert SPEC[name]["default"] == DEFAULTS[name]


@pytest.mark.parametrize("name", sorted(SPEC))
def test_every_option_is_typed_and_described(name):
    assert SPEC[name].get("type"), name
    assert SPEC[name].get("description"), name


def test_the_defaults_are_valid():
    assert validate() == []


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("base_sysctls", "oops", "base_sysctls"),
        ("base_sysctls_site", ["vm.max_map_count=1"], "base_sysctls_site"),
        ("base_chrony_servers", {"ntp1": 1}, "base_chrony_servers"),
        ("base_chrony_local_stratum", 16, "base_chrony_local_stratum"),
        ("base_nofile_limit", "many", "base_nofile_limit"),
        ("base_blacklist_nouveau", "maybe", "base_blacklist_nouveau"),
        ("base_upgrade_blacklist", {"nvidia-": True}, "base_upgrade_blacklist"),
    ],
)
def test_bad_values_are_rejected_naming_the_variable(name, value, message):
    errors = validate(**{name: value})
    assert errors and message in errors[0]


def test_a_play_with_a_bad_variable_fails_before_any_task(tmp_path):
    playbook = tmp_path / "play.yml"
    playbook.write_text(
        "- name: Apply base with a bad variable\n  hosts: localhost\n  gather_facts: false\n  roles: [base]\n"
    )
    # --tags: only the argument validation (tagged always) may run, so nothing on
    # this machine is touched whatever happens.
    run = subprocess.run(
        [
            str(Path(sys.executable).parent / "ansible-playbook"),
            "-i",
            "localhost,",
            "-c",
            "local",
            "--check",
            "--tags",
            "cf-argument-validation-only",
            "-e",
            "base_sysctls=oops",
            str(playbook),
        ],
        cwd=REPO,
        env={**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    output = run.stdout + run.stderr
    assert run.returncode == 2, output
    assert "Validating arguments against arg spec 'main'" in output
    assert "argument 'base_sysctls' is of type str and we were unable to convert to dict" in output
