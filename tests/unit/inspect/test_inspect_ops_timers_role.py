"""Role ops_timers: the units it writes, rendered with the role's defaults (Jinja2, strict)."""

from __future__ import annotations

import configparser
import shlex
from pathlib import Path

import jinja2
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
ROLE = ROOT / "roles" / "ops_timers"
JOB = {
    "name": "inspect-quick",
    "description": "ClusterForge quick inspection",
    "schedule": "*-*-* 03:15:00",
    "args": ["inspect", "run", "-i", "/srv/inv", "--history", "/var/lib/cf 100%/$HOME"],
    "randomized_delay_s": 600,
    "success_exit_status": [3],
}


def render_text(name: str, **values) -> str:
    variables = {
        **yaml.safe_load((ROLE / "defaults" / "main.yml").read_text()),
        "ops_timers_owner": "inspect",
        "clusterforge_cli": "/opt/cf/.venv/bin/clusterforge",
        "clusterforge_inventory": "/srv/inv",
        "item": JOB,
        **values,
    }
    role_vars = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())
    # As Ansible's template module renders: trim_blocks on.
    environment = jinja2.Environment(
        undefined=jinja2.StrictUndefined, keep_trailing_newline=True, trim_blocks=True
    )
    for key in ("ops_timers_marker", "ops_timers_env_file"):
        variables[key] = environment.from_string(role_vars[key]).render(variables)
    return environment.from_string((ROLE / "templates" / f"{name}.j2").read_text()).render(variables)


def render(name: str, **values) -> configparser.ConfigParser:
    unit = configparser.ConfigParser(interpolation=None, strict=True)
    unit.optionxform = str  # systemd keys are case-sensitive
    unit.read_string(render_text(name, **values))
    return unit


def test_the_service_is_a_niced_oneshot_of_the_cli_and_its_args():
    service = render("service")["Service"]
    assert service["Type"] == "oneshot" and int(service["Nice"]) == 10
    assert service["SuccessExitStatus"] == "3"  # unhealthy nodes found: a result, not a failed unit
    assert "SuccessExitStatus" not in render("service", item={**JOB, "success_exit_status": []})["Service"]
    assert service["EnvironmentFile"] == "/etc/clusterforge/ops-timers-inspect.env"
    assert service["WorkingDirectory"] == "/var/lib/clusterforge"
    # systemd's own quoting: double quotes, and % and $ doubled so no specifier or variable expands.
    assert shlex.split(service["ExecStart"]) == [
        "/opt/cf/.venv/bin/clusterforge",
        *JOB["args"][:-1],
        "/var/lib/cf 100%%/$$HOME",
    ]


def test_the_timer_is_persistent_and_starts_its_service():
    unit = render("timer")
    timer = unit["Timer"]
    assert timer["OnCalendar"] == "*-*-* 03:15:00" and timer["Persistent"] == "true"
    assert timer["RandomizedDelaySec"] == "600" and timer["Unit"] == "clusterforge-inspect-quick.service"
    assert unit["Install"]["WantedBy"] == "timers.target"


@pytest.mark.parametrize("name", ["service", "timer", "env"])
def test_every_file_carries_the_owners_marker(name):
    assert render_text(name).splitlines()[0] == "# managed by clusterforge ops_timers owner=inspect"


def test_the_environment_file_gives_home_ssh_without_masters_and_the_vault_password_only_when_set():
    assert render_text("env").splitlines()[1:] == [
        "HOME=/var/lib/clusterforge",
        "ANSIBLE_SSH_ARGS=-o ControlMaster=no -o ServerAliveInterval=30 -o ServerAliveCountMax=4 "
        "-o ConnectionAttempts=3",
    ]
    assert render_text("env", ops_timers_ssh_args="").splitlines()[1:] == ["HOME=/var/lib/clusterforge"]
    with_vault = render_text("env", clusterforge_vault_password_file="/etc/cf/vault-pass")
    assert "ANSIBLE_VAULT_PASSWORD_FILE=/etc/cf/vault-pass" in with_vault.splitlines()


def test_specs_require_the_cli_and_the_inventory():
    specs = yaml.safe_load((ROLE / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"][
        "options"
    ]
    assert specs["clusterforge_cli"]["required"] and specs["clusterforge_inventory"]["required"]
    defaults = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
    assert set(defaults) <= set(specs)
