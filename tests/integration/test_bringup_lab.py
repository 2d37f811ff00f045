"""`clusterforge bringup` on the shared lab (conftest.py), whose own bring-up was SIGKILLed in
stage KILL_AT_STAGE and resumed: the ledger, `--check` (exactly a hand-made change on exactly its
node) and a second run of the cluster-wide stages that changes nothing. A whole-site `--check`
pass is not repeated here, nor a second run of the node-local stages: every stack's Molecule
scenario converges in --check --diff mode (side_effect) and proves its roles idempotent; what
only the whole site shows is the cluster-wide stages (storage, schedulers, monitoring), which
compute from every host at once (CI time: about 11 minutes saved).
Runs on the lab as the bring-up left it (LAB_ORDER): after monitoring's reads, before the tests
that switch replay profiles or restart nodes, which is drift too (a restarted container gets a
new /etc/hosts from podman and an empty /run; a switched replay profile changes the HCA facts).
"""

from __future__ import annotations

import json

import pytest
from conftest import BRINGUP_ARGS, KILL_AT_STAGE, LEDGER, TIMINGS
from labkit import BIN, INVENTORY, LAB, explain, run, sh

pytestmark = pytest.mark.lab
LAB_ORDER = 7  # after monitoring (5: reads only), before validation (10: switches replay profiles)
STAGES = ["preflight", "base", "fabric", "accelerators", "storage", "schedulers", "monitoring"]
DRIFTED = f"{LAB}-gpu-01"
JOURNALD_DROPIN = "/etc/systemd/journald.conf.d/60-clusterforge.conf"
NODE_EXPORTER = "prometheus-node-exporter"


def bringup(*args: str, timeout: float = 900):
    return run(BIN / "clusterforge", "bringup", "-i", INVENTORY, *args, *BRINGUP_ARGS, timeout=timeout)


def newest_run() -> tuple[dict, dict[str, dict]]:
    """run.json and stage -> stage record of the ledger's newest run."""
    listed = run(BIN / "clusterforge", "runs", "list", "--ledger", LEDGER, "--format", "json")
    assert listed.returncode == 0, explain(listed)
    folder = LEDGER / json.loads(listed.stdout)[0]["id"]
    stages = [json.loads(p.read_text()) for p in sorted((folder / "stages").glob("*.json"))]
    return json.loads((folder / "run.json").read_text()), {s["stage"]: s for s in stages}


def test_the_killed_bringup_resumed_without_redoing_what_was_done(lab):
    folder = LEDGER / lab.bringup_run
    record = json.loads((folder / "run.json").read_text())
    assert (record["status"], record["exit_code"], len(record["attempts"])) == ("succeeded", 0, 2)
    killed_at = STAGES.index(KILL_AT_STAGE)
    for index, stage in enumerate(STAGES, start=1):
        hosts = json.loads((folder / "stages" / f"{index:02d}-{stage}.json").read_text())["hosts"]
        attempts = {r["attempt"] for r in hosts.values()}
        assert attempts == ({1} if index - 1 < killed_at else {2}), f"{stage}: attempts {attempts}"
        assert (folder / "artifacts" / f"{stage}-2").exists() == (index - 1 >= killed_at), stage
        assert all(r["result"] in ("ok", "changed", "none") for r in hosts.values()), (stage, hosts)
    shown = run(BIN / "clusterforge", "runs", "show", lab.bringup_run, "--ledger", LEDGER)
    assert shown.returncode == 0, explain(shown)
    assert "succeeded" in shown.stdout and "attempt 2" in shown.stdout, shown.stdout


def test_a_hand_made_change_is_drift_on_exactly_that_node_and_a_bringup_repairs_it(lab):
    # An edited configuration file (role base) and a stopped service (role exporters); not one
    # that validation checks (chrony): the tests after this one validate the nodes.
    sh(DRIFTED, f"echo SystemMaxUse=99G >> {JOURNALD_DROPIN}; systemctl stop {NODE_EXPORTER}")
    try:
        checked = bringup("--check", "--stages", "base,monitoring")
        assert checked.returncode == 3, explain(checked)
        _, stages = newest_run()
        drift = {
            (stage, host): {change["task"] for change in result["changed_tasks"]}
            for stage, record in stages.items()
            for host, result in record["hosts"].items()
            if result["changed_tasks"]
        }
        assert drift == {
            ("base", DRIFTED): {
                "Keep the journal on disk, size-capped",
                "Restart journald",  # the handler the changed drop-in would notify
            },
            ("monitoring", DRIFTED): {"Run node_exporter now and at boot"},
        }
        assert f"drift on {DRIFTED}:" in checked.stdout and "-SystemMaxUse=99G" in checked.stdout
        assert "SystemMaxUse=99G" in sh(DRIFTED, f"cat {JOURNALD_DROPIN}")  # --check changed nothing
    finally:
        repaired = bringup("--stages", "base,monitoring", "--limit", DRIFTED)
        assert repaired.returncode == 0, explain(repaired)
    assert "99G" not in sh(DRIFTED, f"cat {JOURNALD_DROPIN}")
    assert sh(DRIFTED, f"systemctl is-active {NODE_EXPORTER}").strip() == "active"


CLUSTER_WIDE = ["storage", "schedulers", "monitoring"]


def test_a_second_run_of_the_cluster_wide_stages_changes_nothing(lab):
    again = bringup("--stages", ",".join(CLUSTER_WIDE))
    assert again.returncode == 0, explain(again)
    record, stages = newest_run()
    assert record["stages"] == CLUSTER_WIDE
    changed = {
        (stage, host): [c["task"] for c in result["changed_tasks"]]
        for stage, stage_record in stages.items()
        for host, result in stage_record["hosts"].items()
        if result["result"] == "changed"
    }
    assert changed == {}
    took = ", ".join(f"{s} {r['duration_s']:.0f}" for s, r in stages.items())
    TIMINGS.append(f"converged cluster-wide stages (change nothing), per stage, s: {took}")
