"""The datacenter-gpu-manager-exporter test package: its files and the dcgm-exporter stand-in.

The stand-in runs from the built .deb as a subprocess on a free port, against a
fake host engine (a socket answering "DCGM ...", as nv-hostengine's stand-in
does) and `nvidia-smi` / `dmesg` that are the hardware replay (tests/hwreplay)
called by those names, as on a Molecule node.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest
from nvidia_repo_testlib import CUDA, HWREPLAY_DIR, parse_packages
from patience import HANG_S

DEB = "datacenter-gpu-manager-exporter_4.1.1-1_amd64.deb"
UNIT = "lib/systemd/system/nvidia-dcgm-exporter.service"
DEFAULT_CSV = "etc/dcgm-exporter/default-counters.csv"
COUNTERS = """\
# ClusterForge's fields (a comment)
DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).
DCGM_FI_DEV_POWER_USAGE, gauge, Power draw (in W).
DCGM_FI_DEV_FB_USED, gauge, Framebuffer memory used (in MiB).
DCGM_FI_DEV_FB_FREE, gauge, Framebuffer memory free (in MiB).
DCGM_FI_DEV_SM_CLOCK, gauge, SM clock frequency (in MHz).
DCGM_FI_DEV_GPU_UTIL, gauge, GPU utilization (in %).

DCGM_FI_DEV_ECC_DBE_VOL_TOTAL, counter, Total number of double-bit volatile ECC errors.
DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS, counter, Number of remapped rows for uncorrectable errors
DCGM_FI_DEV_ROW_REMAP_PENDING, gauge, Whether remapping of rows is pending
DCGM_FI_DEV_XID_ERRORS, gauge, Value of the last XID error encountered.
DCGM_FI_PROF_PIPE_TENSOR_ACTIVE, gauge, Ratio of cycles the tensor (HMMA) pipe is active.
"""
LABELS = ("gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname", "DCGM_FI_DRIVER_VERSION")
SERIES = re.compile(r"^(\w+)\{(.*)\} (\S+)$")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def host_engine():
    """A socket that greets like nv-hostengine's stand-in: its HOST:PORT."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    stop = threading.Event()

    def serve():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                conn.sendall(b"DCGM 4.2.3\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join(timeout=5)
    server.close()


@pytest.fixture
def node(tmp_path):
    """An environment whose nvidia-smi and dmesg are the replay of HWREPLAY_PROFILE."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("nvidia-smi", "dmesg"):
        (bin_dir / tool).symlink_to(HWREPLAY_DIR / "hwreplay.py")
    return {
        "PATH": f"{bin_dir}:{os.path.dirname(sys.executable)}:/usr/bin:/bin",
        "HWREPLAY_PROFILE": "h100-healthy",
        "HWREPLAY_OVERRIDES": str(tmp_path / "no-overrides.json"),
        "HWREPLAY_LIB_DIR": str(tmp_path / "lib"),
        "HWREPLAY_PACKAGE_UNIT_DIRS": str(tmp_path / "pkg-units"),
        "HWREPLAY_FM_STATE": str(tmp_path / "run/fabric.state"),
        "HWREPLAY_SYSROOT": str(tmp_path / "sysroot"),
        "NODE_NAME": "gpu-node-1",
    }


def exporter_argv(root, *args: str) -> list:
    return [sys.executable, str(root / "usr/bin/dcgm-exporter"), *args]


def run_exporter(root, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        exporter_argv(root, *args), env=env, capture_output=True, text=True, timeout=HANG_S, check=False
    )


def get(url: str) -> tuple:
    try:
        with urllib.request.urlopen(url, timeout=HANG_S) as response:
            return response.status, response.headers.get("Content-Type"), response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("Content-Type"), exc.read().decode()


@pytest.fixture
def start(unpack, tmp_path, host_engine, node):
    """start(counters_text, profile=..., env=...) -> (base URL, process); stopped with SIGTERM afterwards."""
    root = unpack(DEB)
    started = []

    def _start(counters: str = COUNTERS, profile: str = "h100-healthy", env: dict | None = None):
        csv = tmp_path / f"counters-{len(started)}.csv"
        csv.write_text(counters)
        port = free_port()
        process = subprocess.Popen(
            exporter_argv(root, "-f", str(csv), "-a", f"127.0.0.1:{port}", "-r", host_engine),
            env=dict(env or node, HWREPLAY_PROFILE=profile),
            stderr=subprocess.PIPE,
            text=True,
        )
        started.append(process)
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + HANG_S
        while True:
            assert process.poll() is None, process.communicate()[1]
            try:
                get(base + "/health")
                return base, process
            except OSError:
                assert time.monotonic() < deadline, "dcgm-exporter did not start listening"
                time.sleep(0.1)

    yield _start
    for process in started:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            process.communicate(timeout=HANG_S)


def series(text: str) -> dict:
    """{metric: {gpu index: (labels dict, value)}} of an exposition."""
    found: dict = {}
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        match = SERIES.match(line)
        assert match, f"not an exposition line: {line!r}"
        labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', match.group(2)))
        assert list(labels) == list(LABELS), line
        found.setdefault(match.group(1), {})[labels["gpu"]] = (labels, match.group(3))
    return found


def replay(profile: str, node: dict, fields: str) -> list:
    done = subprocess.run(
        ["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader,nounits"],
        env=dict(node, HWREPLAY_PROFILE=profile),
        capture_output=True,
        text=True,
        check=True,
    )
    return [[part.strip() for part in line.split(",")] for line in done.stdout.splitlines()]


# ------------------------------------------------------------------ the package


def test_the_package_is_built_with_its_files_and_dependency(repo, unpack):
    stanza = {s["Package"]: s for s in parse_packages((repo / CUDA / "Packages").read_text())}[
        "datacenter-gpu-manager-exporter"
    ]
    assert stanza["Version"] == "4.1.1-1" and stanza["Architecture"] == "amd64"
    assert stanza["Depends"] == "datacenter-gpu-manager-4-core (>= 1:4.0.0), python3"
    listing = subprocess.run(
        ["dpkg-deb", "-c", str(repo / CUDA / DEB)], capture_output=True, text=True, check=True
    ).stdout
    for path, mode in (
        ("usr/bin/dcgm-exporter", "-rwxr-xr-x"),
        (DEFAULT_CSV, "-rw-r--r--"),
        (UNIT, "-rw-r--r--"),
    ):
        assert re.search(rf"^{re.escape(mode)} \S+ +\d+ \S+ \S+ \./{re.escape(path)}$", listing, re.M), path
    root = unpack(DEB)
    unit = (root / UNIT).read_text()
    for line in (
        "Wants=nvidia-dcgm.service",
        "After=nvidia-dcgm.service",
        "ExecStart=/usr/bin/dcgm-exporter -f /etc/dcgm-exporter/default-counters.csv",
        "Restart=on-abort",
        "WantedBy=multi-user.target",
    ):
        assert line in unit.splitlines(), line
    assert "@" not in (root / "usr/bin/dcgm-exporter").read_text().split('"""', 2)[2]  # all substituted
    assert run_exporter(root, "--version").stdout == "DCGM Exporter version 4.2.3-4.1.1\n"
    assert "--collectors" in run_exporter(root, "-h").stdout


def test_the_default_counters_file_parses(start, unpack):
    base, _process = start((unpack(DEB) / DEFAULT_CSV).read_text())
    found = series(get(base + "/metrics")[2])
    assert {"DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_ROW_REMAP_FAILURE"} <= set(found)
    assert "DCGM_FI_DEV_MEM_CLOCK" not in found  # the replay has no memory clock: left out


# ---------------------------------------------------------------- the exporter


def test_metrics_follow_the_replayed_gpus(start, node):
    base, process = start()
    status, content_type, text = get(base + "/metrics")
    assert status == 200 and content_type.startswith("text/plain; version=0.0.4")
    found = series(text)
    assert set(found) == {
        "DCGM_FI_DEV_GPU_TEMP",
        "DCGM_FI_DEV_POWER_USAGE",
        "DCGM_FI_DEV_FB_USED",
        "DCGM_FI_DEV_FB_FREE",
        "DCGM_FI_DEV_SM_CLOCK",
        "DCGM_FI_DEV_GPU_UTIL",
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
        "DCGM_FI_DEV_ROW_REMAP_PENDING",
        "DCGM_FI_DEV_XID_ERRORS",
    }
    assert "# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).\n# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n" in text
    assert "# TYPE DCGM_FI_DEV_ECC_DBE_VOL_TOTAL counter\n" in text
    gpus = replay(
        "h100-healthy",
        node,
        "index,uuid,pci.bus_id,name,driver_version,temperature.gpu,power.draw,memory.free",
    )
    assert len(gpus) == 8
    for index, uuid, bus_id, name, driver, temp, power, free in gpus:
        labels, value = found["DCGM_FI_DEV_GPU_TEMP"][index]
        assert labels == {
            "gpu": index,
            "UUID": uuid,
            "pci_bus_id": bus_id,
            "device": f"nvidia{index}",
            "modelName": name,
            "Hostname": "gpu-node-1",
            "DCGM_FI_DRIVER_VERSION": driver,
        }
        assert value == temp
        assert float(found["DCGM_FI_DEV_POWER_USAGE"][index][1]) == pytest.approx(float(power))
        assert found["DCGM_FI_DEV_FB_FREE"][index][1] == free
        assert found["DCGM_FI_DEV_XID_ERRORS"][index][1] == "0"  # no Xid on a healthy node
    assert found["DCGM_FI_DEV_GPU_TEMP"]["0"][0]["pci_bus_id"] == "00000000:1B:00.0"
    # A field the replay cannot answer is left out and logged once (at start-up).
    get(base + "/metrics")
    process.send_signal(signal.SIGTERM)
    _, log = process.communicate(timeout=HANG_S)
    assert process.returncode == 0
    assert log.count("Skipping field DCGM_FI_PROF_PIPE_TENSOR_ACTIVE") == 1
    assert "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE" not in text


def test_the_last_xid_of_each_gpu_comes_from_the_kernel_log(start):
    base, _ = start(profile="h100-xid79")
    xids = {
        gpu: value
        for gpu, (_labels, value) in series(get(base + "/metrics")[2])["DCGM_FI_DEV_XID_ERRORS"].items()
    }
    assert xids == {str(i): ("79" if i == 2 else "0") for i in range(8)}  # GPU 2 is 0000:52:00.0


def test_a_pending_row_remap_shows(start):
    base, _ = start(profile="h100-remapped-rows-pending")
    found = series(get(base + "/metrics")[2])
    assert found["DCGM_FI_DEV_XID_ERRORS"]["5"][1] == "63"
    assert found["DCGM_FI_DEV_ROW_REMAP_PENDING"]["5"][1] == "1"
    assert found["DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"]["5"][1] == "1"
    assert found["DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"]["5"][1] == "1"
    assert found["DCGM_FI_DEV_ROW_REMAP_PENDING"]["4"][1] == "0"


def test_other_paths_are_404_and_the_landing_page_links_the_metrics(start):
    base, _ = start()
    assert get(base + "/nope")[0] == 404
    assert get(base + "/metrics/extra")[0] == 404
    status, _, page = get(base + "/")
    assert status == 200 and 'href="./metrics"' in page
    assert get(base + "/health")[:1] == (200,)


def test_fields_nvidia_smi_refuses_or_answers_na_for_are_left_out(start, node, tmp_path):
    """A driver whose nvidia-smi lacks a field, and GPUs that answer [N/A]: those series are left out."""
    fake_bin = tmp_path / "fake-bin"
    fake_bin.mkdir()
    real = tmp_path / "bin/nvidia-smi"
    (fake_bin / "nvidia-smi").write_text(
        "#!/bin/sh\n"
        'case "$*" in *temperature.gpu*) echo \'Field "temperature.gpu" is not a valid field to query.\'; '
        "exit 2;; esac\n"
        f'"{real}" "$@" | sed "s|, 0, 81008, |, [N/A], 81008, |"\n'
    )
    (fake_bin / "nvidia-smi").chmod(0o755)
    env = dict(node, PATH=f"{fake_bin}:{node['PATH']}")
    base, process = start(env=env)
    found = series(get(base + "/metrics")[2])
    assert "DCGM_FI_DEV_GPU_TEMP" not in found  # refused by nvidia-smi
    assert "DCGM_FI_DEV_FB_USED" not in found  # [N/A] on every GPU
    assert len(found["DCGM_FI_DEV_FB_FREE"]) == 8
    get(base + "/metrics")
    process.send_signal(signal.SIGTERM)
    _, log = process.communicate(timeout=HANG_S)
    assert log.count("Skipping field DCGM_FI_DEV_GPU_TEMP: nvidia-smi does not answer temperature.gpu") == 1
    assert log.count("Skipping field DCGM_FI_DEV_FB_USED: GPU 0 answers N/A") == 1


@pytest.mark.parametrize(
    ("row", "why"),
    [
        ("DCGM_FI_DEV_GPU_TEMP, gauge", "expected 'DCGM_FI_NAME, gauge|counter, help message'"),
        ("DCGM_FI_DEV_GPU_TEMP, histogram, GPU temperature", "metric type 'histogram'"),
        ("GPU_TEMP, gauge, GPU temperature", "'GPU_TEMP' is not a DCGM field name"),
    ],
)
def test_a_malformed_row_exits_1_naming_the_line(unpack, tmp_path, host_engine, node, row, why):
    csv = tmp_path / "bad.csv"
    csv.write_text(f"# fine\nDCGM_FI_DEV_FB_USED, gauge, used\n\n{row}\n")
    result = run_exporter(
        unpack(DEB), "-f", str(csv), "-a", f"127.0.0.1:{free_port()}", "-r", host_engine, env=node
    )
    assert result.returncode == 1
    assert f"{csv}:4: malformed counter" in result.stderr and why in result.stderr


def test_a_missing_counters_file_exits_1(unpack, tmp_path, host_engine, node):
    result = run_exporter(unpack(DEB), "-f", str(tmp_path / "none.csv"), "-r", host_engine, env=node)
    assert (
        result.returncode == 1 and f"cannot read the counters file {tmp_path / 'none.csv'}" in result.stderr
    )


def test_without_a_host_engine_it_exits_1(unpack, tmp_path, node):
    csv = tmp_path / "c.csv"
    csv.write_text(COUNTERS)
    node = dict(node, CF_DCGM_EXPORTER_HOSTENGINE_WAIT_S="0.5")  # the default waits 10 s
    result = run_exporter(
        unpack(DEB),
        "-f",
        str(csv),
        "-a",
        f"127.0.0.1:{free_port()}",
        "-r",
        f"127.0.0.1:{free_port()}",
        env=node,
    )
    assert result.returncode == 1 and "Error connecting to nv-hostengine" in result.stderr


def test_a_bad_listen_address_or_flag_exits_1(unpack, tmp_path, host_engine, node):
    csv = tmp_path / "c.csv"
    csv.write_text(COUNTERS)
    root = unpack(DEB)
    bad = run_exporter(root, "-f", str(csv), "-a", "9400", "-r", host_engine, env=node)
    assert bad.returncode == 1 and "use [HOST]:PORT" in bad.stderr
    assert run_exporter(root, "--no-such-flag", env=node).returncode == 1


def test_it_waits_for_a_host_engine_that_starts_with_it(unpack, tmp_path, node):
    """nvidia-dcgm.service and the exporter start together: a host engine listening 1 s later is found."""
    csv = tmp_path / "c.csv"
    csv.write_text(COUNTERS)
    engine_port, port = free_port(), free_port()
    process = subprocess.Popen(
        exporter_argv(
            unpack(DEB), "-f", str(csv), "-a", f"127.0.0.1:{port}", "-r", f"127.0.0.1:{engine_port}"
        ),
        env=node,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(1)
        assert process.poll() is None
        engine = socket.socket()
        engine.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        engine.bind(("127.0.0.1", engine_port))
        engine.listen(8)
        engine.settimeout(30)
        conn, _ = engine.accept()  # the exporter's retry
        with conn:
            conn.sendall(b"DCGM 4.2.3\n")
        engine.close()
        deadline = time.monotonic() + HANG_S
        while True:
            assert process.poll() is None, process.communicate()[1]
            try:
                assert get(f"http://127.0.0.1:{port}/metrics")[0] == 200
                break
            except OSError:
                assert time.monotonic() < deadline
                time.sleep(0.1)
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=HANG_S)
    assert process.returncode == 0
