# ---- cann.sh: what the CANN packages share (toolkit, operator package, NNAL) ----
# Header variable PKG_LAYOUT: "legacy" (CANN < 8.5: <prefix>/ascend-toolkit/<ver>/, with
# ascend-toolkit/latest -> <ver> and ascend-toolkit/set_env.sh) or "cann" (8.5 on:
# <prefix>/cann-<ver>/, with <prefix>/cann -> cann-<ver> and set_env.sh inside the release).
KIND_OPS="check install full run devel upgrade uninstall"
KIND_OPTIONS="quiet nox11 install-path install-username install-usergroup install-for-all"
TOOLKIT_INFO=ascend_toolkit_install.info
OPS_INFO=ascend_ops_install.info

# release_dir PREFIX LAYOUT VERSION: the logical directory of one toolkit release.
release_dir() {
  if [ "$2" = cann ]; then printf '%s/cann-%s' "$1" "$3"; else printf '%s/ascend-toolkit/%s' "$1" "$3"; fi
}

# toolkit_home PREFIX LAYOUT: the toolkit's home (ASCEND_TOOLKIT_HOME of its set_env.sh).
toolkit_home() {
  if [ "$2" = cann ]; then printf '%s/cann' "$1"; else printf '%s/ascend-toolkit/latest' "$1"; fi
}

# find_toolkit PREFIX: sets INST_VERSION, INST_LAYOUT and INST_HOME (all empty when none is installed).
find_toolkit() {
  local layout home version
  INST_VERSION="" INST_LAYOUT="" INST_HOME=""
  for layout in cann legacy; do
    home=$(toolkit_home "$1" "$layout")
    version=$(info_value "$(rp "$home/$ARCH_DIR/$TOOLKIT_INFO")" version)
    if [ -n "$version" ]; then
      INST_VERSION=$version INST_LAYOUT=$layout INST_HOME=$home
      return 0
    fi
  done
}

# remove_release PREFIX LAYOUT VERSION: what a release's uninstall script does (also copied into it).
remove_release() {
  local prefix=$1 layout=$2 version=$3 left
  if [ "$layout" = cann ]; then
    rm -rf "$(rp "$prefix/cann-$version")"
    if [ "$(readlink "$(rp "$prefix/cann")" 2>/dev/null || true)" = "cann-$version" ]; then
      rm -f "$(rp "$prefix/cann")"
    fi
  else
    rm -rf "$(rp "$prefix/ascend-toolkit/$version")"
    if [ "$(readlink "$(rp "$prefix/ascend-toolkit/latest")" 2>/dev/null || true)" = "$version" ]; then
      rm -f "$(rp "$prefix/ascend-toolkit/latest")" "$(rp "$prefix/ascend-toolkit/set_env.sh")"
    fi
    left=$(ls -A "$(rp "$prefix/ascend-toolkit")" 2>/dev/null || true)
    if [ -z "$left" ]; then rm -rf "$(rp "$prefix/ascend-toolkit")"; fi
  fi
}

write_uninstall_script() {
  local file=$1 prefix=$2 layout=$3 version=$4
  mkdir -p "${file%/*}"
  {
    printf '#!/bin/bash\n'
    printf '# Uninstalls CANN toolkit %s from %s (ClusterForge test stand-in).\n' "$version" "$prefix"
    printf '# ASCEND_PKGS_ROOT (tests only) prefixes every path, as for the installers.\n'
    printf 'set -eu\nR="${ASCEND_PKGS_ROOT:-}"\nR="${R%%/}"\n'
    declare -f rp remove_release
    printf 'remove_release %q %q %q\n' "$prefix" "$layout" "$version"
    printf 'printf "CANN toolkit %%s uninstalled from %%s\\n" %q %q\n' "$version" "$prefix"
  } >"$file"
  chmod 755 "$file"
}

write_toolkit_set_env() {
  local file=$1 home=$2
  cat >"$file" <<EOF
# Environment of CANN toolkit $PKG_VERSION (ClusterForge test stand-in): source it.
export ASCEND_TOOLKIT_HOME=$home
export ASCEND_HOME_PATH=$home
export ASCEND_OPP_PATH=$home/opp
export ASCEND_AICPU_PATH=$home
export TOOLCHAIN_HOME=$home/toolkit
export LD_LIBRARY_PATH=$home/lib64:$home/lib64/plugin/opskernel:$home/lib64/plugin/nnengine\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}
export PYTHONPATH=$home/python/site-packages:$home/opp/built-in/op_impl/ai_core/tbe\${PYTHONPATH:+:\$PYTHONPATH}
export PATH=$home/bin:$home/compiler/ccec_compiler/bin\${PATH:+:\$PATH}
EOF
  chmod 644 "$file"
}

# check_cann_users: named running users must exist (the default needs no check here).
check_cann_users() {
  if [ -n "$OPT_USER" ] && ! user_exists "$OPT_USER"; then
    die "the running user $OPT_USER does not exist" "create it first, or drop --install-username/--install-usergroup"
  fi
  if [ -n "$OPT_GROUP" ] && ! group_exists "$OPT_GROUP"; then
    die "the running group $OPT_GROUP does not exist" "create it first (groupadd $OPT_GROUP)"
  fi
}

for_all_word() { if [ "$OPT_FOR_ALL" = 1 ]; then printf yes; else printf no; fi; }

# uninstall_hint: how to remove the installed release (after find_toolkit).
uninstall_hint() {
  printf 'bash %s/%s/script/uninstall.sh' "$INST_HOME" "$ARCH_DIR"
}
