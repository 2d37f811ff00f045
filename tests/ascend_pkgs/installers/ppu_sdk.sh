# ---- ppu_sdk.sh: the PPU SDK package (PPU_SDK_<ver>_linux-x86_64.run) ----
# No public installer contract exists; this one is ClusterForge's assumption (README.md):
#   bash PPU_SDK_<ver>_linux-x86_64.run --silent --prefix=<dir>
# writes <prefix>/version.txt, <prefix>/lib64/libhgml.so.<ver> (+ libhgml.so) and
# <prefix>/ppu-smi/bin/ppu-smi, and the test-only record /var/lib/hwreplay-pkgs/ppu-sdk.json
# ({"version", "prefix"}: the hardware replay's ppu-smi reports that SDK version).
# An install over another version replaces it (no refusal),
# so one install command serves fresh installs and upgrades. --check verifies the payload.
KIND_OPS="check"
KIND_OPTIONS="silent prefix"
DEFAULT_PPU_PREFIX=/usr/local/PPU_SDK
LOG_FILE=/var/log/ppu_sdk/install.log
PPU_RECORD=/var/lib/hwreplay-pkgs/ppu-sdk.json

ppu_usage() {
  printf 'Usage: bash %s --silent [--prefix=DIR] | --check | --version | --help\n' "$PKG_FILE"
  printf 'ClusterForge test stand-in of the PPU SDK %s (no vendor software; invented contract).\n' "$PKG_VERSION"
  printf 'Default prefix: %s\n' "$DEFAULT_PPU_PREFIX"
}

ppu_main() {
  local arg check=0 prefix real old record
  CMDLINE="$*"
  for arg in "$@"; do
    case "$arg" in
      --help | -h) ppu_usage; return 0 ;;
      --version) printf '%s\n' "$PKG_VERSION"; return 0 ;;
      --check) check=1 ;;
      --silent) OPT_SILENT=1 ;;
      --prefix=?*) OPT_PREFIX=${arg#*=} ;;
      --prefix | --prefix=) die "$arg needs a directory" "write it as --prefix=/DIR" ;;
      *) die "unknown option $arg" "see bash $PKG_FILE --help" ;;
    esac
  done
  verify_payload
  if [ "$check" = 1 ]; then
    say "Verifying archive integrity... OK (sha256 $PKG_PAYLOAD_SHA256)"
    return 0
  fi
  if [ "$OPT_SILENT" != 1 ]; then
    die "interactive installation is not supported by this package" "run it with --silent [--prefix=DIR]"
  fi
  prefix=${OPT_PREFIX:-$DEFAULT_PPU_PREFIX}
  case "$prefix" in
    /*) ;;
    *) die "--prefix=$prefix is not an absolute path" "give an absolute directory" ;;
  esac
  real=$(rp "$prefix")
  old=$(cat "$real/version.txt" 2>/dev/null || true)
  rm -rf "$real/lib64" "$real/ppu-smi" "$real/version.txt"
  extract_payload "$real"
  ln -sfn "libhgml.so.$PKG_VERSION" "$real/lib64/libhgml.so"
  printf '%s\n' "$PKG_VERSION" >"$real/version.txt"
  record=$(rp "$PPU_RECORD")
  mkdir -p "${record%/*}"
  printf '{"version": "%s", "prefix": "%s"}\n' "$PKG_VERSION" "$prefix" >"$record.tmp"
  mv -f "$record.tmp" "$record"
  if [ -n "$old" ] && [ "$old" != "$PKG_VERSION" ]; then
    say "PPU SDK $old replaced by $PKG_VERSION in $prefix"
  else
    say "PPU SDK $PKG_VERSION installed in $prefix"
  fi
  log_line "installed PPU SDK $PKG_VERSION in $prefix"
}
