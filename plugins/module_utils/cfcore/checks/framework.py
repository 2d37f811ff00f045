"""`framework.*` checks: the framework readiness probe's report judged against the SKU and the BOM
(docs/design.md, "Framework readiness (`clusterforge validate --level framework`)").

The probe (cfcore/framework_probe.py) only measures; `judge(report, expected)` decides:

  framework.env        the framework imports in the training environment; on NVIDIA a CUDA build
                       (torch.version.cuda set), on Ascend with torch_npu
  framework.devices    the framework sees as many accelerators as the SKU has
  framework.allreduce  every rank of a single-node all-reduce read n(n+1)/2, within the time bound
  framework.versions   the framework, its CUDA, torch_npu, MindSpore, the driver and CANN versions it
                       reports against the BOM; on NVIDIA the driver's CUDA API >= the build's CUDA major

Status rules: `error` only when the probe could not run at all (`ProbeError`: the environment or its
python missing, the probe crashed, timed out, or printed something that is not its JSON; every check
is `error` with the reason), and for an all-reduce that could not be attempted (no device visible);
what the probe measured and found wrong is `fail` with evidence and a remedy; an all-reduce slower
than `warn_s` warns, slower than `max_s` fails.

`expected`: {vendor, count, framework, env (a label for messages), bom: {variable: version or None},
allreduce_max_s, allreduce_warn_s}. Returns (checks, metrics). Stdlib only, Python 3.8-safe: it
runs on the nodes inside module framework_smoke.
"""

from __future__ import annotations

from .. import versions
from ..results import ERROR, FAIL, PASS, SKIP, WARN, evidence, result, skipped

ENV = "framework.env"
DEVICES = "framework.devices"
ALLREDUCE = "framework.allreduce"
VERSIONS = "framework.versions"
CHECK_IDS = (ENV, DEVICES, ALLREDUCE, VERSIONS)
PROBE = "framework_probe.py"

REMEDY_CPU_BUILD = (
    "install PyTorch's CUDA build into the training environment (the wheel of download.pytorch.org/whl/"
    "cuXY for the BOM's pytorch_cuda_version), not the CPU wheel: `python -c 'import torch; "
    "print(torch.version.cuda)'` must print the CUDA version"
)
REMEDY_TORCH_NPU = (
    "install torch_npu (Ascend Extension for PyTorch) of the BOM's torch_npu_version into the training "
    "environment, and source CANN's set_env.sh for it (framework_env.source)"
)
REMEDY_IMPORT = (
    "install the framework of the BOM into the training environment; the import error is in the evidence"
)
REMEDY_DEVICES_NVIDIA = (
    "compare with `nvidia-smi -L` on the node: fewer GPUs there is hardware (gpu.count); all there but "
    "not in torch: CUDA_VISIBLE_DEVICES, the container's --gpus, or a driver the build cannot use"
)
REMEDY_DEVICES_ASCEND = (
    "compare with `npu-smi info` on the node: fewer NPUs there is hardware (npu.count); all there but not "
    "in torch_npu: ASCEND_RT_VISIBLE_DEVICES, the container's /dev/davinci devices, or CANN's set_env.sh"
)
REMEDY_ALLREDUCE = (
    "rerun the probe with NCCL_DEBUG=INFO (HCCL: ASCEND_GLOBAL_LOG_LEVEL=1) and read the first error; "
    "a wrong sum is data corruption: drain the node and run the full validation (dcgmi diag, npu-smi health)"
)
REMEDY_SLOW = (
    "a single-node all-reduce of one number takes milliseconds once the group is up: check the node's "
    "load, NVLink/HCCS health (gpu.nvlink, npu.health) and the perf level's NCCL/HCCL figures"
)
REMEDY_VERSIONS = "install the BOM's versions into the training environment (or correct the BOM)"


class ProbeError:
    """The probe could not run: why (`message`), the command, the last lines it printed."""

    __slots__ = ("command", "message", "output_tail")

    def __init__(self, command: str, message: str, output_tail=None):
        self.command = str(command or "")
        self.message = str(message or "").strip()
        self.output_tail = [str(line) for line in output_tail or []]


def could_not_run(error: ProbeError, remedy: str) -> list:
    """Every framework.* check `error`: nothing was measured."""
    found = evidence(error.command or PROBE, error.output_tail)
    return [
        result(check_id, ERROR, f"could not run the probe: {error.message}", found, remedy)
        for check_id in CHECK_IDS
    ]


def skipped_all(reason: str) -> list:
    return [skipped(check_id, reason) for check_id in CHECK_IDS]


def judge(report, expected: dict) -> tuple:
    """(checks, metrics) from the probe's report, or every check `error` for a ProbeError."""
    if isinstance(report, ProbeError):
        return could_not_run(
            report, "fix what kept the probe from running (see the evidence), then rerun"
        ), {}
    if not isinstance(report, dict) or report.get("crashed"):
        why = report.get("crashed") if isinstance(report, dict) else f"a {type(report).__name__}"
        lines = str((report or {}).get("trace") or "").splitlines() if isinstance(report, dict) else []
        error = ProbeError(PROBE, f"the probe crashed: {why}", lines[-10:])
        return could_not_run(error, "a bug in the probe: report it with the evidence"), {}
    metrics = {}
    devices = report.get("devices") or {}
    if isinstance(devices.get("count"), int):
        metrics["framework.devices_visible"] = devices["count"]
    allreduce = report.get("allreduce") or {}
    if allreduce.get("attempted") and isinstance(allreduce.get("seconds"), (int, float)):
        metrics["framework.allreduce_s"] = allreduce["seconds"]
    checks = [
        env_check(report, expected),
        devices_check(report, expected),
        allreduce_check(report, expected),
        versions_check(report, expected),
    ]
    return checks, metrics


# ----------------------------------------------------------------------- env ----


def _framework_line(report: dict) -> str:
    torch = report.get("torch") or {}
    parts = [f"torch {torch.get('version')}"]
    if torch.get("cuda"):
        parts.append(f"CUDA {torch['cuda']}")
    if torch.get("nccl"):
        parts.append(f"NCCL {torch['nccl']}")
    npu = report.get("torch_npu") or {}
    if npu.get("version"):
        parts.append(f"torch_npu {npu['version']}")
    return ", ".join(parts)


def _probe_lines(report: dict, *keys: str) -> list:
    lines = [f"python {report.get('python')} ({report.get('executable')})"]
    for key in keys:
        value = report.get(key)
        if value is not None:
            lines.append(f"{key}: {value}")
    return lines


def env_check(report: dict, expected: dict) -> dict:
    where = expected.get("env") or "the training environment"
    found = evidence(PROBE, _probe_lines(report, "torch", "torch_npu", "mindspore"))
    if report.get("framework") == "mindspore":
        ms = report.get("mindspore") or {}
        if ms.get("error"):
            return result(
                ENV, FAIL, f"mindspore does not import in {where}: {ms['error']}", found, REMEDY_IMPORT
            )
        return result(ENV, PASS, f"mindspore {ms.get('version')} imports in {where}", found)
    torch = report.get("torch") or {}
    if torch.get("error"):
        return result(ENV, FAIL, f"torch does not import in {where}: {torch['error']}", found, REMEDY_IMPORT)
    if expected.get("vendor") == "nvidia" and not torch.get("cuda"):
        return result(
            ENV,
            FAIL,
            f"torch {torch.get('version')} in {where} is a CPU build (torch.version.cuda is None): it cannot "
            "use the GPUs",
            found,
            REMEDY_CPU_BUILD,
        )
    if expected.get("vendor") == "huawei":
        npu = report.get("torch_npu") or {}
        if npu.get("error") or not npu.get("version"):
            why = npu.get("error") or "no version"
            return result(
                ENV,
                FAIL,
                f"torch_npu is missing from {where} ({why}): torch cannot use the NPUs",
                found,
                REMEDY_TORCH_NPU,
            )
    return result(ENV, PASS, f"{_framework_line(report)} import in {where}", found)


# ------------------------------------------------------------------- devices ----


def devices_check(report: dict, expected: dict) -> dict:
    devices = report.get("devices") or {}
    want = int(expected.get("count") or 0)
    seen = devices.get("count") if isinstance(devices.get("count"), int) else 0
    kind = "GPUs" if expected.get("vendor") == "nvidia" else "NPUs"
    api = devices.get("api") or "the framework"
    lines = [f"{api} = {seen}", f"SKU: {want} {kind}"]
    if devices.get("error"):
        lines.append(f"error: {devices['error']}")
    found = evidence(f"{PROBE}: {api}", lines)
    remedy = REMEDY_DEVICES_NVIDIA if expected.get("vendor") == "nvidia" else REMEDY_DEVICES_ASCEND
    torch = report.get("torch") or {}
    if report.get("framework") != "mindspore":
        if torch.get("error"):
            return result(DEVICES, FAIL, f"0 of {want} {kind}: torch does not import", found, REMEDY_IMPORT)
        if expected.get("vendor") == "nvidia" and not torch.get("cuda"):
            return result(
                DEVICES,
                FAIL,
                f"torch {torch.get('version')} is a CPU build (torch.version.cuda is None): "
                f"it sees {seen} of {want} {kind}",
                found,
                REMEDY_CPU_BUILD,
            )
        npu = report.get("torch_npu") or {}
        if expected.get("vendor") == "huawei" and (npu.get("error") or not npu.get("version")):
            return result(
                DEVICES,
                FAIL,
                f"torch_npu is missing: torch sees {seen} of {want} {kind}",
                found,
                REMEDY_TORCH_NPU,
            )
    if devices.get("error"):
        return result(
            DEVICES, FAIL, f"{api} failed: {devices['error']} ({seen} of {want} {kind})", found, remedy
        )
    if seen < want:
        return result(DEVICES, FAIL, f"{api} sees {seen} of the SKU's {want} {kind}", found, remedy)
    if seen > want:
        return result(
            DEVICES,
            WARN,
            f"{api} sees {seen} {kind}, more than the SKU's {want}",
            found,
            "check node_sku (the catalog's accelerator count) against the node",
        )
    return result(DEVICES, PASS, f"{api} sees all {want} {kind}", found)


# ----------------------------------------------------------------- allreduce ----


def allreduce_check(report: dict, expected: dict) -> dict:
    run = report.get("allreduce") or {}
    backend, world = run.get("backend"), run.get("world_size")
    command = f"{PROBE}: torch.distributed all_reduce over {backend}, {world} rank(s)"
    if not run:
        return result(
            ALLREDUCE, ERROR, "the probe reported no all-reduce", evidence(command), REMEDY_ALLREDUCE
        )
    if not run.get("attempted"):
        reason = run.get("reason") or "no reason given"
        if report.get("framework") == "mindspore":
            return skipped(ALLREDUCE, f"not attempted: {reason}")
        return result(
            ALLREDUCE,
            ERROR,
            f"could not run the all-reduce: {reason}",
            evidence(command, [f"reason: {reason}"]),
            "make the devices visible to the framework first (framework.devices)",
        )
    expected_sum = run.get("expected")
    sums = run.get("sums") or []
    seconds = run.get("seconds")
    lines = [
        f"sums per rank: {sums}",
        f"expected on every rank: {expected_sum} (n(n+1)/2, n={world})",
        f"all_reduce time (slowest rank): {seconds} s; with process group set-up: {run.get('total_s')} s",
    ]
    if run.get("error"):
        lines.append(f"error: {run['error']}")
    found = evidence(command, lines)
    if run.get("error"):
        return result(ALLREDUCE, FAIL, f"the all-reduce failed: {run['error']}", found, REMEDY_ALLREDUCE)
    wrong = [rank for rank, value in enumerate(sums) if value != expected_sum]
    if len(sums) != world or wrong:
        ranks = ", ".join(map(str, wrong)) or "missing ranks"
        return result(
            ALLREDUCE,
            FAIL,
            f"wrong all-reduce result on rank(s) {ranks}: {sums}, expected {expected_sum} on each of {world}",
            found,
            REMEDY_ALLREDUCE,
        )
    max_s, warn_s = expected.get("allreduce_max_s"), expected.get("allreduce_warn_s")
    if not isinstance(seconds, (int, float)):
        return result(ALLREDUCE, FAIL, "the all-reduce reported no time", found, REMEDY_ALLREDUCE)
    shown = f"{world} ranks over {backend} summed to {expected_sum:g} on every rank in {seconds:.4f} s"
    if isinstance(max_s, (int, float)) and seconds > max_s:
        return result(ALLREDUCE, FAIL, f"{shown}: slower than the {max_s:g} s allowed", found, REMEDY_SLOW)
    if isinstance(warn_s, (int, float)) and seconds > warn_s:
        return result(ALLREDUCE, WARN, f"{shown}: slower than the {warn_s:g} s expected", found, REMEDY_SLOW)
    return result(ALLREDUCE, PASS, shown, found)


# ------------------------------------------------------------------ versions ----


def _base(version) -> str:
    """PyTorch's version without its local part: 2.6.0+cu124 -> 2.6.0."""
    return str(version).split("+", 1)[0]


def versions_check(report: dict, expected: dict) -> dict:
    bom = expected.get("bom") or {}
    vendor = expected.get("vendor")
    torch = report.get("torch") or {}
    npu = report.get("torch_npu") or {}
    ms = report.get("mindspore") or {}
    driver = report.get("driver") or {}
    cann = report.get("cann") or {}
    rows = []  # (what, BOM variable, reported value, how to compare)
    if report.get("framework") == "mindspore":
        rows.append(("MindSpore", "mindspore_version", ms.get("version"), versions.same_version))
    else:
        rows.append(
            (
                "PyTorch",
                "pytorch_version",
                torch.get("version") and _base(torch["version"]),
                versions.same_version,
            )
        )
        if vendor == "nvidia":
            rows.append(("PyTorch's CUDA", "pytorch_cuda_version", torch.get("cuda"), _same_minor))
        if vendor == "huawei":
            rows.append(("torch_npu", "torch_npu_version", npu.get("version"), versions.same_version))
    if vendor == "nvidia":
        rows.append(("NVIDIA driver", "nvidia_driver_version", driver.get("version"), versions.same_version))
    if vendor == "huawei":
        rows.append(("Ascend driver", "ascend_driver_version", driver.get("version"), versions.same_version))
        rows.append(("CANN", "cann_version", cann.get("version"), versions.same_version))
    lines, bad, unpinned = [], [], []
    for what, variable, reported, same in rows:
        want = bom.get(variable)
        if not want:
            unpinned.append(variable)
            lines.append(f"{what}: {reported or 'not reported'} ({variable} unset: not compared)")
            continue
        if reported and same(str(reported), str(want)):
            lines.append(f"{what}: {reported} = {variable}")
            continue
        why = reported or _not_reported(what, torch, npu, driver, cann)
        lines.append(f"{what}: {why}, BOM {variable} {want}")
        bad.append(f"{what} {why} != {variable} {want}")
    cuda_api = driver.get("cuda_api")
    if vendor == "nvidia" and torch.get("cuda"):
        if cuda_api and versions.major(cuda_api) < versions.major(torch["cuda"]):
            bad.append(f"the driver's CUDA API {cuda_api} is older than the build's CUDA {torch['cuda']}")
        lines.append(f"driver CUDA API (cuDriverGetVersion): {cuda_api or 'not readable (libcuda.so.1)'}")
    found = evidence(PROBE, lines)
    if bad:
        message = "; ".join(bad)
        return result(VERSIONS, FAIL, message, found, REMEDY_VERSIONS)
    compared = len(rows) - len(unpinned)
    if not compared:
        return result(VERSIONS, SKIP, f"nothing to compare: {', '.join(unpinned)} unset in the BOM")
    note = f" ({', '.join(unpinned)} unset)" if unpinned else ""
    return result(VERSIONS, PASS, f"{compared} version(s) as the BOM says{note}", found)


def _same_minor(reported: str, want: str) -> bool:
    try:
        return versions.major_minor(reported) == versions.major_minor(want)
    except ValueError:
        return False


def _not_reported(what: str, torch: dict, npu: dict, driver: dict, cann: dict) -> str:
    if what == "PyTorch's CUDA":
        return "none (a CPU build)" if torch.get("version") else "not reported (torch does not import)"
    if what == "torch_npu":
        return f"not installed ({npu.get('error') or 'no version'})"
    if what in ("NVIDIA driver", "Ascend driver"):
        return f"not readable ({driver.get('error') or 'no version'})"
    if what == "CANN":
        return f"not readable ({cann.get('error') or 'no version'})"
    return "not reported"


__all__ = ["CHECK_IDS", "ProbeError", "judge", "skipped_all"]
