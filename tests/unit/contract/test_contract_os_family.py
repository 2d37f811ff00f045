"""cf_os_family_vars: every role loads its OS family's names through one rule (cfcore/os_family.py),
which is its check of the family too, and preflight checks every node with the same rule."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleFilterError
from ansible.plugins.loader import filter_loader, init_plugin_loader
from cfcore import os_family
from clusterforge.ansible_env import ensure_collection_link

init_plugin_loader([str(ensure_collection_link().parents[2])])
cf_os_family_vars = filter_loader.get("clusterforge.cluster.cf_os_family_vars").j2_function
cf_os_family_supported = filter_loader.get("clusterforge.cluster.cf_os_family_supported").j2_function
ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("family", os_family.SUPPORTED)
def test_a_supported_family_names_its_vars_file(family):
    assert cf_os_family_vars({"os_family": family, "distribution": "x"}, "base") == f"{family}.yml"
    assert cf_os_family_supported(family)


@pytest.mark.parametrize(
    "facts",
    [
        {"os_family": "Suse", "distribution": "SLES"},
        {},
        None,
        {"os_family": ["Debian"]},
        {"os_family": "../x"},
    ],
)
def test_another_family_is_refused_with_the_role_and_the_fix(facts):
    with pytest.raises(AnsibleFilterError) as err:
        cf_os_family_vars(facts, "nvidia_driver")
    message = str(err.value)
    assert "role nvidia_driver supports the Debian" in message and "Fix:" in message
    if facts and facts.get("distribution"):
        assert "SLES (Suse family)" in message
    assert not cf_os_family_supported((facts or {}).get("os_family"))


def _family_loads():
    for path in sorted(ROOT.glob("roles/*/tasks/*.yml")):
        for line in path.read_text().splitlines():
            if "include_vars" in line and "os_family" in line:
                yield path, line


def test_every_role_loads_its_family_through_the_rule_and_names_itself():
    loads = list(_family_loads())
    assert len(loads) > 40  # the roles' main paths and their bundle.yml
    for path, line in loads:
        role = path.parts[-3]
        assert f"cf_os_family_vars('{role}')" in line, f"{path}: {line.strip()}"
        assert (path.parent.parent / "vars" / "Debian.yml").is_file(), path
        assert (path.parent.parent / "vars" / "RedHat.yml").is_file(), path


def test_no_role_repeats_the_family_check_in_an_assert():
    # The load above is the check (issue 33: one host-task, not two, per role and host).
    family_list = re.compile(r"os_family\s+in\s+\[")
    offenders = [str(p) for p in ROOT.glob("roles/*/tasks/*.yml") if family_list.search(p.read_text())]
    assert offenders == []
    preflight = yaml.safe_load((ROOT / "playbooks" / "preflight.yml").read_text())
    checks = [t for t in preflight[0]["tasks"] if "ansible.builtin.assert" in t]
    assert checks[0]["ansible.builtin.assert"]["that"] == (
        "ansible_facts.os_family | clusterforge.cluster.cf_os_family_supported"
    )
