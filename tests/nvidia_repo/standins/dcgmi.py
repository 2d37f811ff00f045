#!/usr/bin/python3
"""dcgmi @VERSION@: ClusterForge test stand-in (tests/nvidia_repo) of DCGM's command-line tool.

  dcgmi --version
  dcgmi discovery -l          the GPUs `nvidia-smi` reports (on a test node: the replayed ones)
  dcgmi diag -r N [-j]        a report in DCGM 4's JSON layout, every test Pass for every GPU

Both commands need nv-hostengine (127.0.0.1:5555, or --host HOST[:PORT]), as
the real tool does. The diagnostic runs nothing: faults of a replayed profile
show through nvidia-smi, not here.
"""

import json
import socket
import subprocess
import sys

VERSION = "@VERSION@"
RULE = "+--------+----------------------------------------------------------------------------+"
DIAG_TESTS = {
    1: [("Deployment", "software")],
    2: [("Deployment", "software"), ("Integration", "pcie"), ("Hardware", "memory")],
    3: [
        ("Deployment", "software"),
        ("Integration", "pcie"),
        ("Hardware", "memory"),
        ("Stress", "targeted_power"),
    ],
    4: [
        ("Deployment", "software"),
        ("Integration", "pcie"),
        ("Hardware", "memory"),
        ("Hardware", "memtest"),
        ("Stress", "targeted_power"),
        ("Stress", "targeted_stress"),
    ],
}
LEVELS = {"quick": 1, "short": 1, "medium": 2, "long": 3, "xlong": 4}


def connect(host):
    name, _, port = host.partition(":")
    try:
        with socket.create_connection((name or "localhost", int(port or 5555)), timeout=5) as conn:
            return conn.recv(64).startswith(b"DCGM")
    except (OSError, ValueError):
        return False


def gpus():
    try:
        done = subprocess.run(
            ["nvidia-smi", "--query-gpu=index,name,pci.bus_id,uuid", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except OSError:
        return []
    if done.returncode != 0:
        return []
    return [[part.strip() for part in line.split(",")] for line in done.stdout.splitlines() if line.strip()]


def discovery():
    found = gpus()
    lines = [f"{len(found)} GPU{'s' if len(found) != 1 else ''} found.", RULE]
    lines.append("| GPU ID | Device Information".ljust(len(RULE) - 1) + "|")
    lines.append(RULE)
    for index, name, bus, uuid in found:
        for first, text in (
            (index, f"Name: {name}"),
            ("", f"PCI Bus ID: {bus}"),
            ("", f"Device UUID: {uuid}"),
        ):
            lines.append(f"| {first:<7}| {text:<75}|")
        lines.append(RULE)
    lines += ["0 NvSwitches found.", "+-----------+", "| Switch ID |", "+-----------+", "+-----------+"]
    print("\n".join(lines))
    return 0


def diag(level, as_json):
    found = gpus()
    categories = {}
    for category, test in DIAG_TESTS[level]:
        results = [
            {"entity_group": "GPU", "entity_group_id": 1, "entity_id": int(gpu[0]), "status": "Pass"}
            for gpu in found
        ]
        categories.setdefault(category, []).append(
            {"name": test, "results": results, "test_summary": {"status": "Pass"}}
        )
    report = {
        "DCGM Diagnostic": {
            "test_categories": [{"category": name, "tests": tests} for name, tests in categories.items()],
            "version": VERSION,
        }
    }
    if as_json:
        print(json.dumps(report, indent=4))
        return 0
    print("Successfully ran diagnostic for group.")
    for category, tests in categories.items():
        print(f"| {category}")
        for test in tests:
            print(f"|   {test['name']:<30} | Pass")
    return 0


def usage(message):
    print(f"dcgmi: {message}\nUsage: dcgmi [--version] discovery -l | diag -r LEVEL [-j]", file=sys.stderr)
    return 1


def main(argv=None):
    args = list(sys.argv[1:] if argv is None else argv)
    if args in (["--version"], ["-v"]):
        print(f"dcgmi  version: {VERSION}")
        return 0
    host = "localhost"
    if "--host" in args:
        at = args.index("--host")
        if at + 1 >= len(args):
            return usage("--host needs HOST[:PORT]")
        host = args[at + 1]
        del args[at : at + 2]
    if not args or args[0] not in ("discovery", "diag"):
        return usage(f"unknown or missing command {' '.join(args[:1])!r}")
    if not connect(host):
        print(
            f"Error: unable to establish a connection to the specified host: {host}\n"
            "Error: Unable to connect to host engine. Host engine connection invalid/disconnected."
        )
        return 255
    if args[0] == "discovery":
        return discovery() if args[1:] == ["-l"] else usage("use: dcgmi discovery -l")
    rest = args[1:]
    if "-r" not in rest or rest.index("-r") + 1 >= len(rest):
        return usage("use: dcgmi diag -r 1|2|3|4 [-j]")
    value = rest[rest.index("-r") + 1]
    level = LEVELS.get(value) or (int(value) if value.isdigit() and int(value) in DIAG_TESTS else None)
    if level is None:
        return usage(f"bad diagnostic level {value!r}")
    return diag(level, "-j" in rest)


if __name__ == "__main__":
    sys.exit(main())
