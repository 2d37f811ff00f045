"""Benchmark of `clusterforge validate`: prints figures, asserts nothing.

    .venv/bin/python tests/bench/bench_validate.py [--nodes 10000] [--repeats 10]
                                                   [--lab-inventory inventories/lab-NAME]

(a) Quick validation time per node: cfcore's validate_node with a live source
    whose vendor tools are the hardware replay's tool shims (tests/hwreplay),
    run as real subprocesses as on a lab node, on the healthy H100 and 910B
    profiles (mean and p95 over repeats). With --lab-inventory, also `clusterforge validate` wall time over
    that lab's nodes divided by the node count.
(b) Report building for N synthetic node results (~25 checks each, a few %
    failing with evidence, per-node metrics): the fleet outlier pass and every
    report format, timed, with peak memory (ru_maxrss) of a fresh subprocess.

Aims (issue 4): under 2 s per node; under 3 s and 500 MB for 10,000 nodes.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HWREPLAY = ROOT / "tests" / "hwreplay" / "hwreplay.py"
REPLAYED_TOOLS = ("nvidia-smi", "npu-smi", "hccn_tool", "ibstat", "lspci", "dmesg")


# ------------------------------------------------------------ synthetic fleet


def _check(check_id: str, status: str = "pass", message: str = "", evidence=None, remedy=None) -> dict:
    return {
        "id": check_id,
        "status": status,
        "message": message or f"{check_id}: ok",
        "evidence": evidence,
        "remedy": remedy,
    }


_GPU_FAULTS = [
    (
        "gpu.xid",
        "fatal Xid 79 (GPU fallen off the bus) on 0000:{bus}:00.0 since boot",
        {
            "command": "dmesg",
            "lines": ["[ 1234.567890] NVRM: Xid (PCI:0000:{bus}:00): 79, pid=0, GPU has fallen off the bus."],
        },
        "drain the node, reseat/replace the GPU; RMA if it recurs",
    ),
    (
        "ib.port_state",
        "mlx5_{n}: port 1 is Down (Polling), expected Active",
        {
            "command": "ibstat",
            "lines": ["CA 'mlx5_{n}'", "\tPort 1:", "\t\tState: Down", "\t\tPhysical state: Polling"],
        },
        "check the cable and transceiver, then the switch port",
    ),
    (
        "gpu.remapped_rows",
        "GPU 0000:{bus}:00.0 has a pending row remap: reset the GPU",
        {"command": "nvidia-smi -q -x", "lines": ["<remapped_row_pending>Yes</remapped_row_pending>"]},
        "drain the node and reset the GPU (nvidia-smi -r) or reboot",
    ),
    (
        "gpu.pcie_link",
        "GPU 0000:{bus}:00.0 PCIe link Gen5 x8, expected Gen5 x16",
        {
            "command": "nvidia-smi -q -x",
            "lines": ["<link_width>8x</link_width>", "<max_link_width>16x</max_link_width>"],
        },
        "reseat the GPU or its riser; check BIOS PCIe settings",
    ),
]
_NPU_FAULTS = [
    (
        "npu.health",
        "NPU {n} health is Alarm",
        {"command": "npu-smi info -t health -i {n}", "lines": ["Health Status : Alarm"]},
        "read the alarm codes (npu-smi info -t health) and follow Huawei's handling",
    ),
]


def synthetic_results(count: int, seed: int = 4) -> list[dict]:
    """`count` node results shaped like node_validate's: 80 % H100, 20 % 910B, ~3 % failing."""
    from cfcore.checks import GPU_CHECKS, GPU_FULL_CHECKS, IB_CHECKS, NODE_CHECKS, NPU_CHECKS

    rng = random.Random(seed)
    results = []
    for index in range(count):
        gpu = index % 5 != 4
        host = f"{'gpu' if gpu else 'npu'}-r{index // 32:03d}-n{index % 32:02d}"
        if gpu:
            own, other = GPU_CHECKS + IB_CHECKS + NODE_CHECKS, NPU_CHECKS + GPU_FULL_CHECKS
            metrics = {
                "gpu.count": 8,
                "gpu.pcie_width_min": 16,
                "gpu.pcie_gen_max_min": 5,
                "gpu.temperature_max_c": round(rng.gauss(41, 2.5), 1),
                "gpu.temperature_mean_c": round(rng.gauss(37, 2), 1),
                "gpu.power_draw_max_w": round(rng.gauss(72, 4), 1),
                "gpu.ecc_uncorrected_volatile_total": 0,
                "gpu.nvlink_active_links_min": 18,
                "gpu.xid_count": 0,
                "ib.hca_count": 8,
                "ib.ports_active": 8,
                "ib.rate_gbps_min": 400,
            }
            sku = "hgx-h100-8gpu"
        else:
            own, other = NPU_CHECKS + NODE_CHECKS, GPU_CHECKS + GPU_FULL_CHECKS + IB_CHECKS
            metrics = {
                "npu.count": 8,
                "npu.chip_count": 8,
                "npu.temperature_max_c": round(rng.gauss(45, 3), 1),
                "npu.power_max_w": round(rng.gauss(95, 6), 1),
                "npu.hbm_total_mb_min": 65536,
                "npu.health_not_ok_count": 0,
                "npu.nic_links_up": 8,
            }
            sku = "atlas-800t-a2"
        checks = [_check(c, message=f"{c}: as expected") for c in own]
        checks += [_check(c, "skip", f"SKU {sku} has no such device") for c in other]
        if rng.random() < 0.03:
            check_id, message, evidence, remedy = rng.choice(_GPU_FAULTS if gpu else _NPU_FAULTS)
            fill = {"bus": f"{rng.randrange(16, 240):02x}", "n": rng.randrange(8)}
            found = json.loads(
                json.dumps(evidence).replace("{bus}", fill["bus"]).replace("{n}", str(fill["n"]))
            )
            for item in checks:
                if item["id"] == check_id:
                    item.update(status="fail", message=message.format(**fill), evidence=found, remedy=remedy)
        if gpu and rng.random() < 0.005:
            metrics["gpu.temperature_max_c"] = 83.0  # a blocked fan: pass every floor, still an outlier
        statuses = [c["status"] for c in checks]
        results.append(
            {
                "host": host,
                "node_sku": sku,
                "level": "quick",
                "status": "fail" if "fail" in statuses else "pass",
                "checks": checks,
                "metrics": metrics,
                "facts": {
                    "driver_version": "535.183.01" if gpu else "24.1.rc2",
                    "accelerator_count": 8,
                    "hostname": host,
                },
                "collected_at": "2026-11-30T12:00:00Z",
                "duration_s": round(rng.uniform(0.4, 1.2), 3),
            }
        )
    return results


def reports_child(count: int) -> dict:
    """Runs in a fresh process: build every report for `count` nodes; timings and peak memory."""
    from clusterforge.validation import reports
    from clusterforge.validation.outliers import apply_outliers, find_outliers
    from clusterforge.validation.reports.table import render_table
    from clusterforge.validation.results import summarise
    from rich.console import Console

    rss_start = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    results = synthetic_results(count)
    rss_data = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    run = {
        "source": "bench",
        "inventory": "synthetic",
        "limit": None,
        "level": "quick",
        "started": "2026-11-30T12:00:00Z",
        "finished": "2026-11-30T12:05:00Z",
        "duration_s": 300.0,
        "clusterforge_version": "bench",
    }
    timings: dict[str, float] = {}
    clock = time.perf_counter()
    outliers = find_outliers(results)
    apply_outliers(results, outliers)
    timings["outliers"] = time.perf_counter() - clock
    mark = time.perf_counter()
    report = reports.assemble(results, summarise(results), outliers.as_dict(), run)
    timings["summary"] = time.perf_counter() - mark
    sizes = {}
    with tempfile.TemporaryDirectory() as tmp:
        for fmt, writer in reports.WRITERS.items():
            path = Path(tmp) / reports.FILE_NAMES[fmt]
            mark = time.perf_counter()
            writer(report, path)
            timings[fmt] = time.perf_counter() - mark
            sizes[fmt] = path.stat().st_size
        mark = time.perf_counter()
        with open(os.devnull, "w") as sink:
            render_table(report, Console(file=sink, width=160))
        timings["table"] = time.perf_counter() - mark
    timings["total"] = time.perf_counter() - clock
    return {
        "nodes": count,
        "checks": sum(len(r["checks"]) for r in results),
        "failing_nodes": report["summary"]["status_counts"]["fail"],
        "outliers": len(outliers.flagged),
        "timings_s": timings,
        "sizes_bytes": sizes,
        "rss_start_mb": rss_start / 1024,
        "rss_with_results_mb": rss_data / 1024,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


# ------------------------------------------------------ validation per node


LAB_BOM = {"nvidia_driver_version": "535.183.01", "ascend_driver_version": "24.1.rc2"}
HCCN_PLAN = [
    {
        "id": i,
        "address": f"192.168.100.{10 + i}",
        "netmask": "255.255.255.0",
        "gateway": "192.168.100.1",
        "netdetect": "192.168.100.1",
    }
    for i in range(8)
]


class TimedSource:
    """A source that counts and times the tool runs it passes on (threads of a prefetch overlap)."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.calls = 0
        self.seconds = 0.0

    def run(self, argv, timeout: float = 30):
        clock = time.perf_counter()
        try:
            return self.inner.run(argv, timeout)
        finally:
            self.calls += 1
            self.seconds += time.perf_counter() - clock

    def __getattr__(self, name):
        return getattr(self.inner, name)


class CachedSource:
    """Answers each tool run from its first answer: what is left to time is ClusterForge's own work."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.answers: dict = {}

    def run(self, argv, timeout: float = 30):
        key = tuple(argv)
        if key not in self.answers:
            self.answers[key] = self.inner.run(argv, timeout)
        return self.answers[key]

    def __getattr__(self, name):
        return getattr(self.inner, name)


def replay_environment(tmp: Path, profile: str) -> tuple[dict[str, str], Path]:
    """Switch a private hwreplay (state, tool links, sysfs tree under tmp) to `profile`.

    Returns the environment the replayed tools need and their bin folder. The
    fabric manager's unit is not started here (no systemd), so a `systemctl`
    stand-in in the same folder answers `is-active nvidia-fabricmanager`.
    """
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    # `profile set` installs the tools as on a node: sh shims that print the answers it
    # pre-rendered and fall back to the Python that ran it (this one) for anything else.
    env = {
        **os.environ,
        "HWREPLAY_STATE_DIR": str(tmp / "state"),
        "HWREPLAY_SYSROOT": str(tmp / "sysroot"),
        "HWREPLAY_BIN_DIR": str(bin_dir),
        "HWREPLAY_UNIT_DIR": str(tmp / "units"),
        "HWREPLAY_OVERRIDES": str(tmp / "overrides.json"),
        "HWREPLAY_SYSTEMD": "0",
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
    }
    # What the lab's install.yml writes: the node reports the BOM's drivers and the NIC plan.
    (tmp / "overrides.json").write_text(json.dumps({**LAB_BOM, "hccn_devices": HCCN_PLAN}))
    setup = subprocess.run(
        [sys.executable, str(HWREPLAY), "profile", "set", profile],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if setup.returncode != 0:
        raise RuntimeError(f"hwreplay profile set {profile}: {(setup.stderr or setup.stdout).strip()}")
    systemctl = bin_dir / "systemctl"
    systemctl.write_text(
        '#!/bin/sh\n[ "$1 $2" = "is-active nvidia-fabricmanager" ] && echo active && exit 0\n'
        "echo unknown; exit 4\n"
    )
    systemctl.chmod(0o755)
    return env, bin_dir


def node_validation_times(profile: str, sku: str, repeats: int) -> dict:
    """Quick validations of one replayed node: wall times, tool-run figures, and ClusterForge's own share."""
    from cfcore.collect import LiveSource
    from cfcore.expected import build_expected
    from cfcore.validate import validate_node

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        env, bin_dir = replay_environment(tmp, profile)
        hostvars = {"node_sku": sku, **LAB_BOM, "sysfs_root": str(tmp / "sysroot")}
        if sku.startswith("atlas"):
            hostvars["hccn_devices"] = HCCN_PLAN
        expected = build_expected("bench", hostvars)
        live = TimedSource(LiveSource(extra_dirs=(str(bin_dir),), env=env))
        times = []
        for _ in range(repeats):
            clock = time.perf_counter()
            result = validate_node(live, expected, "quick")
            times.append(time.perf_counter() - clock)
        bad = [f"{c['id']}={c['status']}" for c in result["checks"] if c["status"] in ("fail", "error")]
        cached = CachedSource(live)
        validate_node(cached, expected, "quick")  # fills the cache
        own = []
        for _ in range(repeats):
            clock = time.perf_counter()
            validate_node(cached, expected, "quick")
            own.append(time.perf_counter() - clock)
        return {
            "times": times,
            "own": own,
            "tool_runs": live.calls // (repeats + 1),
            "per_tool_run": live.seconds / max(live.calls, 1),
            "not_passing": bad,
        }


def lab_validate_time(inventory: Path) -> tuple[float, int]:
    out = Path(tempfile.mkdtemp(prefix="cf-bench-validate-"))
    clock = time.perf_counter()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "clusterforge",
            "validate",
            "-i",
            str(inventory),
            "--out",
            str(out),
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - clock
    if proc.returncode not in (0, 3):
        raise RuntimeError(f"clusterforge validate exited {proc.returncode}: {proc.stderr.strip()[-500:]}")
    return wall, len(json.loads(proc.stdout)["nodes"])


# --------------------------------------------------------------------- main


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, default=10_000, help="synthetic node results for (b)")
    parser.add_argument("--repeats", type=int, default=10, help="validations per profile for (a)")
    parser.add_argument("--lab-inventory", type=Path, help="a running lab's inventory for (a)")
    parser.add_argument("--skip-node", action="store_true", help="skip (a)")
    parser.add_argument("--child-reports", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_reports:
        print(json.dumps(reports_child(args.child_reports)))
        return

    rows: list[tuple[str, str, str]] = []
    if not args.skip_node:
        for profile, sku in (("h100-healthy", "hgx-h100-8gpu"), ("910b-healthy", "atlas-800t-a2")):
            try:
                figures = node_validation_times(profile, sku, args.repeats)
            except Exception as err:
                rows.append((f"quick validate_node, {profile}", "not measured", str(err)[:80]))
                continue
            times = figures["times"]
            note = f"{args.repeats} runs; aim < 2 s"
            if figures["not_passing"]:
                note += f"; did not pass: {', '.join(figures['not_passing'])}"
            rows.append((f"quick validate_node, {profile} (mean)", f"{statistics.mean(times):.3f} s", note))
            rows.append(
                (
                    f"quick validate_node, {profile} (p95)",
                    f"{p95(times):.3f} s",
                    f"{figures['tool_runs']} tool runs each, {figures['per_tool_run']:.3f} s "
                    "per replayed tool run (sh shims, pre-rendered answers)",
                )
            )
            rows.append(
                (
                    "  of which ClusterForge's own work (mean)",
                    f"{statistics.mean(figures['own']):.3f} s",
                    "same validation with every tool answer cached",
                )
            )
        if args.lab_inventory:
            wall, count = lab_validate_time(args.lab_inventory)
            rows.append(
                (
                    "clusterforge validate on the lab, per node",
                    f"{wall / max(count, 1):.2f} s",
                    f"{wall:.1f} s wall for {count} nodes (incl. Ansible start-up)",
                )
            )

    proc = subprocess.run(
        [sys.executable, __file__, "--child-reports", str(args.nodes)],
        capture_output=True,
        text=True,
        check=True,
    )
    child = json.loads(proc.stdout)
    t = child["timings_s"]
    detail = f"{child['nodes']} nodes, {child['checks']} checks, {child['failing_nodes']} failing"
    rows.append(("reports: outlier pass", f"{t['outliers']:.3f} s", f"{child['outliers']} outlier figures"))
    for fmt in ("json", "junit", "html", "prom", "table"):
        size = child["sizes_bytes"].get(fmt)
        rows.append((f"reports: {fmt}", f"{t[fmt]:.3f} s", f"{size / 1e6:.1f} MB" if size else "terminal"))
    rows.append(
        ("reports: total (outliers + summary + all formats)", f"{t['total']:.3f} s", f"{detail}; aim < 3 s")
    )
    rows.append(
        (
            "reports: peak memory (ru_maxrss)",
            f"{child['peak_rss_mb']:.0f} MB",
            f"{child['rss_with_results_mb']:.0f} MB once results are loaded "
            f"({child['rss_start_mb']:.0f} MB after imports); aim < 500 MB",
        )
    )

    width = max(len(r[0]) for r in rows)
    print(f"{'figure':<{width}}  {'value':>12}  notes")
    for name, value, note in rows:
        print(f"{name:<{width}}  {value:>12}  {note}")


if __name__ == "__main__":
    main()
