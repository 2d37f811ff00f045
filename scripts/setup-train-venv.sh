#!/usr/bin/env bash
# The lab's training environment (docs/design.md, "Framework readiness"): a virtual environment
# of Debian's own /usr/bin/python3 with a CPU-only PyTorch, built once on this host and cached
# under ~/.cache/clusterforge/train-venv/torch-<version>/, keyed by the torch version: outside the
# checkout, so a fresh clone on the same machine (CI's) reuses it. `lab up`
# bind-mounts it read-only on the lab's accelerator nodes at /opt/train/venv, as a site puts its
# training environment on shared storage; the lab's inventory names it in `framework_env`.
#
# Lab nodes are the host's Debian 12 (the node image), so the venv's python (a link to
# /usr/bin/python3) is the node's own there. The wheel comes from pip's find-links (the CPU wheel
# of /opt/wheels on CI), its dependencies from the package index: the host is online, the lab's
# nodes are not.
#
#   scripts/setup-train-venv.sh          build (no-op when the cached venv imports torch)
#   scripts/setup-train-venv.sh --path   print the venv's folder and build nothing
#
# Env: CF_TRAIN_TORCH_VERSION (default 2.13.0: the lab's BOM pytorch_version,
#      cli/clusterforge/lab/inventory.py), CF_TRAIN_VENV_CACHE (default
#      ~/.cache/clusterforge/train-venv; cli/clusterforge/lab/train_env.py reads the same).
set -euo pipefail
VERSION=${CF_TRAIN_TORCH_VERSION:-2.13.0}
DEST=${CF_TRAIN_VENV_CACHE:-$HOME/.cache/clusterforge/train-venv}/torch-$VERSION
PYTHON=/usr/bin/python3
STAMP=$DEST/.clusterforge-train-venv

if [[ ${1:-} == --path ]]; then
  echo "$DEST"
  exit 0
fi
die() { echo "setup-train-venv: $*" >&2; exit 4; }

[[ -x $PYTHON ]] || die "$PYTHON is missing (fix: apt-get install python3 python3-venv)"
if [[ -f $STAMP && $(cat "$STAMP") == "torch==$VERSION" ]] \
  && "$DEST/bin/python" -c 'import torch' >/dev/null 2>&1; then
  echo "training venv $DEST is up to date (torch $VERSION)"
  exit 0
fi
start=$SECONDS
rm -rf "$DEST"
mkdir -p "$(dirname "$DEST")"
"$PYTHON" -m venv "$DEST" \
  || die "$PYTHON -m venv failed (fix: apt-get install python3-venv)"
"$DEST/bin/pip" install --quiet --no-input "torch==$VERSION" \
  || { rm -rf "$DEST"; die "pip could not install torch==$VERSION (fix: put its wheel into pip's find-links, or set CF_TRAIN_TORCH_VERSION)"; }
reported=$("$DEST/bin/python" -c 'import torch; print(torch.__version__)') \
  || { rm -rf "$DEST"; die "torch does not import in $DEST"; }
echo "torch==$VERSION" > "$STAMP"
echo "training venv $DEST ready: torch $reported, built in $((SECONDS - start)) s"
