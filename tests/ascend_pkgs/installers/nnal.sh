# ---- nnal.sh: CANN NNAL (Ascend-cann-nnal_<ver>_linux-<arch>.run) ----
# Installs <prefix>/nnal/atb/<ver>/ (atb/ inside), <prefix>/nnal/atb/latest -> <ver> and
# <prefix>/nnal/atb/set_env.sh. Install and upgrade need the same-version toolkit's set_env.sh
# sourced first (ASCEND_TOOLKIT_HOME set), as the real package does.
NNAL_INFO=ascend_nnal_install.info

need_toolkit_env() {
  local home=${ASCEND_TOOLKIT_HOME:-} version
  if [ -z "$home" ]; then
    die "ASCEND_TOOLKIT_HOME is not set: NNAL installs on top of a sourced CANN toolkit" \
      "source the toolkit's set_env.sh first (<prefix>/ascend-toolkit/set_env.sh before CANN 8.5, <prefix>/cann/set_env.sh from 8.5)"
  fi
  version=$(info_value "$(rp "$home/$ARCH_DIR/$TOOLKIT_INFO")" version)
  if [ -z "$version" ]; then
    die "ASCEND_TOOLKIT_HOME=$home holds no CANN toolkit ($home/$ARCH_DIR/$TOOLKIT_INFO is missing)" \
      "install the toolkit, then source its set_env.sh"
  fi
  if [ "$version" != "$PKG_VERSION" ]; then
    die "NNAL $PKG_VERSION needs CANN toolkit $PKG_VERSION; the sourced toolkit ($home) is $version" \
      "install toolkit $PKG_VERSION and source its set_env.sh"
  fi
}

nnal_write() {
  local base=$1 real
  real=$(rp "$base/$PKG_VERSION")
  rm -rf "$real"
  extract_payload "$real"
  info_set "$real/$NNAL_INFO" "package_name=Ascend-cann-nnal" "version=$PKG_VERSION" \
    "install_path=${base%/nnal/atb}" "install_for_all=$(for_all_word)"
  ln -sfn "$PKG_VERSION" "$(rp "$base/latest")"
  cat >"$(rp "$base/set_env.sh")" <<EOF
# Environment of CANN NNAL (ATB) $PKG_VERSION (ClusterForge test stand-in): source it.
export ATB_HOME_PATH=$base/latest/atb
export LD_LIBRARY_PATH=$base/latest/atb/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}
export PATH=$base/latest/atb/bin\${PATH:+:\$PATH}
EOF
}

kind_main() {
  local prefix=${OPT_PATH:-$(default_prefix)} base installed
  base="$prefix/nnal/atb"
  installed=$(info_value "$(rp "$base/latest/$NNAL_INFO")" version)
  case "$OP" in
    install | full | run | devel)
      need_toolkit_env
      if [ -n "$installed" ]; then
        if [ "$installed" = "$PKG_VERSION" ]; then
          die "NNAL $installed is already installed in $base" \
            "nothing to do: read $base/latest/$NNAL_INFO before installing; --upgrade reinstalls it"
        fi
        die "NNAL $installed is installed in $base" "use --upgrade, or uninstall it first"
      fi
      check_cann_users
      accept_eula
      nnal_write "$base"
      log_line "installed NNAL $PKG_VERSION in $base"
      say "NNAL $PKG_VERSION installed; environment: source $base/set_env.sh"
      ;;
    upgrade)
      if [ -z "$installed" ]; then
        die "no NNAL is installed in $base: --upgrade needs one" "use --install"
      fi
      need_toolkit_env
      accept_eula
      rm -rf "$(rp "$base/$installed")"
      nnal_write "$base"
      log_line "upgraded NNAL $installed -> $PKG_VERSION in $base"
      say "NNAL upgraded ($installed -> $PKG_VERSION)"
      ;;
    uninstall)
      if [ "$installed" != "$PKG_VERSION" ]; then
        die "NNAL $PKG_VERSION is not installed in $base (found: ${installed:-none})" \
          "uninstall the installed release with its own package"
      fi
      rm -rf "$(rp "$base/$installed")" "$(rp "$base/latest")" "$(rp "$base/set_env.sh")"
      rmdir "$(rp "$base")" "$(rp "$prefix/nnal")" 2>/dev/null || true
      log_line "uninstalled NNAL $PKG_VERSION from $base"
      say "NNAL $PKG_VERSION uninstalled"
      ;;
  esac
}
