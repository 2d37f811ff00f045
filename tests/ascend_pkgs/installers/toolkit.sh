# ---- toolkit.sh: the CANN toolkit (Ascend-cann-toolkit_<ver>_linux-<arch>.run) ----
# --install (or --full/--run/--devel) into a prefix with no toolkit; --upgrade within one layout;
# crossing 8.5 needs the old release uninstalled with its uninstall script first.

toolkit_write() {
  local prefix=$1 rel home real
  rel=$(release_dir "$prefix" "$PKG_LAYOUT" "$PKG_VERSION")
  home=$(toolkit_home "$prefix" "$PKG_LAYOUT")
  real=$(rp "$rel")
  rm -rf "$real"
  extract_payload "$real"
  info_set "$real/$ARCH_DIR/$TOOLKIT_INFO" \
    "package_name=Ascend-cann-toolkit" "version=$PKG_VERSION" "arch=x86_64" "install_type=$OP" \
    "install_path=$prefix" "username=${OPT_USER:-HwHiAiUser}" "usergroup=${OPT_GROUP:-HwHiAiUser}" \
    "install_for_all=$(for_all_word)"
  write_uninstall_script "$real/$ARCH_DIR/script/uninstall.sh" "$prefix" "$PKG_LAYOUT" "$PKG_VERSION"
  if [ "$PKG_LAYOUT" = cann ]; then
    write_toolkit_set_env "$real/set_env.sh" "$home"
    ln -sfn "cann-$PKG_VERSION" "$(rp "$prefix/cann")"
  else
    ln -sfn "$PKG_VERSION" "$(rp "$prefix/ascend-toolkit/latest")"
    write_toolkit_set_env "$(rp "$prefix/ascend-toolkit/set_env.sh")" "$home"
  fi
}

toolkit_install() {
  local prefix=$1
  if [ -n "$INST_VERSION" ]; then
    if [ "$INST_VERSION" = "$PKG_VERSION" ]; then
      die "CANN toolkit $INST_VERSION is already installed in $prefix" \
        "nothing to do: read $INST_HOME/$ARCH_DIR/$TOOLKIT_INFO before installing; --upgrade reinstalls it"
    fi
    die "CANN toolkit $INST_VERSION is installed in $prefix; --install does not replace another release" \
      "use --upgrade, or uninstall first ($(uninstall_hint))"
  fi
  check_cann_users
  accept_eula
  toolkit_write "$prefix"
  log_line "installed CANN toolkit $PKG_VERSION in $prefix"
  say "CANN toolkit $PKG_VERSION installed in $prefix; environment: source $(toolkit_home "$prefix" "$PKG_LAYOUT" | sed 's#/latest$##')/set_env.sh"
}

toolkit_upgrade() {
  local prefix=$1 old=$INST_VERSION
  if [ -z "$INST_VERSION" ]; then
    die "no CANN toolkit is installed in $prefix: --upgrade needs one" "use --install"
  fi
  if [ "$INST_LAYOUT" != "$PKG_LAYOUT" ]; then
    die "upgrading CANN toolkit $INST_VERSION to $PKG_VERSION crosses 8.5 (ascend-toolkit/ becomes cann/, kernels become ops)" \
      "uninstall $INST_VERSION first ($(uninstall_hint)), then --install $PKG_VERSION"
  fi
  accept_eula
  if [ "$INST_VERSION" != "$PKG_VERSION" ]; then remove_release "$prefix" "$INST_LAYOUT" "$INST_VERSION"; fi
  toolkit_write "$prefix"
  log_line "upgraded CANN toolkit $old -> $PKG_VERSION in $prefix"
  say "CANN toolkit upgraded ($old -> $PKG_VERSION) in $prefix"
}

toolkit_uninstall() {
  local prefix=$1
  if [ -z "$INST_VERSION" ]; then
    die "no CANN toolkit is installed in $prefix" "nothing to uninstall"
  fi
  if [ "$INST_VERSION" != "$PKG_VERSION" ]; then
    die "the installed CANN toolkit is $INST_VERSION, this package is $PKG_VERSION" \
      "uninstall it with its own script: $(uninstall_hint)"
  fi
  remove_release "$prefix" "$INST_LAYOUT" "$INST_VERSION"
  log_line "uninstalled CANN toolkit $PKG_VERSION from $prefix"
  say "CANN toolkit $PKG_VERSION uninstalled from $prefix"
}

kind_main() {
  local prefix=${OPT_PATH:-$(default_prefix)}
  find_toolkit "$prefix"
  case "$OP" in
    install | full | run | devel) toolkit_install "$prefix" ;;
    upgrade) toolkit_upgrade "$prefix" ;;
    uninstall) toolkit_uninstall "$prefix" ;;
  esac
}
