#!/usr/bin/python3
"""nv-fabricmanager @VERSION@: ClusterForge test stand-in (tests/nvidia_repo), not NVIDIA's Fabric Manager.

What it checks on start, as the real one does (vendor-packaging.md section 2):
  - the config file given with -c exists;
  - the GPU driver's version (what `nvidia-smi` reports: on a test node the
    hardware replay, which follows the installed libnvidia-ml) equals its own,
    else it fails like the real one ("... don't match with driver version ...");
  - there is an NVSwitch fabric: NVSwitch bridges on PCI (`lspci -n -d 10de:`,
    class 0680), or an NVLink 5 management port (`SW_MNG` in
    /sys/class/infiniband/*/device/vpd, also under the replay's sysfs root
    $HWREPLAY_SYSROOT, default /opt/hwreplay/sysroot);
  - on NVLink 5 the NVLink Subnet Manager /opt/nvidia/nvlsm/sbin/nvlsm runs.
Then it writes its pid file and the fabric state file (STATE_FILE_NAME in the
config; the hardware replay reads it: GPUs are "Completed" only while the
process named there lives), forks when DAEMONIZE=1 and stays up until SIGTERM,
which removes both files.
"""

import argparse
import glob
import os
import subprocess
import sys
import time

from daemon_lib import become_daemon, pid_alive, publish, run_until_stopped  # inlined by build.py

VERSION = "@VERSION@"
PID_FILE = "/run/nvidia-fabricmanager/nv-fabricmanager.pid"
STATE_FILE = "/run/nvidia-fabricmanager/fabric.state"
NVLSM = "/opt/nvidia/nvlsm/sbin/nvlsm"


def read_config(path):
    config = {}
    with open(path) as handle:
        for line in handle:
            line = line.strip()
            if line and not line.startswith("#") and "=" in line:
                key, value = line.split("=", 1)
                config[key.strip()] = value.strip()
    return config


class Log:
    def __init__(self, path):
        self.path = path

    def __call__(self, level, message):
        line = f"[{time.strftime('%b %d %Y %H:%M:%S')}] [{level}] [tid {os.getpid()}] {message}"
        print(line, file=sys.stderr, flush=True)
        if self.path:
            try:
                with open(self.path, "a") as handle:
                    handle.write(line + "\n")
            except OSError:
                pass


def run(argv):
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def driver_version():
    out = run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"])
    lines = (out or "").split()
    return lines[0] if lines else None


def nvswitch_bridges():
    out = run(["lspci", "-n", "-d", "10de:"]) or ""
    return [
        line.split()[0] for line in out.splitlines() if len(line.split()) > 1 and line.split()[1] == "0680:"
    ]


def nvlink5_ports():
    roots = ["/", os.environ.get("HWREPLAY_SYSROOT") or "/opt/hwreplay/sysroot"]
    found = []
    for root in roots:
        for vpd in sorted(glob.glob(os.path.join(root, "sys/class/infiniband/*/device/vpd"))):
            try:
                with open(vpd, "rb") as handle:
                    if b"SW_MNG" in handle.read():
                        found.append(vpd.split("/")[-3])
            except OSError:
                continue
    return found


def start(args):
    try:
        config = read_config(args.config)
    except OSError as exc:
        print(f"Fabric Manager failed to open the config file {args.config}: {exc.strerror}", file=sys.stderr)
        return 1
    log = Log(config.get("LOG_FILE_NAME"))
    log("INFO", f"Fabric Manager version {VERSION} is running with the following configuration options")
    driver = driver_version()
    if driver is None:
        log("ERROR", "NVIDIA GPU driver is not loaded or no NVIDIA GPU was found (nvidia-smi failed)")
        return 1
    if driver != VERSION:
        log(
            "ERROR",
            f"fabric manager NVIDIA GPU driver interface version {VERSION} don't match with driver "
            f"version {driver}. Please update with matching NVIDIA driver package.",
        )
        return 1
    bridges, ports = nvswitch_bridges(), nvlink5_ports()
    if not bridges and not ports:
        log("ERROR", "NV_WARN_NOTHING_TO_DO: no NVSwitch or NVLink 5 fabric found on this system")
        return 1
    if ports:
        log("INFO", f"NVLink 5 system: NVSwitch management port(s) {', '.join(ports)}")
        if run([NVLSM, "--version"]) is None:
            log(
                "ERROR",
                f"NVLink Subnet Manager {NVLSM} is not installed or does not run: NVLink 5 systems need "
                "the nvlsm package (NV_WARN_NOTHING_TO_DO)",
            )
            return 1
    state_file = config.get("STATE_FILE_NAME") or STATE_FILE
    pid_file = config.get("PID_FILE_NAME") or PID_FILE
    if pid_alive(pid_file):
        log("ERROR", f"another instance of Fabric Manager is running (pid file {pid_file})")
        return 1
    log("INFO", "Successfully configured all the available NVSwitches to route GPU NVLink traffic.")
    files = {pid_file: "{pid}\n", state_file: "{pid}\nCompleted\n" + VERSION + "\n"}
    if config.get("DAEMONIZE", "1") == "1":
        become_daemon(files)
    else:
        publish(files)
    run_until_stopped([state_file, pid_file])
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="nv-fabricmanager")
    parser.add_argument("-c", "--config", default="/usr/share/nvidia/nvswitch/fabricmanager.cfg")
    parser.add_argument("-v", "--version", action="store_true")
    args = parser.parse_args(argv)
    if args.version:
        print(f"Fabric Manager version is : {VERSION}")
        return 0
    return start(args)


if __name__ == "__main__":
    sys.exit(main())
