#!/usr/bin/env bash
# ClusterForge's test command: does all set-up on a fresh Debian/Ubuntu machine
# (host packages, virtual environment, promtool/amtool, node image), then runs
# every gate, side by side where their needs allow:
#   lint      yamllint, ruff, ansible-lint (production profile)
#   unit      pytest: unit tests and conformance tests on real captured outputs
#   molecule  every role's Molecule scenario (real Debian nodes in podman)
#   lab       integration tests on a lab cluster (clusterforge lab up ... down)
# and prints how long each part took against its budget (also as JSON).
# The parts, their needs and budgets are declared once, in scripts/testrun.py.
#
#   scripts/test.sh                    everything (CI runs this: .ci/run)
#   scripts/test.sh lint unit          only these parts (their set-up always runs)
#   scripts/test.sh molecule:slurm     one role's scenarios (molecule:storage: a stack's)
#   scripts/test.sh lab:storage        the lab and one module of it
#   scripts/test.sh --list             the plan
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
command -v python3 >/dev/null || { echo "error: python3 is missing\n  fix: apt-get install python3" >&2; exit 4; }
exec python3 -u scripts/testrun.py "$@"
