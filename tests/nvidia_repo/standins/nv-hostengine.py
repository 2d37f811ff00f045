#!/usr/bin/python3
"""nv-hostengine @VERSION@: ClusterForge test stand-in (tests/nvidia_repo) of DCGM's host engine.

`--version` prints the version. Otherwise it needs a GPU driver (`nvidia-smi -L`
must work: on a test node the hardware replay), listens on 127.0.0.1:5555
(--port) so `dcgmi` can tell it runs, and stays up until SIGTERM: in the
foreground with -n (the nvidia-dcgm.service way), else forked with a pid file.
"""

import argparse
import socket
import subprocess
import sys

from daemon_lib import become_daemon, run_until_stopped  # inlined by build.py

VERSION = "@VERSION@"
PID_FILE = "/run/nvhostengine.pid"


def main(argv=None):
    parser = argparse.ArgumentParser(prog="nv-hostengine")
    parser.add_argument("--version", "-v", action="store_true")
    parser.add_argument("-n", "--no-daemon", action="store_true")
    parser.add_argument("-p", "--port", type=int, default=5555)
    parser.add_argument("-b", "--bind-interface", default="127.0.0.1")
    parser.add_argument("--service-account")
    parser.add_argument("--pid", default=PID_FILE)
    args = parser.parse_args(argv)
    if args.version:
        print(
            f"version: {VERSION}\narch: x86_64\nbuildtype: Release\n"
            "buildplatform: Linux-x86_64 (test stand-in)"
        )
        return 0
    try:
        probe = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30, check=False)
        ok = probe.returncode == 0
    except OSError:
        ok = False
    if not ok:
        print("DCGM initialization failed: NVML could not be initialized (no NVIDIA driver)", file=sys.stderr)
        return 1
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        server.bind((args.bind_interface, args.port))
    except OSError as exc:
        print(
            f"Err: Failed to start DCGM Server: {exc.strerror} ({args.bind_interface}:{args.port})",
            file=sys.stderr,
        )
        return 1
    server.listen(16)
    print(f"Started host engine version {VERSION} using port number: {args.port}", flush=True)
    if args.no_daemon:
        cleanup = []
    else:
        become_daemon({args.pid: "{pid}\n"})
        cleanup = [args.pid]

    def serve():
        while True:
            conn, _ = server.accept()
            with conn:
                conn.sendall(f"DCGM {VERSION}\n".encode())

    run_until_stopped(cleanup, serve)
    return 0


if __name__ == "__main__":
    sys.exit(main())
