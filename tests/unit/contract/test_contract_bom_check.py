"""Action bom_check: the playbooks' pre-check gives the findings `inventory check` gives
(cfcore/bom.py), reading the BOM variables cfcore names; a real playbook run templates them."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from unittest import mock

from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import init_plugin_loader
from ansible.template import Templar
from cfcore.bom import bom_findings, load_rules
from cfcore.catalog import sku_spec
from clusterforge.ansible_env import ensure_collection_link

init_plugin_loader([str(ensure_collection_link().parents[2])])
action = importlib.import_module("ansible_collections.clusterforge.cluster.plugins.action.bom_check")

ROOT = Path(__file__).resolve().parents[3]
GOOD = {
    "nvidia_driver_version": "570.133.20",
    "cuda_version": "12.8",
    "nccl_version": "2.26.2",
    "dcgm_version": "4.2.3",
}


def check(hostvars, **args):
    task = SimpleNamespace(args=args, check_mode=False, async_val=0, action="bom_check")
    loader = DataLoader()
    plugin = action.ActionModule(
        task, mock.MagicMock(), mock.MagicMock(), loader, Templar(loader=loader), mock.MagicMock()
    )
    return plugin.run(task_vars={"inventory_hostname": "gpu-1", **hostvars})


def errors(result):
    return [f for f in result["findings"] if f["severity"] == "error"]


def test_a_compatible_bom_passes():
    for sku in ("hgx-h100-8gpu", "hgx-b200-8gpu"):
        result = check({**GOOD, "node_sku": sku})
        assert not result.get("failed") and errors(result) == [], sku


def test_proprietary_modules_on_blackwell_are_refused_with_the_fix():
    result = check({**GOOD, "node_sku": "hgx-b200-8gpu", "nvidia_kernel_module_flavour": "proprietary"})
    [found] = errors(result)
    assert found["rule"] == "bom.kernel_modules" and found["source"]
    assert (
        result["failed"]
        and "gpu-1:" in result["msg"]
        and "(hgx-b200-8gpu), nothing was changed" in result["msg"]
    )
    assert (
        "nvidia_kernel_module_flavour:" in result["msg"]
        and "(fix: set nvidia_kernel_module_flavour: open)" in result["msg"]
    )


def test_the_planned_version_is_judged_instead_of_the_hosts():
    result = check(
        {**GOOD, "node_sku": "hgx-h100-8gpu"}, planned={"nvidia_fabricmanager_version": "570.124.06"}
    )
    [found] = errors(result)
    assert found["rule"] == "bom.fabricmanager" and "802" in found["message"]


def test_same_findings_as_inventory_check_for_the_same_values():
    """One implementation: the action is cfcore.bom on the host's values, nothing more."""
    bad = {**GOOD, "cuda_version": "13.0"}
    direct = bom_findings(bad.get, "hgx-h100-8gpu", sku_spec("hgx-h100-8gpu"), load_rules())
    assert check({**bad, "node_sku": "hgx-h100-8gpu"})["findings"] == direct
    assert [f["rule"] for f in errors({"findings": direct})] == ["bom.cuda_driver"]


def test_other_findings_fail_with_the_bom_and_an_unknown_sku_names_the_known_ones():
    extra = {"rule": "hccn.subnet", "variable": "hccn_devices[0]", "message": "off the subnet",
             "fix": "put it on 10.0.0.0/24", "severity": "error"}  # fmt: skip
    result = check({"node_sku": "atlas-800t-a2"}, findings=[extra], refusal="the inventory does not work")
    assert (
        result["failed"] and "hccn_devices[0]: off the subnet (fix: put it on 10.0.0.0/24)." in result["msg"]
    )
    try:
        check({**GOOD, "node_sku": "hgx-h900"})
    except Exception as err:
        assert "unknown SKU 'hgx-h900'" in str(err) and "use one of" in str(err)
    else:
        raise AssertionError("an unknown SKU passed")


def test_a_playbook_run_templates_the_hosts_variables(tmp_path):
    (tmp_path / "play.yml").write_text(
        "- hosts: all\n  gather_facts: false\n  tasks:\n"
        "    - clusterforge.cluster.bom_check:\n        refusal: the BOM does not work on its SKU\n"
    )
    hostvars = {**GOOD, "node_sku": "hgx-h100-8gpu", "cuda_major": "13", "cuda_version": "{{ cuda_major }}.0"}
    (tmp_path / "hosts.yml").write_text(json.dumps({"all": {"hosts": {"gpu-1": hostvars}}}))
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    env["ANSIBLE_CACHE_PLUGIN"] = "memory"
    argv = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(tmp_path / "hosts.yml"),
            "-c", "local", str(tmp_path / "play.yml")]  # fmt: skip
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "cuda_version:" in done.stdout and "13.0" in done.stdout and "nothing was changed" in done.stdout
