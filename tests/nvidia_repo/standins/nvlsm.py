#!/usr/bin/python3
"""nvlsm @VERSION@: ClusterForge test stand-in (tests/nvidia_repo) of NVIDIA's NVLink Subnet Manager.

`--version` prints the version; otherwise it reads the config given with -F
(default /usr/share/nvidia/nvlsm/nvlsm.conf) and stays in the foreground until
SIGTERM. The fabric manager stand-in runs `nvlsm --version` to know it is there.
"""

import argparse
import os
import sys

from daemon_lib import run_until_stopped  # inlined by build.py

VERSION = "@VERSION@"


def main(argv=None):
    parser = argparse.ArgumentParser(prog="nvlsm")
    parser.add_argument("-V", "--version", action="store_true")
    parser.add_argument("-F", "--config", default="/usr/share/nvidia/nvlsm/nvlsm.conf")
    args = parser.parse_args(argv)
    if args.version:
        print(f"nvlsm version {VERSION}")
        return 0
    if not os.path.isfile(args.config):
        print(f"nvlsm: cannot read the config file {args.config}", file=sys.stderr)
        return 1
    print(f"nvlsm {VERSION}: SUBNET UP (test stand-in)", file=sys.stderr, flush=True)
    run_until_stopped([])
    return 0


if __name__ == "__main__":
    sys.exit(main())
