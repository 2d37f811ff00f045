"""The node side of `clusterforge validate --level framework` (module framework_smoke): ship the
probe (framework_probe.py) into the site's training environment, run it under a time limit with the
environment's python, parse its JSON and judge it (checks/framework.py) into a node result
(docs/design.md, "Framework readiness (`clusterforge validate --level framework`)").

The training environment is the inventory variable `framework_env`, checked by `env_problem` here
(the module and the CLI's preflight say the same):

    {kind: venv, path: /opt/train/venv, python: <path>/bin/python, source: SCRIPT, framework: pytorch}
    {kind: image, image: REF, runtime: docker | podman, python: python3, run_args: [...],
     source: SCRIPT, framework: pytorch | mindspore}

The other `framework_*` variables set the module's options (SETTINGS: the backend, world size,
time limits, CANN version files); `settings_findings` checks them and `framework_env` for
`clusterforge inventory check`, `setting_problem` is the module's check of the same numbers.

`source` is a shell script sourced before the probe starts (CANN's set_env.sh for torch_npu). An
image runs as `RUNTIME run --rm` with the node's accelerators passed through: NVIDIA `--gpus all`
(docker) or the CDI device `nvidia.com/gpu=all` (podman); Ascend the /dev/davinci devices,
davinci_manager, devmm_svm, hisi_hdc and the driver's files read-only (the mounts the Ascend
device plugin and Ascend Docker Runtime give a container).

Stdlib only, Python 3.8-safe.
"""

from __future__ import annotations

import inspect
import json
import math
import os
import re
import shutil
import subprocess
import tempfile
import time

from . import framework_probe
from .bom import finding as bom_finding
from .checks import framework as checks
from .results import worst

KINDS = ("venv", "image")
RUNTIMES = ("docker", "podman")
FRAMEWORKS = ("pytorch", "mindspore")
ENV_KEYS = {
    "venv": ({"kind", "path"}, {"python", "source", "framework"}),
    "image": ({"kind", "image"}, {"runtime", "python", "run_args", "source", "framework"}),
}
BACKENDS = ("nccl", "hccl", "gloo")
# The inventory variables of playbooks/validate_framework.yml, each the module option it sets:
# (variable, option, "int" | "number", the least value ("number": above it), default, meaning).
SETTINGS = (
    ("framework_world_size", "world_size", "int", 0, 0, "ranks of the all-reduce, 0: one per device"),
    ("framework_timeout_s", "timeout_s", "int", 1, 300, "seconds, the whole probe run"),
    ("framework_allreduce_timeout_s", "allreduce_timeout_s", "int", 1, 120, "seconds the ranks may take"),
    ("framework_allreduce_max_s", "allreduce_max_s", "number", 0, 30, "seconds, the all-reduce fails above"),
    ("framework_allreduce_warn_s", "allreduce_warn_s", "number", 0, 5, "seconds, the all-reduce warns above"),
)
_SETTING = {variable: rest for variable, *rest in SETTINGS}
_WHOLE = re.compile(r"[+-]?[0-9]+", re.ASCII)
PROBE_IN_IMAGE = "/tmp/cf_framework_probe.py"
ASCEND_MOUNTS = ("/usr/local/Ascend/driver", "/usr/local/dcmi", "/usr/local/bin/npu-smi")
ASCEND_DEVICES = ("/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc")
TAIL_LINES = 15
GRACE_S = 30  # on top of the all-reduce's own limit: imports, device discovery, process start


def env_problem(env) -> str | None:
    """None when `framework_env` is well formed, else what is wrong with it (naming the key)."""
    if not isinstance(env, dict) or not env:
        return "framework_env must be a mapping such as {kind: venv, path: /opt/train/venv}"
    kind = env.get("kind")
    if kind not in KINDS:
        return f"framework_env.kind must be one of {', '.join(KINDS)}, got {kind!r}"
    required, optional = ENV_KEYS[kind]
    unknown = sorted(set(map(str, env)) - required - optional)
    if unknown:
        return (
            f"framework_env: unknown key(s) {', '.join(unknown)} for kind {kind} (known: "
            + ", ".join(sorted(required | optional))
            + ")"
        )
    missing = sorted(required - set(env))
    if missing:
        return f"framework_env of kind {kind} needs {', '.join(missing)}"
    for key in ("path", "python", "source", "image"):
        if key in env and (not isinstance(env[key], str) or not env[key].strip()):
            return f"framework_env.{key} must be a non-empty string"
    for key in ("path", "source") if kind == "venv" else ("source",):
        if key in env and not env[key].startswith("/"):
            return f"framework_env.{key} must be an absolute path, got {env[key]!r}"
    if kind == "image" and env.get("runtime", "docker") not in RUNTIMES:
        return f"framework_env.runtime must be one of {', '.join(RUNTIMES)}, got {env.get('runtime')!r}"
    if "run_args" in env and (
        not isinstance(env["run_args"], list) or not all(isinstance(a, str) for a in env["run_args"])
    ):
        return "framework_env.run_args must be a list of strings"
    if env.get("framework", "pytorch") not in FRAMEWORKS:
        return f"framework_env.framework must be one of {', '.join(FRAMEWORKS)}, got {env.get('framework')!r}"
    return None


def _number(value, whole: bool):
    """`value` as the module's int or float option reads it (a number, or a string of one, as YAML
    and templating give it); None when the module would refuse it or it is not finite."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        text = value.strip()
        if whole:
            return int(text) if _WHOLE.fullmatch(text) else None
        try:
            value = float(text)
        except ValueError:
            return None
    if isinstance(value, int):
        if whole:
            return value
        try:
            return float(value)
        except OverflowError:
            return None
    if isinstance(value, float) and math.isfinite(value):
        return (int(value) if value.is_integer() else None) if whole else value
    return None


def setting_problem(variable: str, value) -> str | None:
    """None when `value` is a usable value of the SETTINGS variable, else what is wrong (naming it)."""
    _option, form, least, _default, meaning = _SETTING[variable]
    number = _number(value, form == "int")
    if form == "int" and number is not None and number >= least:
        return None
    if form == "number" and number is not None and number > least:
        return None
    if form == "number":
        return f"{variable} must be positive, a number ({meaning}), got {value!r}"
    if least == 1:
        return f"{variable} must be positive, a whole number ({meaning}), got {value!r}"
    return f"{variable} must be 0 or more, a whole number ({meaning}), got {value!r}"


def _finding(variable, message, fix, severity="error", rule="framework.settings") -> dict:
    """A finding in cfcore.bom's shape, about the value itself (reported once, where it is written)."""
    return bom_finding(rule, variable, message, fix, severity, source=None, of_value=True)


def settings_findings(values: dict) -> list:
    """What is wrong with the `framework_*` variables in `values` (only the set, resolved ones):
    `framework_env` (env_problem), `framework_backend`, the SETTINGS numbers, the warning limit
    above the failing one, `framework_cann_version_files` (docs/design.md, "Framework readiness")."""
    found = []
    if values.get("framework_env") is not None:
        problem = env_problem(values["framework_env"])
        if problem:
            found.append(
                _finding(
                    "framework_env",
                    problem,
                    "set framework_env to {kind: venv, path: /opt/train/venv} or {kind: image, image: REF} "
                    "(docs/design.md, 'Framework readiness')",
                    rule="framework.env",
                )
            )
    backend = values.get("framework_backend")
    if backend is not None and backend not in BACKENDS:
        found.append(
            _finding(
                "framework_backend",
                f"framework_backend must be one of {', '.join(BACKENDS)}, got {backend!r}",
                "set framework_backend to one of those, or leave it unset (NCCL on NVIDIA, HCCL on Ascend)",
            )
        )
    for variable, _option, form, least, default, _meaning in SETTINGS:
        if values.get(variable) is None:
            continue
        problem = setting_problem(variable, values[variable])
        if problem:
            at_least = f"a whole number >= {least}" if form == "int" else f"a number > {least}"
            found.append(
                _finding(variable, problem, f"set {variable} to {at_least}, or leave it unset ({default})")
            )
    warn_s, max_s = values.get("framework_allreduce_warn_s"), values.get("framework_allreduce_max_s", 30)
    if warn_s is not None and not setting_problem("framework_allreduce_warn_s", warn_s):
        limit = None if setting_problem("framework_allreduce_max_s", max_s) else _number(max_s, False)
        if limit is not None and _number(warn_s, False) >= limit:
            found.append(
                _finding(
                    "framework_allreduce_warn_s",
                    f"framework_allreduce_warn_s ({warn_s}) is not below framework_allreduce_max_s "
                    f"({max_s}): the all-reduce fails before it would warn",
                    "set framework_allreduce_warn_s below framework_allreduce_max_s",
                    severity="warning",
                )
            )
    files = values.get("framework_cann_version_files")
    if files is not None and (
        not isinstance(files, list) or not all(isinstance(f, str) and f.startswith("/") for f in files)
    ):
        found.append(
            _finding(
                "framework_cann_version_files",
                f"framework_cann_version_files must be a list of absolute paths, got {files!r}",
                "write it as a YAML list, e.g. [/usr/local/Ascend/cann/opp/version.info], or leave it unset",
            )
        )
    return found


def env_label(env: dict) -> str:
    if env.get("kind") == "image":
        return f"image {env.get('image')} ({env.get('runtime', 'docker')})"
    return f"venv {env.get('path')}"


def probe_source() -> str:
    try:
        return inspect.getsource(framework_probe)
    except (OSError, TypeError):
        with open(framework_probe.__file__, encoding="utf-8") as handle:
            return handle.read()


def device_count(sku: dict) -> int:
    """Devices the framework should see: the SKU's accelerators (each die of a multi-die NPU)."""
    accel = (sku or {}).get("accelerator") or {}
    return int(accel.get("count") or 0) * int(accel.get("chips_per_device") or 1)


def probe_args(params: dict, vendor: str, count: int) -> list:
    env = params.get("env") or {}
    args = ["--vendor", vendor, "--framework", env.get("framework", "pytorch")]
    backend = params.get("backend")
    if backend:
        args += ["--backend", backend]
    world = params.get("world_size") or (0 if backend == "gloo" else count)
    args += [
        "--world-size",
        str(int(world or 0)),
        "--timeout",
        str(float(params.get("allreduce_timeout_s") or 120)),
    ]
    args += ["--sysfs-root", params.get("sysfs_root") or "/"]
    for path in params.get("cann_version_files") or []:
        args += ["--cann-version-file", path]
    return args


def _sourced(source, argv: list) -> list:
    if not source:
        return argv
    script = 'source "$1" >/dev/null 2>&1 || { echo "cannot source $1" >&2; exit 97; }; shift; exec "$@"'
    return ["bash", "-c", script, "cf-framework-probe", source, *argv]


def image_argv(env: dict, vendor: str, count: int, probe_path: str, name: str, args: list) -> list:
    runtime = env.get("runtime", "docker")
    argv = [runtime, "run", "--rm", "--name", name, "--network", "host", "--ipc", "host"]
    argv += ["-v", f"{probe_path}:{PROBE_IN_IMAGE}:ro"]
    if vendor == "nvidia":
        argv += ["--gpus", "all"] if runtime == "docker" else ["--device", "nvidia.com/gpu=all"]
    elif vendor == "huawei":
        for index in range(count):
            argv += ["--device", f"/dev/davinci{index}"]
        for device in ASCEND_DEVICES:
            argv += ["--device", device]
        for path in ASCEND_MOUNTS:
            argv += ["-v", f"{path}:{path}:ro"]
    argv += list(env.get("run_args") or [])
    argv.append(env["image"])
    return argv + _sourced(env.get("source"), [env.get("python", "python3"), PROBE_IN_IMAGE, *args])


def run_probe(params: dict, vendor: str, count: int, runner=subprocess.run):
    """The probe's JSON report, or a checks.ProbeError saying why it could not run."""
    env = params.get("env") or {}
    problem = env_problem(env)
    if problem:
        return checks.ProbeError("framework_env", problem)
    args = probe_args(params, vendor, count)
    limit = float(params.get("timeout_s") or 300)
    folder = tempfile.mkdtemp(prefix="cf-framework-")
    name = f"cf-framework-probe-{os.getpid()}"
    try:
        os.chmod(folder, 0o755)  # a container's user reads the probe through the bind mount
        probe_path = os.path.join(folder, "framework_probe.py")
        with open(probe_path, "w", encoding="utf-8") as handle:
            handle.write(probe_source())
        os.chmod(probe_path, 0o644)
        if env["kind"] == "venv":
            python = env.get("python") or os.path.join(env["path"], "bin", "python")
            if not os.path.isdir(env["path"]):
                return checks.ProbeError(
                    python, f"the training environment {env['path']} does not exist on the node"
                )
            if not os.access(python, os.X_OK):
                return checks.ProbeError(
                    python, f"no python in the training environment: {python} is not executable"
                )
            argv = _sourced(env.get("source"), [python, probe_path, *args])
        else:
            runtime = env.get("runtime", "docker")
            if shutil.which(runtime) is None:
                return checks.ProbeError(
                    runtime, f"the container runtime {runtime} is not installed on the node"
                )
            argv = image_argv(env, vendor, count, probe_path, name, args)
        return _run(argv, limit, env, name, runner)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _run(argv: list, limit: float, env: dict, name: str, runner):
    shown = " ".join(argv)
    try:
        proc = runner(argv, capture_output=True, text=True, timeout=limit, check=False, cwd="/")
    except subprocess.TimeoutExpired as err:
        if env.get("kind") == "image":
            runner(
                [env.get("runtime", "docker"), "rm", "-f", name], capture_output=True, timeout=60, check=False
            )
        out = err.stdout.decode(errors="replace") if isinstance(err.stdout, bytes) else (err.stdout or "")
        return checks.ProbeError(shown, f"timed out after {limit:g} s", _tail(out))
    except OSError as err:
        return checks.ProbeError(shown, f"cannot start it: {err}")
    lines = [line for line in (proc.stdout or "").splitlines() if line.strip()]
    tail = _tail(proc.stdout or "") + _tail(proc.stderr or "")
    if not lines:
        return checks.ProbeError(shown, f"it printed nothing on stdout (exit status {proc.returncode})", tail)
    try:
        report = json.loads(lines[-1])
    except ValueError:
        report = None
    if not isinstance(report, dict) or "probe" not in report:
        return checks.ProbeError(
            shown, f"it printed something that is not its JSON (exit status {proc.returncode})", tail
        )
    return report


def _tail(text: str) -> list:
    return [line for line in text.splitlines() if line.strip()][-TAIL_LINES:]


def run_framework(params: dict, hostname: str, runner=subprocess.run, check_mode: bool = False) -> dict:
    """The node result of the framework level for the module's `params` (see framework_smoke.py)."""
    clock = time.monotonic()
    sku = params.get("sku") or {}
    vendor = ((sku.get("accelerator") or {}).get("vendor")) or None
    count = device_count(sku)
    env = params.get("env") or {}
    facts = {"framework_env": env_label(env) if isinstance(env, dict) else None}
    metrics = {}
    if check_mode:
        found = checks.skipped_all("check mode: the probe does not run")
    elif vendor not in ("nvidia", "huawei"):
        why = (
            "no documented PyTorch path for Alibaba PPU (its SDK is CUDA-like, no public torch build): "
            "not checked"
            if vendor == "alibaba"
            else "no accelerator on this SKU"
        )
        found = checks.skipped_all(why)
    else:
        report = run_probe(params, vendor, count, runner)
        expected = {
            "vendor": vendor,
            "count": count,
            "env": env_label(env),
            "bom": params.get("bom") or {},
            "allreduce_max_s": params.get("allreduce_max_s"),
            "allreduce_warn_s": params.get("allreduce_warn_s"),
        }
        found, metrics = checks.judge(report, expected)
        if isinstance(report, dict):
            facts["framework_probe"] = {
                key: report.get(key)
                for key in ("python", "torch", "torch_npu", "mindspore", "driver", "cann")
            }
            facts["framework_allreduce"] = report.get("allreduce")
    statuses = [c["status"] for c in found if c["status"] != "skip"]
    return {
        "host": hostname,
        "node_sku": params.get("node_sku"),
        "level": "framework",
        "status": worst(statuses) if statuses else "skip",
        "checks": found,
        "metrics": metrics,
        "facts": facts,
        "source": "live",
        "collected_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "duration_s": round(time.monotonic() - clock, 3),
    }
