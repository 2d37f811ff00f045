# ---- lib.sh: the part every ClusterForge test installer shares (tests only) ----
# build.py puts this after the package's header variables (PKG_*) and before the
# kind's part (driver.sh, firmware.sh, ...). Nothing here is Huawei's text.
#
# ASCEND_PKGS_ROOT (tests only, never set in production) prefixes every absolute
# path the installer reads or writes, so the unit tests run it in a fake root
# without being root; link targets and file contents keep the logical paths.
set -Eeuo pipefail
umask 022

R="${ASCEND_PKGS_ROOT:-}"
R="${R%/}"
SELF="${BASH_SOURCE[0]}"
CMDLINE=""
LOG_FILE=/var/log/ascend_seclog/ascend_install.log
ARCH_DIR=x86_64-linux
OP=""
OPT_QUIET=0
OPT_PATH=""
OPT_USER=""
OPT_GROUP=""
OPT_FOR_ALL=0
OPT_SCENE=""
OPT_CONFIG_FILE=""
OPT_SILENT=0
OPT_PREFIX=""

trap 'rc=$?; printf "[%s] ERROR: an installer step failed (line %s, exit %s)\n" "$PKG_FILE" "$LINENO" "$rc" >&2' ERR

# rp PATH: where the logical absolute PATH is on this machine (under ASCEND_PKGS_ROOT in tests).
rp() { printf '%s%s' "$R" "$1"; }

say() { printf '[%s] %s\n' "$PKG_FILE" "$*"; }

log_line() {
  local file dir
  file=$(rp "$LOG_FILE")
  dir=${file%/*}
  { mkdir -p "$dir" && chmod 750 "$dir" &&
    printf '%s %s [%s] %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$PKG_FILE" "$CMDLINE" "$*" >>"$file"; } \
    2>/dev/null || true
}

# die MESSAGE [FIX]: a refusal (exit 1), on stderr, also logged.
die() {
  trap - ERR
  printf '[%s] ERROR: %s\n' "$PKG_FILE" "$1" >&2
  if [ $# -ge 2 ]; then printf '[%s]   fix: %s\n' "$PKG_FILE" "$2" >&2; fi
  log_line "refused: $1"
  exit 1
}

# in_list WORD "W1 W2 ...": is WORD one of the words?
in_list() {
  local word
  for word in $2; do [ "$word" = "$1" ] && return 0; done
  return 1
}

# info_value FILE KEY: the value of KEY= in a key=value file (empty when absent).
info_value() {
  [ -f "$1" ] || return 0
  sed -n "s/^$2=//p" "$1" | head -n 1
}

# info_set FILE KEY=VALUE...: set those keys, keep the other lines.
info_set() {
  local file=$1 pair keys="" tmp
  shift
  for pair in "$@"; do keys="$keys ${pair%%=*}"; done
  mkdir -p "${file%/*}"
  tmp=$(mktemp "${file}.XXXXXX")
  if [ -f "$file" ]; then
    awk -v keys="$keys" 'BEGIN { n = split(keys, k, " "); for (i = 1; i <= n; i++) drop[k[i]] = 1 }
      { split($0, kv, "="); if (!(kv[1] in drop)) print }' "$file" >"$tmp"
  fi
  for pair in "$@"; do printf '%s\n' "$pair" >>"$tmp"; done
  chmod 644 "$tmp"
  mv -f "$tmp" "$file"
}

# info_drop FILE PREFIX: remove the keys starting with PREFIX; remove the file when nothing is left.
info_drop() {
  local file=$1 tmp
  [ -f "$file" ] || return 0
  tmp=$(mktemp "${file}.XXXXXX")
  awk -v prefix="$2" 'index($0, prefix) != 1' "$file" >"$tmp"
  if [ -s "$tmp" ]; then chmod 644 "$tmp"; mv -f "$tmp" "$file"; else rm -f "$tmp" "$file"; fi
}

user_exists() {
  if [ -n "$R" ]; then grep -q "^$1:" "$R/etc/passwd" 2>/dev/null; else getent passwd "$1" >/dev/null; fi
}

group_exists() {
  if [ -n "$R" ]; then grep -q "^$1:" "$R/etc/group" 2>/dev/null; else getent group "$1" >/dev/null; fi
}

need_root() {
  if [ -z "$R" ] && [ "$(id -u)" != 0 ]; then
    die "this package must be installed by root" "run it as root (sudo bash $PKG_FILE ...)"
  fi
}

# The payload: a base64 tar.gz after the marker line, its sha256 in the header.
payload_stream() { sed -n '/^__PAYLOAD_BELOW__$/,$p' "$SELF" | tail -n +2; }

verify_payload() {
  local sum
  sum=$(payload_stream | base64 -d 2>/dev/null | sha256sum | cut -d' ' -f1) || sum=""
  if [ "$sum" != "$PKG_PAYLOAD_SHA256" ]; then
    trap - ERR
    printf '[%s] ERROR: integrity check failed: the payload sha256 is %s, the package says %s\n' \
      "$PKG_FILE" "${sum:-unreadable}" "$PKG_PAYLOAD_SHA256" >&2
    printf '[%s]   fix: the file is damaged or incomplete: download it again and check its sha256\n' \
      "$PKG_FILE" >&2
    log_line "integrity check failed"
    exit 2
  fi
}

# extract_payload DIR: unpack the payload's tree into DIR.
extract_payload() {
  mkdir -p "$1"
  payload_stream | base64 -d | tar -xzf - -C "$1" --no-same-owner
}

check_path_option() {
  case "$1" in
    /*) ;;
    *) die "--install-path=$1 is not an absolute path" "give an absolute directory, e.g. --install-path=/usr/local/Ascend" ;;
  esac
  case "/$1/" in
    */../* | */./*) die "--install-path=$1 contains . or .. components" "give a plain absolute directory" ;;
  esac
}

usage() {
  printf 'Usage: bash %s [options]\n' "$PKG_FILE"
  printf 'ClusterForge test stand-in of %s %s (no Huawei software).\n' "$PKG_NAME" "$PKG_VERSION"
  printf 'Operations: %s\n' "$(for op in $KIND_OPS; do printf -- '--%s ' "$op"; done)"
  printf 'Options:    %s\n' "$(for o in $KIND_OPTIONS; do printf -- '--%s ' "$o"; done)"
}

# parse_options ARGS: one operation and the options this kind accepts, else a refusal.
parse_options() {
  local arg name
  for arg in "$@"; do
    case "$arg" in
      --help | -h) OP=help; return 0 ;;
      --version) OP=version; return 0 ;;
      --check | --full | --install | --upgrade | --uninstall | --run | --devel)
        name=${arg#--}
        if ! in_list "$name" "$KIND_OPS"; then
          case "$name" in
            devel) die "--devel is not an option of the firmware package" "install the firmware with --full" ;;
            install) die "--install is not an option of this package" "use --full (or --run/--devel)" ;;
            full) die "--full is not an option of this package" "use --install" ;;
            *) die "$arg is not an option of this package" "see bash $PKG_FILE --help" ;;
          esac
        fi
        if [ -n "$OP" ] && [ "$OP" != "$name" ]; then
          die "--$OP and $arg cannot be combined" "give exactly one operation"
        fi
        OP=$name
        ;;
      --quiet) name=quiet OPT_QUIET=1 ;;
      --nox11) name=nox11 ;;
      --install-for-all) name=install-for-all OPT_FOR_ALL=1 ;;
      --install-path=*) name=install-path OPT_PATH=${arg#*=} ;;
      --install-username=*) name=install-username OPT_USER=${arg#*=} ;;
      --install-usergroup=*) name=install-usergroup OPT_GROUP=${arg#*=} ;;
      --install-scene=*) name=install-scene OPT_SCENE=${arg#*=} ;;
      --config-file-path=*) name=config-file-path OPT_CONFIG_FILE=${arg#*=} ;;
      --install-path | --install-username | --install-usergroup | --install-scene | --config-file-path)
        die "$arg needs a value" "write it as $arg=VALUE"
        ;;
      *) die "unknown option $arg" "see bash $PKG_FILE --help" ;;
    esac
    case "$arg" in
      --check | --full | --install | --upgrade | --uninstall | --run | --devel) ;;
      *)
        if ! in_list "$name" "$KIND_OPTIONS"; then
          case "$name" in
            install-username | install-usergroup | install-for-all)
              die "$arg is not an option of this package" \
                "the firmware keeps the driver's running user: drop $arg (it belongs to the driver)"
              ;;
            *) die "$arg is not an option of this package" "see bash $PKG_FILE --help" ;;
          esac
        fi
        case "$arg" in
          *=) die "$arg has an empty value" "give a value after '='" ;;
        esac
        ;;
    esac
  done
}

# The combinations Huawei's installers refuse (vendor-packaging.md section 7).
check_combinations() {
  local user_opts=0
  if [ -n "$OPT_USER" ] || [ -n "$OPT_GROUP" ] || [ "$OPT_FOR_ALL" = 1 ]; then user_opts=1; fi
  if [ -z "$OP" ]; then
    die "no operation given" "give one of: $(for op in $KIND_OPS; do printf -- '--%s ' "$op"; done)"
  fi
  if [ "$OP" = upgrade ] && [ "$user_opts" = 1 ]; then
    die "--upgrade cannot be combined with --install-username, --install-usergroup or --install-for-all" \
      "drop the user options: an upgrade keeps the installed running user"
  fi
  if [ "$OP" = uninstall ] && [ "$user_opts" = 1 ]; then
    die "--uninstall cannot be combined with the user options" "drop --install-username/--install-usergroup/--install-for-all"
  fi
  if [ "$OP" = uninstall ] && [ "$OPT_QUIET" = 1 ] && in_list "$PKG_KIND" "driver firmware"; then
    die "--uninstall cannot be combined with --quiet for the driver and firmware" "run --uninstall without --quiet"
  fi
  if { [ -n "$OPT_USER" ] && [ -z "$OPT_GROUP" ]; } || { [ -z "$OPT_USER" ] && [ -n "$OPT_GROUP" ]; }; then
    die "--install-username and --install-usergroup go together" "give both, e.g. --install-username=HwHiAiUser --install-usergroup=HwHiAiUser"
  fi
  if [ "$OPT_USER" = root ] && [ "$OPT_FOR_ALL" != 1 ]; then
    die "root as the running user needs --install-for-all" "add --install-for-all (or install with HwHiAiUser)"
  fi
  if [ -n "$OPT_PATH" ]; then check_path_option "$OPT_PATH"; fi
}

# accept_eula: --quiet accepts the licence; without it the answer is read from stdin.
accept_eula() {
  local answer=""
  [ "$OPT_QUIET" = 1 ] && return 0
  printf '[%s] Do you accept the licence of this (test stand-in) package? [y/n] ' "$PKG_FILE"
  read -r answer || true
  case "$answer" in
    y | Y | yes | YES) ;;
    *) die "the licence was not accepted" "answer y, or use --quiet to accept it non-interactively" ;;
  esac
}

# default_prefix: /usr/local/Ascend for root (and in tests), ~/Ascend for another user.
default_prefix() {
  if [ -n "$R" ] || [ "$(id -u)" = 0 ]; then printf '/usr/local/Ascend'; else printf '%s/Ascend' "$HOME"; fi
}

huawei_main() {
  CMDLINE="$*"
  parse_options "$@"
  case "$OP" in
    help) usage; return 0 ;;
    version) printf '%s\n' "$PKG_VERSION"; return 0 ;;
  esac
  verify_payload
  if [ "$OP" = check ]; then
    say "Verifying archive integrity... OK (sha256 $PKG_PAYLOAD_SHA256)"
    log_line "check passed"
    return 0
  fi
  check_combinations
  kind_main
}
