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
    ppu-smi-L.txt / ppu-smi-q.txt      ppu-smi -L / ppu-smi -q   (Alibaba PPU)
    chronyc-tracking.txt               chronyc -n tracking
    timedatectl-ntp.txt                timedatectl show -p NTP -p NTPSynchronized   (when chronyc is absent)
    df-P-k-root.txt                    df -P -k /
    proc-mounts.txt                    /proc/self/mounts
    proc-driver-nvidia-version.txt     /proc/driver/nvidia/version
    etc-os-release.txt                 /etc/os-release
    ip-j-addr-show.json                ip -j addr show   (IPoIB interfaces, when planned)
    juicefs-status-<n>.json            juicefs status META-URL   (each JuiceFS mount; storage.juicefs_session)
    ceph-health.json                   ceph --id X health --format json   (storage.ceph_health)
    proc-modules.txt                   /proc/modules   (nvidia_peermem)
    sys/class/infiniband/...           the HCA sysfs tree (files only)
    meta.json                          {"hostname", "node_sku", "captured_at", ...}

A command that failed when captured has a `<file>.err` beside it: first line
`rc: N`, then its stderr (rc 127: the tool was not installed).

Captures come from other people (a support tarball): only regular files inside the
capture folder are read, each within a size limit; a symlink leading out of it, a FIFO
or a device file is refused (rc RC_REFUSED), and so is a tool's live output over the
limit. Each refusal becomes the `error` of the checks that needed the file.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import selectors
import shutil
import signal
import socket
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

from .files import UnsafeFile, read_text
from .outputs import Output
from .parsers import MAX_INPUT_BYTES, MAX_KERNEL_LOG_BYTES, ParseError, max_bytes, parse, too_large
from .parsers.infiniband import read_sysfs_infiniband

RC_TIMEOUT = 124
RC_NOT_FOUND = 127
# Not process exit codes: the capture directory has no file for this command; the
# output (or capture file) was refused: over the size limit, not a regular file, or
# a link out of the capture.
RC_NOT_CAPTURED = -1
RC_REFUSED = -2

# What is kept of a tool's stderr: its first lines say what went wrong.
MAX_STDERR_BYTES = 64 * 1024
# meta.json and the .err files are a few lines.
MAX_SMALL_FILE_BYTES = 1024 * 1024
KERNEL_LOG_TOOLS = ("dmesg", "journalctl")

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
    (("chronyc", "-n", "tracking"), "chronyc-tracking.txt"),
    (("timedatectl", "show", "-p", "NTP", "-p", "NTPSynchronized"), "timedatectl-ntp.txt"),
    (("df", "-P", "-k", "/"), "df-P-k-root.txt"),
    (("npu-smi", "info"), "npu-smi-info.txt"),
    (("npu-smi", "info", "-t", "board", "-i", "{n}"), "npu-smi-board-{n}.txt"),
    (("npu-smi", "info", "-t", "health", "-i", "{n}"), "npu-smi-health-{n}.txt"),
    (("hccn_tool", "-i", "{n}", "-ip", "-g"), "hccn-{n}-ip.txt"),
    (("hccn_tool", "-i", "{n}", "-link", "-g"), "hccn-{n}-link.txt"),
    (("hccn_tool", "-i", "{n}", "-net_health", "-g"), "hccn-{n}-net_health.txt"),
    (("ppu-smi", "-L"), "ppu-smi-L.txt"),
    (("ppu-smi", "-q"), "ppu-smi-q.txt"),
    (("ip", "-j", "addr", "show"), "ip-j-addr-show.json"),
    # Shared storage: a capture holds `juicefs status` of each JuiceFS mount (numbered: the
    # meta URL is no file name) and the health of the Ceph cluster the node's keyring reads.
    (("juicefs", "status", "{n}"), "juicefs-status-{n}.json"),
    (("ceph", "health", "--format", "json"), "ceph-health.json"),
)
# Kinds whose empty output is a legitimate empty result: a kernel log ring buffer can be empty.
EMPTY_RESULTS = {"xid": {"events": []}}

FILE_LAYOUT = {
    "/proc/self/mounts": "proc-mounts.txt",
    "/proc/driver/nvidia/version": "proc-driver-nvidia-version.txt",
    "/etc/os-release": "etc-os-release.txt",
    "/proc/modules": "proc-modules.txt",
}


def output_limit(argv) -> int:
    """The most bytes read of `argv`'s output: a kernel log may be large, other outputs are small."""
    return MAX_KERNEL_LOG_BYTES if argv and argv[0] in KERNEL_LOG_TOOLS else MAX_INPUT_BYTES


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

    def run(self, argv, timeout: float = 30, env: dict | None = None) -> tuple:
        """(rc, stdout, stderr); `env` adds variables for this command only (secrets: never argv)."""
        path = self.which(argv[0])
        if path is None:
            return RC_NOT_FOUND, "", f"{argv[0]} not found on PATH"
        try:
            proc = subprocess.Popen(
                [path, *argv[1:]],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env={**self.env, **env} if env else self.env,
                start_new_session=True,
            )
        except OSError as exc:
            return RC_NOT_FOUND, "", f"{argv[0]} could not be started: {exc}"
        limit = output_limit(argv)
        try:
            outcome, out, err = _read_capped(proc, timeout, limit)
        finally:
            proc.stdout.close()
            proc.stderr.close()
        if outcome == "timeout":
            return RC_TIMEOUT, "", self._kill(proc, argv, timeout)
        if outcome == "too_large":
            self._kill(proc, argv, timeout)
            return RC_REFUSED, "", f"{command_line(argv)}: {too_large(limit)}"
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
            proc.wait(timeout=2)
        return f"{command_line(argv)} timed out after {timeout:g} s"

    def read(self, path: str) -> str | None:
        """The file's text; None when it does not exist; UnsafeFile when not a regular file or too large."""
        if not os.path.lexists(path):
            return None
        return read_text(path, MAX_INPUT_BYTES)

    def statvfs(self, path: str):
        return os.statvfs(path)

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
        where = os.path.join(self.path, "meta.json")
        text = self._read_file("meta.json", MAX_SMALL_FILE_BYTES)
        if text is None:
            return {}
        try:
            meta = json.loads(text)
        except ValueError as exc:
            raise ValueError(f"{where} is not valid JSON: {exc}") from exc
        except RecursionError:
            raise ValueError(f"{where} is not valid JSON: it nests too deep") from None
        if not isinstance(meta, dict):
            raise ValueError(f"{where} must hold a JSON object")
        return meta

    def _read_file(self, name: str, limit: int = MAX_INPUT_BYTES) -> str | None:
        """A capture file's text; None when absent; UnsafeFile when it is unsafe to read.

        Only regular files that stay inside the capture once links are resolved are read,
        so a crafted tarball cannot make the report quote a local file or hang on a FIFO.
        """
        path = os.path.join(self.path, name)
        if not os.path.lexists(path):
            return None
        return read_text(path, limit, root=self.path)

    def file_for(self, argv) -> str | None:
        return capture_name(argv)

    def run(self, argv, timeout: float = 30) -> tuple:
        name = capture_name(argv)
        if name is None:
            return RC_NOT_CAPTURED, "", f"captures never hold the output of {command_line(argv)}"
        try:
            out = self._read_file(name, output_limit(argv))
            err = self._read_file(name + ".err", MAX_SMALL_FILE_BYTES)
        except UnsafeFile as exc:
            return RC_REFUSED, "", str(exc)
        if out is None and err is None:
            return RC_NOT_CAPTURED, "", f"{name} is not in the capture {self.path}"
        rc, stderr = _parse_err_file(err) if err is not None else (0, "")
        return rc, out or "", stderr

    def read(self, path: str) -> str | None:
        """The capture's copy of `path`: None when absent, UnsafeFile when refused."""
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


def _read_capped(proc, timeout: float, limit: int) -> tuple:
    """('done' | 'timeout' | 'too_large', stdout, stderr) of `proc`, reading at most `limit` bytes of stdout.

    Read as it comes, so a tool that prints hundreds of megabytes is stopped at the limit
    instead of filling memory; stderr beyond its first MAX_STDERR_BYTES is drained and dropped.
    """
    deadline = time.monotonic() + timeout
    chunks = {proc.stdout: [], proc.stderr: []}
    sizes = {proc.stdout: 0, proc.stderr: 0}
    with selectors.DefaultSelector() as selector:
        for stream in chunks:
            selector.register(stream, selectors.EVENT_READ)
        while selector.get_map():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return "timeout", b"", b""
            for key, _events in selector.select(remaining):
                stream = key.fileobj
                data = os.read(stream.fileno(), 65536)
                if not data:
                    selector.unregister(stream)
                    continue
                sizes[stream] += len(data)
                if stream is proc.stdout and sizes[stream] > limit:
                    return "too_large", b"", b""
                if stream is proc.stdout or sizes[stream] <= MAX_STDERR_BYTES:
                    chunks[stream].append(data)
    try:
        proc.wait(timeout=max(deadline - time.monotonic(), 0.01))
    except subprocess.TimeoutExpired:
        return "timeout", b"", b""
    return "done", b"".join(chunks[proc.stdout]), b"".join(chunks[proc.stderr])


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

    def run(
        self, argv, kind: str | None = None, timeout: float | None = None, env: dict | None = None
    ) -> Output:
        """Run `argv` once per node and parse its stdout as `kind` (a cfcore.parsers kind).

        `env`: extra environment of this command (a live source only; a capture ignores it).
        """
        key = (tuple(argv), kind)
        if key not in self._cache:
            self._cache[key] = self._collect(tuple(argv), kind, timeout, env)
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

    def _collect(
        self, argv: tuple, kind: str | None, timeout: float | None, env: dict | None = None
    ) -> Output:
        command = command_line(argv)
        limit = timeout or self.timeouts.get(argv[0], 30)
        file = self.source.file_for(argv)
        started = time.monotonic()
        try:
            if env and self.source.kind == "live":
                rc, out, err = self.source.run(list(argv), limit, env=env)
            else:
                rc, out, err = self.source.run(list(argv), limit)
        except Exception as exc:  # a source's bug must cost this command, not the node's validation
            return Output(
                command, "failed", rc=1, error=f"{command} could not be run: {_describe(exc)}", file=file
            )
        out, err = out or "", err or ""
        elapsed = time.monotonic() - started
        common = {"text": out, "stderr": err, "rc": rc, "file": file}
        if rc == RC_NOT_CAPTURED:
            return Output(command, "not_captured", error=err.strip(), **common)
        if rc == RC_REFUSED:
            return Output(command, "refused", error=_first_line(err), **common)
        if rc == RC_NOT_FOUND:
            return Output(
                command, "not_found", error=_first_line(err) or f"{argv[0]} not found on PATH", **common
            )
        if rc == RC_TIMEOUT and not out:
            message = _first_line(err) or f"{command} timed out after {elapsed:.0f} s"
            return Output(command, "timeout", error=message, **common)
        if len(out) > max_bytes(kind):
            # A source that does not cap its reads (a test double, a future source).
            return Output(
                command, "refused", error=f"{command}: {too_large(max_bytes(kind))}", **{**common, "text": ""}
            )
        data = None
        parse_error = ""
        if kind in EMPTY_RESULTS and rc == 0 and not out.strip():
            data = dict(EMPTY_RESULTS[kind])
        elif kind is not None and out.strip():
            data, parse_error = _parse(kind, out)
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
            file = FILE_LAYOUT.get(path) if self.source.kind == "capture" else None
            try:
                text = self.source.read(path)
            except (UnsafeFile, OSError) as exc:
                self._cache[key] = Output(path, "refused", error=str(exc), file=file)
                return self._cache[key]
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
            # In a capture every file must stay inside it; a live sysfs links into /sys/devices.
            confine = self.source.path if self.source.kind == "capture" else None
            if not os.path.isdir(base):
                state = "not_captured" if self.source.kind == "capture" else "not_found"
                output = Output(command, state, error=f"{base} does not exist")
            else:
                try:
                    output = Output(command, "ok", data=read_sysfs_infiniband(root, confine=confine))
                except UnsafeFile as exc:
                    output = Output(command, "refused", error=str(exc))
                except (OSError, ParseError) as exc:
                    output = Output(command, "unparsable", error=f"could not read {base}: {exc}")
            self._cache[key] = output
        return self._cache[key]

    def root_fs(self) -> Output:
        """Size and free space of `/`: os.statvfs on a live node, `df -P -k /` from a capture."""
        key = ("root_fs",)
        if key not in self._cache:
            statvfs = getattr(self.source, "statvfs", None)
            if statvfs is None:
                output = self.run(DF_ROOT)
                if output.ok:
                    try:
                        output.data = parse_df(output.text)
                    except ValueError as exc:
                        output = Output(
                            output.command, "unparsable", text=output.text, error=str(exc), file=output.file
                        )
            else:
                try:
                    info = statvfs("/")
                except OSError as exc:
                    output = Output("statvfs /", "failed", rc=1, error=f"statvfs /: {exc}")
                else:
                    data = {
                        "mount": "/",
                        "total_kib": info.f_blocks * info.f_frsize // 1024,
                        "avail_kib": info.f_bavail * info.f_frsize // 1024,
                    }
                    output = Output("statvfs /", "ok", data=data)
            self._cache[key] = output
        return self._cache[key]


DF_ROOT = ("df", "-P", "-k", "/")


def parse_df(text: str) -> dict:
    """`df -P -k /` -> {mount, total_kib, avail_kib}; ValueError when it is not that output."""
    lines = [line.split() for line in text.splitlines() if line.strip()]
    if len(lines) < 2 or lines[0][:2] != ["Filesystem", "1024-blocks"]:
        raise ValueError("not `df -P -k /` output: no 'Filesystem 1024-blocks ...' header")
    # POSIX df prints one line per file system; a long device name never wraps with -P.
    fields = lines[1]
    if len(fields) < 6 or not (fields[1].isdigit() and fields[3].isdigit()):
        raise ValueError(f"not `df -P -k /` output: unreadable line {' '.join(fields)!r}")
    return {"mount": fields[-1], "total_kib": int(fields[1]), "avail_kib": int(fields[3])}


def _parse(kind: str, text: str) -> tuple:
    """(data, '') or (None, why): a parser's crash on odd input is this output's problem only."""
    try:
        return parse(kind, text), ""
    except ParseError as exc:
        return None, str(exc)
    except Exception as exc:
        return None, f"the {kind} parser failed on this output ({_describe(exc)})"


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"
