"""Replayed perftest `ib_write_bw`: a server and a client that really meet over TCP (tests only).

    ib_write_bw -d RAIL [-i PORT#] -F --report_gbits -D SECS -p PORT [--use_cuda=GPU]          server
    ib_write_bw -d RAIL [-i PORT#] -F --report_gbits -D SECS -p PORT [--use_cuda=GPU] SERVER   client

As with perftest, the server listens on TCP PORT (all IPv4 addresses) for one
client; the client connects to SERVER:PORT (retrying for HWREPLAY_IB_CONNECT_WAIT_S,
default 1 s; then perftest's "Couldn't connect" and exit 1). Instead of QP
numbers alone, both sides exchange their rail's figures (perf.rail_figures) as
one JSON line each; the client then "measures" for 0.2 s whatever -D says and
sends the result, which both print:

  - loopback (SERVER is localhost or one of this node's addresses: the traffic
    goes through the HCA, not the cable): the lower of both loopback_gbps;
  - otherwise the lower of the client rail's and the server rail's wire_gbps.

A device the profile lacks: perftest's "IB device X not found"; a port not
Active: perftest's port-state error; --use_cuda on a GPU the node lacks, or with
nvidia_peermem not loaded (GPUDirect RDMA cannot register GPU memory): an error
before connecting (perftest reports these after the exchange; the replay checks
first so the server never waits for nothing). All exit 1. The server gives up
after HWREPLAY_IB_SERVER_TIMEOUT_S (default 120 s) without a client.
"""

from __future__ import annotations

import json
import os
import socket
import time

from . import peer, perf
from .common import Context, ToolResult
from .infiniband import peermem_loaded

RC_FAIL = 1
RULE = "-" * 87
DEFAULT_SIZE = 65536
MEASURE_S = 0.2
MAX_MPPS = 7.9
EXCHANGE_TIMEOUT_S = 30.0
STATE_WORDS = {"Down": "Down", "Initializing": "Init", "Armed": "Armed", "Active": "Active"}
# option -> (name, takes a value)
SHORT = {
    "d": ("device", True),
    "i": ("ib_port", True),
    "p": ("port", True),
    "D": ("duration", True),
    "s": ("size", True),
    "q": ("qps", True),
    "x": ("gid_index", True),
    "n": ("iters", True),
    "m": ("mtu", True),
    "t": ("tx_depth", True),
    "F": ("no_cpufreq_check", False),
    "a": ("all", False),
    "R": ("rdma_cm", False),
}
LONG = {
    "--ib-dev": ("device", True),
    "--ib-port": ("ib_port", True),
    "--port": ("port", True),
    "--duration": ("duration", True),
    "--size": ("size", True),
    "--qp": ("qps", True),
    "--gid-index": ("gid_index", True),
    "--iters": ("iters", True),
    "--mtu": ("mtu", True),
    "--tx-depth": ("tx_depth", True),
    "--all": ("all", False),
    "--report_gbits": ("report_gbits", False),
    "--use_cuda": ("use_cuda", True),
}
NUMERIC = ("ib_port", "port", "duration", "size", "qps", "gid_index", "iters", "mtu", "tx_depth", "use_cuda")


def parse_args(args: list):
    """perftest's options -> dict, or None when perftest would refuse them."""
    options: dict = {
        "ib_port": 1,
        "port": 18515,
        "size": DEFAULT_SIZE,
        "qps": 1,
        "iters": 5000,
        "tx_depth": 128,
    }
    position = 0
    while position < len(args):
        arg = args[position]
        if arg.startswith("--"):
            key, has_inline, inline = arg.partition("=")
            spec = LONG.get(key)
            value = inline if has_inline else None
        elif arg.startswith("-") and len(arg) > 1:
            spec = SHORT.get(arg[1])
            value = arg[2:] or None
        else:
            if "server" in options:
                return None
            options["server"] = arg
            position += 1
            continue
        if spec is None:
            return None
        name, takes_value = spec
        if takes_value and value is None:
            position += 1
            if position >= len(args):
                return None
            value = args[position]
        if not takes_value:
            if value is not None:
                return None
            value = True
        if name in NUMERIC:
            try:
                value = int(value)
            except ValueError:
                return None
        options[name] = value
        position += 1
    return options


def usage() -> ToolResult:
    return ToolResult(
        rc=RC_FAIL, stderr=" Invalid Command or flag.\n Please check command line and run again.\n\n"
    )


def find_port(profile: dict, options: dict):
    """(hca, port) or an error ToolResult, checked as perftest does before any connection."""
    hcas = (profile.get("infiniband") or {}).get("hcas") or []
    name = options.get("device") or (hcas[0]["name"] if hcas else None)
    hca = next((h for h in hcas if h["name"] == name), None)
    if hca is None:
        missing = f"IB device {name} not found\n" if name else "No IB devices found\n"
        return None, ToolResult(rc=RC_FAIL, stderr=missing + " Unable to find the Infiniband/RoCE device\n")
    port = next((p for p in hca["ports"] if p["port"] == options["ib_port"]), None)
    if port is None or port["state"] != "Active":
        state = STATE_WORDS.get(port["state"], "Down") if port else "Nop"
        return None, ToolResult(
            rc=RC_FAIL,
            stderr=f" Port number {options['ib_port']} state is {state}\n"
            " Couldn't set the link layer\n Couldn't get context for the device\n",
        )
    return (hca, port), None


def cuda_lines(profile: dict, gpu_index: int) -> tuple:
    """(lines perftest prints setting up a GPU buffer, its teardown lines) or (error lines, None)."""
    gpus = perf.gpus(profile)
    lines = ["initializing CUDA"]
    if not gpus:
        return [*lines, "No CUDA devices found", "Couldn't init GPU context"], None
    lines.append("Listing all CUDA devices in system:")
    for position, gpu in enumerate(gpus):
        bus = gpu["bus_id"].split(":")
        lines.append(
            f"CUDA device {position}: PCIe address is {bus[1].upper()}:{bus[2].split('.')[0].upper()}"
        )
    lines.append("")
    if not 0 <= gpu_index < len(gpus):
        return [
            *lines,
            f"No such device ID ({gpu_index}) exists in system",
            "Couldn't init GPU context",
        ], None
    address = 0x7F0000000000 + (perf.stable("gpu buffer", gpu_index) % 0xFFFF) * 0x1000000
    lines += [
        f"Picking device No. {gpu_index}",
        f"[pid = {os.getpid()}, dev = {gpu_index}] device name = [{gpus[gpu_index]['name']}]",
        "creating CUDA Ctx",
        "making it the current CUDA Ctx",
        "cuMemAlloc() of a 131072 bytes GPU buffer",
        f"allocated GPU buffer address at {address:016x} pointer=0x{address:x}",
    ]
    if not peermem_loaded(profile):
        # No nvidia_peermem (and no DMA-BUF path): the HCA cannot register GPU memory.
        return [*lines, "Couldn't allocate MR", " Couldn't create IB resources"], None
    return lines, [f"deallocating RX GPU buffer {address:016x}", "destroying current CUDA Ctx"]


def endpoint(profile: dict, hca: dict, port: dict, options: dict, ctx: Context) -> dict:
    """This side's half of the exchange: address data as perftest prints it, and the rail's figures."""
    seed = perf.stable(perf.hostname(ctx), hca["name"], options["port"], "server" in options)
    info = {
        "hwreplay": "ib_write_bw",
        "device": hca["name"],
        "link_layer": port["link_layer"],
        "lid": port.get("lid", 0),
        "qpn": 0x100 + seed % 0xF00,
        "psn": seed % 0xFFFFFF,
        "rkey": 0x1F0000 + seed % 0xFFFF,
        "vaddr": 0x7F0000000000 + (seed % 0xFFFFF) * 0x100000,
        "figures": perf.rail_figures(profile, hca["name"]),
        "size": options["size"],
        "duration": options.get("duration"),
        "ok": True,
    }
    if port["link_layer"] == "Ethernet":
        roce = next(
            (n for n in (profile.get("roce") or {}).get("netdevs") or [] if n.get("hca") == hca["name"]), {}
        )
        octets = [int(part) for part in (roce.get("ipv4") or "0.0.0.0").split(".")]
        info["gid"] = ":".join(f"{byte:02d}" for byte in [0] * 10 + [255, 255] + octets)
    return info


def header(mine: dict, options: dict) -> list:
    ethernet = mine["link_layer"] == "Ethernet"
    lines = [
        RULE,
        "                    RDMA_Write BW Test",
        f" Dual-port       : OFF\t\tDevice         : {mine['device']}",
        f" Number of qps   : {options['qps']}\t\tTransport type : IB",
        " Connection type : RC\t\tUsing SRQ      : OFF",
        " PCIe relax order: ON",
        " ibv_wr* API     : ON",
        f" TX depth        : {options['tx_depth']}",
        " CQ Moderation   : 1",
        f" Mtu             : {options.get('mtu') or 4096}[B]",
        f" Link type       : {'Ethernet' if ethernet else 'IB'}",
    ]
    if ethernet:
        lines.append(f" GID index       : {options.get('gid_index', 3)}")
    lines += [" Max inline data : 0[B]", " rdma_cm QPs\t : OFF", " Data ex. method : Ethernet", RULE]
    return lines


def address_lines(side: str, info: dict) -> list:
    lid = "0000" if info["link_layer"] == "Ethernet" else f"0x{info['lid']:02x}"
    line = (
        f" {side} address: LID {lid} QPN 0x{info['qpn']:04x} PSN 0x{info['psn']:06x} "
        f"RKey 0x{info['rkey']:06x} VAddr 0x{info['vaddr']:014x}"
    )
    return [line] + ([f" GID: {info['gid']}"] if "gid" in info else [])


def result_lines(gbps: float, options: dict) -> list:
    """The result table: one row for the message size (-a: every size 2 B .. 8 MiB)."""
    gbits = bool(options.get("report_gbits"))
    unit = "Gb/sec" if gbits else "MB/sec"
    lines = [f" #bytes     #iterations    BW peak[{unit}]    BW average[{unit}]   MsgRate[Mpps]"]
    sizes = (
        [2**power for power in range(1, 24)]
        if options.get("all") and not options.get("duration")
        else [options["size"]]
    )
    for size in sizes:
        # Small messages are limited by the message rate (~8 Mpps), large ones by the link.
        average = min(gbps, size * 8 * MAX_MPPS * 1e6 / 1e9)
        rate_mpps = average * 1e9 / 8 / size / 1e6
        if options.get("duration"):
            iterations = int(rate_mpps * 1e6 * options["duration"])
            peak = 0.0
        else:
            iterations = options["iters"]
            peak = average * 1.004
        shown_peak, shown_average = peak, average
        if not gbits:
            shown_peak, shown_average = peak * 1e9 / 8 / 1048576, average * 1e9 / 8 / 1048576
        lines.append(
            f" {size:<10} {iterations:<16} {shown_peak:<18.2f} {shown_average:<10.2f}\t\t   {rate_mpps:.6f}"
        )
    return [*lines, RULE]


def send_json(sock: socket.socket, data: dict) -> None:
    sock.sendall((json.dumps(data, sort_keys=True) + "\n").encode())


def read_json(reader) -> dict | None:
    try:
        line = reader.readline(1 << 16)
        data = json.loads(line) if line else None
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("hwreplay") == "ib_write_bw" else None


def exchange_failed(lines: list) -> ToolResult:
    return ToolResult(
        rc=RC_FAIL,
        stdout="\n".join(lines) + "\n" if lines else "",
        stderr=" Failed to exchange data between server and clients\n",
    )


def figure(client: dict, server: dict, loopback: bool) -> float:
    key = "loopback_gbps" if loopback else "wire_gbps"
    return min(client["figures"][key], server["figures"][key])


def seconds(ctx: Context, name: str, default: float) -> float:
    try:
        return float(ctx.env.get(name) or default)
    except ValueError:
        return default


def ib_write_bw(profile: dict, args: list, ctx: Context) -> ToolResult:
    options = parse_args(args)
    if options is None:
        return usage()
    found, error = find_port(profile, options)
    if error:
        return error
    hca, port = found
    setup, teardown = [], []
    if options.get("use_cuda") is not None:
        setup, teardown = cuda_lines(profile, options["use_cuda"])
        if teardown is None:
            return ToolResult(rc=RC_FAIL, stdout="\n".join(setup) + "\n")
    mine = endpoint(profile, hca, port, options, ctx)
    if "server" in options:
        return run_client(ctx, options, mine, setup, teardown)
    return run_server(ctx, options, mine, setup, teardown)


def connect(ctx: Context, server: str, port: int):
    """A connection to the server, tried until HWREPLAY_IB_CONNECT_WAIT_S (default 1 s) has passed."""
    deadline = time.monotonic() + seconds(ctx, "HWREPLAY_IB_CONNECT_WAIT_S", 1.0)
    while True:
        try:
            sock = socket.create_connection((server, port), timeout=max(0.5, deadline - time.monotonic()))
        except OSError:
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.1)
            continue
        sock.settimeout(EXCHANGE_TIMEOUT_S)
        return sock


def run_client(ctx: Context, options: dict, mine: dict, setup: list, teardown: list) -> ToolResult:
    server_name = options["server"]
    sock = connect(ctx, server_name, options["port"])
    if sock is None:
        return ToolResult(
            rc=RC_FAIL,
            stderr=f"Couldn't connect to {server_name}:{options['port']}\n"
            "Unable to open file descriptor for socket connection Unable to init the socket connection\n",
        )
    loopback = peer.is_local(ctx, server_name)
    with sock:
        reader = sock.makefile("r", encoding="utf-8")
        try:
            send_json(sock, dict(mine, loopback=loopback))
        except OSError:
            return exchange_failed(setup)
        theirs = read_json(reader)
        if theirs is None or not theirs.get("ok"):
            return exchange_failed(setup)
        gbps = figure(mine, theirs, loopback)
        time.sleep(MEASURE_S)
        try:
            send_json(sock, {"hwreplay": "ib_write_bw", "done": True, "gbps": gbps})
        except OSError:
            return exchange_failed(setup)
    lines = setup + header(mine, options) + address_lines("local", mine) + address_lines("remote", theirs)
    lines += [RULE, *result_lines(gbps, options), *teardown]
    return ToolResult(stdout="\n".join(lines) + "\n")


def run_server(ctx: Context, options: dict, mine: dict, setup: list, teardown: list) -> ToolResult:
    banner = ["", "*" * 36, "* Waiting for client to connect... *", "*" * 36]
    try:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("", options["port"]))
        listener.listen(1)
    except OSError:
        return ToolResult(
            rc=RC_FAIL,
            stderr=f"Couldn't listen to port {options['port']}\n"
            "Unable to open file descriptor for socket connection Unable to init the socket connection\n",
        )
    with listener:
        listener.settimeout(seconds(ctx, "HWREPLAY_IB_SERVER_TIMEOUT_S", 120.0))
        try:
            sock, _address = listener.accept()
        except OSError:
            return ToolResult(
                rc=RC_FAIL,
                stdout="\n".join(banner) + "\n",
                stderr=" Unable to init the socket connection (hwreplay: no client connected in time)\n",
            )
    with sock:
        sock.settimeout(EXCHANGE_TIMEOUT_S)
        reader = sock.makefile("r", encoding="utf-8")
        theirs = read_json(reader)
        if theirs is None:
            return exchange_failed(banner + setup)
        try:
            send_json(sock, mine)
        except OSError:
            return exchange_failed(banner + setup)
        done = read_json(reader)
        if done is None or not done.get("done"):
            return exchange_failed(banner + setup)
    gbps = float(done["gbps"])
    lines = (
        banner
        + setup
        + header(mine, options)
        + address_lines("local", mine)
        + address_lines("remote", theirs)
    )
    lines += [RULE, *result_lines(gbps, options), *teardown]
    return ToolResult(stdout="\n".join(lines) + "\n")
