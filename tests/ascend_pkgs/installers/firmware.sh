# ---- firmware.sh: the NPU firmware package (Ascend-hdk-<chip>-npu-firmware_<fwver>.run) ----
# Header variable: PKG_CHIP. The firmware keeps the driver's running user (no user options)
# and has no --devel. "Flashing" writes version.info and appends a line to the flash record.
KIND_OPS="check full run upgrade uninstall"
KIND_OPTIONS="quiet nox11 install-path"
INSTALL_INFO=/etc/ascend_install.info
DRIVER_RECORD=/var/lib/hwreplay-pkgs/ascend-driver.json
FLASH_LOG=/var/lib/hwreplay-pkgs/ascend-firmware-flashed.log
REBOOT_MESSAGE="Reboot needed (now, or after the driver installation) for installation/upgrade to take effect!"

# need_driver: sets DRIVER_PREFIX, refuses without an installed driver of this chip.
need_driver() {
  local driver chip
  DRIVER_PREFIX=$(info_value "$(rp "$INSTALL_INFO")" Driver_Install_Path_Param)
  DRIVER_PREFIX=${DRIVER_PREFIX:-/usr/local/Ascend}
  driver=$(info_value "$(rp "$DRIVER_PREFIX/driver/version.info")" Version)
  if [ -z "$driver" ]; then
    die "no NPU driver is installed ($DRIVER_PREFIX/driver/version.info is missing)" \
      "install the driver first (driver, then firmware on a fresh node)"
  fi
  chip=$(sed -n 's/.*"chip": "\([^"]*\)".*/\1/p' "$(rp "$DRIVER_RECORD")" 2>/dev/null || true)
  if [ -n "$chip" ] && [ "$chip" != "$PKG_CHIP" ]; then
    die "this firmware is for chip $PKG_CHIP but the installed driver $driver is for chip $chip" \
      "use the $chip firmware package (Ascend-hdk-$chip-npu-firmware_<version>.run)"
  fi
}

firmware_prefix() {
  local prefix
  prefix=$(info_value "$(rp "$INSTALL_INFO")" Firmware_Install_Path_Param)
  printf '%s' "${OPT_PATH:-${prefix:-${DRIVER_PREFIX:-/usr/local/Ascend}}}"
}

flash() {
  local prefix=$1 type=$2 dir log
  dir=$(rp "$prefix/firmware")
  rm -rf "$dir"
  extract_payload "$(rp "$prefix")"
  printf 'Version=%s\n' "$PKG_VERSION" >"$dir/version.info"
  chmod 444 "$dir/version.info"
  info_set "$(rp "$INSTALL_INFO")" \
    "Firmware_Install_Type=$type" \
    "Firmware_Install_Path_Param=$prefix" \
    "Firmware_Install_Command=bash $PKG_FILE $CMDLINE"
  log=$(rp "$FLASH_LOG")
  mkdir -p "${log%/*}"
  printf '%s version=%s chip=%s operation=%s package=%s\n' \
    "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$PKG_VERSION" "$PKG_CHIP" "$OP" "$PKG_FILE" >>"$log"
}

firmware_install() {
  local prefix installed
  need_driver
  prefix=$(firmware_prefix)
  installed=$(info_value "$(rp "$prefix/firmware/version.info")" Version)
  if [ -n "$installed" ]; then
    if [ "$installed" = "$PKG_VERSION" ]; then
      die "firmware $installed is already installed in $prefix/firmware" \
        "nothing to do: read $prefix/firmware/version.info before installing; --upgrade flashes it again"
    fi
    die "firmware $installed is already installed in $prefix/firmware" "use --upgrade to flash $PKG_VERSION"
  fi
  accept_eula
  flash "$prefix" "$OP"
  log_line "flashed firmware $PKG_VERSION ($OP)"
  say "Firmware package installed successfully! $REBOOT_MESSAGE"
}

firmware_upgrade() {
  local prefix installed type
  need_driver
  prefix=$(firmware_prefix)
  installed=$(info_value "$(rp "$prefix/firmware/version.info")" Version)
  if [ -z "$installed" ]; then
    die "no firmware is installed in $prefix/firmware: --upgrade needs one" "install it with --full"
  fi
  type=$(info_value "$(rp "$INSTALL_INFO")" Firmware_Install_Type)
  accept_eula
  flash "$prefix" "${type:-full}"
  log_line "flashed firmware $installed -> $PKG_VERSION (upgrade)"
  say "Firmware package upgraded successfully ($installed -> $PKG_VERSION)! $REBOOT_MESSAGE"
}

firmware_uninstall() {
  local prefix installed
  prefix=$(firmware_prefix)
  installed=$(info_value "$(rp "$prefix/firmware/version.info")" Version)
  if [ -z "$installed" ]; then
    die "no firmware is installed in $prefix/firmware" "nothing to uninstall"
  fi
  rm -rf "$(rp "$prefix/firmware")"
  info_drop "$(rp "$INSTALL_INFO")" Firmware_
  if [ -z "$(info_value "$(rp "$INSTALL_INFO")" Driver_Install_Type)" ]; then
    info_drop "$(rp "$INSTALL_INFO")" User
  fi
  log_line "uninstalled firmware $installed (the flashed image stays on the device)"
  say "Firmware package uninstalled successfully!"
}

kind_main() {
  need_root
  case "$OP" in
    full | run) firmware_install ;;
    upgrade) firmware_upgrade ;;
    uninstall) firmware_uninstall ;;
  esac
}
