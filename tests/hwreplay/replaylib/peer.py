"""This node's replayed hardware as other nodes see it over the fabric: `hwreplay peer-serve` (tests only).

A multi-node benchmark (mpirun ... all_reduce_perf across two nodes) runs on the
first node only; its output names the other nodes' GPUs and runs at the pace of
the slowest node. Each replay host therefore answers on TCP port 18600
(HWREPLAY_PEER_PORT, or `peer_port` in the overrides file) with one JSON line
and closes:

    {"hwreplay_peer": 1, "hostname": "gpu-r1-n02", "addresses": ["10.0.0.12", ...],
     "profile": "h100-healthy", "tools": ["nvidia-smi", ...], "nccl_ready": true,
     "gpus": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "bus_id": "0000:1b:00.0", "pci_bus": 27}],
     "figures": {...perf.figures(): nccl_pair_busbw_gbps, rails, ...}}

The profile is read for every answer, so `hwreplay profile set` needs no restart.
install.yml runs it as hwreplay-peer.service. It stands for "the peer's hardware
over the fabric": production code never talks to it.
"""

from __future__ import annotations

import contextlib
import ipaddress
import itertools
import json
import os
import signal
import socket
import socketserver
import sys

from . import perf
from .common import Context, ReplayError, pci_domain4
from .profiles import active_profile, read_overrides

DEFAULT_PORT = 18600
QUERY_TIMEOUT_S = 3.0
PROTOCOL = 1


def port(ctx: Context) -> int:
    """HWREPLAY_PEER_PORT, else the overrides' peer_port, else 18600."""
    if ctx.env.get("HWREPLAY_PEER_PORT"):
        return int(ctx.env["HWREPLAY_PEER_PORT"])
    try:
        configured = read_overrides(ctx).get("peer_port")
    except ReplayError:
        configured = None
    return int(configured or DEFAULT_PORT)


def interface_addresses() -> set:
    """The addresses of this node's interfaces (IPv4 from /proc/net/fib_trie, IPv6 from if_inet6)."""
    found = {"127.0.0.1", "::1"}
    try:
        with open("/proc/net/fib_trie") as handle:
            lines = handle.read().splitlines()
    except OSError:
        lines = []
    for previous, line in itertools.pairwise(lines):
        if line.strip() == "/32 host LOCAL":
            found.add(previous.strip().lstrip("|-+ ").strip())
    try:
        with open("/proc/net/if_inet6") as handle:
            for line in handle:
                digits = line.split()[0]
                found.add(str(ipaddress.IPv6Address(int(digits, 16))))
    except (OSError, ValueError, IndexError):
        pass
    return found


def local_addresses(ctx: Context) -> set:
    """HWREPLAY_LOCAL_ADDRESSES (comma separated, for tests), else the interfaces' addresses."""
    given = ctx.env.get("HWREPLAY_LOCAL_ADDRESSES")
    if given:
        return {part.strip() for part in given.split(",") if part.strip()}
    return interface_addresses()


def resolve(host: str) -> set:
    try:
        return {info[4][0] for info in socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)}
    except (OSError, UnicodeError):
        return set()


def is_local(ctx: Context, host: str) -> bool:
    """Whether `host` (a name or an address) is this node: localhost, its name, or one of its addresses."""
    if host in ("localhost", perf.hostname(ctx)):
        return True
    mine = local_addresses(ctx)
    if host in mine:
        return True
    try:
        ipaddress.ip_address(host)
        return False  # an address that is not ours: no need to ask the resolver
    except ValueError:
        pass
    return bool(resolve(host) & mine)


def gpu_list(profile: dict) -> list:
    listed = []
    for gpu in perf.gpus(profile):
        bus = pci_domain4(gpu["bus_id"])
        listed.append(
            {"index": gpu["index"], "name": gpu["name"], "bus_id": bus, "pci_bus": int(bus.split(":")[1], 16)}
        )
    return listed


def node_info(ctx: Context, profile: dict) -> dict:
    """What this node answers its peers (the module docstring)."""
    from .tools import installed_tools  # tools imports the modules that import this one

    addresses = sorted(
        a for a in local_addresses(ctx) if a not in ("127.0.0.1", "::1") and not a.startswith("fe80")
    )
    return {
        "hwreplay_peer": PROTOCOL,
        "hostname": perf.hostname(ctx),
        "addresses": addresses,
        "profile": profile["profile"]["name"],
        "tools": installed_tools(profile),
        "nccl_ready": perf.nccl_ready(profile),
        "gpus": gpu_list(profile),
        "figures": perf.figures(profile),
    }


def ask(ctx: Context, host: str, timeout: float = QUERY_TIMEOUT_S) -> tuple:
    """(the peer's answer, "") or (None, why there is none)."""
    try:
        with socket.create_connection((host, port(ctx)), timeout=timeout) as sock:
            data = b""
            while not data.endswith(b"\n") and len(data) < 1 << 20:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                data += chunk
    except OSError as exc:
        return None, f"no answer ({exc.strerror or exc})"
    try:
        info = json.loads(data.decode())
    except ValueError:
        return None, "the answer is not an hwreplay peer's"
    if not isinstance(info, dict) or info.get("hwreplay_peer") != PROTOCOL:
        return None, "the answer is not an hwreplay peer's"
    if info.get("error"):
        return None, f"its replay failed: {info['error']}"
    return info, ""


def query(ctx: Context, host: str, timeout: float = QUERY_TIMEOUT_S) -> dict | None:
    """The peer's answer, or None when nothing (or no working hwreplay peer) answers on its port."""
    return ask(ctx, host, timeout)[0]


class PeerServer(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True

    def __init__(self, ctx: Context, address: tuple) -> None:
        self.ctx = ctx
        super().__init__(address, PeerHandler)


class PeerHandler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        try:
            answer = node_info(self.server.ctx, active_profile(self.server.ctx))
        except ReplayError as exc:
            answer = {"hwreplay_peer": PROTOCOL, "error": exc.message}
        with contextlib.suppress(OSError):
            self.request.sendall((json.dumps(answer, sort_keys=True) + "\n").encode())


def make_server(ctx: Context, bind: str = "", listen_port: int | None = None) -> PeerServer:
    return PeerServer(ctx, (bind, port(ctx) if listen_port is None else listen_port))


def serve(ctx: Context, bind: str = "", listen_port: int | None = None) -> int:
    """Run the responder until SIGTERM (hwreplay-peer.service)."""
    try:
        server = make_server(ctx, bind, listen_port)
    except OSError as exc:
        raise ReplayError(
            f"cannot listen on port {listen_port or port(ctx)}: {exc.strerror}",
            "stop what holds the port, or set peer_port (HWREPLAY_PEER_PORT) alike on every replay host",
        ) from exc
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
    print(f"hwreplay peer responder on port {server.server_address[1]} (pid {os.getpid()})", flush=True)
    with server:
        server.serve_forever()
    return 0
