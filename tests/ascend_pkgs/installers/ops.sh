# ---- ops.sh: the CANN operator package ----
# CANN < 8.5: Ascend-cann-kernels-<chip>_<ver>_linux-<arch>.run; 8.5 on: Ascend-cann-<chip>-ops_<ver>_linux-<arch>.run.
# Header variables: PKG_CHIP (910b, A3, ...), PKG_OPS_NAME (the package's name without version).
# It installs into the same-version toolkit under the same --install-path and refuses without one.
# No hardware check: the chip is not compared with the node's NPUs.

ops_kernel_dir() { printf '%s/opp/built-in/op_impl/ai_core/tbe/kernel/%s' "$1" "$2"; }

kind_main() {
  local prefix=${OPT_PATH:-$(default_prefix)} real info installed chip
  find_toolkit "$prefix"
  if [ "$INST_VERSION" != "$PKG_VERSION" ] || [ "$INST_LAYOUT" != "$PKG_LAYOUT" ]; then
    if [ "$OP" = uninstall ]; then
      die "no CANN toolkit $PKG_VERSION is installed in $prefix (found: ${INST_VERSION:-none})" "nothing to uninstall"
    fi
    die "$PKG_FILE needs CANN toolkit $PKG_VERSION installed in $prefix (found: ${INST_VERSION:-none})" \
      "install Ascend-cann-toolkit_${PKG_VERSION}_linux-x86_64.run with the same --install-path first"
  fi
  real=$(rp "$(release_dir "$prefix" "$INST_LAYOUT" "$INST_VERSION")")
  info="$real/$ARCH_DIR/$OPS_INFO"
  installed=$(info_value "$info" version)
  chip=$(info_value "$info" chip)
  case "$OP" in
    install | full | run | devel)
      if [ -n "$installed" ]; then
        if [ "$chip" = "$PKG_CHIP" ]; then
          die "the operator package for $chip ($installed) is already installed in $prefix" \
            "nothing to do: read $INST_HOME/$ARCH_DIR/$OPS_INFO before installing; --upgrade reinstalls it"
        fi
        die "the operator package for $chip is installed in $prefix" "uninstall it first (its package with --uninstall)"
      fi
      check_cann_users
      ;;
    upgrade)
      if [ -z "$installed" ]; then
        die "no operator package is installed in $prefix: --upgrade needs one" "use --install"
      fi
      ;;
    uninstall)
      if [ "$chip" != "$PKG_CHIP" ]; then
        die "no operator package for $PKG_CHIP is installed in $prefix (found: ${chip:-none})" "nothing to uninstall"
      fi
      rm -rf "$(ops_kernel_dir "$real" "$chip")" "$info"
      log_line "uninstalled $PKG_OPS_NAME $PKG_VERSION from $prefix"
      say "$PKG_OPS_NAME $PKG_VERSION uninstalled from $prefix"
      return 0
      ;;
  esac
  accept_eula
  if [ -n "$chip" ]; then rm -rf "$(ops_kernel_dir "$real" "$chip")"; fi
  extract_payload "$real"
  info_set "$info" "package_name=$PKG_OPS_NAME" "version=$PKG_VERSION" "chip=$PKG_CHIP" \
    "install_path=$prefix" "install_for_all=$(for_all_word)"
  log_line "installed $PKG_OPS_NAME $PKG_VERSION ($OP) in $prefix"
  say "$PKG_OPS_NAME $PKG_VERSION installed in $prefix"
}
