#!/usr/bin/env bash
# ClusterForge's main job on one machine: set everything up, bring up a local
# lab cluster of podman nodes, prepare them with the site playbook, and run the
# cluster acceptance validation with its reports.
#
#   scripts/demo.sh              the whole job (the lab stays up afterwards)
#   .venv/bin/clusterforge lab down   removes the lab again
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
export CONTAINERS_CONF=${CONTAINERS_CONF:-$ROOT/images/node/containers.conf}
export PATH=$ROOT/.venv/bin:$PATH
step() { printf '\n===== %s\n' "$*"; }
T0=$SECONDS

step "set-up: host packages, Python environment, node image"
scripts/setup-host.sh
scripts/setup-venv.sh
scripts/build-node-image.sh

step "lab: bring up the local cluster (podman nodes reachable over SSH)"
clusterforge lab up
clusterforge lab status
# The lab's secrets (storage: cephx and RGW keys, the Redis password) are Vault
# values of its inventory; its password file lives in the lab's state.
export ANSIBLE_VAULT_PASSWORD_FILE=$ROOT/.cache/lab/lab/vault-password

step "bring-up: site playbook on the lab"
ansible-playbook -i inventories/lab playbooks/site.yml

step "validation: cluster acceptance report"
rc=0
clusterforge validate -i inventories/lab --out reports/lab || rc=$?

step "monitoring: what Prometheus on the control node sees (targets, alerts firing)"
podman exec -i cflab-lab-ctl-01 python3 - <<'PY' || echo "Prometheus did not answer on lab-ctl-01:9090"
import json, time, urllib.request
def get(path):
    return json.load(urllib.request.urlopen("http://127.0.0.1:9090" + path, timeout=10))["data"]
# Prometheus started at the end of site.yml: wait (up to 60 s) until each target was scraped once.
deadline = time.monotonic() + 60
targets = get("/api/v1/targets?state=active")["activeTargets"]
while any(t["health"] == "unknown" for t in targets) and time.monotonic() < deadline:
    time.sleep(3)
    targets = get("/api/v1/targets?state=active")["activeTargets"]
time.sleep(20)  # one rule evaluation after the first scrapes
jobs = {}
for t in targets:
    up, total = jobs.get(t["labels"]["job"], (0, 0))
    jobs[t["labels"]["job"]] = (up + (t["health"] == "up"), total + 1)
print("targets up:", ", ".join(f"{job} {up}/{total}" for job, (up, total) in sorted(jobs.items())))
firing = [a for a in get("/api/v1/alerts")["alerts"] if a["state"] == "firing"]
for a in firing:
    print(f"  {a['labels']['severity']:8} {a['labels']['alertname']:24} {a['labels'].get('node', '')}")
print(f"alerts firing: {len(firing)}")
PY
echo
echo "reports: $ROOT/reports/lab (report.json, junit.xml, report.html, clusterforge.prom)"
echo "lab left running; remove it with: .venv/bin/clusterforge lab down"
echo "main job took $((SECONDS - T0))s"
exit $rc
