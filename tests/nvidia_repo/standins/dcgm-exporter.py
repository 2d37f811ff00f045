#!/usr/bin/python3
"""dcgm-exporter @VERSION@: ClusterForge test stand-in (tests/nvidia_repo) of NVIDIA's DCGM exporter.

  dcgm-exporter [-f FILE] [-a [HOST]:PORT] [-r HOST:PORT] [-c MS] [-n]
  dcgm-exporter --version | -h

The command-line contract the roles use, as the real exporter has it:
  -f, --collectors FILE   the counters CSV (default /etc/dcgm-exporter/default-counters.csv):
                          `# comment` lines, rows `DCGM_FI_NAME, gauge|counter|label, help`;
                          a malformed row: exit 1, the message names FILE:LINE
  -a, --address [HOST]:PORT   listen address (default :9400; `[::1]:9400` for IPv6)
  -r, --remote-hostengine-info HOST:PORT   the host engine (default localhost:5555)
  -c, --collect-interval MS   accepted; the stand-in reads the hardware at every scrape
  -n, --no-hostname       leave out the Hostname label
The environment variables DCGM_EXPORTER_COLLECTORS, DCGM_EXPORTER_LISTEN and
DCGM_REMOTE_HOSTENGINE_INFO set the same values.

It needs nv-hostengine to answer, waiting up to 10 s for it (else "Error connecting
to nv-hostengine", exit 1).
GET /metrics reads the GPUs `nvidia-smi --query-gpu` reports (on a test node: the
hardware replay) and the last Xid of each GPU in `dmesg`, and prints one series
per GPU for each CSV field it can derive, labelled like the real exporter. A
field it cannot derive, or one the GPU answers N/A for, is left out and logged
once on stderr (the real exporter also leaves out what a GPU does not support).
GET / and /health answer as the real exporter's; anything else is 404. SIGTERM
and SIGINT exit 0.
"""

import argparse
import http.server
import os
import re
import socket
import subprocess
import sys
import time

from daemon_lib import run_until_stopped  # inlined by build.py

VERSION = "@VERSION@"
DCGM_VERSION = "@DCGM_VERSION@"
DEFAULT_COLLECTORS = "/etc/dcgm-exporter/default-counters.csv"
# nvidia-dcgm.service (Type=simple) and this unit start together: give nv-hostengine time to listen.
# Stand-in only (CF_DCGM_EXPORTER_HOSTENGINE_WAIT_S overrides it, for tests).
HOSTENGINE_WAIT_S = 10
METRIC_TYPES = ("gauge", "counter", "label")
FIELD_NAME = re.compile(r"DCGM_(FI|EXP)_[A-Z0-9_]+")
XID_LINE = re.compile(r"NVRM: Xid \(PCI:([0-9a-fA-F]+):([0-9a-fA-F]+):([0-9a-fA-F]+)\): (\d+)")
IDENTITY = ("index", "uuid", "pci.bus_id", "name", "driver_version")
NOT_AVAILABLE = ("[N/A]", "N/A", "[Not Supported]", "[Unknown Error]", "")

# DCGM field -> (nvidia-smi --query-gpu field, value kind): what the replay can answer.
FROM_NVIDIA_SMI = {
    "DCGM_FI_DEV_GPU_TEMP": ("temperature.gpu", "int"),
    "DCGM_FI_DEV_MEMORY_TEMP": ("temperature.memory", "int"),
    "DCGM_FI_DEV_POWER_USAGE": ("power.draw", "float"),
    "DCGM_FI_DEV_POWER_MGMT_LIMIT": ("power.limit", "float"),
    "DCGM_FI_DEV_ENFORCED_POWER_LIMIT": ("enforced.power.limit", "float"),
    "DCGM_FI_DEV_GPU_UTIL": ("utilization.gpu", "int"),
    "DCGM_FI_DEV_MEM_COPY_UTIL": ("utilization.memory", "int"),
    "DCGM_FI_DEV_FB_TOTAL": ("memory.total", "int"),
    "DCGM_FI_DEV_FB_USED": ("memory.used", "int"),
    "DCGM_FI_DEV_FB_FREE": ("memory.free", "int"),
    "DCGM_FI_DEV_FB_RESERVED": ("memory.reserved", "int"),
    "DCGM_FI_DEV_SM_CLOCK": ("clocks.sm", "int"),
    "DCGM_FI_DEV_MAX_SM_CLOCK": ("clocks.max.sm", "int"),
    "DCGM_FI_DEV_PCIE_LINK_GEN": ("pcie.link.gen.current", "int"),
    "DCGM_FI_DEV_PCIE_LINK_WIDTH": ("pcie.link.width.current", "int"),
    "DCGM_FI_DEV_PCIE_MAX_LINK_GEN": ("pcie.link.gen.max", "int"),
    "DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH": ("pcie.link.width.max", "int"),
    "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL": ("ecc.errors.corrected.volatile.total", "int"),
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": ("ecc.errors.uncorrected.volatile.total", "int"),
    "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL": ("ecc.errors.corrected.aggregate.total", "int"),
    "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL": ("ecc.errors.uncorrected.aggregate.total", "int"),
    "DCGM_FI_DEV_RETIRED_SBE": ("retired_pages.single_bit_ecc.count", "int"),
    "DCGM_FI_DEV_RETIRED_DBE": ("retired_pages.double_bit.count", "int"),
    "DCGM_FI_DEV_RETIRED_PENDING": ("retired_pages.pending", "bool"),
    "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS": ("remapped_rows.correctable", "int"),
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": ("remapped_rows.uncorrectable", "int"),
    "DCGM_FI_DEV_ROW_REMAP_PENDING": ("remapped_rows.pending", "bool"),
    "DCGM_FI_DEV_ROW_REMAP_FAILURE": ("remapped_rows.failure", "bool"),
}
FROM_DMESG = {"DCGM_FI_DEV_XID_ERRORS"}  # the value of the last Xid (0: none since boot)
LANDING = (
    "<html>\n<head><title>GPU Exporter</title></head>\n<body>\n<h1>GPU Exporter</h1>\n"
    '<p><a href="./metrics">Metrics</a></p>\n</body>\n</html>\n'
)


class UsageError(Exception):
    pass


def log(level, message):
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    print(f'time="{stamp}" level={level} msg="{message}"', file=sys.stderr, flush=True)


def fatal(message):
    log("fatal", message)
    return 1


# ------------------------------------------------------------ the counters file


def read_collectors(path):
    """[(field, type, help)] of the CSV; UsageError names FILE:LINE for a malformed row."""
    try:
        with open(path) as handle:
            lines = handle.read().splitlines()
    except OSError as exc:
        raise UsageError(f"cannot read the counters file {path}: {exc.strerror}") from None
    rows, seen = [], set()
    for number, line in enumerate(lines, 1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        parts = [part.strip() for part in text.split(",", 2)]
        where = f"{path}:{number}: malformed counter {text!r}"
        if len(parts) < 3 or not parts[2]:
            raise UsageError(f"{where}: expected 'DCGM_FI_NAME, gauge|counter, help message'")
        name, kind, help_text = parts
        if not FIELD_NAME.fullmatch(name):
            raise UsageError(f"{where}: {name!r} is not a DCGM field name (DCGM_FI_... or DCGM_EXP_...)")
        if kind not in METRIC_TYPES:
            raise UsageError(f"{where}: metric type {kind!r} is not one of {', '.join(METRIC_TYPES)}")
        if name in seen:
            raise UsageError(f"{where}: {name} is listed twice")
        seen.add(name)
        rows.append((name, kind, help_text))
    return rows


# ----------------------------------------------------------------- the hardware


def host_engine_answers(address, wait_s):
    """Whether nv-hostengine answers at address within wait_s seconds (it may be starting with us)."""
    host, _, port = address.rpartition(":")
    host = host.strip("[]") or "localhost"
    deadline = time.monotonic() + wait_s
    while True:
        try:
            with socket.create_connection((host, int(port)), timeout=5) as conn:
                if conn.recv(64).startswith(b"DCGM"):
                    return True
        except ValueError:
            return False
        except OSError:
            pass
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.2)


def nvidia_smi(fields):
    """(rows, error): rows are lists of the fields' values, error the failure's text or None."""
    argv = ["nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return [], f"nvidia-smi: {exc}"
    if done.returncode != 0:
        return [], (done.stdout + done.stderr).strip() or f"nvidia-smi exited {done.returncode}"
    rows = [[part.strip() for part in line.split(",")] for line in done.stdout.splitlines() if line.strip()]
    return rows, None


def pci_key(domain, bus, device):
    return (int(domain, 16), int(bus, 16), int(device, 16))


def last_xids():
    """{(domain, bus, device): last Xid} from the kernel log; {} when dmesg cannot be read."""
    try:
        done = subprocess.run(["dmesg"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    found = {}
    for match in XID_LINE.finditer(done.stdout):
        found[pci_key(*match.group(1, 2, 3))] = int(match.group(4))
    return found


def value_text(raw, kind):
    """The sample as the exporter prints it, or None when the GPU does not answer the field."""
    if raw in NOT_AVAILABLE:
        return None
    if kind == "bool":
        return {"Yes": "1", "No": "0"}.get(raw)
    try:
        return f"{float(raw):f}" if kind == "float" else str(int(float(raw)))
    except ValueError:
        return None


def escape(value):
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class Exporter:
    def __init__(self, collectors, hostname):
        self.hostname = hostname
        self.logged = set()
        self.metrics = []  # (field, type, help) the stand-in can derive
        for name, kind, help_text in collectors:
            if kind == "label":
                if name != "DCGM_FI_DRIVER_VERSION":  # always a label here
                    self.omit(name, "label fields other than DCGM_FI_DRIVER_VERSION are not simulated")
            elif name in FROM_NVIDIA_SMI or name in FROM_DMESG:
                self.metrics.append((name, kind, help_text))
            else:
                self.omit(name, "the replayed hardware cannot answer it")
        self.smi_fields = [FROM_NVIDIA_SMI[m[0]][0] for m in self.metrics if m[0] in FROM_NVIDIA_SMI]

    def omit(self, name, why):
        if name not in self.logged:
            self.logged.add(name)
            log("warning", f"Skipping field {name}: {why}; it is left out of the output")

    def probe(self):
        """Drop the fields this nvidia-smi does not know; an error text when the GPUs cannot be read."""
        while True:
            _rows, error = nvidia_smi([*IDENTITY, *self.smi_fields])
            unknown = re.search(r'Field "([^"]+)" is not a valid field to query', error or "")
            if not unknown or unknown.group(1) not in self.smi_fields:
                return error
            self.smi_fields.remove(unknown.group(1))
            for name, (field, _kind) in FROM_NVIDIA_SMI.items():
                if field == unknown.group(1):
                    self.omit(name, f"nvidia-smi does not answer {field}")
            self.metrics = [m for m in self.metrics if m[0] not in self.logged]

    def render(self):
        rows, error = nvidia_smi([*IDENTITY, *self.smi_fields])
        if error:
            log("error", f"Failed to read the GPUs: {error}")
            return ""
        xids = last_xids() if any(m[0] in FROM_DMESG for m in self.metrics) else {}
        if xids is None:
            self.omit("DCGM_FI_DEV_XID_ERRORS", "dmesg cannot be read")
        out = []
        for name, kind, help_text in self.metrics:
            samples = []
            for row in rows:
                index, uuid, bus_id, model, driver = row[: len(IDENTITY)]
                if name in FROM_DMESG:
                    if xids is None:
                        continue
                    domain, bus, rest = bus_id.split(":")
                    value = str(xids.get(pci_key(domain, bus, rest.split(".")[0]), 0))
                else:
                    field, value_kind = FROM_NVIDIA_SMI[name]
                    value = value_text(row[len(IDENTITY) + self.smi_fields.index(field)], value_kind)
                if value is None:
                    self.omit(name, f"GPU {index} answers N/A")
                    continue
                labels = [("gpu", index), ("UUID", uuid), ("pci_bus_id", bus_id)]
                labels += [("device", f"nvidia{index}"), ("modelName", model)]
                if self.hostname is not None:
                    labels.append(("Hostname", self.hostname))
                labels.append(("DCGM_FI_DRIVER_VERSION", driver))
                text = ",".join(f'{key}="{escape(val)}"' for key, val in labels)
                samples.append(f"{name}{{{text}}} {value}")
            if samples:
                out += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}", *samples]
        return "\n".join(out) + "\n" if out else ""


# ---------------------------------------------------------------------- HTTP


def handler_for(exporter):
    class Handler(http.server.BaseHTTPRequestHandler):
        server_version = "dcgm-exporter"
        sys_version = ""

        def do_GET(self):
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                self.reply(200, exporter.render(), "text/plain; version=0.0.4; charset=utf-8")
            elif path == "/health":
                self.reply(200, "OK\n", "text/plain; charset=utf-8")
            elif path == "/":
                self.reply(200, LANDING, "text/html; charset=utf-8")
            else:
                self.reply(404, "404 page not found\n", "text/plain; charset=utf-8")

        def reply(self, code, body, content_type):
            data = body.encode()
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format, *args):  # the base class's signature; no access log
            pass

    return Handler


def listen(address, handler):
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise UsageError(f"listen address {address!r}: use [HOST]:PORT, e.g. :9400 or 127.0.0.1:9400")
    host = host.strip("[]")
    candidates = [(socket.AF_INET6, "::"), (socket.AF_INET, "0.0.0.0")] if not host else []
    if host:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        candidates = [(family, host)]
    error = None
    for family, name in candidates:

        class Server(http.server.ThreadingHTTPServer):
            address_family = family
            daemon_threads = True

            def server_bind(self):
                if self.address_family == socket.AF_INET6:
                    self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
                super().server_bind()

        try:
            return Server((name, int(port)), handler)
        except OSError as exc:
            error = exc
    raise UsageError(f"Failed to start the webserver on {address}: {error.strerror}")


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="dcgm-exporter", description="Generates GPU metrics in the prometheus format"
    )
    env = os.environ
    parser.add_argument("-f", "--collectors", default=env.get("DCGM_EXPORTER_COLLECTORS", DEFAULT_COLLECTORS))
    parser.add_argument("-a", "--address", default=env.get("DCGM_EXPORTER_LISTEN", ":9400"))
    parser.add_argument(
        "-r", "--remote-hostengine-info", default=env.get("DCGM_REMOTE_HOSTENGINE_INFO", "localhost:5555")
    )
    parser.add_argument("-c", "--collect-interval", type=int, default=30000)
    parser.add_argument("-n", "--no-hostname", action="store_true")
    parser.add_argument("-v", "--version", action="store_true")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # urfave/cli, the real one's parser, exits 1 on a bad flag
        return 0 if exc.code == 0 else 1
    if args.version:
        print(f"DCGM Exporter version {DCGM_VERSION}-{VERSION}")
        return 0
    log("info", f"Starting dcgm-exporter (test stand-in) version {DCGM_VERSION}-{VERSION}")
    try:
        collectors = read_collectors(args.collectors)
    except UsageError as exc:
        return fatal(str(exc))
    wait_s = float(env.get("CF_DCGM_EXPORTER_HOSTENGINE_WAIT_S", HOSTENGINE_WAIT_S))
    if not host_engine_answers(args.remote_hostengine_info, wait_s):
        return fatal(
            f"Error connecting to nv-hostengine: Host engine connection invalid/disconnected "
            f"({args.remote_hostengine_info}); start nvidia-dcgm.service"
        )
    log("info", f"Attempting to connect to remote hostengine at {args.remote_hostengine_info}")
    log("info", "DCGM successfully initialized!")
    hostname = None if args.no_hostname else (env.get("NODE_NAME") or socket.gethostname())
    exporter = Exporter(collectors, hostname)
    error = exporter.probe()
    if error:
        return fatal(f"Failed to initialize NVML: {error}")
    try:
        server = listen(args.address, handler_for(exporter))
    except UsageError as exc:
        return fatal(str(exc))
    log("info", f"Starting webserver; Listening on address={args.address}")
    run_until_stopped([], server.serve_forever)
    return 0


if __name__ == "__main__":
    sys.exit(main())
