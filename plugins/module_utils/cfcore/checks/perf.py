"""`perf.*` checks: benchmark results against the SKU's expected figures (docs/design.md,
"Multi-node performance validation").

Inputs. Each check reads the parsed facts of one benchmark run (cfcore.parsers kinds
nccl-tests, nvbandwidth, ib-perftest, hccl-test, juicefs-bench, hccn-ping), to which the
runner may add "command" (the command line, for evidence) and "rc" (its exit status). A
benchmark that could not run is a `ToolError(command, message, output_tail)` instead of
facts: the tool is missing, timed out, or printed something that is not its output. The
expectation is a figure spec of cfcore.perf_expectations ({typical, floor, warn?, source};
{max, source} for the ping loss), or None when the SKU has none.

Status, the same for every check:
  error  could not run: a ToolError, or output without the figure (never a pass);
  fail   the figure is below the floor (above `max` for loss), or the output reports
         wrong results or errors (NCCL failures, result checks, completion errors);
  warn   below `warn`, no expected figure to compare with (the value is in the message
         and evidence), or a non-zero exit status behind an otherwise clean output;
  pass   otherwise.
Evidence holds the command, the measured and expected figures (also as `measured` and
`expected`) and, as `source`, where the expectation comes from.

The single-node checks (`nccl_local`, `nvbandwidth`, `ib_loopback`, `hccl_local`, `storage`)
return (check result, metrics). The pair tests (`pair_rail`, `pair_nccl`, `pair_hccn_ping`)
return a PairOutcome: the tuple (status, value) (Gb/s, GB/s, or % lost) with `.message`,
`.evidence` and `.as_dict()` -> {status, gbps, message, evidence} (+ loss_pct) for the pair
results of report.json.

Stdlib only, Python 3.8-safe: it runs on the nodes, inside module perf_run.
"""

from __future__ import annotations

import re

from ..results import ERROR, FAIL, PASS, WARN, evidence, result, worst

NCCL_LOCAL = "perf.nccl_local"
NVBANDWIDTH = "perf.nvbandwidth"
IB_LOOPBACK = "perf.ib_loopback"
HCCL_LOCAL = "perf.hccl_local"
STORAGE = "perf.storage"

H2D_TESTCASE = "host_to_device_memcpy_ce"
D2H_TESTCASE = "device_to_host_memcpy_ce"

# The commands of the design's table, for evidence when the facts do not name theirs.
DEFAULT_COMMANDS = {
    NCCL_LOCAL: "all_reduce_perf -b 8 -e 8G -f 2 -g <GPUs>",
    NVBANDWIDTH: f"nvbandwidth -t {H2D_TESTCASE} {D2H_TESTCASE}",
    IB_LOOPBACK: "ib_write_bw -d <rail> -F --report_gbits (server and client on 127.0.0.1)",
    HCCL_LOCAL: "mpirun -n <NPUs> all_reduce_test -b 8K -e 1G -f 2 -p <NPUs>",
    STORAGE: "juicefs bench <mount>",
    "pair_rail": "ib_write_bw -d <rail> -F --report_gbits <peer>",
    "pair_nccl": "mpirun -np <2G> -H a:G,b:G all_reduce_perf -b 8 -e 8G -f 2 -g 1",
    "pair_hccn_ping": "hccn_tool -i <nic> -ping -g address <peer>",
}

# What to install when a benchmark is missing, by check.
_INSTALL = {
    NCCL_LOCAL: "build nccl-tests on the node (role nccl with nccl_tests_build: true)",
    NVBANDWIDTH: "install NVIDIA's nvbandwidth (or let the check skip where it is not installed)",
    IB_LOOPBACK: "install perftest (role rdma) so ib_write_bw is on PATH",
    HCCL_LOCAL: "install the CANN toolkit with its tools/hccl_test built, and MPI (role ascend)",
    STORAGE: "install the juicefs client (role juicefs)",
    "pair_rail": "install perftest (role rdma) on both nodes",
    "pair_nccl": "build nccl-tests and install the same MPI on both nodes (role nccl)",
    "pair_hccn_ping": "hccn_tool comes with the Ascend driver: install it (role ascend)",
}

REMEDY_NCCL_LOCAL = (
    "check NVLink and NVSwitch: `nvidia-smi nvlink -s` (every link up at its full speed), "
    "`nvidia-smi -q | grep -A2 -i fabric` (State Completed, Status Success) and "
    "`systemctl status nvidia-fabricmanager` (running, its version equal to the driver's); "
    "`nvidia-smi topo -m` shows NV18 between every pair of GPUs; below warn only: NVLS needs "
    "NCCL >= 2.17 and NCCL_NVLS_ENABLE unset; also `nvidia-smi -q -d PERFORMANCE` for clock throttling"
)
REMEDY_NCCL_WRONG = (
    "wrong results are data corruption: drain the node, look for Xid errors (`dmesg | grep -i xid`), "
    "ECC and remapped rows (`nvidia-smi -q -d ECC,ROW_REMAPPER`) and run `dcgmi diag -r 3`; "
    "replace the GPU (or baseboard) that they point at"
)
REMEDY_NCCL_FAILED = (
    "rerun with NCCL_DEBUG=INFO and read the first NCCL WARN: a transport or IB error points at a "
    "rail (ibstat, the switch port), a CUDA error at a GPU (dmesg Xid)"
)
REMEDY_NCCL_PAIR = (
    "look at the pair's rail results first: a slow rail explains a slow all_reduce; else rerun with "
    "NCCL_DEBUG=INFO and check the NICs NCCL picks (NCCL_IB_HCA), GPUDirect RDMA (nvidia_peermem, "
    "'GDRDMA' in the log) and the fabric's routing (adaptive routing, SHARP) between the two nodes"
)
REMEDY_H2D = (
    "check the slow GPU's PCIe link: `nvidia-smi -q -d PCI` (or `lspci -vv -s BUS | grep LnkSta`) "
    "must show 32GT/s x16 (Gen5); a GPU trained lower needs reseating and its riser, retimer or "
    "PCIe switch checked, and the BIOS PCIe settings (link speed, ACS); every GPU slow: check "
    "IOMMU passthrough (iommu=pt), NUMA placement and CPU throttling, then rerun nvbandwidth"
)
REMEDY_LOOPBACK = (
    "a loopback stays inside the HCA: a slow rail points at its PCIe link (`lspci -vv -s BUS | grep "
    "LnkSta`: the HCA's full speed and width) or, with --use_cuda, the GPU to HCA path "
    "(nvidia_peermem loaded, ACS off on the PCIe switch, `nvidia-smi topo -m` PIX/PXB); completion "
    "errors: `dmesg | grep mlx5`, the HCA firmware (`mlxfwmanager --query`), then reset or replace the HCA"
)
REMEDY_RAIL = (
    "a slow rail between two nodes: check both ports (`ibstat RAIL`: Active at the full rate; "
    "`mlxlink -d RAIL -m -c` for the cable, FEC and BER), reseat or replace the cable or transceiver, "
    "and check the switch ports' counters (symbol errors, link downed, port rcv errors)"
)
REMEDY_HCCL = (
    "check the NPUs and their links: `npu-smi info` (every NPU OK, none in use), "
    "`npu-smi info -t health -i N`, `hccn_tool -i N -link -g` and `-net_health -g` on every NIC, "
    "and the device log (/var/log/npu/slog) for HCCL errors; keep driver, firmware and CANN versions "
    "compatible (npu.firmware_compat)"
)
REMEDY_STORAGE = (
    "check what the mount stands on: the object store's throughput from this node "
    "(`juicefs objbench BUCKET`), the network path to it, the metadata engine's latency "
    "(`juicefs stats MOUNT`, `juicefs status META-URL`) and the cache disk (juicefs_cache_dir)"
)
REMEDY_NPU_PING = (
    "check both NPU NICs: `hccn_tool -i N -link -g` (UP), `-net_health -g`, `-ip -g` and the "
    "route between them; reseat or replace the cable or optical module, check the switch port"
)
REMEDY_NO_FIGURE = (
    "measure healthy nodes of this SKU and set the figure in perf_expectations "
    "(group_vars, cfcore/data/perf_expectations.yml has the shape)"
)

NO_FIGURE = "no expected figure for this SKU to compare with"

_NOT_INSTALLED = re.compile(r"not (?:installed|found)|no such file|command not found", re.IGNORECASE)
_TIMED_OUT = re.compile(r"timed? ?out", re.IGNORECASE)


class ToolError:
    """A benchmark that could not run: its command, why (`message`), the last lines it printed."""

    __slots__ = ("command", "message", "output_tail")

    def __init__(self, command: str, message: str, output_tail=None):
        self.command = str(command or "")
        self.message = str(message or "").strip()
        self.output_tail = [str(line) for line in output_tail or []]

    def as_dict(self) -> dict:
        return {"error": self.message, "command": self.command, "output_tail": list(self.output_tail)}

    @classmethod
    def from_dict(cls, value: dict) -> ToolError:
        """The JSON form back (as_dict's)."""
        return cls(value.get("command") or "", value.get("error") or "", value.get("output_tail") or [])

    def __eq__(self, other) -> bool:
        return isinstance(other, ToolError) and self.as_dict() == other.as_dict()

    def __repr__(self) -> str:
        return f"ToolError({self.command!r}, {self.message!r})"


class PairOutcome(tuple):
    """(status, value) of one pair test; `message`, `evidence` and `remedy` say why and what next."""

    def __new__(cls, status: str, value, message: str, found: dict, remedy=None, value_key: str = "gbps"):
        outcome = super().__new__(cls, (status, value))
        outcome.message = message
        outcome.evidence = found
        outcome.remedy = remedy if status != PASS else None
        outcome.value_key = value_key
        return outcome

    @property
    def status(self) -> str:
        return self[0]

    @property
    def value(self):
        return self[1]

    def as_dict(self) -> dict:
        """The pair result of report.json: {status, gbps, message, evidence, remedy} (+ loss_pct of pings)."""
        found = {"status": self[0], "gbps": self[1] if self.value_key == "gbps" else None}
        if self.value_key != "gbps":
            found[self.value_key] = self[1]
        found.update(message=self.message, evidence=self.evidence, remedy=self.remedy)
        return found


# --- shared -------------------------------------------------------------------------


def _input(facts, what: str):
    """The facts as given, or a ToolError when there are none (a runner that collected nothing)."""
    if isinstance(facts, (ToolError, dict)):
        return facts
    return ToolError(DEFAULT_COMMANDS[what], f"no output was collected (got {type(facts).__name__})")


def _command(facts, what: str) -> str:
    if isinstance(facts, ToolError):
        return facts.command or DEFAULT_COMMANDS[what]
    return str((facts or {}).get("command") or DEFAULT_COMMANDS[what])


def _could_not_run(error: ToolError, what: str):
    """(message, evidence, remedy) of a benchmark that did not run."""
    command = error.command or DEFAULT_COMMANDS[what]
    if _NOT_INSTALLED.search(error.message):
        remedy = _INSTALL[what]
    elif _TIMED_OUT.search(error.message):
        remedy = (
            "it hung past perf_test_timeout_s: check the kernel log (Xid, mlx5 errors) and that nothing "
            "else uses the devices; raise perf_test_timeout_s only for slow storage"
        )
    else:
        remedy = f"run `{command}` on the node and fix what it reports"
    lines = [f"error: {error.message}", *error.output_tail]
    return f"could not run: {error.message}", evidence(command, lines), remedy


def _fmt(value) -> str:
    return "-" if value is None else f"{value:.2f}".rstrip("0").rstrip(".")


def _expected(expectation) -> dict:
    return {key: expectation[key] for key in ("typical", "warn", "floor", "max") if key in expectation}


def _expected_line(expectation, unit: str) -> str:
    if not expectation:
        return "expected: no figure for this SKU (perf_expectations)"
    if "max" in expectation:
        return f"expected: at most {_fmt(expectation['max'])} {unit}"
    warn = f", warn below {_fmt(expectation['warn'])}" if expectation.get("warn") is not None else ""
    floor = f", fail below {_fmt(expectation['floor'])}"
    return f"expected: typical {_fmt(expectation['typical'])} {unit}{warn}{floor}"


def _judge(value: float, expectation, unit: str):
    """(status, why) of one bandwidth figure against its expectation."""
    if not expectation:
        return WARN, NO_FIGURE
    floor, warn = expectation.get("floor"), expectation.get("warn")
    typical = f"typical {_fmt(expectation.get('typical'))} {unit}"
    if floor is not None and value < floor:
        return FAIL, f"below the floor {_fmt(floor)} {unit} ({typical})"
    if warn is not None and value < warn:
        return WARN, f"below the warning level {_fmt(warn)} {unit} ({typical})"
    return PASS, typical


def _found(command: str, lines, expectation, measured: dict) -> dict:
    found = evidence(command, lines)
    found["measured"] = measured
    found["expected"] = _expected(expectation) if expectation else None
    if expectation and expectation.get("source"):
        found["source"] = expectation["source"]
    return found


def _exit_note(facts) -> str | None:
    rc = facts.get("rc") if isinstance(facts, dict) else None
    return f"exit status {rc}" if isinstance(rc, int) and rc != 0 else None


def _largest(rows: list):
    """The row of the largest message size (the bandwidth figure's size)."""
    sized = [row for row in rows or [] if isinstance(row, dict) and row.get("size_bytes") is not None]
    return max(sized, key=lambda row: row["size_bytes"]) if sized else None


def _size(size_bytes) -> str:
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size_bytes >= factor and size_bytes % factor == 0:
            return f"{size_bytes // factor} {unit}"
    return f"{size_bytes} B"


def _single(check_id: str, status: str, message: str, found: dict, remedy: str | None) -> dict:
    return result(check_id, status, message, found, remedy if status != PASS else None)


# --- NCCL (perf.nccl_local, pair nccl) ----------------------------------------------


def _nccl_busbw(facts: dict):
    """(busbw, row): the larger of out-of-place and in-place busbw at the largest size."""
    row = _largest(facts.get("rows"))
    if row is None:
        return None, None
    sides = [side.get("busbw_gbps") for side in (row.get("out_of_place"), row.get("in_place")) if side]
    values = [value for value in sides if value is not None]
    return (max(values) if values else None), row


def _nccl_verdict(facts: dict, expectation, what: str):
    """(status, busbw, message, lines, remedy) of one nccl-tests run."""
    busbw, row = _nccl_busbw(facts)
    lines = []
    if row is not None:
        sides = [(name, (row.get(key) or {}).get("busbw_gbps")) for name, key in
                 (("out-of-place", "out_of_place"), ("in-place", "in_place"))]  # fmt: skip
        lines.append(
            f"measured: busbw {_fmt(busbw)} GB/s at {_size(row['size_bytes'])} ("
            + ", ".join(f"{name} {_fmt(value)}" for name, value in sides if value is not None)
            + f"; {facts.get('n_ranks') or '?'} ranks)"
        )
    lines.append(_expected_line(expectation, "GB/s"))
    lines += [f"failure: {line}" for line in facts.get("failures") or []][:5]
    lines += [f"warning: {line}" for line in facts.get("warnings") or []][:3]
    if facts.get("wrong_results"):
        message = f"{what}: wrong results ({facts.get('errors')} values out of bounds)"
        return FAIL, busbw, message, lines, REMEDY_NCCL_WRONG
    if facts.get("failures"):
        return FAIL, busbw, f"{what} failed: {facts['failures'][0]}", lines, REMEDY_NCCL_FAILED
    if busbw is None:
        return ERROR, None, f"could not run: {what} printed no bandwidth", lines, REMEDY_NCCL_FAILED
    if not facts.get("completed", True):
        message = f"could not run: {what} stopped before its summary (last size {_size(row['size_bytes'])})"
        return ERROR, busbw, message, lines, REMEDY_NCCL_FAILED
    status, why = _judge(busbw, expectation, "GB/s")
    message = f"{what} bus bandwidth {_fmt(busbw)} GB/s at {_size(row['size_bytes'])}: {why}"
    exited = _exit_note(facts)
    if exited and status == PASS:
        status, message = WARN, f"{message}; but {exited} although the output shows no error"
    return status, busbw, message, lines, REMEDY_NCCL_LOCAL if expectation else REMEDY_NO_FIGURE


def nccl_local(facts, expectation, *, command: str | None = None) -> tuple:
    """perf.nccl_local: all_reduce_perf over the node's GPUs -> perf.nccl_local_busbw_gbps."""
    facts = _input(facts, NCCL_LOCAL)
    if isinstance(facts, ToolError):
        message, found, remedy = _could_not_run(facts, NCCL_LOCAL)
        return result(NCCL_LOCAL, ERROR, message, found, remedy), {}
    command = command or _command(facts, NCCL_LOCAL)
    status, busbw, message, lines, remedy = _nccl_verdict(facts, expectation, "all_reduce")
    # A run that stopped early measured a smaller size: no figure for the fleet to compare.
    complete = busbw is not None and status != ERROR and facts.get("completed", True)
    metrics = {"perf.nccl_local_busbw_gbps": busbw} if complete else {}
    found = _found(command, lines, expectation, metrics)
    return _single(NCCL_LOCAL, status, message, found, remedy), metrics


def pair_nccl(facts, expectation, *, command: str | None = None) -> PairOutcome:
    """The two-node all_reduce of a pair (the `nccl` pseudo-rail): (status, busbw GB/s)."""
    facts = _input(facts, "pair_nccl")
    if isinstance(facts, ToolError):
        message, found, remedy = _could_not_run(facts, "pair_nccl")
        return PairOutcome(ERROR, None, message, found, remedy)
    command = command or _command(facts, "pair_nccl")
    status, busbw, message, lines, remedy = _nccl_verdict(facts, expectation, "two-node all_reduce")
    if remedy == REMEDY_NCCL_LOCAL:
        remedy = REMEDY_NCCL_PAIR
    found = _found(command, lines, expectation, {"busbw_gbps": busbw})
    return PairOutcome(status, busbw, message, found, remedy)


# --- nvbandwidth (perf.nvbandwidth) -------------------------------------------------


def _gpu_order(key) -> tuple:
    text = str(key)
    return (0, int(text), "") if text.isdigit() else (1, 0, text)


def _copy_direction(facts: dict, testcase: str, expectation, label: str):
    """(status, slowest GB/s, findings, lines) of one copy direction, judged per GPU."""
    case = (facts.get("testcases") or {}).get(testcase)
    if not case or case.get("status") == "error" or not case.get("per_gpu_gbps"):
        why = (case or {}).get("message") or "no result (waived or not run)"
        return ERROR, None, [f"{label}: {testcase} gave {why}"], [f"{testcase}: {why}"]
    per_gpu = case["per_gpu_gbps"]
    measured = {gpu: value for gpu, value in per_gpu.items() if value is not None}
    order = sorted(per_gpu, key=_gpu_order)
    lines = [f"{testcase}: " + ", ".join(f"GPU {gpu} {_fmt(per_gpu[gpu])}" for gpu in order) + " GB/s"]
    statuses, findings = [], []
    missing = sorted((gpu for gpu, value in per_gpu.items() if value is None), key=_gpu_order)
    if missing:
        statuses.append(FAIL)
        findings.append(f"{label}: no copy to GPU {', '.join(missing)} (N/A)")
    for gpu in sorted(measured, key=_gpu_order):
        status, why = _judge(measured[gpu], expectation, "GB/s")
        if status != PASS and expectation:
            findings.append(f"{label}: GPU {gpu} at {_fmt(measured[gpu])} GB/s is {why}")
        statuses.append(status)
    slowest = min(measured.values()) if measured else None
    if not expectation and slowest is not None:
        findings.append(f"{label}: slowest GPU {_fmt(slowest)} GB/s, {NO_FIGURE}")
    if not statuses:
        statuses.append(ERROR)
    return worst(statuses), slowest, findings, lines


def nvbandwidth(facts, expectation_h2d, expectation_d2h, *, command: str | None = None) -> tuple:
    """perf.nvbandwidth: host<->GPU copies per GPU -> perf.h2d_min_gbps, perf.d2h_min_gbps."""
    facts = _input(facts, NVBANDWIDTH)
    if isinstance(facts, ToolError):
        message, found, remedy = _could_not_run(facts, NVBANDWIDTH)
        return result(NVBANDWIDTH, ERROR, message, found, remedy), {}
    command = command or _command(facts, NVBANDWIDTH)
    metrics, statuses, findings, lines = {}, [], [], []
    for testcase, expectation, label, metric in (
        (H2D_TESTCASE, expectation_h2d, "host to device", "perf.h2d_min_gbps"),
        (D2H_TESTCASE, expectation_d2h, "device to host", "perf.d2h_min_gbps"),
    ):
        status, slowest, found_here, lines_here = _copy_direction(facts, testcase, expectation, label)
        statuses.append(status)
        findings += found_here
        lines += [*lines_here, f"{label} {_expected_line(expectation, 'GB/s')}"]
        if slowest is not None:
            metrics[metric] = slowest
    errors = facts.get("errors") or []
    if errors:
        statuses.append(FAIL)
        findings.append(f"nvbandwidth reported errors: {errors[0]}")
        lines += [f"error: {line}" for line in errors[:5]]
    status = worst(statuses)
    if status == PASS:
        message = "host to device {} GB/s, device to host {} GB/s at the slowest GPU".format(
            _fmt(metrics.get("perf.h2d_min_gbps")), _fmt(metrics.get("perf.d2h_min_gbps"))
        )
        exited = _exit_note(facts)
        if exited:
            status, message = WARN, f"{message}; but {exited} although the output shows no error"
    else:
        message = "; ".join(findings)
    if status == ERROR and not errors:
        message = f"could not run: {message}"
    found = _found(command, lines, expectation_h2d or expectation_d2h, metrics)
    found["expected"] = {
        "h2d": _expected(expectation_h2d) if expectation_h2d else None,
        "d2h": _expected(expectation_d2h) if expectation_d2h else None,
    }
    sources = sorted({e["source"] for e in (expectation_h2d, expectation_d2h) if e and e.get("source")})
    if sources:
        found["source"] = "; ".join(sources)
    no_figure = not (expectation_h2d and expectation_d2h)
    remedy = REMEDY_NO_FIGURE if no_figure and status == WARN and not errors else REMEDY_H2D
    if status == ERROR:
        remedy = f"run `{command}` on the node and check that it prints both testcases"
    return _single(NVBANDWIDTH, status, message, found, remedy), metrics


# --- perftest (perf.ib_loopback, pair rails) ----------------------------------------


def _perftest_verdict(facts: dict, expectation):
    """(status, Gb/s, why, lines) of one ib_write_bw run."""
    gbps = facts.get("bw_avg_gbps")
    row = _largest(facts.get("rows"))
    lines = []
    if gbps is not None:
        size = _size(row["size_bytes"]) if row else "?"
        gpu = ", GPU memory (GPUDirect)" if facts.get("gpudirect") else ""
        lines.append(f"measured: BW average {_fmt(gbps)} Gb/s at {size} on {facts.get('device') or '?'}{gpu}")
    lines.append(_expected_line(expectation, "Gb/s"))
    errors = facts.get("errors") or []
    lines += [f"error: {line}" for line in errors[:5]]
    if errors:
        return FAIL, gbps, f"errors: {errors[0]}", lines
    if facts.get("kind") not in (None, "bw"):
        return ERROR, None, f"could not run: {facts.get('test') or 'the test'} is not a bandwidth test", lines
    if gbps is None:
        return ERROR, None, "could not run: ib_write_bw printed no bandwidth", lines
    status, why = _judge(gbps, expectation, "Gb/s")
    message = f"{_fmt(gbps)} Gb/s: {why}"
    exited = _exit_note(facts)
    if exited and status == PASS:
        status, message = WARN, f"{message}; but {exited} although the output shows no error"
    return status, gbps, message, lines


def ib_loopback(per_rail: dict, expectation, *, command: str | None = None) -> tuple:
    """perf.ib_loopback: ib_write_bw through each rail to itself -> perf.ib_loopback_min_gbps."""
    command = command or DEFAULT_COMMANDS[IB_LOOPBACK]
    if not per_rail:
        found = evidence(command, ["no compute HCA found on the node although the SKU has hca"])
        return result(
            IB_LOOPBACK,
            ERROR,
            "could not run: no compute-fabric rail found to test",
            found,
            "check the HCAs: `ibstat`, /sys/class/infiniband, and ib.hca_count of `clusterforge validate`",
        ), {}
    statuses, findings, lines, measured, commands, remedies = [], [], [], {}, [], []
    for rail in sorted(per_rail, key=_natural):
        facts = _input(per_rail[rail], IB_LOOPBACK)
        if isinstance(facts, ToolError):
            message, found, remedy = _could_not_run(facts, IB_LOOPBACK)
            statuses.append(ERROR)
            findings.append(f"{rail}: {message}")
            lines += [f"{rail}: {line}" for line in found["lines"]]
            commands.append(found["command"])
            remedies.append(remedy)
            continue
        commands.append(_command(facts, IB_LOOPBACK))
        status, gbps, why, rail_lines = _perftest_verdict(facts, expectation)
        statuses.append(status)
        lines += [f"{rail}: {line}" for line in rail_lines if not line.startswith("expected")]
        if gbps is not None:
            measured[rail] = gbps
        if status != PASS and (expectation or status != WARN):
            findings.append(f"{rail}: {why}")
            remedies.append(REMEDY_LOOPBACK)
    lines.append(_expected_line(expectation, "Gb/s") + " per rail")
    status = worst(statuses)
    metrics = {"perf.ib_loopback_min_gbps": min(measured.values())} if measured else {}
    slowest = min(measured, key=lambda rail: measured[rail]) if measured else None
    summary = f"{len(measured)} rails, slowest {slowest} at {_fmt(measured.get(slowest))} Gb/s"
    if not expectation and measured:
        # One line for all rails rather than the same "no expected figure" per rail.
        findings.append(f"{summary}: {NO_FIGURE}")
        remedies.append(REMEDY_NO_FIGURE)
    message = summary if status == PASS else "; ".join(findings)
    found = _found("; ".join(_unique(commands)) or command, lines, expectation, measured)
    return _single(IB_LOOPBACK, status, message, found, "; ".join(_unique(remedies))), metrics


def pair_rail(facts, expectation, *, command: str | None = None) -> PairOutcome:
    """One pair test of one rail (ib_write_bw from a to b): (status, Gb/s)."""
    facts = _input(facts, "pair_rail")
    if isinstance(facts, ToolError):
        message, found, remedy = _could_not_run(facts, "pair_rail")
        return PairOutcome(ERROR, None, message, found, remedy)
    command = command or _command(facts, "pair_rail")
    status, gbps, why, lines = _perftest_verdict(facts, expectation)
    remedy = REMEDY_NO_FIGURE if status == WARN and not expectation else REMEDY_RAIL
    if status == ERROR:
        remedy = f"run `{command}` against a listening server on the peer and check its output"
    return PairOutcome(status, gbps, why, _found(command, lines, expectation, {"gbps": gbps}), remedy)


def _natural(name) -> list:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", str(name))]


def _unique(items) -> list:
    seen = []
    for item in items:
        if item and item not in seen:
            seen.append(item)
    return seen


# --- hccl_test (perf.hccl_local) ----------------------------------------------------


def hccl_local(facts, expectation, *, command: str | None = None) -> tuple:
    """perf.hccl_local: hccl_test all_reduce over the node's NPUs -> perf.hccl_local_algbw_gbps."""
    facts = _input(facts, HCCL_LOCAL)
    if isinstance(facts, ToolError):
        message, found, remedy = _could_not_run(facts, HCCL_LOCAL)
        return result(HCCL_LOCAL, ERROR, message, found, remedy), {}
    command = command or _command(facts, HCCL_LOCAL)
    row = _largest(facts.get("rows"))
    algbw = row.get("algbw_gbps") if row else None
    metrics = {} if algbw is None else {"perf.hccl_local_algbw_gbps": algbw}
    lines = []
    if row is not None:
        lines.append(
            f"measured: algbw {_fmt(algbw)} GB/s at {_size(row['size_bytes'])} "
            f"(check {row.get('check') or 'not done'}; {facts.get('n_ranks') or '?'} ranks)"
        )
    lines.append(_expected_line(expectation, "GB/s"))
    failures = facts.get("failures") or []
    lines += [f"failure: {line}" for line in failures[:5]]
    failed_checks = facts.get("errors") or 0
    if failed_checks:
        status, remedy = FAIL, REMEDY_HCCL
        message = f"all_reduce result check failed at {failed_checks} sizes"
    elif failures and algbw is None:
        status, message, remedy = FAIL, f"hccl_test failed: {failures[0]}", REMEDY_HCCL
    elif algbw is None:
        status, message = ERROR, "could not run: hccl_test printed no bandwidth"
        remedy = f"run `{command}` on the node and check its output"
    else:
        status, why = _judge(algbw, expectation, "GB/s")
        message = f"all_reduce algbw {_fmt(algbw)} GB/s at {_size(row['size_bytes'])}: {why}"
        if failures and status == PASS:
            status, message = WARN, f"{message}; but it logged errors: {failures[0]}"
        exited = _exit_note(facts)
        if exited and status == PASS:
            status, message = WARN, f"{message}; but {exited} although the output shows no error"
        remedy = REMEDY_HCCL if expectation else REMEDY_NO_FIGURE
    return _single(HCCL_LOCAL, status, message, _found(command, lines, expectation, metrics), remedy), metrics


# --- juicefs bench (perf.storage) ---------------------------------------------------


def storage(facts, expectation_write, expectation_read, *, command: str | None = None) -> tuple:
    """perf.storage: juicefs bench big-file throughput -> perf.storage_write_mibps, _read_mibps."""
    facts = _input(facts, STORAGE)
    if isinstance(facts, ToolError):
        message, found, remedy = _could_not_run(facts, STORAGE)
        return result(STORAGE, ERROR, message, found, remedy), {}
    command = command or _command(facts, STORAGE)
    metrics, statuses, parts, lines = {}, [], [], []
    for label, key, expectation, metric in (
        ("write", "write_big_mibps", expectation_write, "perf.storage_write_mibps"),
        ("read", "read_big_mibps", expectation_read, "perf.storage_read_mibps"),
    ):
        value = facts.get(key)
        lines.append(f"big-file {label}: {_fmt(value)} MiB/s; {label} {_expected_line(expectation, 'MiB/s')}")
        if value is None:
            statuses.append(ERROR)
            parts.append(f"no big-file {label} result")
            continue
        metrics[metric] = value
        status, why = _judge(value, expectation, "MiB/s")
        statuses.append(status)
        parts.append(f"{label} {_fmt(value)} MiB/s: {why}")
    errors = facts.get("errors") or []
    lines += [f"error: {line}" for line in errors[:5]]
    if errors:
        statuses.append(FAIL)
        parts.insert(0, f"juicefs reported errors: {errors[0]}")
    status = worst(statuses)
    message = "; ".join(parts)
    if status == ERROR:
        message = f"could not run: {message}"
    elif status == PASS and _exit_note(facts):
        status, message = WARN, f"{message}; but {_exit_note(facts)} although the output shows no error"
    found = _found(command, lines, expectation_write or expectation_read, metrics)
    found["expected"] = {
        "write": _expected(expectation_write) if expectation_write else None,
        "read": _expected(expectation_read) if expectation_read else None,
    }
    sources = sorted({e["source"] for e in (expectation_write, expectation_read) if e and e.get("source")})
    if sources:
        found["source"] = "; ".join(sources)
    no_figure = not (expectation_write and expectation_read)
    remedy = REMEDY_NO_FIGURE if no_figure and status == WARN and not errors else REMEDY_STORAGE
    if status == ERROR:
        remedy = f"run `{command}` on the node and check that it prints its result table"
    return _single(STORAGE, status, message, found, remedy), metrics


# --- hccn_tool ping (pair NPU NICs) ------------------------------------------------


def pair_hccn_ping(facts, expectation, *, command: str | None = None) -> PairOutcome:
    """One NPU NIC of a pair (hccn_tool -ping to b's NIC of the same id): (status, % lost).

    Without an expected figure, a ping that lost nothing passes (0 % is the best there is);
    one that lost some warns.
    """
    facts = _input(facts, "pair_hccn_ping")
    if isinstance(facts, ToolError):
        message, found, remedy = _could_not_run(facts, "pair_hccn_ping")
        return PairOutcome(ERROR, None, message, found, remedy, value_key="loss_pct")
    command = command or _command(facts, "pair_hccn_ping")
    runs = facts.get("devices") or [facts]
    limit = expectation.get("max") if expectation else None
    statuses, parts, lines, losses = [], [], [], []
    for run in runs:
        name = f"NPU NIC {run.get('device')} to {run.get('address') or '?'}"
        sent, received, loss = run.get("transmitted"), run.get("received"), run.get("loss_pct")
        times = [t for t in run.get("times_ms") or [] if t is not None]
        rtt = f", round trip {_fmt(min(times))}-{_fmt(max(times))} ms" if times else ""
        counts = f"{'?' if sent is None else sent} sent, {'?' if received is None else received} received"
        lines.append(f"{name}: {counts}, {_fmt(loss)} % lost{rtt}")
        lines += [f"error: {line}" for line in (run.get("errors") or [])[:3]]
        if loss is not None:
            losses.append(loss)
        if run.get("errors") and (received is None or received == 0):
            statuses.append(FAIL)
            parts.append(f"{name}: {run['errors'][0]}")
        elif sent is None or loss is None:
            statuses.append(ERROR)
            parts.append(f"could not run: {name}: no summary line (the ping was cut)")
        elif received == 0:
            statuses.append(FAIL)
            parts.append(f"{name}: no reply to {sent} pings")
        elif limit is not None and loss > limit:
            statuses.append(FAIL)
            parts.append(f"{name}: {_fmt(loss)} % lost, more than {_fmt(limit)} %")
        elif limit is None and loss > 0:
            statuses.append(WARN)
            parts.append(f"{name}: {_fmt(loss)} % lost, {NO_FIGURE}")
        else:
            statuses.append(PASS)
            parts.append(f"{name}: {_fmt(loss)} % lost")
    lines.append(_expected_line(expectation, "% lost"))
    status = worst(statuses)
    worst_loss = max(losses) if losses else None
    found = _found(command, lines, expectation, {"loss_pct": worst_loss})
    message = "; ".join(part for part, s in zip(parts, statuses) if s == status or status == PASS)
    remedy = REMEDY_NPU_PING if status != WARN or expectation else REMEDY_NO_FIGURE
    if status == ERROR:
        remedy = f"run `{command}` on the node and check that it prints its summary line"
    return PairOutcome(status, worst_loss, message, found, remedy, value_key="loss_pct")


__all__ = [
    "D2H_TESTCASE",
    "H2D_TESTCASE",
    "PairOutcome",
    "ToolError",
    "hccl_local",
    "ib_loopback",
    "nccl_local",
    "nvbandwidth",
    "pair_hccn_ping",
    "pair_nccl",
    "pair_rail",
    "storage",
]
