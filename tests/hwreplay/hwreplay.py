#!/usr/bin/env python3
"""hwreplay: replays vendor hardware tools on lab and Molecule nodes (tests only).

Installed as /usr/local/lib/hwreplay/hwreplay.py. `hwreplay profile set` puts
nvidia-smi, npu-smi, hccn_tool, ibstat, lspci, dmesg, modinfo and mlnx_qos shims,
and perf validation's benchmarks all_reduce_perf, nvbandwidth, ib_write_bw,
all_reduce_test and mpirun (each where the profile's hardware has it; mlnx_qos
and the benchmarks are never pre-rendered) into
/usr/local/bin (ppu-smi into /opt/hwreplay/bin: the PPU SDK brings it onto
PATH): they print pre-rendered answers of the commands node validation
runs and hand anything else to this program with HWREPLAY_TOOL=<tool> set. Run
as one of those tools (that variable, or a link of that name), it prints what
the real tool prints on the hardware of the active profile. Otherwise it is the
control tool:

    hwreplay profile list            the profiles it knows
    hwreplay profile show            the active profile and what it replays
    hwreplay profile set NAME        switch this node's hardware (root)
    hwreplay profile refresh [--answers-only]  set the recorded profile again (after package changes)
    hwreplay render TOOL [ARGS...]   print what TOOL ARGS would print
    hwreplay fabricmanager           the nvidia-fabricmanager.service stand-in
    hwreplay peer-serve [--port N]   tell other replay hosts this node's hardware (hwreplay-peer.service)

Environment (for tests without root): HWREPLAY_PROFILE (use this profile, no
state), HWREPLAY_PROFILE_DIR, HWREPLAY_STATE_DIR, HWREPLAY_OVERRIDES,
HWREPLAY_SYSROOT, HWREPLAY_BIN_DIR, HWREPLAY_VENDOR_BIN_DIR, HWREPLAY_UNIT_DIR, HWREPLAY_SYSTEMD (0/1),
HWREPLAY_NOW and HWREPLAY_UPTIME (pin the clock); for the benchmarks HWREPLAY_HOSTNAME,
HWREPLAY_LOCAL_ADDRESSES, HWREPLAY_PEER_PORT, HWREPLAY_IB_CONNECT_WAIT_S,
HWREPLAY_IB_SERVER_TIMEOUT_S, HWREPLAY_EUID. See README.md.
"""

from __future__ import annotations

import argparse
import os
import sys

# Find replaylib beside the real file, also when run through a symlink.
sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))

from replaylib import ascend_installed, control, peer
from replaylib.common import Context, ReplayError
from replaylib.tools import TOOLS, run_tool


def control_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hwreplay", description="Replay vendor hardware tools (tests only)")
    sub = parser.add_subparsers(dest="command", required=True)
    profile = sub.add_parser("profile", help="list, show or switch the replayed hardware profile")
    actions = profile.add_subparsers(dest="action", required=True)
    actions.add_parser("list", help="the known profiles")
    actions.add_parser("show", help="the active profile")
    set_parser = actions.add_parser("set", help="switch to profile NAME")
    set_parser.add_argument("name")
    refresh = actions.add_parser(
        "refresh", help="set the recorded profile again (the apt hook runs it after dpkg)"
    )
    refresh.add_argument(
        "--answers-only", action="store_true", help="only re-render the pre-rendered answers"
    )
    render = sub.add_parser("render", help="print what a replayed tool prints")
    render.add_argument("tool", choices=sorted(TOOLS))
    render.add_argument("args", nargs=argparse.REMAINDER)
    sub.add_parser("fabricmanager", help="run the fabric-manager stand-in (used by its systemd unit)")
    serve = sub.add_parser(
        "peer-serve",
        help="answer other replay hosts' benchmarks with this node's hardware (hwreplay-peer.service)",
    )
    serve.add_argument("--port", type=int, help="TCP port (default: HWREPLAY_PEER_PORT, peer_port, 18600)")
    serve.add_argument("--bind", default="", help="address to listen on (default: all)")
    return parser


def control_main(argv: list, ctx: Context) -> int:
    args = control_parser().parse_args(argv)
    if args.command == "render":
        return emit(run_tool(ctx, args.tool, args.args))
    if args.command == "fabricmanager":
        return control.fabricmanager(ctx)
    if args.command == "peer-serve":
        return peer.serve(ctx, args.bind, args.port)
    if args.action == "list":
        sys.stdout.write(control.list_profiles_text(ctx))
    elif args.action == "show":
        sys.stdout.write(control.show_profile(ctx))
    elif args.action == "refresh":
        name, changes = control.refresh_profile(ctx, args.answers_only)
        sys.stdout.write(f"profile: {name or 'none selected, nothing to refresh'}\n")
        sys.stdout.write(f"changed: {'yes' if changes else 'no'}\n")
        sys.stdout.write("".join(f"  - {change}\n" for change in changes))
    else:
        previous, changes = control.set_profile(ctx, args.name)
        sys.stdout.write(f"profile: {args.name} (was: {previous or 'none'})\n")
        sys.stdout.write(f"changed: {'yes' if changes else 'no'}\n")
        sys.stdout.write("".join(f"  - {change}\n" for change in changes))
    return 0


def emit(result) -> int:
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    return result.rc


def main(argv: list | None = None) -> int:
    argv = sys.argv if argv is None else argv
    env = dict(os.environ)
    # The tool shims cannot choose argv[0]: they name the tool in HWREPLAY_TOOL.
    name = env.pop("HWREPLAY_TOOL", "") or os.path.basename(argv[0])
    ctx = Context(env=env)
    try:
        if name in TOOLS:
            rc = emit(run_tool(ctx, name, argv[1:]))
            # Ascend answers gone stale (hccn_tool -s, an installed driver): pre-render them again.
            ascend_installed.refresh_if_stale(ctx, name, argv[1:])
            return rc
        return control_main(argv[1:], ctx)
    except ReplayError as exc:
        sys.stderr.write(exc.render())
        return 1
    except BrokenPipeError:  # e.g. `nvidia-smi -q | head`
        return 141


if __name__ == "__main__":
    sys.exit(main())
