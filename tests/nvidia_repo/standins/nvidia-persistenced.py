#!/usr/bin/python3
"""nvidia-persistenced @VERSION@: ClusterForge test stand-in (tests/nvidia_repo), not NVIDIA's daemon.

Behaves enough like the real one for roles: `--version`; otherwise it checks its
options, refuses a second instance, forks into the background (unless
--foreground) with its pid file in /run/nvidia-persistenced and stays up until
SIGTERM. It does not change the GPUs' persistence mode: the hardware replay
reports the profile's.
"""

import argparse
import pwd
import sys

from daemon_lib import become_daemon, pid_alive, publish, run_until_stopped  # inlined by build.py

VERSION = "@VERSION@"
RUN_DIR = "/run/nvidia-persistenced"
PID_FILE = RUN_DIR + "/nvidia-persistenced.pid"


def main(argv=None):
    parser = argparse.ArgumentParser(prog="nvidia-persistenced", add_help=True)
    parser.add_argument("--version", "-v", action="store_true")
    parser.add_argument("--verbose", "-V", action="store_true")
    parser.add_argument("--user", "-u")
    parser.add_argument("--group", "-g")
    parser.add_argument("--foreground", "-f", action="store_true")
    parser.add_argument("--persistence-mode", action="store_true")
    parser.add_argument("--no-persistence-mode", action="store_true")
    parser.add_argument("--uvm-persistence-mode", action="store_true")
    parser.add_argument("--nvidia-cfg-path")
    args = parser.parse_args(argv)
    if args.version:
        print(f"nvidia-persistenced:  version {VERSION}\n")
        print("  The NVIDIA Persistence Daemon (ClusterForge test stand-in).")
        return 0
    if args.persistence_mode and args.no_persistence_mode:
        print(
            "nvidia-persistenced: --persistence-mode and --no-persistence-mode exclude each other",
            file=sys.stderr,
        )
        return 1
    if args.user:
        try:
            pwd.getpwnam(args.user)
        except KeyError:
            print(f"nvidia-persistenced: Failed to find the user '{args.user}'", file=sys.stderr)
            return 1
    if pid_alive(PID_FILE):
        print(
            "nvidia-persistenced failed to initialize. Check syslog for more details.\n"
            f"nvidia-persistenced: another instance is running (pid file {PID_FILE})",
            file=sys.stderr,
        )
        return 1
    mode = "disabled" if args.no_persistence_mode else "enabled"
    if args.verbose:
        print(
            f"nvidia-persistenced: Started ({VERSION}), persistence mode {mode}", file=sys.stderr, flush=True
        )
    files = {PID_FILE: "{pid}\n"}
    if args.foreground:
        publish(files)
    else:
        become_daemon(files)
    run_until_stopped([PID_FILE])
    return 0


if __name__ == "__main__":
    sys.exit(main())
