"""Replayed benchmarks of perf validation: nccl-tests, CANN hccl_test, nvbandwidth, hccn_tool -ping.

The figures come from the profile's optional `perf` section; every key has a
default from the hardware, so healthy profiles need none:

    "perf": {
      "nccl_local_busbw_gbps": 470,     all_reduce_perf on the node's GPUs, largest size (GB/s)
      "nccl_pair_busbw_gbps": 370,      two-node all_reduce_perf (the lower of both nodes' figures)
      "h2d_gbps": 55.6 | [55.6, ...],   nvbandwidth host_to_device_memcpy_ce per GPU (a list: per index)
      "d2h_gbps": 55.3 | [...],         device_to_host_memcpy_ce likewise
      "rails": {"mlx5_3": {"loopback_gbps": 391.2, "wire_gbps": 118.4}},   ib_write_bw (Gb/s)
      "hccl_local_algbw_gbps": 170,     hccl_test all_reduce_test, largest size (GB/s)
      "hccn_ping_loss_pct": 0 | {"3": 40}   hccn_tool -ping loss, all NICs or per device id
    }

Outputs are deterministic (no clock, no randomness): the same profile prints the
same bytes, so fault tests can diff them. Process ids printed are derived from
the host name. Formats: nccl-tests 2.13, hccl_test of CANN 8, nvbandwidth v0.5,
hccn_tool -ping; each is read by cfcore's parsers (tests/unit/hwreplay/test_hwreplay_perf.py).
"""

from __future__ import annotations

import ipaddress
import socket
import zlib

from .ascend_installed import nic_device_id
from .common import Context, ToolResult

RC_FAIL = 1
# Effective link efficiency of RDMA writes (perftest's average over the line rate): NDR 400 -> 391.2.
RDMA_EFFICIENCY = 0.978
# Two-node all_reduce bus bandwidth over the compute rails, as a share of their line rate (GB/s).
NCCL_NET_EFFICIENCY = 0.925
# nvbandwidth memcpy CE host->device at x16 per PCIe generation (GB/s); device->host a little less.
H2D_X16_GBPS = {3: 13.1, 4: 26.4, 5: 55.6, 6: 110.0}
D2H_SHARE = 0.994
# all_reduce_perf bus bandwidth within one node by GPU model (NVSwitch / NVLink systems).
NCCL_LOCAL_BY_MODEL = (("B300", 800.0), ("B200", 800.0), ("H200", 470.0), ("H100", 470.0), ("H800", 360.0))
NCCL_LOCAL_NVLINK_OTHER = 230.0  # A100/A800 class
NCCL_LOCAL_PCIE = 20.0  # GPUs on PCIe only
HCCL_LOCAL_BY_CHIP = (("910B", 170.0), ("Ascend910", 260.0), ("910", 170.0))
HCCL_LOCAL_OTHER = 100.0
NCCL_FAILURE_LINE = 1149  # where nccl-tests reports that a test failed
NCCL_TESTS_VERSION = "# nccl-tests version 2.13.9 nccl-headers=21903 nccl-library=21903"


def hostname(ctx: Context) -> str:
    """This node's name as benchmarks print it (HWREPLAY_HOSTNAME for tests)."""
    return ctx.env.get("HWREPLAY_HOSTNAME") or socket.gethostname()


def stable(*parts) -> int:
    """A number derived from `parts`: what the replay prints where a real run prints a random value."""
    return zlib.crc32("/".join(str(part) for part in parts).encode())


def fake_pid(host: str, offset: int = 0) -> int:
    return 2000 + stable("pid", host) % 60000 + offset


# ------------------------------------------------------------------ figures


def section(profile: dict) -> dict:
    return profile.get("perf") or {}


def gpus(profile: dict) -> list:
    return (profile.get("nvidia") or {}).get("gpus") or []


def compute_ports(profile: dict) -> list:
    """(HCA name, port) of the compute rails: InfiniBand ports, and the HCAs of RoCE netdevs.

    Not NVLink 5's switch management port (its VPD says SW_MNG): it carries no job traffic."""
    roce = {netdev.get("hca") for netdev in (profile.get("roce") or {}).get("netdevs") or []}
    ports = []
    for hca in (profile.get("infiniband") or {}).get("hcas") or []:
        if "SW_MNG" in (hca.get("vpd") or ""):
            continue
        for port in hca["ports"]:
            if port.get("link_layer") == "InfiniBand" or hca["name"] in roce:
                ports.append((hca["name"], port))
                break
    return ports


def nccl_ready(profile: dict) -> bool:
    """False while NVSwitch GPUs have not joined the fabric (fabric manager down): CUDA cannot start."""
    nvidia = profile.get("nvidia") or {}
    if not nvidia.get("nvswitches"):
        return True
    return all((gpu.get("fabric") or {}).get("state", "Completed") == "Completed" for gpu in gpus(profile))


def nccl_local_busbw(profile: dict) -> float:
    value = section(profile).get("nccl_local_busbw_gbps")
    if value is not None:
        return float(value)
    nvidia = profile.get("nvidia") or {}
    name = gpus(profile)[0]["name"] if gpus(profile) else ""
    nvlinked = bool(nvidia.get("nvswitches")) or any(
        (gpu.get("nvlink") or {}).get("links") for gpu in gpus(profile)
    )
    if not nvlinked:
        return NCCL_LOCAL_PCIE
    return next((figure for model, figure in NCCL_LOCAL_BY_MODEL if model in name), NCCL_LOCAL_NVLINK_OTHER)


def nccl_pair_busbw(profile: dict) -> float:
    """Default: the active compute rails at the slowest one's rate (8x NDR 400: ~370 GB/s)."""
    value = section(profile).get("nccl_pair_busbw_gbps")
    if value is not None:
        return float(value)
    rates = [port["rate"] for _name, port in compute_ports(profile) if port.get("state") == "Active"]
    if not rates:
        return 2.5  # NCCL over TCP sockets of the management network
    return round(NCCL_NET_EFFICIENCY * min(rates) * len(rates) / 8, 1)


def rail_figures(profile: dict, rail: str) -> dict:
    """{"loopback_gbps", "wire_gbps"} of an HCA (default: its port 1 rate x RDMA_EFFICIENCY)."""
    hca = next((h for h in (profile.get("infiniband") or {}).get("hcas") or [] if h["name"] == rail), None)
    rate = hca["ports"][0]["rate"] if hca and hca.get("ports") else 0
    default = round(rate * RDMA_EFFICIENCY, 1)
    given = (section(profile).get("rails") or {}).get(rail) or {}
    return {
        "loopback_gbps": float(given.get("loopback_gbps", default)),
        "wire_gbps": float(given.get("wire_gbps", default)),
    }


def per_gpu(profile: dict, key: str) -> list:
    """nvbandwidth's figure for each GPU: the profile's number or list, else from its PCIe link."""
    given = section(profile).get(key)
    figures = []
    for position, gpu in enumerate(gpus(profile)):
        if isinstance(given, list) and position < len(given) and given[position] is not None:
            figures.append(float(given[position]))
            continue
        if isinstance(given, (int, float)):
            figures.append(float(given))
            continue
        pcie = gpu.get("pcie") or {}
        x16 = H2D_X16_GBPS.get(pcie.get("gen_current", 4), 26.4)
        figure = x16 * pcie.get("width_current", 16) / 16
        figures.append(round(figure * (D2H_SHARE if key == "d2h_gbps" else 1.0), 2))
    return figures


def hccl_local_algbw(profile: dict) -> float:
    value = section(profile).get("hccl_local_algbw_gbps")
    if value is not None:
        return float(value)
    npus = (profile.get("ascend") or {}).get("npus") or []
    name = npus[0]["name"] if npus else ""
    return next((figure for chip, figure in HCCL_LOCAL_BY_CHIP if chip in name), HCCL_LOCAL_OTHER)


def ping_loss(profile: dict, device_id) -> float:
    given = section(profile).get("hccn_ping_loss_pct", 0)
    if isinstance(given, dict):
        given = given.get(str(device_id), 0)
    return float(given or 0)


def figures(profile: dict) -> dict:
    """Every figure of the profile with its defaults filled in (what `hwreplay peer-serve` reports)."""
    result = {}
    if gpus(profile):
        result["nccl_local_busbw_gbps"] = nccl_local_busbw(profile)
        result["h2d_gbps"] = per_gpu(profile, "h2d_gbps")
        result["d2h_gbps"] = per_gpu(profile, "d2h_gbps")
    if gpus(profile) or compute_ports(profile):
        result["nccl_pair_busbw_gbps"] = nccl_pair_busbw(profile)
    hcas = (profile.get("infiniband") or {}).get("hcas") or []
    if hcas:
        result["rails"] = {hca["name"]: rail_figures(profile, hca["name"]) for hca in hcas}
    if profile.get("ascend"):
        result["hccl_local_algbw_gbps"] = hccl_local_algbw(profile)
    return result


# ------------------------------------------------------------------ sizes and curves


def parse_size(text: str) -> int | None:
    """nccl-tests / hccl_test sizes: 8, 8K, 1M, 8G (powers of 1024), optional trailing B."""
    value = text.strip().upper().removesuffix("B")
    scale = 1
    if value and value[-1] in "KMGT":
        scale = 1024 ** ("KMGT".index(value[-1]) + 1)
        value = value[:-1]
    try:
        number = float(value)
    except ValueError:
        return None
    size = int(number * scale)
    return size if size >= 0 else None


def sizes(minimum: int, maximum: int, factor: int, step: int) -> list:
    found, size = [], max(minimum, 0)
    while size <= maximum and len(found) < 64:
        found.append(size)
        following = size * factor if factor > 1 else size + step
        if following <= size:
            break
        size = following
    return found


def peak_rate(figure: float, largest: int, latency_us: float) -> float:
    """The asymptotic rate whose curve t = latency + size/rate reaches `figure` at `largest` exactly.

    When `largest` is too small for that (latency dominates), the figure itself."""
    at_figure_us = largest / (figure * 1e3) if figure > 0 else 0
    if at_figure_us <= 4 * latency_us:
        return figure
    return largest / ((at_figure_us - latency_us) * 1e3)


# ------------------------------------------------------------------ nccl-tests


def nccl_time(time_us: float) -> str:
    if time_us >= 10000:
        return f"{time_us:7.0f}"
    return f"{time_us:7.1f}" if time_us >= 100 else f"{time_us:7.2f}"


def nccl_side(time_us: float, algbw: float, busbw: float) -> str:
    return f"  {nccl_time(time_us)}  {algbw:6.2f}  {busbw:6.2f}  {0:5d}"


NCCL_COLUMNS = (
    "#                                                              out-of-place"
    "                       in-place          ",
    "#       size         count      type   redop    root     time   algbw   busbw #wrong"
    "     time   algbw   busbw #wrong",
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)       "
    "     (us)  (GB/s)  (GB/s)       ",
)


def nccl_options(args: list):
    """all_reduce_perf's options -> dict, or an error line (nccl-tests' usage error)."""
    options = {"b": "32M", "e": "32M", "f": "1", "i": "1M", "g": "1", "t": "1", "w": "5", "n": "20", "c": "1"}
    options.update({"m": "1", "G": "0", "d": "float", "o": "sum", "a": "3", "z": "0"})
    long_names = {
        "--minbytes": "b",
        "--maxbytes": "e",
        "--stepfactor": "f",
        "--stepbytes": "i",
        "--ngpus": "g",
        "--nthreads": "t",
        "--warmup_iters": "w",
        "--iters": "n",
        "--check": "c",
        "--agg_iters": "m",
        "--cudagraph": "G",
        "--datatype": "d",
        "--op": "o",
        "--average": "a",
        "--blocking": "z",
    }
    position = 0
    while position < len(args):
        arg = args[position]
        name, value = None, None
        if arg.startswith("--"):
            key, _, inline = arg.partition("=")
            name = long_names.get(key)
            value = inline or None
        elif arg.startswith("-") and len(arg) >= 2 and arg[1] in options:
            name = arg[1]
            value = arg[2:] or None
        if name is None:
            return f"invalid option -- '{arg.lstrip('-')}'"
        if value is None:
            position += 1
            if position >= len(args):
                return f"option requires an argument -- '{name}'"
            value = args[position]
        options[name] = value
        position += 1
    return options


def nccl_usage(error: str) -> ToolResult:
    return ToolResult(
        rc=RC_FAIL,
        stderr=f"all_reduce_perf: {error}\nUSAGE: all_reduce_perf \n\t[-t,--nthreads <num threads>] \n"
        "\t[-g,--ngpus <gpus per thread>] \n\t[-b,--minbytes <min size in bytes>] \n"
        "\t[-e,--maxbytes <max size in bytes>] \n\t[-i,--stepbytes <increment size>] \n"
        "\t[-f,--stepfactor <increment factor>] \n\t[-n,--iters <iteration count>] \n"
        "\t[-w,--warmup_iters <warmup iteration count>] \n\t[-c,--check <0/1>] \n",
    )


def mpi_ranks_per_host(ctx: Context, hosts: list, processes: int) -> list:
    """How many MPI processes each host of HWREPLAY_MPI_HOSTS runs (mpirun's by-slot mapping)."""
    given = [part for part in ctx.env.get("HWREPLAY_MPI_RANKS", "").split(",") if part]
    if len(given) == len(hosts) and all(part.isdigit() for part in given):
        return [int(part) for part in given]
    share, extra = divmod(processes, len(hosts))
    return [share + (1 if position < extra else 0) for position in range(len(hosts))]


def nccl_placement(ctx: Context, profile: dict, per_process: int) -> tuple:
    """([(node info, one pid per rank?, ranks on it)], None), or (None, the host that did not answer).

    One process (no MPI), MPI on this node alone, or MPI across hosts whose replays answer
    `hwreplay peer-serve` (peer.py); node infos have peer.node_info()'s keys."""
    from . import peer  # peer imports this module for the figures

    processes = int(ctx.env.get("HWREPLAY_MPI_NP") or 0)
    hosts = [host for host in ctx.env.get("HWREPLAY_MPI_HOSTS", "").split(",") if host]
    here = hostname(ctx)
    local = {"hostname": here, "gpus": peer.gpu_list(profile), "nccl_ready": nccl_ready(profile)}
    local["figures"] = {"nccl_local_busbw_gbps": nccl_local_busbw(profile)}
    local["figures"]["nccl_pair_busbw_gbps"] = nccl_pair_busbw(profile)
    if not processes:
        placements = [(local, 0, per_process)]
    elif not hosts or all(peer.is_local(ctx, host) for host in hosts):
        placements = [(local, 1, processes * per_process)]
    else:
        placements = []
        counts = mpi_ranks_per_host(ctx, hosts, processes)
        for host, count in zip(hosts, counts, strict=False):
            if not count:
                continue
            if peer.is_local(ctx, host):
                placements.append((local, 1, count * per_process))
                continue
            info = peer.query(ctx, host)
            if info is None:
                return None, host
            placements.append((info, 1, count * per_process))
    return placements, None


def nccl_failure(host: str, pid: int, line: int, message: str, kind: str = "CUDA") -> str:
    """nccl-tests' failure report: the failed call, then the test's own line."""
    return (
        f"{host}: Test {kind} failure common.cu:{line} '{message}'\n"
        f" .. {host} pid {pid}: Test failure common.cu:{NCCL_FAILURE_LINE}\n"
    )


def all_reduce_perf(profile: dict, args: list, ctx: Context) -> ToolResult:
    """nccl-tests all_reduce_perf on this node's GPUs, or with mpirun's HWREPLAY_MPI_* across nodes."""
    options = nccl_options(args)
    if isinstance(options, str):
        return nccl_usage(options)
    low, high = parse_size(options["b"]), parse_size(options["e"])
    factor, step = parse_size(options["f"]), parse_size(options["i"])
    numbers = [options[key] for key in ("g", "t", "w", "n", "c")]
    if None in (low, high, factor, step) or not all(number.isdigit() for number in numbers):
        return nccl_usage("invalid argument")
    per_process = int(options["g"]) * int(options["t"])
    placements, unreachable = nccl_placement(ctx, profile, per_process)
    header = [
        NCCL_TESTS_VERSION,
        "# Collective test starting: all_reduce_perf",
        f"# nThread {options['t']} nGpus {options['g']} minBytes {low} maxBytes {high} "
        + (f"step: {factor}(factor)" if factor > 1 else f"step: {step}(bytes)")
        + f" warmup iters: {options['w']} iters: {options['n']} agg iters: {options['m']} "
        f"validation: {options['c']} graph: {options['G']}",
        "#",
        "# Using devices",
    ]
    here = hostname(ctx)
    if placements is None:
        pid = fake_pid(here)
        warning = (
            f"{here}:{pid}:{pid + 1} [0] NCCL WARN Net : Connection closed by remote peer {unreachable}\n"
        )
        error = nccl_failure(here, pid, 1025, "remote process exited or there was a network error", "NCCL")
        return ToolResult(rc=RC_FAIL, stdout="\n".join(header) + "\n" + warning + error)
    lines, rank = list(header), 0
    for info, per_rank_pid, count in placements:
        host = info["hostname"]
        devices = info["gpus"]
        for local_rank in range(count):
            pid = fake_pid(host, local_rank // per_process if per_rank_pid else 0)
            if local_rank >= len(devices):
                return ToolResult(
                    rc=RC_FAIL,
                    stdout="\n".join(lines) + "\n" + nccl_failure(host, pid, 1018, "invalid device ordinal"),
                )
            if not info.get("nccl_ready", True):
                return ToolResult(
                    rc=RC_FAIL,
                    stdout="\n".join(lines)
                    + "\n"
                    + nccl_failure(host, pid, 1018, "system not yet initialized"),
                )
            gpu = devices[local_rank]
            lines.append(
                f"#  Rank {rank:2d} Group  0 Pid {pid:6d} on {host:>10} device {local_rank:2d} "
                f"[0x{gpu['pci_bus']:02x}] {gpu['name']}"
            )
            rank += 1
    ranks = rank
    if len(placements) > 1:
        figure = min(info["figures"]["nccl_pair_busbw_gbps"] for info, _, _ in placements)
        latency = 41.0
    else:
        figure = placements[0][0]["figures"]["nccl_local_busbw_gbps"]
        latency = 22.0
    lines += ["#", *NCCL_COLUMNS]
    scale = 2 * (ranks - 1) / ranks if ranks > 1 else 0.0
    algbw_peak = peak_rate(figure / scale if scale else 1500.0, high, latency)
    busbws = []
    for size in sizes(low, high, factor, step):
        count = size // 4
        time_us = latency + size / (algbw_peak * 1e3)
        cells = []
        for slowdown in (1.0, 1.006):
            side_time = time_us * slowdown
            algbw = size / side_time / 1e3
            busbws.append(algbw * scale)
            cells.append(nccl_side(side_time, algbw, algbw * scale))
        lines.append(f"{size:12d}  {count:12d}  {'float':>8}  {'sum':>6}  {-1:6d}" + "".join(cells))
    average = sum(busbws) / len(busbws) if busbws else 0.0
    lines += [
        "# Out of bounds values : 0 OK",
        f"# Avg bus bandwidth    : {average:.3f} ",
        "#",
        "# Collective test concluded: all_reduce_perf",
        "",
    ]
    return ToolResult(stdout="\n".join(lines) + "\n")


# ------------------------------------------------------------------ hccl_test


def hccl_options(args: list):
    options = {"b": "64M", "e": "64M", "f": "0", "i": "0", "o": "sum", "r": "0", "d": "fp32"}
    options.update({"n": "20", "w": "5", "c": "1", "p": "8"})
    position = 0
    while position < len(args):
        arg = args[position]
        if not (arg.startswith("-") and len(arg) == 2 and arg[1] in options) or position + 1 >= len(args):
            return f"invalid argument: {arg}"
        options[arg[1]] = args[position + 1]
        position += 2
    return options


def hccl_error(line: int, retcode: int, ranks: int) -> ToolResult:
    """What each hccl_test process prints when HCCL refuses the job (mpirun adds its own report)."""
    failed = (
        f"hccl interface return errreturn err ./common/src/hccl_test_common.cc:{line}, retcode: {retcode} \n"
    )
    return ToolResult(rc=RC_FAIL, stdout=failed * max(ranks, 1))


def all_reduce_test(profile: dict, args: list, ctx: Context) -> ToolResult:
    """CANN hccl_test all_reduce_test on this node's NPUs (one mpirun process per NPU, -p per node)."""
    options = hccl_options(args)
    if isinstance(options, str):
        return ToolResult(rc=RC_FAIL, stdout=f"{options}\n")
    low, high, factor, step = (parse_size(options[key]) for key in ("b", "e", "f", "i"))
    numbers = [options[key] for key in ("n", "w", "c", "p")]
    if None in (low, high, factor, step) or not all(number.isdigit() for number in numbers):
        return ToolResult(rc=RC_FAIL, stdout="invalid argument\n")
    per_node = int(options["p"])
    processes = int(ctx.env.get("HWREPLAY_MPI_NP") or per_node)
    chips = len((profile.get("ascend") or {}).get("npus") or [])
    if per_node < 1 or per_node > chips or processes != per_node:
        return hccl_error(538, 7, processes)
    lines = [
        f"the minbytes is {low}, maxbytes is {high}, iters is {options['n']}, warmup_iters is {options['w']}",
        "data_size(Bytes): | aveg_time(us): | alg_bandwidth(GB/s): | check_result:",
    ]
    latency = 38.0
    rate = peak_rate(hccl_local_algbw(profile), high, latency)
    check = "success" if options["c"] != "0" else "NULL"
    for size in sizes(low, high, factor, step):
        time_us = latency + size / (rate * 1e3)
        algbw = size / time_us / 1e3
        lines.append(f"{size:<19}| {time_us:<16.2f}| {algbw:<22.5f}| {check}")
    return ToolResult(stdout="\n".join(lines) + "\n")


# ------------------------------------------------------------------ nvbandwidth

NVBANDWIDTH_TESTS = {
    "host_to_device_memcpy_ce": ("memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)", "h2d_gbps"),
    "device_to_host_memcpy_ce": ("memcpy CE CPU(row) <- GPU(column) bandwidth (GB/s)", "d2h_gbps"),
}
# Tests nvbandwidth has that the replay does not measure: they are listed as waived.
NVBANDWIDTH_OTHER = (
    "host_to_device_bidirectional_memcpy_ce",
    "device_to_host_bidirectional_memcpy_ce",
    "device_to_device_memcpy_read_ce",
    "device_to_device_memcpy_write_ce",
    "device_to_device_bidirectional_memcpy_read_ce",
    "device_to_device_bidirectional_memcpy_write_ce",
    "all_to_host_memcpy_ce",
    "host_to_all_memcpy_ce",
    "host_to_device_memcpy_sm",
    "device_to_host_memcpy_sm",
    "device_to_device_memcpy_read_sm",
    "device_to_device_memcpy_write_sm",
)


NVBANDWIDTH_HELP = (
    "nvbandwidth CLI:\n"
    "  -h [ --help ]                 Produce help message\n"
    "  -t [ --testcase ] arg         Testcase(s) to run (by name or index)\n"
)


def nvbandwidth(profile: dict, args: list, ctx: Context) -> ToolResult:
    """`nvbandwidth [-t TEST...]`: the two memcpy CE host<->device tests (no -t: those two)."""
    nvidia = profile["nvidia"]
    tests: list = []
    position = 0
    while position < len(args):
        arg = args[position]
        if arg in ("-t", "--testcase"):
            position += 1
            while position < len(args) and not args[position].startswith("-"):
                tests.append(args[position])
                position += 1
            continue
        if arg in ("-h", "--help"):
            return ToolResult(stdout=NVBANDWIDTH_HELP)
        if arg in ("-b", "--bufferSize", "-i", "--testSamples") and position + 1 < len(args):
            position += 2
            continue
        if arg in ("-v", "--verbose", "-j", "--json"):
            position += 1
            continue
        return ToolResult(rc=RC_FAIL, stdout=f"ERROR: unrecognised option '{arg}'\n")
    tests = tests or list(NVBANDWIDTH_TESTS)
    unknown = [test for test in tests if test not in NVBANDWIDTH_TESTS and test not in NVBANDWIDTH_OTHER]
    if unknown:
        return ToolResult(rc=RC_FAIL, stdout=f"ERROR: Testcase {unknown[0]} not found!\n")
    lines = [
        "nvbandwidth Version: v0.5",
        "Built from Git version: v0.5",
        "",
        "NOTE: This tool reports current measured bandwidth on your system.",
        "Additional system-specific tuning may be required to achieve maximal peak bandwidth.",
        "",
        f"CUDA Runtime Version: {cuda_code(nvidia.get('cuda_version', '12.4'))}",
        f"CUDA Driver Version: {cuda_code(nvidia.get('cuda_version', '12.4'))}",
        f"Driver Version: {nvidia['driver_version']}",
        "",
    ]
    if not nccl_ready(profile):  # cuInit fails while the GPUs wait for the NVLink fabric
        lines.append("[CUDA_ERROR_SYSTEM_NOT_READY] system not yet initialized in expression cuInit(0)")
        return ToolResult(rc=RC_FAIL, stdout="\n".join(lines) + "\n")
    for gpu in gpus(profile):
        lines.append(f"Device {gpu['index']}: {gpu['name']} ({gpu['bus_id'].rsplit('.', 1)[0]})")
    lines.append("")
    for test in tests:
        lines.append(f"Running {test}.")
        if test not in NVBANDWIDTH_TESTS:
            lines += ["Waived. ", ""]
            continue
        title, key = NVBANDWIDTH_TESTS[test]
        values = per_gpu(profile, key)
        lines.append(title)
        lines.append("   " + "".join(f"{gpu['index']:>10}" for gpu in gpus(profile)))
        lines.append(" 0 " + "".join(f"{value:>10.2f}" for value in values))
        lines += ["", f"SUM {test} {sum(values):.2f}", ""]
    return ToolResult(stdout="\n".join(lines) + "\n")


def cuda_code(version: str) -> int:
    """'12.4' -> 12040 (cudaRuntimeGetVersion's form)."""
    major, _, minor = str(version).partition(".")
    try:
        return int(major) * 1000 + int(minor or 0) * 10
    except ValueError:
        return 12040


# ------------------------------------------------------------------ hccn_tool -ping


def hccn_ping(profile: dict, npu: dict, args: list) -> ToolResult | None:
    """`-ping -g address ADDR [pkt N]` from NIC `npu` (hccn_tool's device): None when malformed.

    Replies when ADDR is in the NIC's subnet and its link is up, less the profile's
    `perf.hccn_ping_loss_pct` for this device; otherwise every packet is lost."""
    words = args[4:]
    if len(words) not in (2, 4) or words[0] != "address" or (len(words) == 4 and words[2] != "pkt"):
        return None
    try:
        target = ipaddress.IPv4Address(words[1])
        count = int(words[3]) if len(words) == 4 else 3
    except ValueError:
        return None
    if not 1 <= count <= 1000:
        return None
    device = nic_device_id(npu)
    nic = npu.get("nic") or {}
    reachable = False
    if nic.get("address") and nic.get("link") == "UP":
        network = ipaddress.IPv4Network(
            f"{nic['address']}/{nic.get('netmask') or '255.255.255.0'}", strict=False
        )
        reachable = target in network
    loss = ping_loss(profile, device) if reachable else 100.0
    received = [
        seq for seq in range(count) if (seq + 1) * (100.0 - loss) // 100 > seq * (100.0 - loss) // 100
    ]
    lines = [f"device {device} PING {target}"]
    for seq in received:
        millis = 1.418 if seq == 0 else 0.06 + (stable("ping", device, target, seq) % 40) / 1000
        lines.append(f"recv seq={seq},time={millis:.6f}ms")
    percent = 100.0 * (count - len(received)) / count
    lines.append(f"{count} packets transmitted, {len(received)} received, {percent:.2f}% packet loss")
    return ToolResult(stdout="\n".join(lines) + "\n")
