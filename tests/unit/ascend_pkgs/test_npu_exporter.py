"""The npu-exporter stand-in of the zip: Go-style flags, their errors, metrics from the replayed npu-smi."""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import zipfile

import pytest
from ascend_pkgs_testlib import EXPORTER, HWREPLAY
from patience import HANG_S


@pytest.fixture
def exporter(packages, tmp_path):
    """The npu-exporter executable, unzipped as the role would (mode kept)."""
    with zipfile.ZipFile(packages / EXPORTER.format(version="6.0.0")) as archive:
        archive.extract("npu-exporter", tmp_path)
        mode = (archive.getinfo("npu-exporter").external_attr >> 16) & 0o777
    path = tmp_path / "npu-exporter"
    os.chmod(path, mode)
    return path


def fake_npu_smi(directory, profile: str | None) -> dict:
    """A PATH whose npu-smi is the hardware replay rendering `profile` (None: an npu-smi that fails)."""
    directory.mkdir(exist_ok=True)
    tool = directory / "npu-smi"
    if profile is None:
        tool.write_text("#!/bin/sh\necho 'dcmi module initialize failed. ret is -8005' >&2\nexit 255\n")
    else:
        tool.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{HWREPLAY}" render npu-smi "$@"\n')
    tool.chmod(0o755)
    return {**os.environ, "PATH": f"{directory}:{os.environ['PATH']}", "HWREPLAY_PROFILE": profile or ""}


def free_port() -> int:
    """A free port in the exporter's range [1025, 40000] (the kernel's ephemeral range is above it)."""
    for _ in range(200):
        port = random.randint(20000, 39999)
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise AssertionError("no free port in 20000-39999")


def run(exporter, *args, env=None):
    return subprocess.run([str(exporter), *args], capture_output=True, text=True, env=env, timeout=HANG_S)


def test_version(exporter):
    done = run(exporter, "-version")
    assert (done.returncode, done.stdout) == (0, "npu-exporter version: v6.0.0\n")


def test_help_lists_the_flags(exporter):
    done = run(exporter, "-h")
    assert done.returncode == 0
    for flag in ("-ip", "-port", "-updateTime", "-containerMode"):
        assert flag in done.stdout


@pytest.mark.parametrize(
    ("args", "rc", "message"),
    [
        (["-bogus=1"], 2, "flag provided but not defined: -bogus"),
        (["--listen=:8082"], 2, "flag provided but not defined: -listen"),
        (["-ip=127.0.0.1", "-port=abc"], 2, 'invalid value "abc" for flag -port: parse error'),
        (["-ip"], 2, "flag needs an argument: -ip"),
        (["-ip=127.0.0.1", "serve"], 2, "unexpected argument: serve"),
        (["-version=maybe"], 2, 'invalid boolean value "maybe" for -version'),
        (["-port=8082"], 1, "the listen ip is required"),
        (["-ip=999.1.1.1"], 1, "is not an IP address"),
        (["-ip=127.0.0.1", "-port=80"], 1, "the port 80 is out of range [1025, 40000]"),
        (["-ip=127.0.0.1", "-updateTime=0"], 1, "updateTime 0 is out of range"),
        (["-ip=127.0.0.1", "-containerMode=podman"], 1, "is not one of docker, containerd, isula"),
    ],
)
def test_bad_flags_exit_non_zero_with_a_message(exporter, args, rc, message):
    done = run(exporter, *args)
    assert done.returncode == rc, done.stderr
    assert message in done.stderr
    assert done.stdout == ""
    if rc == 2:
        assert "Usage of npu-exporter:" in done.stderr


def scrape(url: str, deadline: float = HANG_S) -> str:
    end = time.monotonic() + deadline
    while True:
        try:
            with urllib.request.urlopen(url, timeout=HANG_S) as answer:
                return answer.read().decode()
        except urllib.error.HTTPError:
            raise  # the server answered: no retry
        except (urllib.error.URLError, ConnectionError):
            if time.monotonic() > end:
                raise
            time.sleep(0.1)


@pytest.fixture
def serve(exporter, tmp_path):
    started = []

    def _serve(profile, *extra):
        port = free_port()
        process = subprocess.Popen(
            [str(exporter), "-ip=127.0.0.1", f"-port={port}", *extra],
            env=fake_npu_smi(tmp_path / "bin", profile),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        started.append(process)
        return process, f"http://127.0.0.1:{port}"

    yield _serve
    for process in started:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=HANG_S)


def samples(text: str) -> dict:
    return dict(line.rsplit(" ", 1) for line in text.splitlines() if line and not line.startswith("#"))


def test_the_last_flag_wins(serve, watchdog):
    process, _base = serve("910b-healthy", "-port", "1")  # after the fixture's -port=<free port>, as in Go
    assert process.wait(timeout=HANG_S) == 1
    assert "the port 1 is out of range" in process.stderr.read()


def test_metrics_follow_the_replayed_npus(serve, watchdog):
    process, base = serve("910b-health-alarm")
    text = scrape(base + "/metrics")
    values = samples(text)
    assert values['npu_exporter_version_info{exporterVersion="v6.0.0"}'] == "1"
    assert values["npu_exporter_npu_smi_up"] == "1"
    assert values["machine_npu_nums"] == "8"
    labels0 = 'id="0",model_name="910B3",pcie_bus_info="0000:C1:00.0"'
    assert values[f"npu_chip_info_health_status{{{labels0}}}"] == "1"
    assert values[f"npu_chip_info_power{{{labels0}}}"] == "94.2"
    assert values[f"npu_chip_info_temperature{{{labels0}}}"] == "45"
    assert values[f"npu_chip_info_hbm_total_memory{{{labels0}}}"] == "65536"
    health = {k: v for k, v in values.items() if k.startswith("npu_chip_info_health_status")}
    assert len(health) == 8
    assert [k for k, v in health.items() if v == "0"] == [
        'npu_chip_info_health_status{id="5",model_name="910B3",pcie_bus_info="0000:41:00.0"}'
    ]
    assert "# TYPE npu_chip_info_health_status gauge" in text
    with pytest.raises(urllib.error.HTTPError) as missing:
        scrape(base + "/")
    assert missing.value.code == 404
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=HANG_S) == 0


def test_multi_die_npus_are_one_chip_each_by_phy_id(serve, watchdog):
    """Atlas A3: npu-smi lists two dies per NPU ("| chip phy-id | bus |"); each is a chip."""
    process, base = serve("910c-healthy")
    values = samples(scrape(base + "/metrics"))
    health = {k: v for k, v in values.items() if k.startswith("npu_chip_info_health_status")}
    ids = sorted(int(key.split('id="', 1)[1].split('"', 1)[0]) for key in health)
    assert ids == list(range(16)) and set(health.values()) == {"1"}, health
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=HANG_S) == 0


def test_a_failing_npu_smi_is_reported_not_hidden(serve, watchdog):
    process, base = serve(None)
    values = samples(scrape(base + "/metrics"))
    assert values["npu_exporter_npu_smi_up"] == "0"
    assert "machine_npu_nums" not in values
    assert not any(k.startswith("npu_chip_info_health_status") for k in values)
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=HANG_S) == 0


def test_a_busy_port_is_refused(serve, exporter, tmp_path, watchdog):
    _process, base = serve("910b-healthy")
    scrape(base + "/metrics")
    port = base.rsplit(":", 1)[1]
    done = run(
        exporter, "-ip=127.0.0.1", f"-port={port}", env=fake_npu_smi(tmp_path / "bin2", "910b-healthy")
    )
    assert done.returncode == 1 and "cannot listen on 127.0.0.1:" in done.stderr
