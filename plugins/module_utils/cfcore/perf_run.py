"""Run the performance benchmarks on this node: the engine of module perf_run (docs/design.md,
"Multi-node performance validation").

Three modes, one per step of a round:

    run_local(source, params)   -> node_result   the single-node tests (perf.busy first)
    serve_pairs(source, params) -> {rail: outcome}  ib_write_bw servers, one per rail, one client each
    run_pair(source, params)    -> pair_result   the client side of one pair: ib_write_bw per rail,
                                                 NCCL across both nodes, hccn_tool ping per NPU NIC

Commands run through cfcore.collect.LiveSource (timeouts, C locale, output caps); their outputs are
read by cfcore.parsers and judged by cfcore.checks.perf against the expected figures the controller
resolved for the node's SKU (cfcore.perf_expectations). Stdlib only, Python 3.8-safe: it runs on nodes.
"""

from __future__ import annotations

import glob
import os
import re
import subprocess
import time

from .checks import perf as perf_checks
from .checks.infiniband import compute_cas
from .collect import RC_NOT_FOUND, RC_TIMEOUT, command_line
from .parsers import ParseError, parse
from .parsers.infiniband import read_sysfs_infiniband
from .results import worst
from .scheduler_drain import SlurmParseError, parse_slurm_node, slurm_show

# Where the benchmarks are looked for before PATH (globs; the newest match first): the nccl role's
# nccl-tests prefix (/opt/nccl-tests/<versions>/bin), CANN's hccl_test, NVIDIA's nvbandwidth.
DEFAULT_BIN_DIRS = (
    "/opt/nccl-tests/*/bin",
    "/usr/local/Ascend/ascend-toolkit/latest/tools/hccl_test/bin",
    "/usr/local/nvbandwidth",
    "/opt/nvbandwidth",
)
# A perftest client started before its server prints "Couldn't connect": retried for this long.
CONNECT_RETRY_S = 15.0
OUTPUT_TAIL_LINES = 25


class Outcome:
    """One command's run: argv, rc, the combined output and how long it took."""

    def __init__(self, argv, rc: int, output: str, seconds: float):
        self.argv = list(argv)
        self.rc = rc
        self.output = output
        self.seconds = round(seconds, 2)

    @property
    def command(self) -> str:
        return command_line(self.argv)

    def tail(self, lines: int = OUTPUT_TAIL_LINES) -> list:
        return [line for line in self.output.splitlines() if line.strip()][-lines:]


class Tools:
    """Finds the benchmarks (bin_dirs, then PATH) and runs them with a timeout."""

    def __init__(self, source, bin_dirs=DEFAULT_BIN_DIRS, timeout_s: float = 600):
        self.source = source
        self.bin_dirs = list(bin_dirs)
        self.timeout_s = timeout_s

    def find(self, tool: str):
        for pattern in self.bin_dirs:
            for folder in sorted(glob.glob(pattern), reverse=True):
                candidate = os.path.join(folder, tool)
                if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                    return candidate
        return self.source.which(tool)

    def run(self, argv, timeout=None, env=None) -> Outcome:
        started = time.monotonic()
        rc, out, err = self.source.run(argv, timeout=timeout or self.timeout_s, env=env)
        return Outcome(argv, rc, _joined(out, err), time.monotonic() - started)

    def start(self, argv, env=None):
        """A background process (a perftest server); its output is read by `finish`."""
        environment = dict(self.source.env)
        environment.update(env or {})
        return subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=environment,
            start_new_session=True,
        ), time.monotonic()

    def finish(self, started, timeout: float) -> Outcome:
        proc, clock = started
        try:
            out, _ = proc.communicate(timeout=timeout)
            rc = proc.returncode
        except subprocess.TimeoutExpired:
            _kill(proc)
            out, _ = proc.communicate()
            rc = RC_TIMEOUT
        text = out.decode("utf-8", "replace") if out else ""
        if rc == RC_TIMEOUT:
            text += f"\n{command_line(proc.args)} timed out after {timeout:g} s"
        return Outcome(proc.args, rc, text, time.monotonic() - clock)


def _kill(proc) -> None:
    try:
        os.killpg(proc.pid, 9)
    except OSError:
        proc.kill()


def _joined(out: str, err: str) -> str:
    return out if not err.strip() else (out.rstrip("\n") + "\n" + err if out.strip() else err)


def parsed(kind: str, outcome: Outcome):
    """The parsed output, or a perf_checks.ToolError saying why the tool gave none (could not run)."""
    if outcome.rc == RC_NOT_FOUND:
        return perf_checks.ToolError(outcome.command, "not installed: " + outcome.output.strip(), [])
    if outcome.rc == RC_TIMEOUT:
        return perf_checks.ToolError(outcome.command, "timed out", outcome.tail())
    try:
        facts = parse(kind, outcome.output)
    except ParseError as err:
        return perf_checks.ToolError(outcome.command, f"exit {outcome.rc}: {err}", outcome.tail())
    facts["command"] = outcome.command
    facts["rc"] = outcome.rc
    return facts


def _missing(tool: str, where: str) -> perf_checks.ToolError:
    return perf_checks.ToolError(tool, f"{tool} not found ({where} or PATH)", [])


# ----------------------------------------------------------------- local ----


def run_local(source, params: dict) -> dict:
    """The node result of the single-node tests. `params` are the module's (see perf_run.py)."""
    clock = time.monotonic()
    tools = Tools(source, params.get("bin_dirs") or DEFAULT_BIN_DIRS, params.get("timeout_s") or 600)
    sku = params.get("sku") or {}
    expect = params.get("expectations") or {}
    checks, metrics, facts = [], {}, {"perf_rails": [], "perf_nccl": False, "perf_npu_nics": []}

    busy = _busy_check(tools, params.get("slurm_node"))
    checks.append(busy)
    if busy["status"] == "error":
        return _node_result(source, params, checks, metrics, facts, clock)

    accel = sku.get("accelerator") or {}
    vendor = accel.get("vendor")
    gpus = int(accel.get("count") or 0)
    if vendor == "nvidia":
        _add(checks, metrics, _nccl_local(tools, gpus, params, expect))
        facts["perf_nccl"] = checks[-1]["status"] in ("pass", "warn")
        _add(checks, metrics, _nvbandwidth(tools, expect))
    else:
        checks.append(_skip("perf.nccl_local", "no NVIDIA GPUs on this SKU"))
        checks.append(_skip("perf.nvbandwidth", "no NVIDIA GPUs on this SKU"))

    rails = _rails(source, params, sku.get("hca"))
    facts["perf_rails"] = rails
    if sku.get("hca") is None:
        checks.append(_skip("perf.ib_loopback", "the SKU has no compute-fabric HCAs (hca: null)"))
    else:
        gpudirect = bool(params.get("gpudirect")) and vendor == "nvidia" and gpus > 0
        per_rail = {
            rail: _loopback(tools, rail, index, gpus if gpudirect else 0, params)
            for index, rail in enumerate(rails)
        }
        _add(checks, metrics, perf_checks.ib_loopback(per_rail, expect.get("ib_write_bw_gbps")))

    if vendor == "huawei":
        npus = int(accel.get("count") or 0)
        _add(checks, metrics, _hccl_local(tools, npus, params, expect))
        facts["perf_npu_nics"] = [int(d["id"]) for d in params.get("hccn_devices") or []]
    else:
        checks.append(_skip("perf.hccl_local", "no Ascend NPUs on this SKU"))

    mount = params.get("storage_mount")
    if mount:
        _add(checks, metrics, _storage(tools, mount, params, expect))
    else:
        checks.append(_skip("perf.storage", "the node mounts no JuiceFS file system"))
    return _node_result(source, params, checks, metrics, facts, clock)


def _add(checks: list, metrics: dict, judged) -> None:
    check, figures = judged
    checks.append(check)
    metrics.update(figures or {})


def _skip(check_id: str, why: str) -> dict:
    return {"id": check_id, "status": "skip", "message": why, "evidence": {}, "remedy": ""}


def _node_result(source, params: dict, checks: list, metrics: dict, facts: dict, clock: float) -> dict:
    statuses = [c["status"] for c in checks if c["status"] != "skip"]
    return {
        "host": source.hostname(),
        "node_sku": params.get("node_sku"),
        "level": "perf",
        "status": worst(statuses) if statuses else "skip",
        "checks": checks,
        "metrics": metrics,
        "facts": facts,
        "source": "live",
        "collected_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "duration_s": round(time.monotonic() - clock, 3),
    }


def _busy_check(tools: Tools, slurm_node) -> dict:
    """perf.busy: benchmarks on a node with jobs would measure the jobs, and slow them."""
    check = {"id": "perf.busy", "evidence": {}, "remedy": ""}
    if not slurm_node:
        return {**check, "status": "pass", "message": "not a Slurm worker: nothing to ask a scheduler"}
    outcome = tools.run(slurm_show(slurm_node), timeout=30)
    check["evidence"] = {"command": outcome.command, "lines": outcome.tail(3)}
    try:
        node = parse_slurm_node(outcome.output)
    except SlurmParseError as err:
        return {
            **check,
            "status": "error",
            "message": f"could not run: cannot tell whether Slurm runs jobs here ({err})",
            "remedy": "check that scontrol reaches slurmctld from this node, then rerun",
        }
    if node["state"] in ("ALLOCATED", "MIXED", "COMPLETING") or node["draining"]:
        return {
            **check,
            "status": "error",
            "message": f"could not run: Slurm node {slurm_node} is {node['state']} with jobs"
            + (" (draining)" if node["draining"] else ""),
            "remedy": f"drain it first (scontrol update NodeName={slurm_node} State=DRAIN Reason=perf) "
            "and wait for its jobs to end, or run perf validation in a maintenance window",
        }
    state = node["state"] + ("+DRAIN" if node["drain"] else "")
    return {**check, "status": "pass", "message": f"Slurm node {slurm_node} is {state}: no job runs"}


def _nccl_local(tools: Tools, gpus: int, params: dict, expect: dict):
    binary = tools.find("all_reduce_perf")
    if binary is None:
        return perf_checks.nccl_local(
            _missing("all_reduce_perf", "nccl-tests: role nccl with nccl_tests_build: true"),
            expect.get("nccl_local_busbw_gbps"),
        )
    argv = [binary, "-b", "8", "-e", str(params.get("nccl_max_bytes") or "8G"), "-f", "2", "-g", str(gpus)]
    return perf_checks.nccl_local(parsed("nccl-tests", tools.run(argv)), expect.get("nccl_local_busbw_gbps"))


def _nvbandwidth(tools: Tools, expect: dict):
    binary = tools.find("nvbandwidth")
    if binary is None:
        return _skip("perf.nvbandwidth", "nvbandwidth is not installed (optional)"), {}
    argv = [binary, "-t", "host_to_device_memcpy_ce", "device_to_host_memcpy_ce"]
    return perf_checks.nvbandwidth(
        parsed("nvbandwidth", tools.run(argv)), expect.get("h2d_gbps"), expect.get("d2h_gbps")
    )


def _rails(source, params: dict, hca) -> list:
    """The node's compute HCAs (the SKU's, read from sysfs), in natural order: the rails."""
    if hca is None:
        return []
    try:
        hcas = read_sysfs_infiniband(params.get("sysfs_root") or "/")
    except (ParseError, OSError):
        return []
    return [str(ca["name"]) for ca in compute_cas(_Facts(hcas), hca)]


class _Facts:
    """compute_cas reads `.data`, as on a collected tool output."""

    def __init__(self, data):
        self.data = data


def perftest_argv(binary: str, rail: str, port: int, params: dict, gpu=None) -> list:
    """ib_write_bw's command line, the same for server and client (the client adds the address)."""
    argv = [binary, "-d", rail, "-F", "--report_gbits", "-D", str(params.get("ib_duration_s") or 5)]
    argv += ["-p", str(port)]
    if gpu is not None:
        argv.append(f"--use_cuda={gpu}")
    return argv


def _loopback(tools: Tools, rail: str, index: int, gpus: int, params: dict):
    binary = tools.find("ib_write_bw")
    if binary is None:
        return _missing("ib_write_bw", "perftest: role rdma")
    gpu = index % gpus if gpus else None
    argv = perftest_argv(binary, rail, int(params.get("ib_base_port") or 18515) + index, params, gpu)
    server = tools.start(argv)
    client = client_with_retry(tools, [*argv, "127.0.0.1"])
    served = tools.finish(server, timeout=10 if client.rc else 60)
    if client.rc and served.rc == 0:
        return parsed("ib-perftest", served)
    result = parsed("ib-perftest", client)
    if isinstance(result, perf_checks.ToolError) and served.rc:
        result.output_tail = [*result.output_tail, "server:", *served.tail(8)]
    return result


def client_with_retry(tools: Tools, argv: list) -> Outcome:
    """A perftest client, run again while its server is not listening yet (up to CONNECT_RETRY_S)."""
    deadline = time.monotonic() + CONNECT_RETRY_S
    while True:
        outcome = tools.run(argv)
        refused = outcome.rc != 0 and re.search(
            r"Couldn't connect|Unable to open file descriptor", outcome.output
        )
        if not refused or time.monotonic() > deadline:
            return outcome
        time.sleep(0.5)


def _hccl_local(tools: Tools, npus: int, params: dict, expect: dict):
    test = tools.find("all_reduce_test")
    mpirun = tools.find("mpirun")
    if test is None or mpirun is None:
        missing = "all_reduce_test (CANN hccl_test)" if test is None else "mpirun (MPI)"
        return perf_checks.hccl_local(
            _missing(missing, "CANN's tools/hccl_test/bin"), expect.get("hccl_local_algbw_gbps")
        )
    argv = [
        mpirun,
        "--allow-run-as-root",
        "-n",
        str(npus),
        test,
        "-b",
        "8K",
        "-e",
        str(params.get("hccl_max_bytes") or "1G"),
        "-f",
        "2",
        "-p",
        str(npus),
    ]
    return perf_checks.hccl_local(parsed("hccl-test", tools.run(argv)), expect.get("hccl_local_algbw_gbps"))


def _storage(tools: Tools, mount: str, params: dict, expect: dict):
    binary = tools.find("juicefs")
    if binary is None:
        result = _missing("juicefs", "the juicefs role's binary")
    else:
        bench = params.get("storage_bench") or {}
        argv = [
            binary,
            "bench",
            mount,
            "-p",
            str(bench.get("threads", 4)),
            "--big-file-size",
            str(bench.get("big_file_mib", 1024)),
            "--small-file-count",
            str(bench.get("small_file_count", 100)),
        ]
        result = parsed("juicefs-bench", tools.run(argv))
    return perf_checks.storage(result, expect.get("storage_write_mibps"), expect.get("storage_read_mibps"))


# ----------------------------------------------------------------- pairs ----


def serve_pairs(source, params: dict) -> dict:
    """ib_write_bw servers for the pair's rails (port base + the rail's index in the pair), each
    serving one client; returns {rail: {rc, tail}} once all have ended or timed out."""
    tools = Tools(source, params.get("bin_dirs") or DEFAULT_BIN_DIRS, params.get("timeout_s") or 600)
    binary = tools.find("ib_write_bw")
    rails = [r for r in params.get("rails") or [] if not _pseudo(r)]
    if binary is None:
        return {rail: {"rc": RC_NOT_FOUND, "tail": ["ib_write_bw not found"]} for rail in rails}
    base = int(params.get("ib_base_port") or 18515)
    gpus = int(params.get("gpudirect_gpus") or 0)
    started = {
        rail: tools.start(perftest_argv(binary, rail, base + index, params, index % gpus if gpus else None))
        for index, rail in enumerate(params.get("rails") or [])
        if not _pseudo(rail)
    }
    timeout = float(params.get("serve_timeout_s") or 300)
    served = {}
    deadline = time.monotonic() + timeout
    for rail, process in started.items():
        outcome = tools.finish(process, timeout=max(1.0, deadline - time.monotonic()))
        served[rail] = {"rc": outcome.rc, "tail": outcome.tail(8), "command": outcome.command}
    return served


def _pseudo(rail: str) -> bool:
    """`nccl` and the NPU NICs (`npu0`...) are tested by other tools than ib_write_bw."""
    return rail == "nccl" or rail.startswith("npu")


def run_pair(source, params: dict) -> dict:
    """The client side of one pair: {a, b, results: {rail: {status, gbps, message, evidence}}}."""
    tools = Tools(source, params.get("bin_dirs") or DEFAULT_BIN_DIRS, params.get("timeout_s") or 600)
    expect = params.get("expectations") or {}
    peer = params["peer"]
    rails = list(params.get("rails") or [])
    base = int(params.get("ib_base_port") or 18515)
    gpus = int(params.get("gpudirect_gpus") or 0)
    results = {}
    binary = tools.find("ib_write_bw")
    for index, rail in enumerate(rails):
        if _pseudo(rail):
            continue
        if binary is None:
            outcome = _missing("ib_write_bw", "perftest: role rdma")
        else:
            argv = perftest_argv(binary, rail, base + index, params, index % gpus if gpus else None)
            outcome = parsed("ib-perftest", client_with_retry(tools, [*argv, peer["address"]]))
        results[rail] = perf_checks.pair_rail(outcome, expect.get("ib_write_bw_gbps")).as_dict()
    if "nccl" in rails:
        results["nccl"] = perf_checks.pair_nccl(
            _nccl_pair(tools, params), expect.get("nccl_pair_busbw_gbps")
        ).as_dict()
    for rail in rails:
        if rail.startswith("npu"):
            results[rail] = perf_checks.pair_hccn_ping(
                _hccn_ping(tools, int(rail[3:]), peer), expect.get("hccn_ping_loss_pct_max")
            ).as_dict()
    return {"a": params.get("self"), "b": peer.get("name"), "results": results}


def _nccl_pair(tools: Tools, params: dict):
    binary = tools.find("all_reduce_perf")
    mpirun = tools.find("mpirun")
    if binary is None or mpirun is None:
        return _missing("all_reduce_perf" if binary is None else "mpirun", "nccl-tests and MPI")
    gpus = int(params.get("gpus") or 1)
    hosts = f"{params['self_address']}:{gpus},{params['peer']['address']}:{gpus}"
    argv = [mpirun, "--allow-run-as-root", "-np", str(2 * gpus), "-H", hosts, "--bind-to", "none"]
    rails = [r for r in params.get("rails") or [] if not _pseudo(r)]
    if rails:
        argv += ["-x", "NCCL_IB_HCA=" + ",".join(rails)]
    argv += [binary, "-b", "8", "-e", str(params.get("nccl_max_bytes") or "8G"), "-f", "2", "-g", "1"]
    return parsed("nccl-tests", tools.run(argv))


def _hccn_ping(tools: Tools, nic: int, peer: dict):
    binary = tools.find("hccn_tool")
    address = (peer.get("npu_nics") or {}).get(str(nic)) or (peer.get("npu_nics") or {}).get(nic)
    if binary is None:
        return _missing("hccn_tool", "the Ascend driver")
    if not address:
        return perf_checks.ToolError("hccn_tool", f"the peer has no NPU NIC {nic} in hccn_devices", [])
    return parsed("hccn-ping", tools.run([binary, "-i", str(nic), "-ping", "-g", "address", address]))
