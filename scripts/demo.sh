#!/usr/bin/env bash
# ClusterForge's main job on one machine: set everything up, then `clusterforge demo`:
# bring up a local lab cluster of podman nodes, take it through every bring-up stage
# (preflight, base, fabric, accelerators, storage, schedulers, monitoring) to the
# validation report, and say where to look (the run ledger, the reports, Prometheus).
#
#   scripts/demo.sh                     the whole job (the lab stays up afterwards)
#   .venv/bin/clusterforge lab down     removes the lab again
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
export CONTAINERS_CONF=${CONTAINERS_CONF:-$ROOT/images/node/containers.conf}
export PATH=$ROOT/.venv/bin:$PATH
T0=$SECONDS

printf '\n===== set-up: host packages, Python environment, node image\n'
scripts/setup-host.sh
scripts/setup-venv.sh
scripts/build-node-image.sh

printf '\n===== clusterforge demo: lab up, bring-up through every stage, validation report\n'
rc=0
clusterforge demo || rc=$?
echo "main job took $((SECONDS - T0))s (exit $rc)"
exit $rc
