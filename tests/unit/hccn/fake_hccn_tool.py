"""A stand-in hccn_tool for the unit tests and the role test: state in a JSON file, /etc/hccn.conf kept.

    FAKE_HCCN_STATE=state.json fake_hccn_tool -i N -ip|-gateway|-netdetect|-link|-net_health -g
    ... -i N -ip -s address A netmask M | -gateway -s gateway G | -netdetect -s address A

state.json: {"conf": path, "devices": {"0": {address, netmask, gateway, netdetect, link, net_health}},
"broken": [ids: every call fails], "sticky": [ids: -s succeeds but changes nothing],
"calls": [argv...] (appended)}. The -g output is the real tool's (and tests/hwreplay's) format.
"""

from __future__ import annotations

import json
import os
import sys

KEYS = ("address", "netmask", "gateway", "netdetect")


def main(argv: list[str]) -> int:
    path = os.environ.get(
        "FAKE_HCCN_STATE", os.path.join(os.path.dirname(os.path.abspath(__file__)), "state.json")
    )
    with open(path) as handle:
        state = json.load(handle)
    state.setdefault("calls", []).append(argv)
    try:
        return run(state, argv)
    finally:
        with open(path, "w") as handle:
            json.dump(state, handle)


def run(state: dict, argv: list[str]) -> int:
    if len(argv) < 4 or argv[0] != "-i":
        print("Invalid command. Usage: hccn_tool -i <device_id> -<item> -g|-s ...", file=sys.stderr)
        return 255
    dev, item, action, rest = argv[1], argv[2], argv[3], argv[4:]
    if dev not in state["devices"] or int(dev) in state.get("broken", []):
        print(f"device id {dev} is invalid", file=sys.stderr)
        return 255
    nic = state["devices"][dev]
    if action == "-g" and not rest:
        if item == "-ip":
            if nic.get("address"):
                print(f"ipaddr:{nic['address']}\nnetmask:{nic['netmask']}")
        elif item == "-gateway":
            print(f"default gateway:{nic.get('gateway') or ''}, Iface:eth{dev}")
        elif item == "-netdetect":
            print(f"netdetect address: {nic.get('netdetect') or ''}")
        elif item == "-link":
            print(f"link status: {nic.get('link', 'UP')}")
        elif item == "-net_health":
            print(f"net health status: {nic.get('net_health', 'Success')}")
        else:
            print(f"Invalid command {item}", file=sys.stderr)
            return 255
        return 0
    values = dict(zip(rest[::2], rest[1::2], strict=False))
    wanted = {
        "-ip": {"address": values.get("address"), "netmask": values.get("netmask")},
        "-gateway": {"gateway": values.get("gateway")},
        "-netdetect": {"netdetect": values.get("address")},
    }.get(item)
    if action != "-s" or wanted is None or None in wanted.values():
        print(f"Invalid command {' '.join(argv)}", file=sys.stderr)
        return 255
    if int(dev) not in state.get("sticky", []):
        nic.update(wanted)
        write_conf(state)
    return 0


def write_conf(state: dict) -> None:
    conf = state.get("conf")
    if not conf:
        return
    lines = [
        f"{key}_{dev}={nic[key]}\n"
        for dev, nic in sorted(state["devices"].items(), key=lambda kv: int(kv[0]))
        for key in KEYS
        if nic.get(key)
    ]
    with open(conf, "w") as handle:
        handle.writelines(lines)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
