#!/usr/bin/env bash
# Build the ClusterForge lab/test node image (Debian 12, systemd as PID 1, sshd).
#
# The image is rebuilt only when its inputs change: the inputs (this script's
# recipe version, the Containerfile, suite and mirrors) are hashed and the hash
# is stored as an image label. A built image is saved to a cache folder and
# loaded from there next time (CI keeps that folder between runs).
#
#   scripts/build-node-image.sh              build or reuse (cache, then local image)
#   scripts/build-node-image.sh --rebuild    ignore local image and cache
#   scripts/build-node-image.sh --print-hash print the input hash and exit
#
# Env: CF_IMAGE_CACHE (default ~/.cache/clusterforge/images), CF_NODE_IMAGE,
#      DEBIAN_MIRROR, DEBIAN_SECURITY_MIRROR (air-gapped sites point these at their mirror).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RECIPE_VERSION=2          # bump when the debootstrap step below changes
SUITE=bookworm
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
DEBIAN_SECURITY_MIRROR=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
NODE_IMAGE=${CF_NODE_IMAGE:-localhost/clusterforge-node:$SUITE}
BASE_IMAGE=localhost/clusterforge-debian-base:$SUITE
CACHE_DIR=${CF_IMAGE_CACHE:-$HOME/.cache/clusterforge/images}
LABEL=org.clusterforge.inputs
export CONTAINERS_CONF=${CONTAINERS_CONF:-$HERE/images/node/containers.conf}

# Exit codes as the CLI's: 1 the build failed, 2 bad option, 4 a host tool is missing.
die() { local code=$1; shift; echo "build-node-image: $*" >&2; exit "$code"; }
command -v podman >/dev/null || die 4 "podman is not installed (fix: run scripts/setup-host.sh as root)"
command -v debootstrap >/dev/null || die 4 "debootstrap is not installed (fix: run scripts/setup-host.sh as root)"

input_hash() {
  { echo "recipe=$RECIPE_VERSION suite=$SUITE mirror=$DEBIAN_MIRROR security=$DEBIAN_SECURITY_MIRROR"
    cat "$HERE/images/node/Containerfile" "$HERE/images/node/cf-apt-proxy"; } | sha256sum | cut -c1-16
}
HASH=$(input_hash)
# The debootstrap base depends on the recipe, suite and mirror only.
BASE_HASH=$(echo "recipe=$RECIPE_VERSION suite=$SUITE mirror=$DEBIAN_MIRROR" | sha256sum | cut -c1-16)
label_of() { podman image inspect --format "{{ index .Labels \"$LABEL\" }}" "$1" 2>/dev/null || true; }

REBUILD=0
case "${1:-}" in
  --print-hash) echo "$HASH"; exit 0 ;;
  --rebuild) REBUILD=1 ;;
  "") ;;
  *) die 2 "unknown option '$1' (use --rebuild or --print-hash)" ;;
esac

CACHE_TAR=$CACHE_DIR/clusterforge-node-$HASH.tar
if [[ $REBUILD == 0 ]]; then
  if [[ $(label_of "$NODE_IMAGE") == "$HASH" ]]; then
    echo "node image $NODE_IMAGE is up to date (inputs $HASH)"; exit 0
  fi
  if [[ -f $CACHE_TAR ]]; then
    echo "loading node image from cache $CACHE_TAR"
    podman load -q -i "$CACHE_TAR" >/dev/null
    [[ $(label_of "$NODE_IMAGE") == "$HASH" ]] && { echo "node image $NODE_IMAGE loaded (inputs $HASH)"; exit 0; }
    echo "cached image does not carry inputs $HASH; rebuilding" >&2
  fi
fi

t0=$SECONDS
if [[ $REBUILD == 1 || $(label_of "$BASE_IMAGE") != "$BASE_HASH" ]]; then
  rootfs=$(mktemp -d /var/tmp/cf-rootfs.XXXXXX)
  trap 'rm -rf "$rootfs"' EXIT
  echo "debootstrap $SUITE from $DEBIAN_MIRROR (a few minutes)"
  debootstrap --variant=minbase "$SUITE" "$rootfs" "$DEBIAN_MIRROR" > "$rootfs.log" 2>&1 \
    || { tail -20 "$rootfs.log"; die 1 "debootstrap failed (log: $rootfs.log)"; }
  rm -f "$rootfs.log"
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  tar -C "$rootfs" --numeric-owner -c . \
    | podman import --change 'CMD ["/bin/bash"]' --change "LABEL $LABEL=$BASE_HASH" - "$BASE_IMAGE" >/dev/null 2>&1
fi
echo "building $NODE_IMAGE"
podman build -q --label "$LABEL=$HASH" --build-arg "BASE_IMAGE=$BASE_IMAGE" \
  --build-arg "DEBIAN_MIRROR=$DEBIAN_MIRROR" --build-arg "DEBIAN_SECURITY_MIRROR=$DEBIAN_SECURITY_MIRROR" \
  -t "$NODE_IMAGE" "$HERE/images/node" >/dev/null
podman image prune -f >/dev/null
mkdir -p "$CACHE_DIR"
rm -f "$CACHE_DIR"/clusterforge-node-*.tar
podman save -q -o "$CACHE_TAR" "$NODE_IMAGE"
echo "node image $NODE_IMAGE built in $((SECONDS - t0))s (inputs $HASH), cached at $CACHE_TAR"
