"""Where node validation gets its inputs: a live node, or a capture directory.

A *source* has three methods:

    run(argv, timeout) -> (rc, stdout, stderr)
    read(path) -> text, or None when the file does not exist
    exists(path) -> bool

`LiveSource` runs the vendor tools on this machine; `CaptureSource(dir)` answers
from a directory written by `tools/cf-capture.sh` (what a support engineer
receives from a site), without running anything. Both report a missing tool
with rc 127 and a timeout with rc 124, so checks treat them alike.

The capture layout (one file per command, `CAPTURE_LAYOUT` below):

    nvidia-smi-q-x.xml                 nvidia-smi -q -x
    nvidia-smi-q.txt                   nvidia-smi -q   (used when the XML is absent)
    nvidia-smi-nvlink-s.txt            nvidia-smi nvlink -s
    dmesg.txt                          dmesg
    journalctl-k-b.txt                 journalctl -k -b   (when dmesg is denied)
    lspci-vvv-10de.txt                 lspci -vvv -nn -D -d 10de:   (15b3: HCAs, 19e5: NPUs)
    ibstat.txt                         ibstat
    systemctl-is-active-nvidia-fabricmanager.txt
    modinfo-license-nvidia.txt         modinfo -F license nvidia
    dcgmi-diag-r2.json                 dcgmi diag -r 2 -j   (level full only)
    npu-smi-info.txt                   npu-smi info
    npu-smi-board-<N>.txt              npu-smi info -t board -i N
    npu-smi-health-<N>.txt             npu-smi info -t health -i N
    hccn-<N>-ip.txt / -link.txt / -net_health.txt   hccn_tool -i N -ip|-link|-net_health -g
    proc-mounts.txt                    /proc/self/mounts
    proc-driver-nvidia-version.txt     /proc/driver/nvidia/version
    sys/class/infiniband/...           the HCA sysfs tree (files only)
    meta.json                          {"hostname", "node_sku", "captured_at", ...}

A command that failed when captured has a `<file>.err` beside it: first line
`rc: N`, then its stderr (rc 127: the tool was not installed).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

from .outputs import Output
from .parsers import ParseError, parse
from .parsers.infiniband import read_sysfs_infiniband

RC_TIMEOUT = 124
RC_NOT_FOUND = 127
# Not a process exit code: the capture directory has no file for this command.
RC_NOT_CAPTURED = -1

# Vendor tools that are often not on a service account's PATH.
EXTRA_TOOL_DIRS = (
    "/usr/local/sbin",
    "/usr/local/bin",
    "/usr/sbin",
    "/usr/bin",
    "/sbin",
    "/bin",
    "/usr/local/Ascend/driver/tools",
)

# (argv with {n} for a device id, file name in a capture). Keep tools/cf-capture.sh in step.
CAPTURE_LAYOUT = (
    (("nvidia-smi", "-q", "-x"), "nvidia-smi-q-x.xml"),
    (("nvidia-smi", "-q"), "nvidia-smi-q.txt"),
    (("nvidia-smi", "nvlink", "-s"), "nvidia-smi-nvlink-s.txt"),
    (("dmesg",), "dmesg.txt"),
    (("journalctl", "-k", "-b", "--no-pager"), "journalctl-k-b.txt"),
    (("lspci", "-vvv", "-nn", "-D", "-d", "10de:"), "lspci-vvv-10de.txt"),
    (("lspci", "-vvv", "-nn", "-D", "-d", "15b3:"), "lspci-vvv-15b3.txt"),
    (("lspci", "-vvv", "-nn", "-D", "-d", "19e5:"), "lspci-vvv-19e5.txt"),
    (("ibstat",), "ibstat.txt"),
    (("systemctl", "is-active", "nvidia-fabricmanager"), "systemctl-is-active-nvidia-fabricmanager.txt"),
    (("modinfo", "-F", "license", "nvidia"), "modinfo-license-nvidia.txt"),
    (("dcgmi", "diag", "-r", "2", "-j"), "dcgmi-diag-r2.json"),
    (("npu-smi", "info"), "npu-smi-info.txt"),
    (("npu-smi", "info", "-t", "board", "-i", "{n}"), "npu-smi-board-{n}.txt"),
    (("npu-smi", "info", "-t", "health", "-i", "{n}"), "npu-smi-health-{n}.txt"),
    (("hccn_tool", "-i", "{n}", "-ip", "-g"), "hccn-{n}-ip.txt"),
    (("hccn_tool", "-i", "{n}", "-link", "-g"), "hccn-{n}-link.txt"),
    (("hccn_tool", "-i", "{n}", "-net_health", "-g"), "hccn-{n}-net_health.txt"),
)
# Kinds whose empty output is a legitimate empty result: a kernel log ring buffer can be empty.
EMPTY_RESULTS = {"xid": {"events": []}}

FILE_LAYOUT = {
    "/proc/self/mounts": "proc-mounts.txt",
    "/proc/driver/nvidia/version": "proc-driver-nvidia-version.txt",
}


def command_line(argv) -> str:
    return " ".join(argv)


def capture_name(argv) -> str | None:
    """The capture file holding the output of `argv`, or None when captures never hold it."""
    argv = tuple(argv)
    for template, name in CAPTURE_LAYOUT:
        if len(template) != len(argv):
            continue
        device = None
        for index, want in enumerate(template):
            got = argv[index]
            if want == "{n}" and got.isdigit():
                device = got
            elif want != got:
                break
        else:
            return name.replace("{n}", device) if device is not None else name
    return None


class LiveSource:
    """This machine. Commands run with a timeout and the C locale; nothing is written."""

    kind = "live"

    def __init__(self, extra_dirs=EXTRA_TOOL_DIRS, env: dict | None = None):
        self.extra_dirs = tuple(extra_dirs)
        self.env = dict(os.environ if env is None else env)
        # Vendor tools localise messages; parsers expect the C locale.
        self.env["LC_ALL"] = "C"
        self.env["LANG"] = "C"

    def which(self, tool: str) -> str | None:
        search = os.pathsep.join([self.env.get("PATH", ""), *self.extra_dirs])
        return shutil.which(tool, path=search)

    def run(self, argv, timeout: float = 30) -> tuple:
        path = self.which(argv[0])
        if path is None:
            return RC_NOT_FOUND, "", f"{argv[0]} not found on PATH"
        try:
            proc = subprocess.Popen(
                [path, *argv[1:]],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=self.env,
                start_new_session=True,
            )
        except OSError as exc:
            return RC_NOT_FOUND, "", f"{argv[0]} could not be started: {exc}"
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            return RC_TIMEOUT, "", self._kill(proc, argv, timeout)
        return proc.returncode, _text(out), _text(err)

    @staticmethod
    def _kill(proc, argv, timeout) -> str:
        # A tool stuck on a hung GPU may sit in uninterruptible sleep and survive
        # SIGKILL: give it a moment, then leave it rather than hang the whole run.
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.communicate(timeout=2)
        return f"{command_line(argv)} timed out after {timeout:g} s"

    def read(self, path: str) -> str | None:
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                return handle.read()
        except FileNotFoundError:
            return None
        except OSError:
            return None

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def hostname(self) -> str:
        return socket.gethostname()

    def file_for(self, argv) -> str | None:
        return None  # outputs come from processes, not files

    def sysfs_root(self, configured: str) -> str:
        return configured or "/"


class CaptureSource:
    """A capture directory written by tools/cf-capture.sh (layout in the module docstring)."""

    kind = "capture"

    def __init__(self, path: str):
        self.path = os.path.abspath(str(path))
        if not os.path.isdir(self.path):
            raise FileNotFoundError(f"capture directory {self.path} does not exist")
        self.meta = self._read_meta()

    def _read_meta(self) -> dict:
        text = self._read_file("meta.json")
        if text is None:
            return {}
        try:
            meta = json.loads(text)
        except ValueError as exc:
            raise ValueError(f"{os.path.join(self.path, 'meta.json')} is not valid JSON: {exc}") from exc
        if not isinstance(meta, dict):
            raise ValueError(f"{os.path.join(self.path, 'meta.json')} must hold a JSON object")
        return meta

    def _read_file(self, name: str) -> str | None:
        try:
            with open(os.path.join(self.path, name), encoding="utf-8", errors="replace") as handle:
                return handle.read()
        except OSError:
            return None

    def file_for(self, argv) -> str | None:
        return capture_name(argv)

    def run(self, argv, timeout: float = 30) -> tuple:
        name = capture_name(argv)
        if name is None:
            return RC_NOT_CAPTURED, "", f"captures never hold the output of {command_line(argv)}"
        out = self._read_file(name)
        err = self._read_file(name + ".err")
        if out is None and err is None:
            return RC_NOT_CAPTURED, "", f"{name} is not in the capture {self.path}"
        rc, stderr = _parse_err_file(err) if err is not None else (0, "")
        return rc, out or "", stderr

    def read(self, path: str) -> str | None:
        name = FILE_LAYOUT.get(path)
        if name is not None:
            return self._read_file(name)
        # Anything else (the sysfs tree) lies under the capture as under "/".
        return self._read_file(path.lstrip("/"))

    def exists(self, path: str) -> bool:
        name = FILE_LAYOUT.get(path)
        return os.path.exists(os.path.join(self.path, name or path.lstrip("/")))

    def hostname(self) -> str:
        return str(self.meta.get("hostname") or os.path.basename(self.path))

    def sysfs_root(self, configured: str) -> str:
        # cf-capture.sh copies the node's /sys/class/infiniband to <capture>/sys/class/infiniband.
        return self.path


def _parse_err_file(text: str) -> tuple:
    first, _, rest = text.partition("\n")
    match = re.match(r"\s*rc:\s*(-?\d+)\s*$", first)
    if match is None:
        return 1, text
    return int(match.group(1)), rest


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace") if data else ""


def _first_line(text: str) -> str:
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()
    return ""


class Collector:
    """Runs each command at most once per node and keeps its parsed output."""

    def __init__(self, source, timeouts: dict | None = None):
        self.source = source
        self.timeouts = timeouts or {}
        self._cache: dict = {}

    def run(self, argv, kind: str | None = None, timeout: float | None = None) -> Output:
        """Run `argv` once per node and parse its stdout as `kind` (a cfcore.parsers kind)."""
        key = (tuple(argv), kind)
        if key not in self._cache:
            self._cache[key] = self._collect(tuple(argv), kind, timeout)
        return self._cache[key]

    def prefetch(self, requests, workers: int = 16) -> None:
        """Run independent (argv, kind) requests in parallel: quick validation must stay under 2 s."""
        pending = [(tuple(argv), kind) for argv, kind in requests if (tuple(argv), kind) not in self._cache]
        if not pending:
            return
        with ThreadPoolExecutor(max_workers=min(workers, len(pending))) as pool:
            futures = [pool.submit(self.run, argv, kind) for argv, kind in pending]
            for future in futures:
                future.result()

    def _collect(self, argv: tuple, kind: str | None, timeout: float | None) -> Output:
        command = command_line(argv)
        limit = timeout or self.timeouts.get(argv[0], 30)
        file = self.source.file_for(argv)
        started = time.monotonic()
        rc, out, err = self.source.run(list(argv), limit)
        err = err or ""
        elapsed = time.monotonic() - started
        common = {"text": out, "stderr": err, "rc": rc, "file": file}
        if rc == RC_NOT_CAPTURED:
            return Output(command, "not_captured", error=err.strip(), **common)
        if rc == RC_NOT_FOUND:
            return Output(
                command, "not_found", error=_first_line(err) or f"{argv[0]} not found on PATH", **common
            )
        if rc == RC_TIMEOUT and not out:
            message = _first_line(err) or f"{command} timed out after {elapsed:.0f} s"
            return Output(command, "timeout", error=message, **common)
        data = None
        parse_error = ""
        if kind in EMPTY_RESULTS and rc == 0 and not out.strip():
            data = dict(EMPTY_RESULTS[kind])
        elif kind is not None and out.strip():
            try:
                data = parse(kind, out)
            except ParseError as exc:
                parse_error = str(exc)
        if rc != 0:
            first = _first_line(err) or _first_line(out) or "no output"
            return Output(command, "failed", data=data, error=f"{command} exited {rc}: {first}", **common)
        if kind is not None and data is None:
            reason = parse_error or "empty output"
            return Output(
                command, "unparsable", error=f"{command} printed no usable output: {reason}", **common
            )
        return Output(command, "ok", data=data, **common)

    def read(self, path: str) -> Output:
        key = ("read", path)
        if key not in self._cache:
            text = self.source.read(path)
            file = FILE_LAYOUT.get(path) if self.source.kind == "capture" else None
            if text is None:
                state = "not_captured" if self.source.kind == "capture" else "not_found"
                where = f"{file} is not in the capture" if file else f"{path} does not exist"
                self._cache[key] = Output(path, state, error=where, file=file)
            else:
                self._cache[key] = Output(path, "ok", text=text, file=file)
        return self._cache[key]

    def sysfs_infiniband(self, root: str) -> Output:
        """HCAs and ports from <root>/sys/class/infiniband, in ibstat's parsed shape."""
        key = ("sysfs", root)
        if key not in self._cache:
            base = os.path.join(root, "sys", "class", "infiniband")
            command = f"read {base}"
            if not os.path.isdir(base):
                state = "not_captured" if self.source.kind == "capture" else "not_found"
                output = Output(command, state, error=f"{base} does not exist")
            else:
                try:
                    output = Output(command, "ok", data=read_sysfs_infiniband(root))
                except (OSError, ParseError) as exc:
                    output = Output(command, "unparsable", error=f"could not read {base}: {exc}")
            self._cache[key] = output
        return self._cache[key]
