#!/usr/bin/env bash
# Create or refresh the controller's virtual environment (.venv) with pinned
# versions, and install ClusterForge into it in editable mode.
# Skips the work when pyproject.toml and the constraints are unchanged.
#   scripts/setup-venv.sh             create/refresh
#   scripts/setup-venv.sh --refreeze  upgrade within pyproject's ranges and rewrite the constraints
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${CF_VENV:-$ROOT/.venv}
PYTHON=${PYTHON:-python3}
CONSTRAINTS=$ROOT/requirements/constraints.txt
STAMP=$VENV/.clusterforge-stamp

"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
  || { echo "setup-venv: $PYTHON is older than 3.11 (fix: set PYTHON=python3.11 or newer)" >&2; exit 4; }
# The checkout is the Ansible collection clusterforge.cluster: ansible.cfg finds
# it through this git-ignored link (collections_path = .collections:...).
mkdir -p "$ROOT/.collections/ansible_collections/clusterforge"
ln -sfn ../../.. "$ROOT/.collections/ansible_collections/clusterforge/cluster"
want=$(cat "$ROOT/pyproject.toml" "$CONSTRAINTS" | sha256sum | cut -c1-16)
if [[ ${1:-} != --refreeze && -f $STAMP && $(cat "$STAMP") == "$want" && -x $VENV/bin/clusterforge ]]; then
  echo "venv $VENV is up to date"; exit 0
fi
[[ -x $VENV/bin/python ]] || "$PYTHON" -m venv "$VENV"
"$VENV/bin/pip" install -q --upgrade pip
if [[ ${1:-} == --refreeze ]]; then
  "$VENV/bin/pip" install -q --upgrade -e "$ROOT[dev]"
  { sed -n '1,2p' "$CONSTRAINTS"; "$VENV/bin/pip" freeze --exclude-editable | grep -v '^clusterforge'; } > "$CONSTRAINTS.new"
  mv "$CONSTRAINTS.new" "$CONSTRAINTS"
  want=$(cat "$ROOT/pyproject.toml" "$CONSTRAINTS" | sha256sum | cut -c1-16)
else
  "$VENV/bin/pip" install -q -c "$CONSTRAINTS" -e "$ROOT[dev]"
fi
echo "$want" > "$STAMP"
echo "venv $VENV ready: $("$VENV/bin/ansible" --version | head -1)"
