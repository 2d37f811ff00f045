#!/usr/bin/env bash
# Install the host packages ClusterForge's lab and tests need (Debian/Ubuntu, as root).
# Idempotent: installs only what is missing.
#   podman + runc   lab and Molecule nodes (runc: crun refuses cgroup v1 hybrid hosts)
#   debootstrap     builds the node image without any container registry
#   openssh-client  Ansible and testinfra reach nodes over real SSH
#   python3-venv    the controller's virtual environment
#   util-linux      losetup: lab storage nodes get a sparse loop disk for Ceph OSDs
#   apt-cacher-ng   the package cache of lab and Molecule nodes (scripts/apt-cache.sh)
#   curl            warms that cache
# Then, with CF_APT_CACHE=1, starts the package cache.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PACKAGES=(podman runc debootstrap openssh-client python3-venv uidmap slirp4netns util-linux apt-cacher-ng curl)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "host packages present"
else
  if [[ $(id -u) != 0 ]]; then
    echo "setup-host: missing packages: ${missing[*]} (fix: run this script as root, or apt-get install them)" >&2
    exit 4
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
  echo "installed: ${missing[*]}"
fi
# The package cache is opt-in (CF_APT_CACHE=1): apt-cacher-ng 3.7 hangs an apt when
# several nodes refresh one index file at once (scripts/apt-cache.sh), as a lab does.
if [[ ${CF_APT_CACHE:-0} == 1 ]]; then
  "$HERE/apt-cache.sh" start
fi
