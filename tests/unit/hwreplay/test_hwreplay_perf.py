"""Perf validation's benchmarks on replayed hardware: what they print parses with cfcore's parsers.

all_reduce_perf, nvbandwidth, hccl_test's all_reduce_test, hccn_tool -ping, ib_write_bw
(a server and a client meeting over a real localhost socket), mpirun across two
replayed nodes (the other one answering `hwreplay peer-serve` on 127.0.0.2) and
the figures the profiles give them (replaylib/perf.py, perftest.py, mpi.py, peer.py).
"""

from __future__ import annotations

import copy
import json
import os
import socket
import subprocess
import sys
import threading
import time

import pytest
import yaml
from hwreplay_testlib import HWREPLAY_DIR, perf_commands
from patience import HANG_S
from replaylib import mpi, peer, perf, perftest
from replaylib.common import Context, ReplayError
from replaylib.profiles import resolve
from replaylib.tools import installed_tools, run_tool

parsers = pytest.importorskip("cfcore.parsers")
parse, ParseError = parsers.parse, parsers.ParseError
NCCL_ARGS = ["-b", "8", "-e", "8G", "-f", "2"]
HCCL_ARGS = ["-b", "8K", "-e", "1G", "-f", "2"]
H2D, D2H = "host_to_device_memcpy_ce", "device_to_host_memcpy_ce"
PEER_ADDRESS = "127.0.0.2"  # another node: Linux routes all of 127/8 to lo, so it can be bound here


def kind_or_skip(kind: str) -> None:
    if kind not in parsers.KINDS:
        pytest.skip(f"cfcore has no {kind} parser yet")


def free_port(address: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((address, 0))
        return sock.getsockname()[1]


@pytest.fixture
def node(ctx):
    """A context for this node: named gpu-a, its only address 127.0.0.1, mpirun run as root."""
    env = dict(ctx.env, HWREPLAY_HOSTNAME="gpu-a", HWREPLAY_LOCAL_ADDRESSES="127.0.0.1", HWREPLAY_EUID="0")
    return Context(env=env)


@pytest.fixture
def other_node(ctx, node):
    """start(profile) -> a peer responder for another node (gpu-b) on 127.0.0.2; `node` asks its port."""
    servers = []

    def start(profile: str) -> Context:
        env = dict(ctx.env, HWREPLAY_PROFILE=profile, HWREPLAY_HOSTNAME="gpu-b")
        env["HWREPLAY_LOCAL_ADDRESSES"] = PEER_ADDRESS
        server = peer.make_server(Context(env=env), PEER_ADDRESS, 0)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        node.env["HWREPLAY_PEER_PORT"] = str(server.server_address[1])
        return Context(env=env)

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def run(ctx: Context, name: str, tool: str, *args: str):
    return run_tool(ctx, tool, list(args), resolve(ctx, name))


def nccl_local(ctx, name: str) -> dict:
    gpus = len(resolve(ctx, name)["nvidia"]["gpus"])
    result = run(ctx, name, "all_reduce_perf", *NCCL_ARGS, "-g", str(gpus))
    assert result.rc == 0 and result.stderr == "", result.stderr
    return parse("nccl-tests", result.stdout)


# ------------------------------------------------------------------ figures and tools


def test_default_figures_follow_the_hardware(ctx):
    h100 = perf.figures(resolve(ctx, "h100-healthy"))
    assert (h100["nccl_local_busbw_gbps"], h100["nccl_pair_busbw_gbps"]) == (470.0, 370.0)
    assert h100["h2d_gbps"] == [55.6] * 8 and h100["d2h_gbps"] == [55.27] * 8
    assert set(h100["rails"]) == {f"mlx5_{i}" for i in range(10)}
    assert h100["rails"]["mlx5_0"] == {"loopback_gbps": 391.2, "wire_gbps": 391.2}  # NDR 400
    assert h100["rails"]["mlx5_8"] == {"loopback_gbps": 195.6, "wire_gbps": 195.6}  # 200G storage port
    b200 = perf.figures(resolve(ctx, "b200-healthy"))
    # mlx5_8 manages the NVLink switches (VPD SW_MNG): not a compute rail.
    assert (b200["nccl_local_busbw_gbps"], b200["nccl_pair_busbw_gbps"]) == (800.0, 370.0)
    assert perf.figures(resolve(ctx, "roce-healthy"))["nccl_pair_busbw_gbps"] == 370.0
    assert perf.figures(resolve(ctx, "910b-healthy")) == {"hccl_local_algbw_gbps": 170.0}
    assert perf.figures(resolve(ctx, "910c-healthy")) == {"hccl_local_algbw_gbps": 260.0}
    assert perf.figures(resolve(ctx, "cpu-none")) == {}


def test_faults_of_the_hardware_show_in_the_default_figures(ctx):
    assert perf.figures(resolve(ctx, "h100-pcie-x8"))["h2d_gbps"][3] == 27.8  # Gen5 x8
    wrong_rate = perf.figures(resolve(ctx, "h100-ib-wrong-rate"))
    assert wrong_rate["rails"]["mlx5_5"]["wire_gbps"] == 195.6
    assert wrong_rate["nccl_pair_busbw_gbps"] == 185.0  # every ring runs at the slowest rail
    assert perf.figures(resolve(ctx, "h100-ib-port-down"))["nccl_pair_busbw_gbps"] == 323.8  # 7 rails


def test_profile_keys_override_the_defaults(ctx):
    profile = resolve(ctx, "h100-healthy")
    profile["perf"] = {
        "nccl_local_busbw_gbps": 300,
        "nccl_pair_busbw_gbps": 90,
        "h2d_gbps": [None, 12.5],
        "d2h_gbps": 40,
        "rails": {"mlx5_1": {"loopback_gbps": 200}},
    }
    figures = perf.figures(profile)
    assert (figures["nccl_local_busbw_gbps"], figures["nccl_pair_busbw_gbps"]) == (300.0, 90.0)
    assert figures["h2d_gbps"] == [55.6, 12.5] + [55.6] * 6 and figures["d2h_gbps"] == [40.0] * 8
    assert figures["rails"]["mlx5_1"] == {"loopback_gbps": 200.0, "wire_gbps": 391.2}
    ascend = resolve(ctx, "910b-healthy")
    ascend["perf"] = {"hccn_ping_loss_pct": {"3": 50}}
    assert (perf.ping_loss(ascend, 3), perf.ping_loss(ascend, 4)) == (50.0, 0.0)


def test_new_profiles_are_their_base_with_one_figure_changed(ctx):
    bad_rail = resolve(ctx, "h100-perf-bad-rail")
    assert bad_rail["perf"] == {"rails": {"mlx5_3": {"wire_gbps": 118.4}}}
    assert bad_rail["infiniband"] == resolve(ctx, "h100-healthy")["infiniband"]  # port Active at 400
    degraded = resolve(ctx, "910b-perf-degraded")
    assert perf.figures(degraded) == {"hccl_local_algbw_gbps": 57.0}  # a third of 170
    assert degraded["ascend"] == resolve(ctx, "910b-healthy")["ascend"]


def test_benchmark_tools_are_installed_where_the_hardware_has_them(ctx):
    benchmarks = {"all_reduce_perf", "nvbandwidth", "ib_write_bw", "all_reduce_test", "mpirun"}

    def of(name: str) -> set:
        return set(installed_tools(resolve(ctx, name))) & benchmarks

    assert (
        of("h100-healthy")
        == of("roce-healthy")
        == {"all_reduce_perf", "nvbandwidth", "ib_write_bw", "mpirun"}
    )
    assert of("910b-healthy") == of("910c-healthy") == {"all_reduce_test", "mpirun"}
    assert of("ppu-healthy") == of("cpu-none") == set()
    result = run(ctx, "910b-healthy", "all_reduce_perf", "-g", "8")
    assert (result.rc, result.stderr) == (127, "all_reduce_perf: command not found\n")


# ------------------------------------------------------------------ nccl-tests


@pytest.mark.parametrize("name", ["h100-healthy", "h200-healthy", "b200-healthy", "roce-healthy"])
def test_nccl_local_parses_and_reaches_the_figure_at_the_largest_size(ctx, name):
    profile = resolve(ctx, name)
    parsed = nccl_local(ctx, name)
    assert parsed["test"] == "all_reduce_perf" and parsed["n_ranks"] == 8
    assert parsed["completed"] and parsed["errors"] == 0 and not parsed["wrong_results"]
    assert parsed["failures"] == [] and parsed["warnings"] == []
    gpus = profile["nvidia"]["gpus"]
    assert [device["name"] for device in parsed["devices"]] == [gpu["name"] for gpu in gpus]
    assert [device["pci_bus"] for device in parsed["devices"]] == [
        int(gpu["bus_id"][9:11], 16) for gpu in gpus
    ]
    assert {device["host"] for device in parsed["devices"]} == {perf.hostname(ctx)}
    assert len({device["pid"] for device in parsed["devices"]}) == 1  # one process, -g 8
    sizes = [row["size_bytes"] for row in parsed["rows"]]
    assert sizes == [8 * 2**i for i in range(31)]
    busbw = [row["out_of_place"]["busbw_gbps"] for row in parsed["rows"]]
    assert busbw == sorted(busbw) and busbw[0] == 0.0
    assert parsed["max_busbw_gbps"] == busbw[-1] == perf.nccl_local_busbw(profile)
    assert parsed["rows"][-1]["in_place"]["busbw_gbps"] < busbw[-1]
    assert 0 < parsed["avg_busbw_gbps"] < busbw[-1]


def test_nccl_header_and_rows_are_laid_out_as_nccl_tests_prints_them(ctx):
    text = run(ctx, "h100-healthy", "all_reduce_perf", *NCCL_ARGS, "-g", "8").stdout
    lines = text.splitlines()
    assert lines[2] == (
        "# nThread 1 nGpus 8 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 "
        "agg iters: 1 validation: 1 graph: 0"
    )
    host = perf.hostname(ctx)
    rank0 = f"#  Rank  0 Group  0 Pid {perf.fake_pid(host):6d} on {host:>10} device  0"
    assert lines[5] == rank0 + " [0x1b] NVIDIA H100 80GB HBM3"
    header = next(line for line in lines if line.startswith("#       size"))
    rows = [line for line in lines if line and not line.startswith("#")]
    assert {len(row) for row in rows} == {len(header)}
    assert rows[0].split()[4:6] == ["-1", "22.00"]  # under 100 us: two decimals
    assert rows[-1].split()[5] == "31984"  # from 10 ms on: none
    assert lines[-3:] == ["#", "# Collective test concluded: all_reduce_perf", ""]


def test_nccl_figure_and_size_range_come_from_the_profile_and_arguments(ctx):
    profile = resolve(ctx, "h100-healthy")
    profile["perf"] = {"nccl_local_busbw_gbps": 233.5}
    result = run_tool(ctx, "all_reduce_perf", ["-b", "1M", "-e", "1G", "-f", "4", "-g", "8"], profile)
    parsed = parse("nccl-tests", result.stdout)
    assert [row["size_bytes"] for row in parsed["rows"]] == [2**20 * 4**i for i in range(6)]
    assert parsed["max_busbw_gbps"] == 233.5
    one = parse("nccl-tests", run(ctx, "h100-healthy", "all_reduce_perf", "-g", "1").stdout)
    assert one["n_ranks"] == 1 and one["max_busbw_gbps"] == 0.0  # 32M only; one GPU moves nothing
    assert [row["size_bytes"] for row in one["rows"]] == [32 * 2**20]


def test_nccl_refuses_more_gpus_than_the_node_has_and_bad_options(ctx):
    result = run(ctx, "h100-healthy", "all_reduce_perf", *NCCL_ARGS, "-g", "9")
    assert result.rc == 1 and "Test CUDA failure common.cu:1018 'invalid device ordinal'" in result.stdout
    parsed = parse("nccl-tests", result.stdout)
    assert parsed["failures"] and not parsed["completed"] and parsed["rows"] == []
    for bad in (["-q"], ["-g"], ["-b", "lots"]):
        usage = run(ctx, "h100-healthy", "all_reduce_perf", *bad)
        assert usage.rc == 1 and "USAGE: all_reduce_perf" in usage.stderr, bad


# ------------------------------------------------------------------ mpirun and the peer responder


def test_mpirun_parses_openmpi_options():
    job = ["--allow-run-as-root", "-np", "16", "-H", "10.0.0.1:8,gpu-b:8", "-x", "NCCL_IB_HCA=mlx5_0,mlx5_3"]
    more = ["-x", "LD_LIBRARY_PATH", "--bind-to", "none", "--mca", "btl", "^openib", "--map-by=slot"]
    options = mpi.parse(
        [*job, *more, "--tag-output", "/opt/nccl-tests/2.13.9/bin/all_reduce_perf", "-b", "8", "-g", "1"]
    )
    assert options["np"] == 16
    assert options["hosts"] == [("10.0.0.1", 8), ("gpu-b", 8)]
    assert options["exports"] == ["NCCL_IB_HCA=mlx5_0,mlx5_3", "LD_LIBRARY_PATH"]
    assert options["flags"] == {"allow-run-as-root", "tag-output"}
    assert options["program"] == "/opt/nccl-tests/2.13.9/bin/all_reduce_perf"
    assert options["args"] == ["-b", "8", "-g", "1"]  # the program's own options stay its own
    assert mpi.parse(["-n", "8", "--host", "a,a,b", "x"])["hosts"] == [("a", 1), ("a", 1), ("b", 1)]
    assert mpi.parse(["--frobnicate", "x"]).startswith('mpirun: Error: unknown option "--frobnicate"')
    assert "No executable was specified" in mpi.parse(["-np", "2"])
    assert "did not have enough parameters" in mpi.parse(["-np"])
    assert "must be a positive integer" in mpi.parse(["-np", "many", "x"])


def test_mpirun_places_processes_by_slot():
    assert mpi.placement([("a", 8), ("b", 8)], 16, False) == {"a": 8, "b": 8}
    assert mpi.placement([("a", 8), ("b", 8)], 12, False) == {"a": 8, "b": 4}
    assert mpi.placement([("a", 1), ("a", 1), ("b", 1)], 3, False) == {"a": 2, "b": 1}
    assert mpi.placement([("a", 1), ("b", 1)], 3, False) is None
    assert mpi.placement([("a", 1), ("b", 1)], 3, True) == {"a": 2, "b": 1}


def test_mpirun_hostfile(tmp_path):
    hostfile = tmp_path / "hosts"
    hostfile.write_text("# the pair\ngpu-a slots=8\n\ngpu-b slots=8 max_slots=8\ngpu-c\n")
    assert mpi.read_hostfile(str(hostfile)) == [("gpu-a", 8), ("gpu-b", 8), ("gpu-c", 1)]
    assert mpi.read_hostfile(str(tmp_path / "missing")) is None


def env_printer(tmp_path) -> str:
    script = tmp_path / "show-env"
    script.write_text(
        '#!/bin/sh\necho "np=$HWREPLAY_MPI_NP hosts=$HWREPLAY_MPI_HOSTS ranks=$HWREPLAY_MPI_RANKS x=$CF_X"\n'
        'echo "args=$*"\nexit "${CF_RC:-0}"\n'
    )
    script.chmod(0o755)
    return str(script)


def test_mpirun_runs_a_program_once_with_the_job_in_its_environment(node, tmp_path):
    program = env_printer(tmp_path)
    args = ["--allow-run-as-root", "-np", "8", "-H", "127.0.0.1:8", "-x", "CF_X=1", program, "-g", "1"]
    result = run(node, "h100-healthy", "mpirun", *args)
    assert (result.rc, result.stderr) == (0, "")
    assert result.stdout == "np=8 hosts=127.0.0.1 ranks=8 x=1\nargs=-g 1\n"
    plain = run(node, "h100-healthy", "mpirun", "--allow-run-as-root", "-n", "4", program)
    assert plain.stdout.startswith("np=4 hosts= ranks= x=\n")  # no -H: this node alone


def test_mpirun_reports_a_failed_program_and_a_missing_one(node, tmp_path):
    node.env["CF_RC"] = "3"
    failed = run(node, "h100-healthy", "mpirun", "--allow-run-as-root", "-n", "2", env_printer(tmp_path))
    assert failed.rc == 3
    assert "mpirun detected that one or more processes exited with non-zero status" in failed.stderr
    assert "Exit code:    3" in failed.stderr
    missing = run(node, "h100-healthy", "mpirun", "--allow-run-as-root", "-n", "2", "/opt/none/xyz_perf")
    assert missing.rc == 1 and "mpirun was unable to find the specified executable file" in missing.stderr
    assert "Executable: /opt/none/xyz_perf" in missing.stderr
    slots = run(node, "h100-healthy", "mpirun", "--allow-run-as-root", "-np", "9", "-H", "127.0.0.1:8", "x")
    assert (
        slots.rc == 1
        and "There are not enough slots available in the system to satisfy the 9" in slots.stderr
    )


def test_mpirun_refuses_root_unless_allowed(node, tmp_path):
    program = env_printer(tmp_path)
    refused = run(node, "h100-healthy", "mpirun", "-np", "2", program)
    assert refused.rc == 1 and "mpirun has detected an attempt to run as root." in refused.stderr
    node.env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    assert run(node, "h100-healthy", "mpirun", "-np", "2", program).rc == 0
    user = Context(env=dict(node.env, HWREPLAY_EUID="1000", OMPI_ALLOW_RUN_AS_ROOT=""))
    assert run(user, "h100-healthy", "mpirun", "-np", "2", program).rc == 0


def test_mpirun_runs_the_replayed_hccl_test_of_a_toolkit_path_the_node_lacks(node):
    args = ["--allow-run-as-root", "-n", "8", "/usr/local/Ascend/ascend-toolkit/latest/tools/hccl_test/bin"]
    result = run(
        node, "910b-healthy", "mpirun", args[0], *args[1:3], args[3] + "/all_reduce_test", *HCCL_ARGS
    )
    assert result.rc == 0, result.stderr
    assert result.stdout.startswith("the minbytes is 8192, maxbytes is 1073741824, iters is 20")


def pair_args(gpus: int = 8, program: str = "all_reduce_perf") -> list:
    hosts = f"127.0.0.1:{gpus},{PEER_ADDRESS}:{gpus}"
    job = ["--allow-run-as-root", "-np", str(2 * gpus), "-H", hosts, "--bind-to", "none"]
    return [*job, "-x", "NCCL_IB_HCA=mlx5_0", program, *NCCL_ARGS, "-g", "1"]


@pytest.mark.parametrize(("remote", "figure"), [("h100-healthy", 370.0), ("h100-ib-wrong-rate", 185.0)])
def test_nccl_across_two_nodes_runs_at_the_slower_nodes_figure(node, other_node, remote, figure):
    other_node(remote)
    result = run(node, "h100-healthy", "mpirun", *pair_args())
    assert (result.rc, result.stderr) == (0, "")
    parsed = parse("nccl-tests", result.stdout)
    assert parsed["n_ranks"] == 16 and parsed["completed"] and parsed["errors"] == 0
    assert [device["host"] for device in parsed["devices"]] == ["gpu-a"] * 8 + ["gpu-b"] * 8
    assert [device["device"] for device in parsed["devices"]] == list(range(8)) * 2
    assert len({device["pid"] for device in parsed["devices"]}) == 16  # one process per rank
    assert parsed["max_busbw_gbps"] == figure
    assert parsed["rows"][0]["out_of_place"]["time_us"] == 41.0  # two nodes: more latency


def test_nccl_across_two_nodes_fails_like_cuda_when_the_peer_fabric_is_down(node, other_node):
    other_node("h100-fabricmanager-failed")
    result = run(node, "h100-healthy", "mpirun", *pair_args())
    assert result.rc == 1
    assert "gpu-b: Test CUDA failure common.cu:1018 'system not yet initialized'" in result.stdout
    assert "mpirun detected that one or more processes exited with non-zero status" in result.stderr
    assert parse("nccl-tests", result.stdout)["failures"]


def test_mpirun_fails_like_openmpi_when_a_host_does_not_answer(node):
    node.env["HWREPLAY_PEER_PORT"] = str(free_port(PEER_ADDRESS))  # nothing listens there
    result = run(node, "h100-healthy", "mpirun", *pair_args())
    assert result.rc == 1 and result.stdout == ""
    assert "ORTE was unable to reliably start one or more daemons." in result.stderr
    assert f"(hwreplay: the peer responder on {PEER_ADDRESS}:" in result.stderr
    assert "no answer (Connection refused)" in result.stderr


def test_mpirun_fails_when_the_other_node_lacks_the_program(node, other_node):
    other_node("910b-healthy")  # no NVIDIA GPUs: no all_reduce_perf there
    result = run(node, "h100-healthy", "mpirun", *pair_args())
    assert result.rc == 1 and "mpirun was unable to find the specified executable file" in result.stderr
    assert "rank 8;" in result.stderr and f"Node:       {PEER_ADDRESS}" in result.stderr


def test_peer_answers_one_json_line_with_the_node_and_its_figures(node, other_node):
    other_node("h100-perf-bad-rail")
    info = peer.query(node, PEER_ADDRESS)
    assert info["hostname"] == "gpu-b" and info["profile"] == "h100-perf-bad-rail"
    assert info["addresses"] == [PEER_ADDRESS] and info["nccl_ready"] is True
    assert [gpu["pci_bus"] for gpu in info["gpus"]] == [0x1B, 0x43, 0x52, 0x61, 0x9D, 0xC3, 0xD1, 0xDF]
    assert info["gpus"][0]["bus_id"] == "0000:1b:00.0"
    assert info["figures"]["rails"]["mlx5_3"]["wire_gbps"] == 118.4
    assert "all_reduce_perf" in info["tools"]


def test_a_peer_whose_replay_fails_counts_as_not_answering(node, other_node):
    other_node("no-such-profile")
    info, why = peer.ask(node, PEER_ADDRESS)
    assert info is None and why.startswith("its replay failed: unknown profile 'no-such-profile'")
    result = run(node, "h100-healthy", "mpirun", *pair_args())
    assert result.rc == 1 and "its replay failed: unknown profile" in result.stderr


def test_peer_query_ignores_what_is_not_a_replay_peer(node):
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        node.env["HWREPLAY_PEER_PORT"] = str(listener.getsockname()[1])

        def answer_nonsense():
            conn, _ = listener.accept()
            with conn:
                conn.sendall(b"SSH-2.0-OpenSSH_9.2\r\n")

        thread = threading.Thread(target=answer_nonsense, daemon=True)
        thread.start()
        assert peer.query(node, "127.0.0.1") is None
        thread.join(5)


def test_what_counts_as_this_node(node, tmp_path):
    assert (
        peer.is_local(node, "127.0.0.1") and peer.is_local(node, "localhost") and peer.is_local(node, "gpu-a")
    )
    assert not peer.is_local(node, PEER_ADDRESS) and not peer.is_local(node, "gpu-b.invalid")
    assert "127.0.0.1" in peer.interface_addresses()


def test_peer_port_setting(node, tmp_path):
    plain = Context(env={"HWREPLAY_OVERRIDES": str(tmp_path / "overrides.json")})
    assert peer.port(plain) == 18600
    (tmp_path / "overrides.json").write_text('{"peer_port": 18700}')
    assert peer.port(plain) == 18700
    assert peer.port(Context(env=dict(plain.env, HWREPLAY_PEER_PORT="18800"))) == 18800
    (tmp_path / "overrides.json").write_text('{"peer_port": "x"}')
    with pytest.raises(ReplayError, match="peer_port must be a TCP port number"):
        resolve(plain, "h100-healthy")


def test_peer_serve_command_runs_until_sigterm(ctx):
    port = free_port()
    env = dict(os.environ, **ctx.env, HWREPLAY_PROFILE="910b-healthy", HWREPLAY_HOSTNAME="npu-b")
    process = subprocess.Popen(
        [
            sys.executable,
            str(HWREPLAY_DIR / "hwreplay.py"),
            "peer-serve",
            "--bind",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout.readline().startswith(f"hwreplay peer responder on port {port} ")
        info = peer.query(Context(env={"HWREPLAY_PEER_PORT": str(port)}), "127.0.0.1")
        assert info["hostname"] == "npu-b" and info["figures"] == {"hccl_local_algbw_gbps": 170.0}
    finally:
        process.terminate()
        assert process.wait(10) == 0


def test_install_playbook_runs_the_peer_responder():
    play = yaml.safe_load((HWREPLAY_DIR / "install.yml").read_text())[0]
    tasks = {task["name"]: task for task in next(task["block"] for task in play["tasks"] if "block" in task)}
    unit = tasks["Install hwreplay-peer.service"]["ansible.builtin.copy"]["content"]
    assert "ExecStart={{ hwreplay_lib_dir }}/hwreplay.py peer-serve\n" in unit
    service = tasks["Run hwreplay-peer.service"]
    assert service["ansible.builtin.systemd_service"]["enabled"] is True
    assert service["when"] == "hwreplay_systemd.stat.exists and not ansible_check_mode"
    overrides = tasks["Write the host's replay overrides"]["vars"]["hwreplay_overrides"]
    assert "'peer_port': hwreplay_peer_port | int" in overrides


# ------------------------------------------------------------------ hccl_test


@pytest.mark.parametrize("name", ["910b-healthy", "910b-perf-degraded", "910c-healthy"])
def test_hccl_local_parses_and_reaches_the_figure(node, name):
    (command,) = perf_commands(resolve(node, name))
    result = run(node, name, *command)
    assert (result.rc, result.stderr) == (0, "")
    parsed = parse("hccl-test", result.stdout)
    assert [row["size_bytes"] for row in parsed["rows"]] == [8192 * 2**i for i in range(18)]
    assert parsed["errors"] == 0 and {row["check"] for row in parsed["rows"]} == {"success"}
    assert (
        parsed["max_algbw_gbps"]
        == parsed["rows"][-1]["algbw_gbps"]
        == perf.hccl_local_algbw(resolve(node, name))
    )
    assert (parsed["min_bytes"], parsed["max_bytes"], parsed["iters"]) == (8192, 2**30, 20)
    algbw = [row["algbw_gbps"] for row in parsed["rows"]]
    assert algbw == sorted(algbw)


def test_hccl_refuses_a_job_that_does_not_fit_the_node(node):
    for argv in (
        ["mpirun", "--allow-run-as-root", "-n", "8", "all_reduce_test", *HCCL_ARGS, "-p", "4"],
        ["mpirun", "--allow-run-as-root", "-n", "9", "all_reduce_test", *HCCL_ARGS, "-p", "9"],
    ):
        result = run(node, "910b-healthy", *argv)
        assert result.rc == 1 and "hccl interface return err" in result.stdout, argv
        with pytest.raises(ParseError, match="hccl_test failed"):
            parse("hccl-test", result.stdout)
    unchecked = run(node, "910b-healthy", "all_reduce_test", "-b", "8M", "-e", "8M", "-p", "8", "-c", "0")
    assert parse("hccl-test", unchecked.stdout)["rows"][0]["check"] is None  # NULL: not checked


# ------------------------------------------------------------------ nvbandwidth


def test_nvbandwidth_parses_per_gpu(ctx):
    kind_or_skip("nvbandwidth")
    args = ["-t", H2D, D2H]
    parsed = parse("nvbandwidth", run(ctx, "h100-pcie-x8", "nvbandwidth", *args).stdout)
    assert parsed["version"] == "v0.5" and parsed["driver_version"] == "535.183.01"
    assert [device["bus_id"] for device in parsed["devices"]][:2] == ["0000:1b:00.0", "0000:43:00.0"]
    h2d, d2h = parsed["testcases"][H2D], parsed["testcases"][D2H]
    assert (h2d["row_side"], h2d["column_side"], d2h["row_side"]) == ("CPU", "GPU", "CPU")
    assert [h2d["per_gpu_gbps"][str(i)] for i in range(8)] == [55.6] * 3 + [27.8] + [55.6] * 4
    assert d2h["per_gpu_gbps"]["3"] == 27.63 and d2h["sum_gbps"] == round(7 * 55.27 + 27.63, 2)
    assert parsed["errors"] == [] and parsed["waived"] == 0
    assert (
        run(ctx, "h100-pcie-x8", "nvbandwidth").stdout
        == run(ctx, "h100-pcie-x8", "nvbandwidth", *args).stdout
    )


def test_nvbandwidth_per_gpu_override_other_tests_and_failures(ctx):
    kind_or_skip("nvbandwidth")
    profile = resolve(ctx, "h200-healthy")
    profile["perf"] = {"h2d_gbps": [None, None, 9.5]}
    parsed = parse("nvbandwidth", run_tool(ctx, "nvbandwidth", ["-t", H2D], profile).stdout)
    assert parsed["testcases"][H2D]["per_gpu_gbps"]["2"] == 9.5 and list(parsed["testcases"]) == [H2D]
    waived = parse(
        "nvbandwidth", run(ctx, "h200-healthy", "nvbandwidth", "-t", "device_to_device_memcpy_read_ce").stdout
    )
    assert waived["waived"] == 1 and waived["testcases"]["device_to_device_memcpy_read_ce"]["matrix"] == []
    unknown = run(ctx, "h200-healthy", "nvbandwidth", "-t", "warp_speed")
    assert unknown.rc == 1 and unknown.stdout == "ERROR: Testcase warp_speed not found!\n"
    failed = run(ctx, "h100-fabricmanager-failed", "nvbandwidth", "-t", H2D)
    assert failed.rc == 1
    with pytest.raises(ParseError, match=r"nvbandwidth failed: .*CUDA_ERROR_SYSTEM_NOT_READY"):
        parse("nvbandwidth", failed.stdout)


# ------------------------------------------------------------------ hccn_tool -ping


def ping(ctx, name: str, device: str, address: str, *more: str) -> dict:
    result = run(ctx, name, "hccn_tool", "-i", device, "-ping", "-g", "address", address, *more)
    assert (result.rc, result.stderr) == (0, "")
    return parse("hccn-ping", result.stdout)


def test_hccn_ping_within_the_nic_subnet(ctx):
    kind_or_skip("hccn-ping")
    parsed = ping(ctx, "910b-healthy", "3", "10.10.0.12")
    assert (parsed["device"], parsed["address"]) == (3, "10.10.0.12")
    assert (parsed["transmitted"], parsed["received"], parsed["loss_pct"]) == (3, 3, 0.0)
    assert len(parsed["times_ms"]) == 3 and parsed["times_ms"][0] == 1.418
    assert ping(ctx, "910b-healthy", "0", "10.10.0.18", "pkt", "10")["received"] == 10
    # A3: hccn_tool's device is the die's Phy-ID; die 1 of NPU 0 (Phy-ID 1) is on 10.11.1.0/24.
    assert ping(ctx, "910c-healthy", "1", "10.11.1.12")["loss_pct"] == 0.0


def test_hccn_ping_fails_outside_the_subnet_with_a_down_link_or_per_the_profile(ctx):
    kind_or_skip("hccn-ping")
    parsed = ping(ctx, "910b-healthy", "3", "192.168.100.12")
    assert (parsed["transmitted"], parsed["received"], parsed["loss_pct"]) == (3, 0, 100.0)
    assert parsed["times_ms"] == []
    profile = resolve(ctx, "910b-healthy")
    down = copy.deepcopy(profile)
    down["ascend"]["npus"][5]["nic"]["link"] = "DOWN"
    text = run_tool(ctx, "hccn_tool", ["-i", "5", "-ping", "-g", "address", "10.10.0.12"], down).stdout
    assert text == "device 5 PING 10.10.0.12\n3 packets transmitted, 0 received, 100.00% packet loss\n"
    profile["perf"] = {"hccn_ping_loss_pct": {"2": 50}}
    lossy = run_tool(
        ctx, "hccn_tool", ["-i", "2", "-ping", "-g", "address", "10.10.0.12", "pkt", "10"], profile
    )
    assert parse("hccn-ping", lossy.stdout)["loss_pct"] == 50.0
    for bad in (
        ["-i", "9", "-ping", "-g", "address", "10.10.0.12"],
        ["-i", "2", "-ping", "-g", "10.10.0.12"],
    ):
        assert run(ctx, "910b-healthy", "hccn_tool", *bad).rc == 1, bad


# ------------------------------------------------------------------ ib_write_bw over a real socket


def perftest_args(rail: str, port: int, *more: str) -> list:
    return ["-d", rail, "-F", "--report_gbits", "-D", "5", "-p", str(port), *more]


def ib_pair(server_ctx, server_profile, client_ctx, client_profile, server_args, client_args) -> tuple:
    """(server result, client result) of one server in a thread and its client."""
    outcome = {}
    thread = threading.Thread(
        target=lambda: outcome.update(server=run(server_ctx, server_profile, "ib_write_bw", *server_args)),
        daemon=True,
    )
    thread.start()
    client = run(client_ctx, client_profile, "ib_write_bw", *client_args)
    thread.join(30)
    return outcome["server"], client


def test_ib_write_bw_loopback_goes_through_the_hca_not_the_cable(node):
    port = free_port()
    args = perftest_args("mlx5_3", port, "--use_cuda=3")
    args[args.index("-D") + 1] = str(HANG_S)  # a replay that waited out -D would fail the check below
    started = time.monotonic()
    server, client = ib_pair(
        node, "h100-perf-bad-rail", node, "h100-perf-bad-rail", args, [*args, "127.0.0.1"]
    )
    assert time.monotonic() - started < HANG_S / 2
    for result in (server, client):
        assert (result.rc, result.stderr) == (0, "")
        parsed = parse("ib-perftest", result.stdout)
        assert (parsed["test"], parsed["device"], parsed["link_type"]) == ("RDMA_Write BW", "mlx5_3", "IB")
        assert parsed["bw_unit"] == "Gb/sec" and parsed["gpudirect"] is True
        assert parsed["bw_avg_gbps"] == 391.2 and [row["size_bytes"] for row in parsed["rows"]] == [65536]
    assert server.stdout.startswith("\n" + "*" * 36 + "\n* Waiting for client to connect... *\n")
    assert "Picking device No. 3\n" in client.stdout and client.stdout.endswith(
        "destroying current CUDA Ctx\n"
    )
    local = next(line for line in client.stdout.splitlines() if line.startswith(" local address"))
    remote = next(line for line in server.stdout.splitlines() if line.startswith(" remote address"))
    assert local.split(": ", 1)[1] == remote.split(": ", 1)[1]  # what the client sent the server


@pytest.mark.parametrize(
    ("server_profile", "client_profile", "expected"),
    [
        ("h100-healthy", "h100-healthy", 391.2),
        ("h100-perf-bad-rail", "h100-healthy", 118.4),  # the server's cable
        ("h100-healthy", "h100-perf-bad-rail", 118.4),  # the client's cable
    ],
)
def test_ib_write_bw_between_nodes_runs_at_the_slower_cable(node, server_profile, client_profile, expected):
    port = free_port()
    server, client = ib_pair(
        node,
        server_profile,
        node,
        client_profile,
        perftest_args("mlx5_3", port),
        [*perftest_args("mlx5_3", port), PEER_ADDRESS],  # not this node's address: over the wire
    )
    assert server.rc == client.rc == 0
    assert parse("ib-perftest", server.stdout)["bw_avg_gbps"] == expected
    row = parse("ib-perftest", client.stdout)["rows"][0]
    assert (row["bw_avg_gbps"], row["bw_peak_gbps"]) == (expected, 0.0)  # -D: no peak measured
    assert row["iterations"] == int(expected * 1e9 / 8 / 65536 * 5)


def test_ib_write_bw_roce_and_mb_per_second(node):
    port = free_port()
    args = ["-d", "mlx5_2", "-x", "3", "-p", str(port)]
    server, client = ib_pair(node, "roce-healthy", node, "roce-healthy", args, [*args, "localhost"])
    parsed = parse("ib-perftest", client.stdout)
    assert (parsed["link_type"], parsed["bw_unit"]) == ("Ethernet", "MB/sec")
    assert parsed["bw_avg_gbps"] == pytest.approx(391.2, abs=0.01)
    assert parsed["rows"][0]["iterations"] == 5000 and parsed["rows"][0]["bw_peak_gbps"] > 391.2
    assert " GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:40:02:11" in client.stdout
    assert server.rc == 0


def test_ib_write_bw_client_without_a_server(node):
    node.env["HWREPLAY_IB_CONNECT_WAIT_S"] = "0.3"
    port = free_port()
    result = run(node, "h100-healthy", "ib_write_bw", *perftest_args("mlx5_0", port), PEER_ADDRESS)
    assert result.rc == 1 and result.stdout == ""
    assert result.stderr.splitlines()[0] == f"Couldn't connect to {PEER_ADDRESS}:{port}"
    assert "Unable to open file descriptor for socket connection" in result.stderr
    with pytest.raises(ParseError, match="perftest failed: Couldn't connect"):
        parse("ib-perftest", result.stdout + result.stderr)


def test_ib_write_bw_server_gives_up_without_a_client(node):
    node.env["HWREPLAY_IB_SERVER_TIMEOUT_S"] = "0.3"
    result = run(node, "h100-healthy", "ib_write_bw", *perftest_args("mlx5_0", free_port()))
    assert result.rc == 1 and "Waiting for client to connect" in result.stdout
    with pytest.raises(ParseError):
        parse("ib-perftest", result.stdout + result.stderr)


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        (
            "h100-healthy",
            ["-d", "mlx5_11"],
            "IB device mlx5_11 not found\n Unable to find the Infiniband/RoCE device\n",
        ),
        (
            "h100-ib-port-down",
            ["-d", "mlx5_3"],
            " Port number 1 state is Down\n Couldn't set the link layer\n",
        ),
        ("h100-healthy", ["-d", "mlx5_0", "-i", "2"], " Port number 2 state is Nop\n"),
    ],
)
def test_ib_write_bw_refuses_what_perftest_refuses(node, name, args, message):
    result = run(node, name, "ib_write_bw", *args, "127.0.0.1")
    assert result.rc == 1 and result.stderr.startswith(message)
    with pytest.raises(ParseError, match=r"perftest failed|not perftest"):
        parse("ib-perftest", result.stdout + result.stderr)


def test_ib_write_bw_gpudirect_needs_the_gpu_and_peermem(node):
    missing_gpu = run(node, "h100-healthy", "ib_write_bw", "-d", "mlx5_0", "--use_cuda", "8", "127.0.0.1")
    assert missing_gpu.rc == 1 and "No such device ID (8) exists in system" in missing_gpu.stdout
    no_peermem = run(node, "h100-peermem-missing", "ib_write_bw", "-d", "mlx5_0", "--use_cuda=0", "127.0.0.1")
    assert no_peermem.rc == 1 and no_peermem.stdout.endswith(
        "Couldn't allocate MR\n Couldn't create IB resources\n"
    )
    for bad in (["--bogus"], ["-d"], ["-p", "x"], ["a", "b"]):
        usage = run(node, "h100-healthy", "ib_write_bw", *bad)
        assert usage.rc == 1 and "Invalid Command or flag." in usage.stderr, bad


def test_ib_write_bw_server_process_and_client_meet(node, tmp_path):
    """The command line path: the server is `hwreplay render ib_write_bw` in its own process."""
    port = free_port()
    env = dict(os.environ, **node.env, HWREPLAY_PROFILE="h100-healthy")
    server = subprocess.Popen(
        [
            sys.executable,
            str(HWREPLAY_DIR / "hwreplay.py"),
            "render",
            "ib_write_bw",
            *perftest_args("mlx5_7", port),
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    node.env["HWREPLAY_IB_CONNECT_WAIT_S"] = "10"  # the server's Python is still starting
    client = run(node, "h100-healthy", "ib_write_bw", *perftest_args("mlx5_7", port), "127.0.0.1")
    out, err = server.communicate(timeout=HANG_S)
    assert (server.returncode, err, client.rc) == (0, "", 0)
    assert (
        parse("ib-perftest", out)["bw_avg_gbps"]
        == parse("ib-perftest", client.stdout)["bw_avg_gbps"]
        == 391.2
    )
    assert json.loads(json.dumps(perftest.parse_args(perftest_args("mlx5_7", port))))["duration"] == 5


def test_installed_shims_run_the_benchmarks_end_to_end(ctx, tmp_path):
    """`profile set`'s sh shims: mpirun finds the all_reduce_perf shim on PATH; ib_write_bw meets itself."""
    from replaylib import control

    control.set_profile(ctx, "h100-healthy")
    bin_dir = tmp_path / "bin"
    env = dict(ctx.env, PATH=f"{bin_dir}:/usr/bin:/bin", HWREPLAY_EUID="0")
    job = [
        str(bin_dir / "mpirun"),
        "--allow-run-as-root",
        "-np",
        "8",
        "all_reduce_perf",
        *NCCL_ARGS,
        "-g",
        "1",
    ]
    done = subprocess.run(job, env=env, capture_output=True, text=True, timeout=HANG_S, check=False)
    assert (done.returncode, done.stderr) == (0, "")
    parsed = parse("nccl-tests", done.stdout)
    assert parsed["n_ranks"] == 8 and len({device["pid"] for device in parsed["devices"]}) == 8
    assert parsed["max_busbw_gbps"] == 470.0
    port = free_port()
    argv = [str(bin_dir / "ib_write_bw"), *perftest_args("mlx5_1", port)]
    server = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    client = subprocess.run(
        [*argv, "127.0.0.1"],
        env=dict(env, HWREPLAY_IB_CONNECT_WAIT_S="10"),
        capture_output=True,
        text=True,
        timeout=HANG_S,
        check=False,
    )
    out, _ = server.communicate(timeout=HANG_S)
    assert server.returncode == client.returncode == 0, client.stderr
    assert (
        parse("ib-perftest", client.stdout)["bw_avg_gbps"]
        == parse("ib-perftest", out)["bw_avg_gbps"]
        == 391.2
    )
