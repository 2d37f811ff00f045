#!/usr/bin/env bash
# Put Prometheus' checkers, promtool and amtool, into the virtual environment's
# bin directory (.venv/bin), for the rule and configuration tests
# (tests/promtool, tests/unit/prometheus) and the prometheus role's render test.
#
# They come from the distribution's packages `prometheus` (promtool) and
# `prometheus-alertmanager` (amtool), fetched with `apt-get download` into a
# cache directory and unpacked there with `dpkg-deb -x`: nothing is installed on
# this host (installing the packages would start the daemons here). Needs no root.
# Idempotent: skips when the wanted versions are already in place.
#
#   scripts/setup-tools.sh            fetch/refresh (no-op when up to date)
#   scripts/setup-tools.sh --check    exit 0 when up to date, 1 otherwise (changes nothing)
#
# Env: CF_VENV (default $ROOT/.venv), CF_TOOLS_CACHE (default $ROOT/.cache/setup-tools),
#      CF_PROMETHEUS_VERSION / CF_ALERTMANAGER_VERSION (a Debian package version to pin;
#      default: apt's candidate, e.g. 2.42.0+ds-5+deb12u1 and 0.25.0-1+b4 on Debian 12).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${CF_VENV:-$ROOT/.venv}
CACHE=${CF_TOOLS_CACHE:-$ROOT/.cache/setup-tools}
BIN=$VENV/bin
CHECK_ONLY=0
[[ ${1:-} == --check ]] && CHECK_ONLY=1

die() { echo "setup-tools: $*" >&2; exit 4; }

command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null \
  || die "apt-get and dpkg-deb are missing: this script needs a Debian or Ubuntu host (fix: run it on one, or put promtool and amtool into $BIN yourself)"
[[ -d $BIN ]] || die "$BIN does not exist (fix: run scripts/setup-venv.sh first, or set CF_VENV)"

# The version apt would fetch: the pin, else the candidate of apt's lists.
wanted_version() {  # wanted_version PACKAGE PIN
  if [[ -n $2 ]]; then echo "$2"; return; fi
  apt-cache policy "$1" 2>/dev/null | awk '/Candidate:/ {print $2; exit}'
}

# TOOL PACKAGE PIN-VARIABLE PIN: one line per tool.
TOOLS=(
  "promtool prometheus CF_PROMETHEUS_VERSION ${CF_PROMETHEUS_VERSION:-}"
  "amtool prometheus-alertmanager CF_ALERTMANAGER_VERSION ${CF_ALERTMANAGER_VERSION:-}"
)

status=0
for entry in "${TOOLS[@]}"; do
  read -r tool pkg pinvar pin <<<"$entry"
  version=$(wanted_version "$pkg" "$pin")
  if [[ -z $version || $version == "(none)" ]]; then
    die "apt knows no package $pkg (fix: sudo apt-get update; on Debian/Ubuntu the package is in main/universe, check /etc/apt/sources.list)"
  fi
  stamp=$BIN/.$tool.version
  if [[ -x $BIN/$tool && -f $stamp && $(cat "$stamp") == "$version" ]] && "$BIN/$tool" --version >/dev/null 2>&1; then
    echo "$tool $version is up to date in $BIN"
    continue
  fi
  if ((CHECK_ONLY)); then
    echo "$tool: $BIN/$tool is not $pkg $version"
    status=1
    continue
  fi
  dir=$CACHE/$pkg/$version
  mkdir -p "$dir"
  deb=$(find "$dir" -maxdepth 1 -name "${pkg}_*.deb" -print -quit)
  if [[ -z $deb ]]; then
    # apt-get download writes into the current directory; it needs no root.
    if ! (cd "$dir" && apt-get download -q "$pkg=$version" >"$dir/download.log" 2>&1); then
      sed 's/^/  /' "$dir/download.log" >&2
      die "apt-get download $pkg=$version failed (fix: sudo apt-get update, check that the Debian mirror in /etc/apt/sources.list answers, or pin an available version with $pinvar)"
    fi
    deb=$(find "$dir" -maxdepth 1 -name "${pkg}_*.deb" -print -quit)
    [[ -n $deb ]] || die "apt-get download $pkg=$version wrote no .deb into $dir"
  fi
  rm -rf "$dir/root"
  dpkg-deb -x "$deb" "$dir/root"
  [[ -x $dir/root/usr/bin/$tool ]] || die "$deb has no usr/bin/$tool (the package layout changed; fix: update TOOLS in $0)"
  # Copy, not link: the cache may be cleaned while the venv stays.
  install -m 0755 "$dir/root/usr/bin/$tool" "$BIN/$tool.tmp"
  mv -f "$BIN/$tool.tmp" "$BIN/$tool"
  "$BIN/$tool" --version >/dev/null 2>&1 || die "$BIN/$tool does not run on this host (from $deb)"
  echo "$version" >"$stamp"
  echo "$tool from $pkg $version installed into $BIN"
done
exit $status
