#!/usr/bin/env bash
# The package cache of lab and Molecule nodes: apt-cacher-ng on this host, port
# 3142 (tests and the lab only; production nodes use the site's mirror).
#
# Nodes find it themselves: the node image's apt Proxy-Auto-Detect helper
# (images/node/cf-apt-proxy) asks for the Debian mirror through port 3142 of
# the node's default gateway, which is this host on every podman network, and
# goes direct when nothing answers there. So a node installs each package from
# the mirror once per host, not once per node and run.
#
#   scripts/apt-cache.sh start    start it unless it answers already (idempotent), then warm it
#   scripts/apt-cache.sh status   exit 0 when it answers
#   scripts/apt-cache.sh stop
#
# Known problem, why setup-host.sh starts it only with CF_APT_CACHE=1:
# apt-cacher-ng 3.7 can fail one of two refreshes of the same InRelease started
# in the same second ("Failure to move file ... out of the way"), and the apt
# that asked then hangs; the six nodes of a lab update their lists at once.
# apt asks for index files with max-age=0, so neither the warm-up below nor
# FreshIndexMaxAge keeps the nodes from refreshing (measured: every node's
# request went upstream). They only make the first fetch of a run a single one.
#
# Env: DEBIAN_MIRROR (the upstream it fetches from, default deb.debian.org),
#      DEBIAN_SECURITY_MIRROR (default deb.debian.org/debian-security),
#      CF_APT_CACHE_DIR (default /var/cache/apt-cacher-ng; CI may keep it between runs).
# Started directly when the host has no systemd (CI machines and containers);
# under systemd the packaged unit runs it and `start` only checks it answers.
set -euo pipefail
PORT=3142
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
DEBIAN_SECURITY_MIRROR=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
SUITE=bookworm
FRESH_INDEX_S=3600
CACHE_DIR=${CF_APT_CACHE_DIR:-/var/cache/apt-cacher-ng}
RUN_DIR=/run/apt-cacher-ng
PIDFILE=$RUN_DIR/clusterforge.pid

die() { local code=$1; shift; echo "apt-cache: $*" >&2; exit "$code"; }
answers() { timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$PORT" 2>/dev/null; }

warm() {  # fetch each suite's InRelease through the cache, one at a time
  local url
  for url in "${DEBIAN_MIRROR%/}/dists/$SUITE/InRelease" "${DEBIAN_MIRROR%/}/dists/$SUITE-updates/InRelease" \
    "${DEBIAN_SECURITY_MIRROR%/}/dists/$SUITE-security/InRelease"; do
    curl -sf -o /dev/null --max-time 60 -x "http://127.0.0.1:$PORT" "$url" \
      || die 1 "the package cache could not fetch $url (log: /var/log/apt-cacher-ng/apt-cacher.err)"
  done
  echo "package cache warm: the $SUITE index files are cached"
}

start() {
  if answers; then echo "package cache answers on port $PORT"; warm; return 0; fi
  command -v apt-cacher-ng >/dev/null || die 4 "apt-cacher-ng is not installed (fix: run scripts/setup-host.sh as root)"
  [[ $(id -u) == 0 ]] || die 4 "starting apt-cacher-ng needs root (fix: run as root)"
  install -d -o apt-cacher-ng -g apt-cacher-ng "$RUN_DIR" "$CACHE_DIR" /var/log/apt-cacher-ng
  # The packaged backend of the Debian remap is ftp.debian.org; use the mirror the
  # nodes are built from instead (it is the one this machine can reach).
  runuser -u apt-cacher-ng -- /usr/sbin/apt-cacher-ng -c /etc/apt-cacher-ng ForeGround=0 \
    "pidfile=$PIDFILE" "SocketPath=$RUN_DIR/socket" "CacheDir=$CACHE_DIR" "FreshIndexMaxAge=$FRESH_INDEX_S" \
    "Remap-debrep=file:deb_mirror*.gz /debian ; ${DEBIAN_MIRROR%/}/"
  for _ in $(seq 50); do
    answers && { echo "package cache started on port $PORT (cache: $CACHE_DIR)"; warm; return 0; }
    sleep 0.1
  done
  die 1 "apt-cacher-ng did not answer on port $PORT (log: /var/log/apt-cacher-ng/apt-cacher.err)"
}

case "${1:-}" in
  start) start ;;
  status) answers && echo "package cache answers on port $PORT" || die 1 "no package cache on port $PORT (fix: scripts/apt-cache.sh start)" ;;
  stop) [[ -f $PIDFILE ]] && kill "$(cat "$PIDFILE")" 2>/dev/null; rm -f "$PIDFILE"; echo "package cache stopped" ;;
  *) die 2 "usage: scripts/apt-cache.sh start|status|stop" ;;
esac
