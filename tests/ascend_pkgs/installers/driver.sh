# ---- driver.sh: the NPU driver package (Ascend-hdk-<chip>-npu-driver_<ver>_linux-<arch>.run) ----
# Header variables: PKG_CHIP, PKG_COMPAT_FIRMWARE (space-separated firmware versions),
# PKG_VERSION_INFO (the version.info body).
KIND_OPS="check full run devel upgrade uninstall"
KIND_OPTIONS="quiet nox11 install-path install-username install-usergroup install-for-all"
INSTALL_INFO=/etc/ascend_install.info
RECORD=/var/lib/hwreplay-pkgs/ascend-driver.json
REBOOT_MESSAGE="Reboot needed for installation/upgrade to take effect!"

driver_record_json() {
  local list="" fw
  for fw in $PKG_COMPAT_FIRMWARE; do list="$list${list:+, }\"$fw\""; done
  printf '{"version": "%s", "chip": "%s", "compatible_firmware": [%s]}\n' "$PKG_VERSION" "$PKG_CHIP" "$list"
}

# write_driver PREFIX TYPE USER GROUP FOR_ALL: the driver's files, version.info, install info, record.
write_driver() {
  local prefix=$1 type=$2 user=$3 group=$4 for_all=$5 dir record
  dir=$(rp "$prefix/driver")
  rm -rf "$dir"
  extract_payload "$(rp "$prefix")"
  mkdir -p "$dir/tools"
  # The real driver ships hccn_tool here; the hardware replay provides the tool itself.
  ln -sfn /usr/local/bin/hccn_tool "$dir/tools/hccn_tool"
  printf '%s\n' "$PKG_VERSION_INFO" >"$dir/version.info"
  chmod 444 "$dir/version.info"
  info_set "$(rp "$INSTALL_INFO")" \
    "UserName=$user" "UserGroup=$group" \
    "Driver_Install_Type=$type" \
    "Driver_Install_Path_Param=$prefix" \
    "Driver_Install_For_All=$for_all" \
    "Driver_Install_Command=bash $PKG_FILE $CMDLINE" \
    "Driver_Install_Package=$PKG_FILE"
  record=$(rp "$RECORD")
  mkdir -p "${record%/*}"
  driver_record_json >"$record.tmp"
  mv -f "$record.tmp" "$record"
}

installed_prefix() {
  local prefix
  prefix=$(info_value "$(rp "$INSTALL_INFO")" Driver_Install_Path_Param)
  printf '%s' "${OPT_PATH:-${prefix:-/usr/local/Ascend}}"
}

driver_install() {
  local prefix=${OPT_PATH:-/usr/local/Ascend} installed user group for_all=no
  installed=$(info_value "$(rp "$prefix/driver/version.info")" Version)
  if [ -n "$installed" ]; then
    if [ "$installed" = "$PKG_VERSION" ]; then
      die "driver $installed is already installed in $prefix/driver" \
        "nothing to do: read $prefix/driver/version.info before installing; --upgrade reinstalls it"
    fi
    die "driver $installed is already installed in $prefix/driver" "use --upgrade to install $PKG_VERSION over it"
  fi
  user=${OPT_USER:-HwHiAiUser}
  group=${OPT_GROUP:-HwHiAiUser}
  if ! user_exists "$user"; then
    die "the running user $user does not exist" \
      "create it first (groupadd $group; useradd -g $group -d /home/$user -m $user -s /bin/bash), or name another with --install-username/--install-usergroup"
  fi
  if ! group_exists "$group"; then
    die "the running group $group does not exist" "create it first (groupadd $group)"
  fi
  [ "$OPT_FOR_ALL" = 1 ] && for_all=yes
  accept_eula
  write_driver "$prefix" "$OP" "$user" "$group" "$for_all"
  log_line "installed driver $PKG_VERSION ($OP) in $prefix/driver for $user:$group"
  say "Driver package installed successfully! $REBOOT_MESSAGE"
}

driver_upgrade() {
  local prefix installed info record_chip fw_prefix fw user group type for_all
  prefix=$(installed_prefix)
  info=$(rp "$INSTALL_INFO")
  installed=$(info_value "$(rp "$prefix/driver/version.info")" Version)
  if [ -z "$installed" ]; then
    die "no driver is installed in $prefix/driver: --upgrade needs one" "install the driver with --full"
  fi
  record_chip=$(sed -n 's/.*"chip": "\([^"]*\)".*/\1/p' "$(rp "$RECORD")" 2>/dev/null || true)
  if [ -n "$record_chip" ] && [ "$record_chip" != "$PKG_CHIP" ]; then
    die "the installed driver is for chip $record_chip, this package is for $PKG_CHIP" \
      "use the $record_chip driver package"
  fi
  fw_prefix=$(info_value "$info" Firmware_Install_Path_Param)
  fw=$(info_value "$(rp "${fw_prefix:-$prefix}/firmware/version.info")" Version)
  if [ -n "$fw" ] && ! in_list "$fw" "$PKG_COMPAT_FIRMWARE"; then
    die "the installed firmware $fw is not compatible with driver $PKG_VERSION (it needs one of: $PKG_COMPAT_FIRMWARE)" \
      "upgrade the firmware first (firmware, then driver), then upgrade the driver"
  fi
  user=$(info_value "$info" UserName)
  group=$(info_value "$info" UserGroup)
  type=$(info_value "$info" Driver_Install_Type)
  for_all=$(info_value "$info" Driver_Install_For_All)
  accept_eula
  write_driver "$prefix" "${type:-full}" "${user:-HwHiAiUser}" "${group:-HwHiAiUser}" "${for_all:-no}"
  log_line "upgraded driver $installed -> $PKG_VERSION in $prefix/driver"
  say "Driver package upgraded successfully ($installed -> $PKG_VERSION)! $REBOOT_MESSAGE"
}

driver_uninstall() {
  local prefix installed
  prefix=$(installed_prefix)
  installed=$(info_value "$(rp "$prefix/driver/version.info")" Version)
  if [ -z "$installed" ]; then
    die "no driver is installed in $prefix/driver" "nothing to uninstall"
  fi
  rm -rf "$(rp "$prefix/driver")" "$(rp "$RECORD")"
  info_drop "$(rp "$INSTALL_INFO")" Driver_
  if [ -z "$(info_value "$(rp "$INSTALL_INFO")" Firmware_Install_Type)" ]; then
    info_drop "$(rp "$INSTALL_INFO")" User
  fi
  log_line "uninstalled driver $installed from $prefix/driver"
  say "Driver package uninstalled successfully! $REBOOT_MESSAGE"
}

kind_main() {
  need_root
  case "$OP" in
    full | run | devel) driver_install ;;
    upgrade) driver_upgrade ;;
    uninstall) driver_uninstall ;;
  esac
}
