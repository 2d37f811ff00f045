#!/usr/bin/env python3
"""npu-exporter @VERSION@: ClusterForge test stand-in (tests only; no Huawei software).

    npu-exporter -ip=ADDR [-port=8082] [-updateTime=5] [-logFile=PATH] [-logLevel=0]
                 [-containerMode=docker|containerd|isula] [-endpoint=SOCKET] [-version]

Flags are parsed the way Go's flag package does (-name=value, -name value, --name=value);
an unknown flag, a missing or malformed value exits 2 with Go's message, an invalid address or
port exits 1. It serves Prometheus text on http://ADDR:PORT/metrics, built on each scrape from
`npu-smi info` (the hardware replay provides npu-smi on test nodes): machine_npu_nums,
npu_chip_info_name, npu_chip_info_health_status (1 healthy, 0 not), npu_chip_info_power,
npu_chip_info_temperature, npu_chip_info_hbm_used_memory/_total_memory, and
npu_exporter_version_info{exporterVersion="v@VERSION@"} 1. npu_exporter_npu_smi_up (1 or 0) is
this stand-in's own. SIGTERM and SIGINT stop it (exit 0). Python 3.8-safe stdlib only.
"""

import ipaddress
import re
import shutil
import signal
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

VERSION = "@VERSION@"
PORT_RANGE = (1025, 40000)  # the range the real exporter accepts
FLAGS = {
    # name: (kind, default, help)
    "ip": ("string", "", "The listen ip of the service (required)"),
    "port": ("int", 8082, "The server port of the http service, range [1025, 40000]"),
    "updateTime": ("int", 5, "Interval (seconds) to update the npu metrics cache, range [1, 60]"),
    "logFile": ("string", "", "Log file path (empty: standard error)"),
    "logLevel": ("int", 0, "Log level, -1-debug, 0-info, 1-warning, 2-error, 3-critical"),
    "containerMode": ("string", "docker", "Container runtime: docker, containerd or isula"),
    "endpoint": ("string", "", "The container runtime's socket"),
    "version": ("bool", False, "Output version information"),
}
ROW_ONE = re.compile(r"^\|\s*(\d+)\s+(\S+)\s*\|\s*(\S+)\s*\|\s*(\S+)\s+(\S+)\s+")
# The chip row: "| <chip> | <bus>" (A2), or "| <chip> <phy-id> | <bus>" on multi-die NPUs (A3).
ROW_TWO = re.compile(
    r"^\|\s*(?P<chip>\d+)(?:\s+(?P<phy>\d+))?\s*\|\s*(?P<bus>[0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*\|"
    r"\s*(?P<aicore>\S+)\s+(?P<mem_used>\d+)\s*/\s*(?P<mem_total>\d+)\s+(?P<hbm_used>\d+)\s*/\s*(?P<hbm_total>\d+)"
)


class FlagError(Exception):
    """A command-line error: Go's flag package prints it with the usage and exits 2."""


def usage(out) -> None:
    out.write("Usage of npu-exporter:\n")
    for name, (kind, default, text) in FLAGS.items():
        shown = "" if kind == "bool" else f" {kind}"
        out.write(f"  -{name}{shown}\n    \t{text} (default {default!r})\n")


def parse_flags(argv: list) -> dict:
    values = {name: spec[1] for name, spec in FLAGS.items()}
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg == "--":
            break
        if not arg.startswith("-") or arg == "-":
            raise FlagError(f"unexpected argument: {arg}")
        name, has_value, value = arg.lstrip("-").partition("=")
        if name in ("h", "help"):
            usage(sys.stdout)
            raise SystemExit(0)
        if name not in FLAGS:
            raise FlagError(f"flag provided but not defined: -{name}")
        kind = FLAGS[name][0]
        if kind == "bool":
            if has_value and value not in ("true", "false", "1", "0"):
                raise FlagError(f'invalid boolean value "{value}" for -{name}: parse error')
            values[name] = not has_value or value in ("true", "1")
            continue
        if not has_value:
            if not args:
                raise FlagError(f"flag needs an argument: -{name}")
            value = args.pop(0)
        if kind == "int":
            try:
                values[name] = int(value)
            except ValueError:
                raise FlagError(f'invalid value "{value}" for flag -{name}: parse error') from None
        else:
            values[name] = value
    return values


def validate(values: dict) -> str:
    """The first invalid setting as a message (empty when all are valid)."""
    if not values["ip"]:
        return "the listen ip is required: give -ip=<address> (e.g. -ip=127.0.0.1)"
    try:
        ipaddress.ip_address(values["ip"])
    except ValueError:
        return f"the listen ip {values['ip']!r} is not an IP address: give -ip=<address>"
    low, high = PORT_RANGE
    if not low <= values["port"] <= high:
        return f"the port {values['port']} is out of range [{low}, {high}]: give -port=<port>"
    if not 1 <= values["updateTime"] <= 60:
        return f"the updateTime {values['updateTime']} is out of range [1, 60]"
    if not -1 <= values["logLevel"] <= 3:
        return f"the logLevel {values['logLevel']} is out of range [-1, 3]"
    if values["containerMode"] not in ("docker", "containerd", "isula"):
        mode = values["containerMode"]
        return f"the containerMode {mode!r} is not one of docker, containerd, isula"
    return ""


def npu_smi() -> str:
    return shutil.which("npu-smi") or "/usr/local/bin/npu-smi"


def read_npus() -> tuple:
    """(ok, npus): the NPUs `npu-smi info` lists, each {id, name, health, power, temp, bus, hbm...}."""
    try:
        done = subprocess.run([npu_smi(), "info"], capture_output=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False, []
    if done.returncode != 0:
        return False, []
    npus, current = [], None
    for line in done.stdout.decode("utf-8", "replace").splitlines():
        # The chip row first: on A3 ("| chip phy-id | bus |") it would also read as an NPU row.
        second = ROW_TWO.match(line) if current is not None else None
        if second:
            current.update(bus=second["bus"], hbm_used=second["hbm_used"], hbm_total=second["hbm_total"])
            if second["phy"] is not None:  # A3: one row pair per die, known by its Phy-ID
                current["id"] = second["phy"]
            npus.append(current)
            current = None
            continue
        first = ROW_ONE.match(line)
        if first:
            current = {
                "id": first.group(1),
                "name": first.group(2),
                "health": first.group(3),
                "power": first.group(4),
                "temp": first.group(5),
            }
    return True, npus


def number(text: str):
    try:
        return float(text)
    except ValueError:
        return None


def metrics_text() -> str:
    ok, npus = read_npus()
    out = []

    def family(name, text):
        out.append(f"# HELP {name} {text}")
        out.append(f"# TYPE {name} gauge")

    family("npu_exporter_version_info", "exporter version with value '1'")
    out.append(f'npu_exporter_version_info{{exporterVersion="v{VERSION}"}} 1')
    family("npu_exporter_npu_smi_up", "1 when npu-smi info answered (ClusterForge test stand-in only)")
    out.append(f"npu_exporter_npu_smi_up {1 if ok else 0}")
    if ok:
        family("machine_npu_nums", "Amount of npu installed on the machine.")
        out.append(f"machine_npu_nums {len(npus)}")
        series = (
            ("npu_chip_info_name", "the Ascend npu name with value '1'", lambda n: 1.0),
            (
                "npu_chip_info_health_status",
                "the npu health status: 1 healthy, 0 unhealthy",
                lambda n: 1 if n["health"] == "OK" else 0,
            ),
            ("npu_chip_info_power", "the npu power (W)", lambda n: number(n["power"])),
            ("npu_chip_info_temperature", "the npu temperature (C)", lambda n: number(n["temp"])),
            ("npu_chip_info_hbm_used_memory", "the npu HBM used (MB)", lambda n: number(n["hbm_used"])),
            ("npu_chip_info_hbm_total_memory", "the npu HBM total (MB)", lambda n: number(n["hbm_total"])),
        )
        for name, text, value_of in series:
            family(name, text)
            for npu in npus:
                value = value_of(npu)
                if value is None:
                    continue
                labels = f'id="{npu["id"]}",model_name="{npu["name"]}",pcie_bus_info="{npu["bus"]}"'
                value = float(value)
                shown = str(int(value)) if value.is_integer() else repr(value)
                out.append(f"{name}{{{labels}}} {shown}")
    return "\n".join(out) + "\n"


class Handler(BaseHTTPRequestHandler):
    server_version = "npu-exporter/" + VERSION

    def do_GET(self):
        if self.path.split("?", 1)[0] != "/metrics":
            self.send_error(404, "only /metrics is served")
            return
        try:
            body = metrics_text().encode()
        except Exception as exc:  # a scrape must answer, even when collecting failed
            self.send_error(500, f"collecting the metrics failed: {exc}")
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, fmt, *args):
        log = self.server.log_file
        if log:
            with open(log, "a") as handle:
                handle.write(f"{self.address_string()} {fmt % args}\n")


def main(argv: list) -> int:
    try:
        values = parse_flags(argv)
    except FlagError as exc:
        sys.stderr.write(f"{exc}\n")
        usage(sys.stderr)
        return 2
    if values["version"]:
        print(f"npu-exporter version: v{VERSION}")
        return 0
    problem = validate(values)
    if problem:
        sys.stderr.write(f"npu-exporter: {problem}\n")
        return 1
    family = ThreadingHTTPServer
    if ":" in values["ip"]:
        import socket

        class V6(ThreadingHTTPServer):
            address_family = socket.AF_INET6

        family = V6
    try:
        server = family((values["ip"], values["port"]), Handler)
    except OSError as exc:
        sys.stderr.write(f"npu-exporter: cannot listen on {values['ip']}:{values['port']}: {exc}\n")
        return 1
    server.log_file = values["logFile"]
    server.daemon_threads = True

    def stop(_signum, _frame):
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    sys.stderr.write(f"npu-exporter v{VERSION} listening on {values['ip']}:{values['port']}\n")
    sys.stderr.flush()
    server.serve_forever()
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
