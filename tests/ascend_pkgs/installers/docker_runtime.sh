# ---- docker_runtime.sh: Ascend Docker Runtime (Ascend-docker-runtime_<ver>_linux-<arch>.run) ----
# --install [--install-path=/usr/local/Ascend] [--install-scene=docker|containerd|crio|isula]
# [--config-file-path=FILE]; --upgrade; --uninstall. Binaries go to <path>/Ascend-Docker-Runtime/.
# containerd: registers the "ascend" runtime in /etc/containerd/config.toml (refused when the file
# is missing); docker: runtimes.ascend and default-runtime in /etc/docker/daemon.json.
# crio and isula: binaries and the scene only (their configuration is not simulated).
# The installer restarts nothing: the caller restarts the container engine.
KIND_OPS="check install upgrade uninstall"
KIND_OPTIONS="quiet nox11 install-path install-scene config-file-path"
RT_DIR_NAME=Ascend-Docker-Runtime
RT_INFO=ascend_docker_runtime_install.info
SCENES="docker containerd crio isula"
LOG_FILE=/var/log/ascend-docker-runtime/installer.log

default_config() {
  case "$1" in
    containerd) printf /etc/containerd/config.toml ;;
    docker) printf /etc/docker/daemon.json ;;
    *) printf '' ;;
  esac
}

# edit_config ACTION SCENE FILE BINARY: add (ACTION=add) or remove (remove) the ascend runtime.
edit_config() {
  if ! command -v python3 >/dev/null; then
    die "python3 is needed to edit $3" "install python3"
  fi
  python3 - "$@" <<'PY'
import json
import re
import sys

action, scene, path, binary = sys.argv[1:5]
PREFIXES = (
    'plugins."io.containerd.grpc.v1.cri".containerd.runtimes',  # config version 2 (and 1)
    'plugins."io.containerd.cri.v1.runtime".containerd.runtimes',  # config version 3 (containerd 2.x)
)


def without_ascend(lines):
    kept, skipping = [], False
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("["):
            skipping = any(
                stripped == "[%s.ascend]" % p or stripped.startswith("[%s.ascend." % p) for p in PREFIXES
            )
        if not skipping:
            kept.append(line)
    while kept and not kept[-1].strip():
        kept.pop()
    return kept


def containerd(text):
    lines = without_ascend(text.splitlines())
    if action == "remove":
        return "\n".join(lines) + "\n" if lines else ""
    head = []
    for line in text.splitlines():
        if line.strip().startswith("["):
            break
        head.append(line)
    version = next((m.group(1) for m in (re.match(r"\s*version\s*=\s*(\d+)", x) for x in head) if m), "2")
    prefix = PREFIXES[1] if version == "3" else PREFIXES[0]
    systemd = None
    in_runc = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("["):
            in_runc = stripped == "[%s.runc.options]" % prefix
        match = re.match(r"SystemdCgroup\s*=\s*(true|false)", stripped)
        if in_runc and match:
            systemd = match.group(1)
    block = [
        "",
        "[%s.ascend]" % prefix,
        '  runtime_type = "io.containerd.runc.v2"',
        "",
        "  [%s.ascend.options]" % prefix,
        '    BinaryName = "%s"' % binary,
    ]
    if systemd is not None:
        block.append("    SystemdCgroup = %s" % systemd)
    return "\n".join(lines + block) + "\n"


def docker(text):
    try:
        data = json.loads(text) if text.strip() else {}
    except ValueError as exc:
        sys.exit("%s is not valid JSON (%s): fix or remove it, then run the installer again" % (path, exc))
    if not isinstance(data, dict):
        sys.exit("%s does not hold a JSON object: fix it, then run the installer again" % path)
    runtimes = data.get("runtimes") or {}
    if action == "add":
        runtimes["ascend"] = {"path": binary, "runtimeArgs": []}
        data["runtimes"] = runtimes
        data["default-runtime"] = "ascend"
    else:
        runtimes.pop("ascend", None)
        if runtimes:
            data["runtimes"] = runtimes
        else:
            data.pop("runtimes", None)
        if data.get("default-runtime") == "ascend":
            del data["default-runtime"]
    return json.dumps(data, indent=4) + "\n"


try:
    with open(path) as handle:
        old = handle.read()
except FileNotFoundError:
    old = ""
new = containerd(old) if scene == "containerd" else docker(old)
if new != old:
    with open(path + ".cf-tmp", "w") as handle:
        handle.write(new)
    import os

    os.replace(path + ".cf-tmp", path)
    print("changed")
else:
    print("unchanged")
PY
}

# configure ACTION SCENE CONFIG BINARY: the scene's configuration edit (none for crio and isula).
configure() {
  local action=$1 scene=$2 config=$3 binary=$4 real result
  [ -n "$config" ] || return 0
  real=$(rp "$config")
  if [ "$scene" = containerd ] && [ ! -f "$real" ]; then
    if [ "$action" = remove ]; then return 0; fi
    die "$config does not exist: the containerd scene registers the ascend runtime in it" \
      "install containerd and write its configuration first (containerd config default > $config)"
  fi
  if [ "$scene" = docker ] && [ ! -f "$real" ]; then
    if [ "$action" = remove ]; then return 0; fi
    mkdir -p "${real%/*}"
  fi
  if ! result=$(edit_config "$action" "$scene" "$real" "$binary" 2>&1); then
    die "could not edit $config: $result" "fix $config, then run the installer again"
  fi
  if [ "$action" = add ]; then
    say "$config: $result (ascend runtime registered)"
  else
    say "$config: $result (ascend runtime removed)"
  fi
}

rt_write() {
  local prefix=$1 scene=$2 config=$3 dir
  dir=$(rp "$prefix/$RT_DIR_NAME")
  # The configuration first: a refused edit leaves nothing installed.
  configure add "$scene" "$config" "$prefix/$RT_DIR_NAME/ascend-docker-runtime"
  rm -rf "$dir"
  extract_payload "$(rp "$prefix")"
  info_set "$dir/$RT_INFO" "version=$PKG_VERSION" "install_scene=$scene" "config_file=$config" \
    "install_path=$prefix"
}

kind_main() {
  local prefix=${OPT_PATH:-/usr/local/Ascend} info installed scene config old_scene old_config
  need_root
  if [ -n "$OPT_SCENE" ] && ! in_list "$OPT_SCENE" "$SCENES"; then
    die "--install-scene=$OPT_SCENE is not a scene of this package" "use one of: $SCENES"
  fi
  if [ -n "$OPT_CONFIG_FILE" ]; then check_path_option "$OPT_CONFIG_FILE"; fi
  info=$(rp "$prefix/$RT_DIR_NAME/$RT_INFO")
  installed=$(info_value "$info" version)
  case "$OP" in
    install)
      if [ -n "$installed" ]; then
        if [ "$installed" = "$PKG_VERSION" ]; then
          die "Ascend Docker Runtime $installed is already installed in $prefix/$RT_DIR_NAME" \
            "nothing to do: read $prefix/$RT_DIR_NAME/$RT_INFO before installing; --upgrade reinstalls it"
        fi
        die "Ascend Docker Runtime $installed is installed in $prefix/$RT_DIR_NAME" "use --upgrade"
      fi
      scene=${OPT_SCENE:-docker}
      config=${OPT_CONFIG_FILE:-$(default_config "$scene")}
      rt_write "$prefix" "$scene" "$config"
      log_line "installed Ascend Docker Runtime $PKG_VERSION ($scene) in $prefix/$RT_DIR_NAME"
      say "Ascend Docker Runtime $PKG_VERSION installed ($scene); restart the container engine to use it"
      ;;
    upgrade)
      if [ -z "$installed" ]; then
        die "no Ascend Docker Runtime is installed in $prefix/$RT_DIR_NAME: --upgrade needs one" "use --install"
      fi
      old_scene=$(info_value "$info" install_scene)
      old_config=$(info_value "$info" config_file)
      scene=${OPT_SCENE:-$old_scene}
      config=${OPT_CONFIG_FILE:-$old_config}
      if [ "$scene" != "$old_scene" ]; then config=${OPT_CONFIG_FILE:-$(default_config "$scene")}; fi
      rt_write "$prefix" "$scene" "$config"
      # A new scene or file: the old registration goes once the new one is in place.
      if [ "$scene:$config" != "$old_scene:$old_config" ]; then
        configure remove "$old_scene" "$old_config" ""
      fi
      log_line "upgraded Ascend Docker Runtime $installed -> $PKG_VERSION ($scene)"
      say "Ascend Docker Runtime upgraded ($installed -> $PKG_VERSION); restart the container engine to use it"
      ;;
    uninstall)
      if [ -z "$installed" ]; then
        die "no Ascend Docker Runtime is installed in $prefix/$RT_DIR_NAME" "nothing to uninstall"
      fi
      configure remove "$(info_value "$info" install_scene)" "$(info_value "$info" config_file)" ""
      rm -rf "$(rp "$prefix/$RT_DIR_NAME")"
      log_line "uninstalled Ascend Docker Runtime $installed"
      say "Ascend Docker Runtime $installed uninstalled; restart the container engine"
      ;;
  esac
}
