"""Parsers of performance benchmarks: nccl-tests, hccl_test, perftest, `juicefs bench`, nvbandwidth.

    parse_nccl_tests(text) -> {
        "test": "all_reduce_perf" | None, "n_ranks": 16 | None,
        "devices": [{"rank": 0, "name": "NVIDIA H100 80GB HBM3", "bus_id": "0000:18:00.0",
                     "pci_bus": 24, "host": "gpu-r1-n01", "pid": 4242, "device": 0}],
        "rows": [{"size_bytes": 8589934592, "count": 2147483648, "type": "float", "redop": "sum",
                  "root": -1 | None,
                  "out_of_place": {"time_us": 47535.0, "algbw_gbps": 180.71, "busbw_gbps": 338.82,
                                   "errors": 0 | None},
                  "in_place": {...the same...} | None}],
        "avg_busbw_gbps": 70.742 | None, "max_busbw_gbps": 338.82 | None,
        "errors": 0, "wrong_results": False, "completed": True,
        "nccl_version": "2.21.5+cuda12.4" | None, "nccl_tests_version": "2.13.9" | None,
        "failures": ["...Test NCCL failure..."], "warnings": ["...NCCL WARN..."],
    }
    parse_hccl_test(text) -> {
        "test": "all_reduce_test" | None, "n_ranks": 8 | None,
        "rows": [{"size_bytes": 8388608, "time_us": 1234.56, "algbw_gbps": 6.8,
                  "check": "success" | "failed" | None (NULL: not checked)}],
        "max_algbw_gbps": 6.8 | None, "errors": 0, "failures": [...],
        "min_bytes", "max_bytes", "iters": only when "the minbytes is ..." was printed,
    }
    parse_ib_perftest(text) -> {
        "test": "RDMA_Write BW", "kind": "bw" | "lat", "device": "mlx5_0" | None,
        "link_type": "IB" | "Ethernet" | None, "transport": "IB" | None, "connection": "RC" | None,
        "qps": 1 | None, "mtu_bytes": 4096 | None, "gpudirect": False, "bw_unit": "MB/sec" | "Gb/sec" | None,
        "rows": [{"size_bytes", "iterations", "bw_peak_gbps", "bw_avg_gbps", "msg_rate_mpps"}]      (bw)
              | [{"size_bytes", "iterations", "t_min_us", "t_max_us", "t_typical_us", "t_avg_us",
                  "t_stdev_us", "p99_us", "p999_us"}]                                              (lat),
        "bw_avg_gbps": 192.5 | None, "t_typical_us": 1.1 | None, "runs": 1,
        "errors": ["Couldn't connect to 10.0.0.2:18515"], "warnings": [...],
    }
    parse_juicefs_bench(text) -> {
        "settings": {"block_size_mib": 1, "big_file_size_mib": 1024, "small_file_size_kib": 128,
                     "small_file_count": 100, "threads": 4},
        "items": [{"item": "Write big file", "value": 1234.56, "unit": "MiB/s",
                   "cost": 3.24, "cost_unit": "s/file"}],
        "write_big_mibps", "read_big_mibps", "write_small_files_per_s", "read_small_files_per_s",
        "stat_files_per_s": float | None, "time_used_s": float | None, "completed": True,
        "errors": [...juicefs <ERROR>/<FATAL> log lines...],
    }
    parse_nvbandwidth(text) -> {
        "version": "v0.6" | None, "driver_version": "550.54.15" | None, "cuda_version": "12.4" | None,
        "devices": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "bus_id": "0000:18:00.0" | None}],
        "testcases": {"host_to_device_memcpy_ce": {
            "status": "ran" | "error", "message": None | "...the tool's error...",
            "title": "memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)", "unit": "GB/s",
            "row_side": "CPU", "column_side": "GPU",   # None when the title does not say
            "columns": [0, 1, ...], "matrix": [[55.61, 55.62, ...]],   # N/A cells are None
            "sum_gbps": 445.09 | None, "per_gpu_gbps": {"0": 55.61, ...}}},
        "waived": 0, "errors": ["[CUDA_ERROR_...] ...", "Error: ..."],
    }

Units: nccl-tests and hccl_test print GB/s (10^9 bytes/s) and microseconds, kept as
printed. perftest prints `BW ...[MB/sec]`, which perftest computes with 2^20 bytes
(format_factor 0x100000), or `[Gb/sec]` with --report_gbits (10^9 bits); both become
Gb/s (MB/sec x 1048576 x 8 / 10^9). juicefs bench sizes are binary (MiB, KiB).

Captures are tolerated as they come from a terminal or a job log: the first
'# source:' line, CRLF, tabs or spaces, ANSI colours, mpirun's `--tag-output` prefixes
('[1,0]<stdout>:'), srun's `--label` prefixes ('3: '), NCCL INFO/WARN lines of other
ranks between the rows, and the server's and the client's perftest output in one file
(a message size reported twice is kept once). ParseError is raised only for input
that is not the tool's output at all, or for the tool's own failure message when it
printed nothing else (a perftest client that could not connect, nccl-tests dying
before its header, nvbandwidth failing before its first testcase); a run that failed
after its header parses, with its failures.

nvbandwidth: `per_gpu_gbps` is keyed by the GPU index as a string (the facts cross
JSON). It is the slowest copy of each GPU: with a CPU side (host <-> device tests) the
lowest value of the GPU's column (or row); GPU to GPU, the lowest of its row and column
off the diagonal. A waived testcase prints no name in text mode: only counted.
"""

from __future__ import annotations

import re

from .common import ParseError, normalize_pci_bus_id, not_output, require_content, strip_source_header

NCCL_KIND = "nccl-tests"
HCCL_KIND = "hccl-test"
PERFTEST_KIND = "ib-perftest"
JUICEFS_BENCH_KIND = "juicefs-bench"
NVBANDWIDTH_KIND = "nvbandwidth"

NCCL_FIX = (
    "capture the output of nccl-tests, e.g. `all_reduce_perf -b 8 -e 8G -f 2 -g 8 > FILE` "
    "(or `mpirun ... all_reduce_perf ... > FILE`), stdout and stderr together"
)
HCCL_FIX = (
    "capture the output of hccl_test, e.g. `mpirun -n 8 ./bin/all_reduce_test -b 8K -e 1G -f 2 -p 8 > FILE`"
)
PERFTEST_FIX = (
    "capture the output of a perftest tool (ib_write_bw, ib_read_bw, ib_send_bw, ib_*_lat), "
    "e.g. `ib_write_bw -d mlx5_0 --report_gbits SERVER > FILE` on the client"
)
JUICEFS_BENCH_FIX = "capture the output of `juicefs bench MOUNTPOINT -p 4 > FILE` (JuiceFS 1.x)"
NVBANDWIDTH_FIX = (
    "capture the output of nvbandwidth, e.g. "
    "`nvbandwidth -t host_to_device_memcpy_ce device_to_host_memcpy_ce > FILE 2>&1`"
)

MAX_MESSAGES = 20  # failure/warning lines kept per result: evidence, not the whole log
MB_PER_SEC_TO_GBPS = 1048576 * 8 / 1e9  # perftest's "MB" is 2^20 bytes

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][0-9A-Za-z]")
_MPI_TAG = re.compile(r"^\[\d+,\d+\]<std(?:out|err)>:\s?")  # mpirun --tag-output
_SRUN_LABEL = re.compile(r"^\s{0,4}\d{1,6}: ")  # srun --label
_NUMBER = re.compile(r"^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$")
_INT = re.compile(r"^[-+]?\d+$")


# -- shared helpers -------------------------------------------------------------------------


def _lines(text: str) -> list[str]:
    """The capture's lines without the source header and ANSI escapes (CRLF and CR split)."""
    return _ANSI.sub("", strip_source_header(text)).splitlines()


def _job_line(line: str) -> str:
    """A line of an MPI or Slurm job log without the launcher's per-rank prefix."""
    line = _MPI_TAG.sub("", line, count=1)
    return _SRUN_LABEL.sub("", line, count=1)


def _num(token: str) -> float | None:
    """A printed number as float; None for N/A, nan, inf or anything that is not a number."""
    token = token.strip()
    if not _NUMBER.match(token):
        return None
    return float(token)


def _count(token: str):
    """An error count: int as printed, a float for the old `error` column ('2e-07'), None for N/A."""
    token = token.strip()
    if _INT.match(token):
        return int(token)
    return _num(token)


def _keep(messages: list[str], line: str) -> None:
    text = line.strip()
    if text and len(messages) < MAX_MESSAGES and text not in messages:
        messages.append(text)


# -- nccl-tests -----------------------------------------------------------------------------

_NCCL_TESTS = (
    "all_reduce",
    "all_gather",
    "reduce_scatter",
    "alltoall",
    "broadcast",
    "reduce",
    "sendrecv",
    "scatter",
    "gather",
    "hypercube",
)
_NCCL_TEST_NAME = re.compile(r"(?<![\w-])((?:" + "|".join(_NCCL_TESTS) + r")_perf)(?:_mpi)?\b")
_NCCL_COLLECTIVE = re.compile(r"^#\s*Collective test (?:starting|concluded):\s*(\S+)")
_NCCL_THREADS = re.compile(r"^#\s*nThread\s+(\d+)\s+nGpus\s+(\d+)\b")
_NCCL_RANK = re.compile(
    r"^#\s*Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d+)\s+"
    r"\[([^\]]*)\]\s*(.*?)\s*$"
)
_NCCL_HEADER = re.compile(r"^#\s*size\s+count\s+type\b(.*)$")
_NCCL_OOB = re.compile(r"^#\s*Out of bounds values\s*:\s*(\d+)\s*(OK|FAILED)?", re.IGNORECASE)
_NCCL_AVG = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*(\S+)", re.IGNORECASE)
_NCCL_TESTS_VERSION = re.compile(r"nccl-tests version\s+(\S+)(?:.*?nccl-library=(\d+))?", re.IGNORECASE)
_NCCL_VERSION = re.compile(r"\bNCCL version\s+(\d+\.\d+\.\d+\S*)")
_NCCL_FAILURE = re.compile(
    r"Test (?:NCCL |CUDA )?failure|\bnccl\w*Error\b|mpirun (?:noticed|detected)|Primary job\s+terminated|"
    r"(?:exited|killed) on signal|Segmentation fault|\bAbort(?:ed|ing)\b|Watchdog|NCCL_ERROR|"
    r"unhandled (?:system|cuda) error",
    re.IGNORECASE,
)
_NCCL_WARN = re.compile(r"\bNCCL WARN\b")
_WORD = re.compile(r"^[A-Za-z][\w]*$")


def _nccl_version_from_code(code: int) -> str:
    """nccl-tests' `nccl-library=21903` -> '2.19.3' (NCCL_VERSION_CODE; before 2.9: 2804)."""
    if code >= 10000:
        return f"{code // 10000}.{code % 10000 // 100}.{code % 100}"
    return f"{code // 1000}.{code % 1000 // 100}.{code % 100}"


def _nccl_side(tokens: list[str]) -> dict | None:
    """time, algbw, busbw, #wrong of one side; None when the values are not numbers at all."""
    time_us, algbw, busbw, wrong = tokens
    values = [_num(time_us), _num(algbw), _num(busbw)]
    if all(value is None for value in values) and not all(
        token.upper() == "N/A" for token in (time_us, algbw, busbw)
    ):
        return None
    return {"time_us": values[0], "algbw_gbps": values[1], "busbw_gbps": values[2], "errors": _count(wrong)}


def _nccl_row(line: str, has_root: bool | None) -> dict | None:
    tokens = line.split()
    if len(tokens) not in (8, 9, 12, 13) or not (_INT.match(tokens[0]) and _INT.match(tokens[1])):
        return None
    if not (_WORD.match(tokens[2]) and _WORD.match(tokens[3])):
        return None
    with_root = len(tokens) in (9, 13)
    if has_root is not None and with_root != has_root:
        return None
    if with_root and not _INT.match(tokens[4]):
        return None
    values = tokens[5:] if with_root else tokens[4:]
    out_of_place = _nccl_side(values[:4])
    if out_of_place is None or not all(_num(v) is not None or v.upper() == "N/A" for v in values):
        return None
    in_place = _nccl_side(values[4:8]) if len(values) == 8 else None
    return {
        "size_bytes": int(tokens[0]),
        "count": int(tokens[1]),
        "type": tokens[2],
        "redop": tokens[3],
        "root": int(tokens[4]) if with_root else None,
        "out_of_place": out_of_place,
        "in_place": in_place,
    }


def _nccl_device(match: re.Match) -> dict:
    rank, pid, host, device, bus, name = match.groups()
    bus = bus.strip()
    bus_id = None if bus.lower().startswith("0x") else normalize_pci_bus_id(bus)
    pci_bus = None
    if bus_id is not None:
        pci_bus = int(bus_id.split(":")[1], 16)
    else:
        try:
            pci_bus = int(bus, 16)
        except ValueError:
            pci_bus = None
    return {
        "rank": int(rank),
        "name": name or None,
        "bus_id": bus_id,
        "pci_bus": pci_bus,
        "host": host,
        "pid": int(pid),
        "device": int(device),
    }


def parse_nccl_tests(text: str) -> dict:
    """The table, devices and summary of an nccl-tests *_perf run (one process or under mpirun)."""
    what = "nccl-tests"
    require_content(NCCL_KIND, strip_source_header(text or ""), what, NCCL_FIX)
    test = command_test = None
    threads = gpus = None
    devices: dict[int, dict] = {}
    rows: list[dict] = []
    header_seen = False
    has_root: bool | None = None
    oob = oob_failed = avg = None
    avg_seen = False
    nccl_version = tests_version = library_code = None
    failures: list[str] = []
    warnings: list[str] = []
    for raw in _lines(text):
        line = _job_line(raw).strip()
        if not line:
            continue
        if line.startswith("#"):
            collective = _NCCL_COLLECTIVE.match(line)
            if collective:
                test = test or collective.group(1)
                continue
            thread = _NCCL_THREADS.match(line)
            if thread:
                threads, gpus = int(thread.group(1)), int(thread.group(2))
                continue
            rank = _NCCL_RANK.match(line)
            if rank:
                device = _nccl_device(rank)
                devices.setdefault(device["rank"], device)
                continue
            header = _NCCL_HEADER.match(line)
            if header:
                header_seen = True
                has_root = bool(re.search(r"\broot\b", header.group(1)))
                continue
            bounds = _NCCL_OOB.match(line)
            if bounds:
                oob = int(bounds.group(1))
                oob_failed = (bounds.group(2) or "").upper() == "FAILED"
                continue
            average = _NCCL_AVG.match(line)
            if average:
                avg = _num(average.group(1))
                avg_seen = True
                continue
            version = _NCCL_TESTS_VERSION.search(line)
            if version:
                tests_version = version.group(1)
                library_code = int(version.group(2)) if version.group(2) else None
        row = None if line.startswith("#") else _nccl_row(line, has_root)
        if row is not None:
            rows.append(row)
            continue
        found = _NCCL_VERSION.search(line)
        if found and nccl_version is None:
            nccl_version = found.group(1)
        if _NCCL_WARN.search(line):
            _keep(warnings, line)
        elif _NCCL_FAILURE.search(line):
            _keep(failures, line)
        named = _NCCL_TEST_NAME.search(line)
        if named and command_test is None:
            command_test = named.group(1)
    if not (header_seen or rows or threads is not None or devices or tests_version):
        if failures:
            raise ParseError(NCCL_KIND, f"nccl-tests failed before its header: {failures[0]}", fix=NCCL_FIX)
        raise not_output(
            NCCL_KIND, what, text, NCCL_FIX, "no size/count/type table and no '# nThread' header"
        )
    if nccl_version is None and library_code is not None:
        nccl_version = _nccl_version_from_code(library_code)
    ordered = [devices[rank] for rank in sorted(devices)]
    n_ranks = (
        len(ordered) if ordered else (threads * gpus if threads is not None and gpus is not None else None)
    )
    wrong_counts = [
        side["errors"]
        for row in rows
        for side in (row["out_of_place"], row["in_place"])
        if side is not None and isinstance(side["errors"], int)
    ]
    errors = oob if oob is not None else sum(wrong_counts)
    busbws = [
        side["busbw_gbps"]
        for row in rows
        for side in (row["out_of_place"], row["in_place"])
        if side is not None and side["busbw_gbps"] is not None
    ]
    return {
        "test": test or command_test,
        "n_ranks": n_ranks,
        "devices": ordered,
        "rows": rows,
        "avg_busbw_gbps": avg,
        "max_busbw_gbps": max(busbws) if busbws else None,
        "errors": errors,
        "wrong_results": bool(oob_failed or (oob or 0) > 0 or any(count > 0 for count in wrong_counts)),
        "completed": avg_seen or oob is not None,
        "nccl_version": nccl_version,
        "nccl_tests_version": tests_version,
        "failures": failures,
        "warnings": warnings,
    }


# -- hccl_test ------------------------------------------------------------------------------

_HCCL_HEADER = re.compile(r"data_size\s*\(\s*bytes?\s*\)", re.IGNORECASE)
_HCCL_COLUMNS = (
    ("size_bytes", re.compile(r"data_size", re.IGNORECASE)),
    ("time_us", re.compile(r"(?:aveg|aveage|avg|average|ave)_?time", re.IGNORECASE)),
    ("algbw_gbps", re.compile(r"alg_?bandwidth|algbw", re.IGNORECASE)),
    ("check", re.compile(r"check_?result|check", re.IGNORECASE)),
)
_HCCL_PARAMS = re.compile(
    r"the minbytes is\s*(\d+),\s*maxbytes is\s*(\d+)(?:,\s*iters is\s*(\d+))?", re.IGNORECASE
)
_HCCL_TEST_NAME = re.compile(
    r"(?<![\w-])((?:all_reduce|all_gather|all_gather_v|alltoall|alltoallv|alltoallvc|broadcast|"
    r"reduce_scatter|reduce_scatter_v|reduce|scatter|send_recv|batch_send_recv)_test)\b"
)
_MPIRUN_RANKS = re.compile(r"\bmpirun\b.*?\s-(?:n|np|-np)\s+(\d+)")
_HCCL_FAILURE = re.compile(
    r"\berr(?:or)?\b|\bfail(?:ed|ure)?\b|time ?out|total err is|retcode|HcclGetRootInfo|"
    r"Segmentation fault|mpirun (?:noticed|detected)|Primary job\s+terminated",
    re.IGNORECASE,
)


def _hccl_columns(line: str) -> list[str]:
    """The header's columns in printed order ('data_size(Bytes): | aveg_time(us): | ...')."""
    parts = [part for part in re.split(r"\s*\|\s*|\s+", line.strip()) if part]
    columns = []
    for part in parts:
        name = next((key for key, pattern in _HCCL_COLUMNS if pattern.search(part)), None)
        columns.append(name or "other")
    return columns


def _hccl_row(line: str, columns: list[str]) -> dict | None:
    cells = [cell for cell in re.split(r"\s*\|\s*|\s+", line.strip()) if cell]
    if len(cells) != len(columns):
        return None
    row: dict = {"size_bytes": None, "time_us": None, "algbw_gbps": None, "check": None}
    for column, cell in zip(columns, cells):
        if column == "size_bytes":
            if not _INT.match(cell):
                return None
            row["size_bytes"] = int(cell)
        elif column in ("time_us", "algbw_gbps"):
            value = _num(cell)
            if value is None and cell.upper() not in ("N/A", "NAN", "-NAN", "INF"):
                return None
            row[column] = value
        elif column == "check":
            if _num(cell) is not None:
                return None
            row["check"] = None if cell.upper() in ("NULL", "N/A", "-") else cell.lower()
    return row if row["size_bytes"] is not None else None


def parse_hccl_test(text: str) -> dict:
    """The data_size / time / bandwidth / check table of a CANN hccl_test run."""
    what = "hccl_test"
    require_content(HCCL_KIND, strip_source_header(text or ""), what, HCCL_FIX)
    columns: list[str] | None = None
    rows: list[dict] = []
    failures: list[str] = []
    test = n_ranks = None
    params = None
    for raw in _lines(text):
        line = _job_line(raw).strip()
        if not line:
            continue
        if _HCCL_HEADER.search(line):
            columns = _hccl_columns(line)
            continue
        if columns is not None:
            row = _hccl_row(line, columns)
            if row is not None:
                rows.append(row)
                continue
        found = _HCCL_PARAMS.search(line)
        if found:
            params = found
            continue
        named = _HCCL_TEST_NAME.search(line)
        if named and test is None:
            test = named.group(1)
        ranks = _MPIRUN_RANKS.search(line)
        if ranks and n_ranks is None:
            n_ranks = int(ranks.group(1))
        if _HCCL_FAILURE.search(line):
            _keep(failures, line)
    if columns is None and not rows:
        if params is not None or (failures and any("hccl" in line.lower() for line in failures)):
            if failures:
                raise ParseError(HCCL_KIND, f"hccl_test failed: {failures[0]}", fix=HCCL_FIX)
            raise ParseError(HCCL_KIND, "hccl_test printed no result table", fix=HCCL_FIX)
        raise not_output(HCCL_KIND, what, text, HCCL_FIX, "no data_size(Bytes) table")
    bandwidths = [row["algbw_gbps"] for row in rows if row["algbw_gbps"] is not None]
    result = {
        "test": test,
        "n_ranks": n_ranks,
        "rows": rows,
        "max_algbw_gbps": max(bandwidths) if bandwidths else None,
        "errors": sum(1 for row in rows if row["check"] not in (None, "success")),
        "failures": failures,
    }
    if params is not None:
        result["min_bytes"], result["max_bytes"] = int(params.group(1)), int(params.group(2))
        result["iters"] = int(params.group(3)) if params.group(3) else None
    return result


# -- perftest (ib_write_bw, ib_read_bw, ib_send_bw, ib_*_lat) ---------------------------------

_PT_TEST = re.compile(r"^\s*(\S.*?)\s+(BW|Latency)\s+Test\s*$")
_PT_FIELD = re.compile(r"([A-Za-z][\w.*/()-]*(?: [A-Za-z][\w.*/()-]*)*)\s*:\s*(\S+(?: \S+)*)")
_PT_FIELDS = {
    "device": "device",
    "link type": "link_type",
    "transport type": "transport",
    "connection type": "connection",
    "number of qps": "qps",
    "mtu": "mtu_bytes",
}
_PT_HEADER = re.compile(r"^\s*#bytes\s+#iterations\b(.*)$")
_PT_COLUMN = re.compile(
    r"#bytes|#iterations|BW peak\[[^\]]*\]|BW average\[[^\]]*\]|MsgRate(?: Port\d)?\[[^\]]*\]|"
    r"BW Port\d\[[^\]]*\]|t_\w+\[[^\]]*\]|99(?:\.9)?% percentile\[[^\]]*\]|\S+"
)
_PT_COLUMN_KEYS = (
    (re.compile(r"^#bytes$"), "size_bytes"),
    (re.compile(r"^#iterations$"), "iterations"),
    (re.compile(r"^BW peak\["), "bw_peak_gbps"),
    (re.compile(r"^BW average\["), "bw_avg_gbps"),
    (re.compile(r"^MsgRate\["), "msg_rate_mpps"),
    (re.compile(r"^t_min\["), "t_min_us"),
    (re.compile(r"^t_max\["), "t_max_us"),
    (re.compile(r"^t_typical\["), "t_typical_us"),
    (re.compile(r"^t_avg\["), "t_avg_us"),
    (re.compile(r"^t_stdev\["), "t_stdev_us"),
    (re.compile(r"^99% percentile\["), "p99_us"),
    (re.compile(r"^99\.9% percentile\["), "p999_us"),
)
_PT_BW_UNIT = re.compile(r"BW (?:peak|average)\[([^\]]*)\]")
_PT_BW_KEYS = ("size_bytes", "iterations", "bw_peak_gbps", "bw_avg_gbps", "msg_rate_mpps")
_PT_LAT_KEYS = (
    "size_bytes",
    "iterations",
    "t_min_us",
    "t_max_us",
    "t_typical_us",
    "t_avg_us",
    "t_stdev_us",
    "p99_us",
    "p999_us",
)
_PT_GPU = re.compile(
    r"cuMemAlloc|GPU buffer|CUDA Ctx|initializing CUDA|using CUDA|CUDA device|use_cuda|Perftest with CUDA|"
    r"DMA-BUF|hipMalloc|use_rocm|ROCm device|Picking device No\.",
    re.IGNORECASE,
)
_PT_WARNING = re.compile(
    r"Conflicting CPU frequency|Test integrity may be harmed|^Warning|Requested mtu is higher|"
    r"Changing to active mtu|CPU Frequency is not max",
    re.IGNORECASE,
)
_PT_ERROR = re.compile(
    r"couldn'?t|unable to|completion with error|\bfail(?:ed|ure|s)?\b|\berror\b|not found|problems? with|"
    r"segmentation fault|timed? ?out|\binvalid\b|syndrome?\b|No such device|Aborted",
    re.IGNORECASE,
)
_PT_OWN_FAILURE = re.compile(
    r"Couldn'?t (?:connect|listen|get|allocate|create|init)|"
    r"Unable to (?:open file descriptor|init the socket|find the Infiniband|Connect the HCA)|"
    r"IB device \S+ not found|Failed to (?:exchange|modify|create|complete|init)|"
    r"Completion with error|Problems with warm up",
    re.IGNORECASE,
)
_PT_WAITING = re.compile(r"Waiting for client to connect", re.IGNORECASE)


def _pt_columns(line: str) -> list[str]:
    columns = []
    for token in _PT_COLUMN.findall(line.strip()):
        key = next((name for pattern, name in _PT_COLUMN_KEYS if pattern.match(token)), None)
        columns.append(key or "other")
    return columns


def _pt_factor(unit: str | None) -> float | None:
    """Multiplier from the header's bandwidth unit to Gb/s."""
    if unit is None:
        return None
    normalized = unit.replace(" ", "").lower()
    if normalized in ("mb/sec", "mib/sec", "mb/s", "mib/s"):
        return MB_PER_SEC_TO_GBPS
    if normalized in ("gb/sec", "gbit/sec", "gb/s", "gbps", "gbits/sec"):
        return 1.0
    return None


def _pt_row(line: str, columns: list[str], factor: float | None, kind: str) -> dict | None:
    tokens = line.split()
    if len(tokens) != len(columns) or not _INT.match(tokens[0]):
        return None
    values = [_num(token) for token in tokens]
    if any(value is None for value in values):
        return None
    keys = _PT_BW_KEYS if kind == "bw" else _PT_LAT_KEYS
    row = dict.fromkeys(keys)
    for column, value in zip(columns, values):
        if column not in row:
            continue
        if column in ("size_bytes", "iterations"):
            row[column] = int(value)
        elif column in ("bw_peak_gbps", "bw_avg_gbps"):
            row[column] = None if factor is None else round(value * factor, 6)
        else:
            row[column] = value
    return row


def parse_ib_perftest(text: str) -> dict:
    """The settings block and result table of a perftest bandwidth or latency run."""
    what = "perftest (ib_write_bw, ib_read_bw, ib_send_bw, ib_*_lat)"
    require_content(PERFTEST_KIND, strip_source_header(text or ""), what, PERFTEST_FIX)
    result: dict = {
        "test": None,
        "kind": None,
        "device": None,
        "link_type": None,
        "transport": None,
        "connection": None,
        "qps": None,
        "mtu_bytes": None,
        "gpudirect": False,
        "bw_unit": None,
    }
    runs = 0
    columns: list[str] | None = None
    table_kind = None
    factor = None
    rows: dict[int, dict] = {}
    errors: list[str] = []
    warnings: list[str] = []
    waiting = False
    for raw in _lines(text):
        line = raw.strip()
        if not line or set(line) <= set("-*= "):
            continue
        test = _PT_TEST.match(line)
        if test:
            runs += 1
            if result["test"] is None:
                result["test"] = f"{test.group(1)} {test.group(2)}"
                result["kind"] = "bw" if test.group(2) == "BW" else "lat"
            continue
        header = _PT_HEADER.match(line)
        if header:
            columns = _pt_columns(line)
            unit = _PT_BW_UNIT.search(line)
            table_kind = "bw" if unit else "lat"
            if unit:
                result["bw_unit"] = result["bw_unit"] or unit.group(1)
                factor = _pt_factor(unit.group(1))
            if result["kind"] is None:
                result["kind"] = table_kind
            continue
        if columns is not None and table_kind is not None:
            row = _pt_row(line, columns, factor, table_kind)
            if row is not None:
                rows.setdefault(row["size_bytes"], row)
                continue
        if _PT_GPU.search(line):
            result["gpudirect"] = True
        if _PT_WAITING.search(line):
            waiting = True
            continue
        if _PT_WARNING.search(line):
            _keep(warnings, line)
            continue
        if _PT_ERROR.search(line):
            _keep(errors, line)
            continue
        for key, value in _PT_FIELD.findall(line):
            name = _PT_FIELDS.get(" ".join(key.lower().split()))
            if name is None or result[name] is not None:
                continue
            if name in ("qps", "mtu_bytes"):
                number = re.match(r"\d+", value)
                result[name] = int(number.group(0)) if number else None
            else:
                result[name] = value.split()[0]
    if runs == 0 and columns is None:
        own = next((line for line in errors if _PT_OWN_FAILURE.search(line)), None)
        if own is not None:
            raise ParseError(PERFTEST_KIND, f"perftest failed: {own}", fix=PERFTEST_FIX)
        why = (
            "a server that no client connected to"
            if waiting
            else "no '... BW Test' / '... Latency Test' header"
        )
        raise not_output(PERFTEST_KIND, what, text, PERFTEST_FIX, why)
    if result["kind"] is None:
        result["kind"] = table_kind or "bw"
    ordered = sorted(rows.values(), key=lambda row: row["size_bytes"])
    result["rows"] = ordered
    largest = ordered[-1] if ordered else None
    result["bw_avg_gbps"] = largest.get("bw_avg_gbps") if largest else None
    result["t_typical_us"] = ordered[0].get("t_typical_us") if ordered else None
    result["runs"] = runs
    result["errors"] = errors
    result["warnings"] = warnings
    return result


# -- juicefs bench --------------------------------------------------------------------------

_JFS_LOG = re.compile(r"^\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2}(?:\.\d+)? \S+ <(\w+)>: ?(.*)$")
_JFS_SETTING = re.compile(
    r"(BlockSize|BigFileSize|SmallFileSize|SmallFileCount|NumThreads|Threads)\s*:\s*([\d.]+)\s*([A-Za-z]*)"
)
_JFS_TIME = re.compile(r"Time used:\s*([\d.]+)\s*s", re.IGNORECASE)
_JFS_PROGRESS = re.compile(
    r"^(?:Write|Read) (?:big|small) (?:blocks|files?)|^Stat (?:small )?files?|^Benchmark finished|"
    r"^Cleaning kernel cache",
    re.IGNORECASE,
)
_JFS_VALUE = re.compile(r"^([-+]?\d+(?:\.\d+)?)\s*(.*)$")
_BINARY = {
    **dict.fromkeys(("", "b"), 1),
    **dict.fromkeys(("k", "kb", "kib"), 1024),
    **dict.fromkeys(("m", "mb", "mib"), 1024**2),
    **dict.fromkeys(("g", "gb", "gib"), 1024**3),
    **dict.fromkeys(("t", "tb", "tib"), 1024**4),
}
_RATE_TO_MIB = {
    "kib/s": 1 / 1024,
    "kb/s": 1 / 1024,
    "mib/s": 1.0,
    "mb/s": 1.0,
    "gib/s": 1024.0,
    "gb/s": 1024.0,
}
_JFS_SUMMARY = {
    "write big file": "write_big_mibps",
    "read big file": "read_big_mibps",
    "write small file": "write_small_files_per_s",
    "read small file": "read_small_files_per_s",
    "stat file": "stat_files_per_s",
}


def _jfs_size(value: str, unit: str, to: int) -> float | int | None:
    factor = _BINARY.get(unit.lower())
    if factor is None:
        return None
    size = float(value) * factor / to
    return int(size) if size.is_integer() else round(size, 6)


def _jfs_settings(line: str) -> dict:
    settings = {}
    for key, value, unit in _JFS_SETTING.findall(line):
        if key == "BlockSize":
            settings["block_size_mib"] = _jfs_size(value, unit or "MiB", 1024**2)
        elif key == "BigFileSize":
            settings["big_file_size_mib"] = _jfs_size(value, unit or "MiB", 1024**2)
        elif key == "SmallFileSize":
            settings["small_file_size_kib"] = _jfs_size(value, unit or "KiB", 1024)
        elif key == "SmallFileCount":
            settings["small_file_count"] = int(float(value))
        else:
            settings["threads"] = int(float(value))
    return settings


def _jfs_value(cell: str) -> tuple:
    """'1184.37 MiB/s' -> (1184.37, 'MiB/s'); a value that is no number -> (None, None)."""
    match = _JFS_VALUE.match(cell.strip())
    if not match:
        return None, None
    number = float(match.group(1))
    return number, (match.group(2).strip() or None)


def parse_juicefs_bench(text: str) -> dict:
    """The settings and the ITEM / VALUE / COST table of `juicefs bench`."""
    what = "juicefs bench"
    require_content(JUICEFS_BENCH_KIND, strip_source_header(text or ""), what, JUICEFS_BENCH_FIX)
    settings: dict = dict.fromkeys(
        ("block_size_mib", "big_file_size_mib", "small_file_size_kib", "small_file_count", "threads")
    )
    items: list[dict] = []
    errors: list[str] = []
    progress = settings_seen = False
    time_used = None
    for raw in _lines(text):
        line = raw.strip()
        if not line:
            continue
        log = _JFS_LOG.match(line)
        if log:
            if log.group(1).upper() in ("FATAL", "ERROR"):
                _keep(errors, line)
            continue
        if line.startswith("|") and line.endswith("|") and line.count("|") >= 3:
            cells = [cell.strip() for cell in line.strip("|").split("|")]
            if len(cells) < 2 or not cells[0] or cells[0].upper() == "ITEM":  # the ITEM | VALUE | COST header
                continue
            value, unit = _jfs_value(cells[1])
            cost, cost_unit = _jfs_value(cells[2]) if len(cells) > 2 else (None, None)
            items.append(
                {"item": cells[0], "value": value, "unit": unit, "cost": cost, "cost_unit": cost_unit}
            )
            continue
        if _JFS_SETTING.search(line) and ("BlockSize" in line or "BigFileSize" in line):
            settings.update(_jfs_settings(line))
            settings_seen = True
            continue
        used = _JFS_TIME.search(line)
        if used:
            time_used = float(used.group(1))
            continue
        if _JFS_PROGRESS.search(line):
            progress = True
    if not items:
        if errors:
            raise ParseError(JUICEFS_BENCH_KIND, f"juicefs bench failed: {errors[0]}", fix=JUICEFS_BENCH_FIX)
        if not (settings_seen or progress):
            raise not_output(JUICEFS_BENCH_KIND, what, text, JUICEFS_BENCH_FIX, "no ITEM | VALUE table")
    known = {name.lower() for name in _JFS_SUMMARY}
    named = any(" ".join(item["item"].lower().split()) in known for item in items)
    if items and not named and not (settings_seen or progress):
        raise not_output(JUICEFS_BENCH_KIND, what, text, JUICEFS_BENCH_FIX, "no 'Write big file' row")
    result: dict = {"settings": settings, "items": items}
    for item_name, key in _JFS_SUMMARY.items():
        result[key] = None
        for item in items:
            if " ".join(item["item"].lower().split()) != item_name:
                continue
            if key.endswith("_mibps"):
                factor = _RATE_TO_MIB.get((item["unit"] or "").lower())
                value = item["value"]
                result[key] = None if factor is None or value is None else round(value * factor, 6)
            else:
                result[key] = item["value"]
            break
    result["time_used_s"] = time_used
    result["completed"] = bool(items)
    result["errors"] = errors
    return result


# -- nvbandwidth ----------------------------------------------------------------------------

_NVB_VERSION = re.compile(r"^nvbandwidth Version:\s*(\S*)", re.IGNORECASE)
_NVB_DRIVER = re.compile(r"^Driver Version:\s*(\S+)")
_NVB_CUDA = re.compile(r"^CUDA Driver Version:\s*(\d+)")
_NVB_CUDA_ANY = re.compile(r"^CUDA (?:Runtime|Driver) Version:")
# "Device 0: NVIDIA H100 80GB HBM3 (00000000:18:00)"; multinode builds: "Process 0 (host): device 0: ..."
_NVB_DEVICE = re.compile(
    r"^(?:Process\s+(\d+)\s+\([^)]*\):\s*)?[Dd]evice\s+(\d+):\s*(.*?)\s*(?:\(([0-9A-Fa-f:.]+)\))?$"
)
# Testcase names are snake_case ("host_to_device_memcpy_ce"); nvbandwidth ends the line with a dot.
_NVB_RUNNING = re.compile(r"^Running\s+([a-z0-9]+(?:_[a-z0-9]+)+)\.$")
_NVB_TITLE = re.compile(r"^(?:memcpy|memory latency)\b.*?\(([^()]*)\)$", re.IGNORECASE)
_NVB_SIDE = re.compile(r"\b(CPU|GPU)\((row|column)\)", re.IGNORECASE)
_NVB_SUM = re.compile(r"^(?:SUM|&&&& PERF)\s+([a-z0-9]+(?:_[a-z0-9]+)+)\s+([-+]?\d+(?:\.\d+)?)")
_NVB_STAT = re.compile(r"^(?:MIN|MAX|AVG)\s+[A-Za-z]\w*\s+\S+$")
_NVB_WAIVED = re.compile(r"^Waived\b")
_NVB_ERROR = re.compile(
    r"^(?:Error|ERROR)\b|\[CUDA_ERROR_\w*\]|\[cuda\w*Error\w*\]|NVML_ERROR|^ASSERT in expression|"
    r"\bnot found!|out of bound!",
)


def _nvb_cuda_version(code: str) -> str:
    """CUDA's version integer as nvbandwidth prints it: 12040 -> '12.4'."""
    number = int(code)
    return f"{number // 1000}.{number % 1000 // 10}"


def _nvb_header(line: str) -> list[int] | None:
    """The column header of a matrix: the column indices, or None when the line is something else."""
    tokens = line.split()
    if not tokens or not all(_INT.match(token) for token in tokens):
        return None
    return [int(token) for token in tokens]


def _nvb_row(line: str, width: int) -> tuple | None:
    """(row index, values) of a matrix row of `width` cells; N/A -> None."""
    tokens = line.split()
    if len(tokens) != width + 1 or not _INT.match(tokens[0]):
        return None
    values = []
    for token in tokens[1:]:
        if token.upper() == "N/A":
            values.append(None)
            continue
        value = _num(token)
        if value is None:
            return None
        values.append(value)
    return int(tokens[0]), values


def _nvb_per_gpu(case: dict) -> dict:
    """{gpu index (str): its slowest copy} of a bandwidth matrix (see the module docstring)."""
    if case["unit"] != "GB/s" or not case["matrix"]:
        return {}
    rows, columns, matrix = case["rows"], case["columns"], case["matrix"]
    sides = (case["row_side"], case["column_side"])
    per_gpu: dict = {}

    def keep(gpu: int, values) -> None:
        known = [value for value in values if value is not None]
        per_gpu[str(gpu)] = min(known) if known else None

    if sides == ("CPU", "GPU"):
        for j, gpu in enumerate(columns):
            keep(gpu, [row[j] for row in matrix])
    elif sides == ("GPU", "CPU"):
        for i, gpu in enumerate(rows):
            keep(gpu, matrix[i])
    elif sides == ("GPU", "GPU"):
        for gpu in sorted(set(rows) | set(columns)):
            values = [matrix[i][j] for i, r in enumerate(rows) for j, c in enumerate(columns)
                      if (r == gpu or c == gpu) and r != c]  # fmt: skip
            keep(gpu, values)
    return per_gpu


def _nvb_case() -> dict:
    return {
        "status": "ran",
        "message": None,
        "title": None,
        "unit": None,
        "row_side": None,
        "column_side": None,
        "rows": [],
        "columns": [],
        "matrix": [],
        "sum_gbps": None,
        "per_gpu_gbps": {},
    }


def _nvb_title(case: dict, title: str) -> None:
    case["title"] = title
    unit = _NVB_TITLE.match(title)
    case["unit"] = unit.group(1).strip() if unit else None
    for side, where in _NVB_SIDE.findall(title):
        case["row_side" if where.lower() == "row" else "column_side"] = side.upper()


def parse_nvbandwidth(text: str) -> dict:
    """Versions, devices and per-testcase bandwidth matrices of an NVIDIA nvbandwidth run."""
    what = "nvbandwidth"
    require_content(NVBANDWIDTH_KIND, strip_source_header(text or ""), what, NVBANDWIDTH_FIX)
    result: dict = {"version": None, "driver_version": None, "cuda_version": None}
    devices: dict = {}
    cases: dict = {}
    errors: list[str] = []
    waived = 0
    header_seen = False
    current = None  # the testcase being read
    columns: list[int] | None = None  # the open matrix's column indices
    for raw in _lines(text):
        line = _job_line(raw).strip()
        if not line:
            columns = None
            continue
        if current is not None and current["title"] and columns is None and not current["matrix"]:
            header = _nvb_header(line)
            if header is not None:
                columns = header
                current["columns"] = header
                continue
        if current is not None and columns is not None:
            row = _nvb_row(line, len(columns))
            if row is not None:
                current["rows"].append(row[0])
                current["matrix"].append(row[1])
                continue
            columns = None
        version = _NVB_VERSION.match(line)
        if version:
            result["version"] = result["version"] or (version.group(1) or None)
            header_seen = True
            continue
        driver = _NVB_DRIVER.match(line)
        if driver:
            result["driver_version"] = driver.group(1)
            continue
        if _NVB_CUDA_ANY.match(line):
            cuda = _NVB_CUDA.match(line)
            if cuda:
                result["cuda_version"] = _nvb_cuda_version(cuda.group(1))
            header_seen = header_seen or line.startswith("CUDA Runtime Version:")
            continue
        device = _NVB_DEVICE.match(line)
        if device:
            process, index, name, bus = device.groups()
            number = int(process if process is not None else index)
            devices.setdefault(
                number, {"index": number, "name": name or None, "bus_id": normalize_pci_bus_id(bus)}
            )
            continue
        running = _NVB_RUNNING.match(line)
        if running:
            current = cases.setdefault(running.group(1), _nvb_case())
            columns = None
            continue
        if _NVB_TITLE.match(line) and _NVB_SIDE.search(line):
            if current is None or current["title"]:
                # a matrix without its "Running X." line (a log cut at the top): named by its order
                current = cases.setdefault(f"unnamed_{len(cases)}", _nvb_case())
            _nvb_title(current, line)
            continue
        summed = _NVB_SUM.match(line)
        if summed:
            case = cases.setdefault(summed.group(1), _nvb_case())
            value = float(summed.group(2))
            case["sum_gbps"] = value if case["unit"] in ("GB/s", None) else None
            continue
        if _NVB_WAIVED.match(line):
            waived += 1
            continue
        if _NVB_STAT.match(line):
            continue
        if _NVB_ERROR.search(line):
            _keep(errors, line)
            if current is not None and not current["matrix"]:
                current["status"] = "error"
                current["message"] = current["message"] or line
    if not cases and not waived:
        if errors and header_seen:
            raise ParseError(NVBANDWIDTH_KIND, f"nvbandwidth failed: {errors[0]}", fix=NVBANDWIDTH_FIX)
        if not header_seen:
            raise not_output(
                NVBANDWIDTH_KIND,
                what,
                text,
                NVBANDWIDTH_FIX,
                "no 'nvbandwidth Version' header and no 'Running <testcase>.' line",
            )
    for case in cases.values():
        case["per_gpu_gbps"] = _nvb_per_gpu(case)
        del case["rows"]
    result["devices"] = [devices[number] for number in sorted(devices)]
    result["testcases"] = cases
    result["waived"] = waived
    result["errors"] = errors
    return result
