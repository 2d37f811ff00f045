"""Role node_healthcheck without a scheduler: the systemd timer and service it installs, and its specs.

The templates are rendered with the role's own vars and defaults (Jinja2, strict), so a unit's
settings are checked here; the role applied on a systemd node (the timer firing, a second run and
--check --diff changing nothing, the switch to slurm removing the timer) is the podman check of the
role's README.
"""

from __future__ import annotations

import configparser
import sys
from pathlib import Path

import jinja2
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
ROLE = ROOT / "roles" / "node_healthcheck"
sys.path.insert(0, str(ROOT / "tests" / "unit"))
import role_specs  # noqa: E402


def render(name: str, **values) -> configparser.ConfigParser:
    variables = {
        **yaml.safe_load((ROLE / "defaults" / "main.yml").read_text()),
        **yaml.safe_load((ROLE / "vars" / "main.yml").read_text()),
        "ansible_managed": "Ansible managed",
        **values,
    }
    environment = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    text = environment.from_string((ROLE / "templates" / f"{name}.j2").read_text()).render(variables)
    unit = configparser.ConfigParser(interpolation=None, strict=True)
    unit.optionxform = str  # systemd keys are case-sensitive
    unit.read_string(text)
    return unit


def test_the_service_is_a_oneshot_running_the_program_niced_and_bounded():
    service = render("clusterforge-healthcheck.service")["Service"]
    assert service["Type"] == "oneshot"
    assert service["ExecStart"] == "/usr/local/sbin/clusterforge-healthcheck"
    assert int(service["Nice"]) > 0
    # Longer than the program's own budget (cfcore/healthcheck.py), so the program reports a hang itself.
    from cfcore.healthcheck import TOTAL_BUDGET_S

    assert int(service["TimeoutStartSec"]) > TOTAL_BUDGET_S
    # Exit 1 (unhealthy) is a result, exit 2 (cannot run) a failed unit.
    assert service["SuccessExitStatus"] == "1"


@pytest.mark.parametrize("interval", [300, 10])
def test_the_timer_runs_it_every_interval_from_boot_with_one_second_accuracy(interval):
    unit = render("clusterforge-healthcheck.timer", node_healthcheck_interval_s=interval)
    timer = unit["Timer"]
    assert timer["OnBootSec"] == timer["OnUnitActiveSec"] == f"{interval}s"
    assert timer["AccuracySec"] == "1s"
    assert timer["Unit"] == "clusterforge-healthcheck.service"
    assert unit["Install"]["WantedBy"] == "timers.target"


def test_the_specs_take_no_scheduler_and_an_integer_interval():
    assert role_specs.defaults("node_healthcheck")["node_healthcheck_interval_s"] == 300
    assert role_specs.validate("node_healthcheck", {}, node_healthcheck_scheduler=None) == []
    assert role_specs.validate("node_healthcheck", {}, node_healthcheck_scheduler="slurm") == []
    refused = role_specs.validate("node_healthcheck", {}, node_healthcheck_scheduler="pbs")
    assert len(refused) == 1 and "node_healthcheck_scheduler" in refused[0]
    refused = role_specs.validate(
        "node_healthcheck", {}, node_healthcheck_scheduler=None, node_healthcheck_interval_s="often"
    )
    assert len(refused) == 1 and "node_healthcheck_interval_s" in refused[0]
