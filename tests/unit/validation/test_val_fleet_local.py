"""`clusterforge validate -i INV` end to end on this machine: the real playbook, module and
ansible-runner, with local-connection hosts (no containers) and one unreachable host."""

import json
import textwrap
import xml.etree.ElementTree as ET

import pytest
from clusterforge.main import main

pytestmark = pytest.mark.slow

INVENTORY = """\
all:
  vars:
    ansible_connection: local
    ansible_become: false
    ansible_python_interpreter: /usr/bin/python3
    # This machine (a container) has no clock service to ask; the lab tests check time sync.
    validate_skip_checks: [node.time_sync]
  children:
    k8s_workers:
      hosts:
        local-ok:
          node_sku: cpu-generic
          validate_required_mounts: [/proc]
        local-nomount:
          node_sku: cpu-generic
          validate_required_mounts: [/proc, /mnt/cf-not-mounted]
          slurm_node_name: cfnode-07
    # local-nomount works for both schedulers: quarantine takes it out of both.
    slurm_workers:
      hosts:
        local-nomount:
    slurm_controller:
      hosts:
        local-ctl:
          node_sku: cpu-generic
    far:
      hosts:
        gone:
          node_sku: cpu-generic
          ansible_connection: ssh
          ansible_host: 127.0.0.1
          ansible_port: 1
"""


def test_fleet_run_reports_every_host_and_exits_3(tmp_path, capsys):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(textwrap.dedent(INVENTORY))
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exited:
        main(["validate", "-i", str(inventory), "--out", str(out), "--quarantine", "--quarantine-dry-run"])
    assert exited.value.code == 3
    captured = capsys.readouterr()
    report = json.loads((out / "report.json").read_text())
    nodes = {n["host"]: n for n in report["nodes"]}
    assert set(nodes) == {"local-ok", "local-nomount", "local-ctl", "gone"}
    assert nodes["local-ok"]["status"] == "pass"
    assert nodes["local-ctl"]["status"] in ("pass", "skip")
    mounts = next(c for c in nodes["local-nomount"]["checks"] if c["id"] == "node.mounts")
    assert nodes["local-nomount"]["status"] == "fail"
    assert mounts["status"] == "fail" and "/mnt/cf-not-mounted" in mounts["message"]
    assert mounts["evidence"]
    gone = nodes["gone"]
    assert gone["status"] == "error"
    assert gone["checks"][0]["id"] == "node.reachable"
    assert gone["checks"][0]["message"].startswith("unreachable: ")
    assert report["summary"]["status_counts"]["fail"] == 1
    assert report["summary"]["unhealthy_nodes"] == ["gone", "local-nomount"]
    assert report["run"]["level"] == "quick" and report["run"]["duration_s"] > 0

    # The table names the failing check; the error names both unhealthy nodes.
    assert "node.mounts" in captured.out and "node.reachable" in captured.out
    assert "2 of 4 node(s) failed validation" in captured.err

    # Quarantine: only the failed node (not the unreachable one), in check mode on the controller.
    quarantine = report["quarantine"]
    slurm = [a for a in quarantine["actions"] if a["scheduler"] == "slurm"]
    assert [(a["host"], a["target"]) for a in slurm] == [("local-nomount", "cfnode-07")]
    assert slurm[0]["argv"][:4] == ["scontrol", "update", "NodeName=cfnode-07", "State=DRAIN"]
    assert slurm[0]["argv"][4].startswith("Reason=clusterforge: node.mounts ")
    # No Slurm on this machine: the controller play finds no scontrol and says so.
    assert slurm[0]["outcome"] == "not run"
    assert slurm[0]["detail"] == "scontrol is not installed on local-ctl"
    assert any("--quarantine-on-error" in note for note in quarantine["notes"])
    assert "quarantine: [not run] local-nomount: scontrol update NodeName=cfnode-07" in captured.err

    suites = ET.parse(out / "junit.xml").getroot().findall("testsuite")
    assert {s.get("name") for s in suites} == set(nodes)
    assert (
        'clusterforge_check_failed{check="node.mounts",node="local-nomount"} 1.0'
        in (out / "clusterforge.prom").read_text()
    )
