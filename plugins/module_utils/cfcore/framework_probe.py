"""The framework readiness probe: one file, run by the training environment's own python
(docs/design.md, "Framework readiness (`clusterforge validate --level framework`)").

Module framework_smoke writes this file to the node (or into the container) and runs

    PYTHON framework_probe.py --vendor nvidia|huawei [--framework pytorch|mindspore]
        [--backend nccl|hccl|gloo] [--world-size N] [--timeout S] [--sysfs-root /]
        [--cann-version-file PATH ...]

It only measures, and prints one JSON object as its last line on stdout (the judging is
cfcore/checks/framework.py's):

    {"probe": 1, "python": "3.11.2", "framework": "pytorch", "vendor": "nvidia",
     "torch": {"version", "cuda", "nccl", "error"}, "torch_npu": {"version", "error"} | null,
     "mindspore": {"version", "error"} | null,
     "devices": {"api", "count", "error"},
     "driver": {"version", "source", "cuda_api", "error"}, "cann": {"version", "source", "error"} | null,
     "allreduce": {"backend", "device", "world_size", "attempted", "reason", "expected", "sums",
                   "seconds", "error"}}

The all-reduce runs one process per rank (spawned, so each initialises its own device), meets on
127.0.0.1 at a free TCP port, and sums rank + 1 over every rank: each must read n(n+1)/2. The
production backend and world size come from the SKU (nccl or hccl over every device); `gloo` on
the CPU runs the same machinery where no accelerator is (the lab's CPU build of torch).

Stdlib only, Python 3.8-safe: it runs under whatever python the training environment has.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import queue
import re
import socket
import sys
import time
import traceback

PROBE_VERSION = 1
NVIDIA_DRIVER_FILES = ("sys/module/nvidia/version", "proc/driver/nvidia/version")
ASCEND_DRIVER_FILE = "/usr/local/Ascend/driver/version.info"
CANN_VERSION_FILES = (
    "/usr/local/Ascend/cann/opp/version.info",
    "/usr/local/Ascend/ascend-toolkit/latest/opp/version.info",
    "/usr/local/Ascend/cann/runtime/version.info",
    "/usr/local/Ascend/ascend-toolkit/latest/runtime/version.info",
)
BACKEND_DEVICE = {"nccl": "cuda", "hccl": "npu", "gloo": "cpu"}
MAX_TEXT = 2000
_VERSION_LINE = re.compile(r"^\s*version\s*[=:]\s*(\S+)", re.IGNORECASE | re.MULTILINE)
_NVRM = re.compile(r"Kernel Module(?:\s+for\s+\S+)?\s+([0-9]+\.[0-9]+(?:\.[0-9]+)?)")


def _short(text) -> str:
    text = str(text).strip()
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 3] + "..."


def _error(err: BaseException) -> str:
    return _short(f"{type(err).__name__}: {err}")


def _read(path: str, limit: int = 65536):
    with open(path, encoding="utf-8", errors="replace") as handle:
        return handle.read(limit)


# ------------------------------------------------------------------ versions ----


def nvidia_driver(sysfs_root: str) -> dict:
    """The loaded kernel module's version (sysfs, else /proc), and the driver's CUDA API from libcuda."""
    found = {"version": None, "source": None, "cuda_api": None, "error": None}
    tried = []
    for rel in NVIDIA_DRIVER_FILES:
        root = sysfs_root if rel.startswith("sys/") else "/"
        path = os.path.join(root, rel)
        tried.append(path)
        try:
            text = _read(path)
        except OSError:
            continue
        match = _NVRM.search(text) if rel.startswith("proc/") else re.match(r"\s*(\S+)", text)
        if match:
            found["version"], found["source"] = match.group(1), path
            break
    if found["version"] is None:
        found["error"] = "no NVIDIA kernel module loaded: none of " + ", ".join(tried) + " is readable"
    found["cuda_api"] = _libcuda_version()
    return found


def _libcuda_version():
    """cuDriverGetVersion of libcuda.so.1 as "12.8", or None where libcuda does not load."""
    try:
        import ctypes

        lib = ctypes.CDLL("libcuda.so.1")
        value = ctypes.c_int(0)
        if lib.cuDriverGetVersion(ctypes.byref(value)) != 0 or value.value <= 0:
            return None
        return f"{value.value // 1000}.{(value.value % 1000) // 10}"
    except (OSError, AttributeError):
        return None


def version_file(paths, what: str) -> dict:
    """The first readable file's `Version=` (Ascend's version.info form)."""
    for path in paths:
        try:
            text = _read(path)
        except OSError:
            continue
        match = _VERSION_LINE.search(text)
        if match:
            return {"version": match.group(1), "source": path, "error": None}
        return {"version": None, "source": path, "error": f"{path} has no Version= line"}
    return {"version": None, "source": None, "error": f"no {what} version file: none of {', '.join(paths)}"}


# ----------------------------------------------------------------- framework ----


def import_torch(vendor: str) -> tuple:
    """(torch module or None, torch facts, torch_npu facts or None)."""
    facts = {"version": None, "cuda": None, "nccl": None, "error": None}
    npu = {"version": None, "error": None} if vendor == "huawei" else None
    try:
        import torch
    except Exception as err:  # ImportError, or a broken install raising anything at import
        facts["error"] = _error(err)
        return None, facts, npu
    facts["version"] = str(getattr(torch, "__version__", "") or "") or None
    facts["cuda"] = getattr(getattr(torch, "version", None), "cuda", None)
    try:
        nccl = torch.cuda.nccl.version() if facts["cuda"] else None
        facts["nccl"] = ".".join(map(str, nccl)) if isinstance(nccl, tuple) else nccl
    except Exception:  # no NCCL in this build: not this probe's question
        facts["nccl"] = None
    if npu is not None:
        try:
            import torch_npu

            npu["version"] = str(getattr(torch_npu, "__version__", "") or "") or None
        except Exception as err:
            npu["error"] = _error(err)
    return torch, facts, npu


def device_count(torch, vendor: str, npu) -> dict:
    if vendor == "huawei":
        api = "torch.npu.device_count()"
        if npu is None or npu.get("error"):
            return {"api": api, "count": 0, "error": "torch_npu is not importable: torch.npu does not exist"}
        module = getattr(torch, "npu", None)
    else:
        api = "torch.cuda.device_count()"
        module = getattr(torch, "cuda", None)
    try:
        return {"api": api, "count": int(module.device_count()), "error": None}
    except Exception as err:
        return {"api": api, "count": 0, "error": _error(err)}


def mindspore_facts() -> dict:
    found = {"version": None, "error": None}
    try:
        import mindspore

        found["version"] = str(getattr(mindspore, "__version__", "") or "") or None
    except Exception as err:
        found["error"] = _error(err)
    return found


def mindspore_devices() -> dict:
    api = 'mindspore.hal.device_count("Ascend")'
    try:
        from mindspore import hal

        return {"api": api, "count": int(hal.device_count("Ascend")), "error": None}
    except Exception as err:
        return {"api": api, "count": 0, "error": _error(err)}


# ----------------------------------------------------------------- all-reduce ----


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _rank(rank: int, world: int, backend: str, port: int, timeout_s: float, results) -> None:
    """One rank: join the group, contribute rank + 1, report what the all-reduce gave and its time."""
    try:
        import datetime

        import torch
        import torch.distributed as dist

        device = BACKEND_DEVICE.get(backend, "cpu")
        if device == "npu":
            import torch_npu  # noqa: F401  (registers torch.npu)

            torch.npu.set_device(rank)
        elif device == "cuda":
            torch.cuda.set_device(rank)
        clock = time.monotonic()
        dist.init_process_group(
            backend,
            init_method=f"tcp://127.0.0.1:{port}",
            rank=rank,
            world_size=world,
            timeout=datetime.timedelta(seconds=timeout_s),
        )
        tensor = torch.tensor([float(rank + 1)])
        if device != "cpu":
            tensor = tensor.to(f"{device}:{rank}")
        ready = time.monotonic()
        dist.all_reduce(tensor)
        if device == "cuda":
            torch.cuda.synchronize()
        elif device == "npu":
            torch.npu.synchronize()
        done = time.monotonic()
        value = float(tensor.cpu().item() if hasattr(tensor, "cpu") else tensor.item())
        dist.destroy_process_group()
        results.put(
            {"rank": rank, "sum": value, "seconds": done - ready, "total_s": done - clock, "error": None}
        )
    except BaseException as err:
        results.put({"rank": rank, "sum": None, "error": _error(err), "trace": traceback.format_exc()[-800:]})


def all_reduce(backend: str, world: int, timeout_s: float) -> dict:
    """Run the ranks and gather their reports; the ranks' own times, the slowest as `seconds`."""
    found = {
        "backend": backend,
        "device": BACKEND_DEVICE.get(backend, "cpu"),
        "world_size": world,
        "attempted": True,
        "reason": None,
        "expected": world * (world + 1) / 2,
        "sums": [],
        "seconds": None,
        "total_s": None,
        "error": None,
    }
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    port = free_port()
    clock = time.monotonic()
    procs = [
        context.Process(target=_rank, args=(rank, world, backend, port, timeout_s, results), daemon=True)
        for rank in range(world)
    ]
    for proc in procs:
        proc.start()
    reports = []
    deadline = clock + timeout_s
    while len(reports) < world:
        try:
            reports.append(results.get(timeout=max(0.1, min(1.0, deadline - time.monotonic()))))
        except queue.Empty:
            if time.monotonic() > deadline or not any(p.is_alive() for p in procs):
                break
    for proc in procs:
        proc.join(timeout=max(0.0, min(5.0, deadline - time.monotonic())))
        if proc.is_alive():
            proc.terminate()
    found["total_s"] = round(time.monotonic() - clock, 3)
    reports.sort(key=lambda r: r["rank"])
    found["sums"] = [r["sum"] for r in reports]
    errors = [f"rank {r['rank']}: {r['error']}" for r in reports if r.get("error")]
    if len(reports) < world:
        missing = sorted(set(range(world)) - {r["rank"] for r in reports})
        errors.append(
            f"rank(s) {', '.join(map(str, missing))} reported nothing within {timeout_s:g} s "
            "(hung in the collective, or died)"
        )
    if errors:
        found["error"] = _short("; ".join(errors))
    times = [r["seconds"] for r in reports if isinstance(r.get("seconds"), (int, float))]
    if times and len(times) == world:
        found["seconds"] = round(max(times), 6)
    return found


def not_attempted(backend: str, world: int, reason: str) -> dict:
    return {
        "backend": backend,
        "device": BACKEND_DEVICE.get(backend, "cpu"),
        "world_size": world,
        "attempted": False,
        "reason": reason,
        "expected": None,
        "sums": [],
        "seconds": None,
        "total_s": None,
        "error": None,
    }


# ---------------------------------------------------------------------- main ----


def probe(args) -> dict:
    report = {
        "probe": PROBE_VERSION,
        "python": platform.python_version(),
        "executable": sys.executable,
        "framework": args.framework,
        "vendor": args.vendor,
        "torch": None,
        "torch_npu": None,
        "mindspore": None,
        "devices": None,
        "driver": None,
        "cann": None,
        "allreduce": None,
    }
    if args.vendor == "nvidia":
        report["driver"] = nvidia_driver(args.sysfs_root)
    else:
        report["driver"] = version_file([ASCEND_DRIVER_FILE], "Ascend driver")
        report["driver"]["cuda_api"] = None
        report["cann"] = version_file(args.cann_version_file or list(CANN_VERSION_FILES), "CANN")
    backend = args.backend or ("nccl" if args.vendor == "nvidia" else "hccl")
    if args.framework == "mindspore":
        report["mindspore"] = mindspore_facts()
        report["devices"] = mindspore_devices()
        report["allreduce"] = not_attempted(
            backend, args.world_size, "the probe's all-reduce is PyTorch's (torch.distributed)"
        )
        return report
    torch, report["torch"], report["torch_npu"] = import_torch(args.vendor)
    if torch is None:
        report["devices"] = {"api": None, "count": 0, "error": "torch does not import"}
        report["allreduce"] = not_attempted(backend, args.world_size, "torch does not import")
        return report
    report["devices"] = device_count(torch, args.vendor, report["torch_npu"])
    visible = report["devices"]["count"]
    world = args.world_size or visible
    device = BACKEND_DEVICE.get(backend, "cpu")
    if device != "cpu" and visible < 1:
        reason = f"no device visible to {report['devices']['api']}"
        report["allreduce"] = not_attempted(backend, world, reason)
    elif device != "cpu" and world > visible:
        reason = f"{world} ranks asked, {visible} device(s) visible"
        report["allreduce"] = not_attempted(backend, world, reason)
    elif world < 1:
        report["allreduce"] = not_attempted(backend, world, "no rank to run")
    else:
        report["allreduce"] = all_reduce(backend, world, args.timeout)
    return report


def parse_args(argv):
    parser = argparse.ArgumentParser(description="ClusterForge framework readiness probe")
    parser.add_argument("--vendor", choices=("nvidia", "huawei"), required=True)
    parser.add_argument("--framework", choices=("pytorch", "mindspore"), default="pytorch")
    parser.add_argument("--backend", choices=tuple(BACKEND_DEVICE), default=None)
    parser.add_argument("--world-size", type=int, default=0, help="ranks (0: every visible device)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds the all-reduce may take")
    parser.add_argument("--sysfs-root", default="/")
    parser.add_argument("--cann-version-file", action="append", default=[])
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        report = probe(args)
    except Exception as err:  # a bug here must still end in JSON, so the judge can say what broke
        report = {"probe": PROBE_VERSION, "crashed": _error(err), "trace": traceback.format_exc()[-2000:]}
    sys.stdout.write("\n" + json.dumps(report, sort_keys=True) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
