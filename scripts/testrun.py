#!/usr/bin/env python3
"""ClusterForge's test runner (scripts/test.sh runs it): the parts of the test command, what each
needs, its CI budget and how much of the machine it keeps busy, declared once in PLAN below, and
run side by side wherever their needs allow.

Why side by side: most of a run waits on dpkg, services and SSH, not on the CPU (a lab bring-up
keeps about half of 2 cores busy). The lab is the longest part, so it starts as soon as the node
image exists; lint, the unit tests and the Molecule scenarios fill the cores beside it.

Standard library only: it runs before the virtual environment exists (it creates it).

    scripts/test.sh                        everything (CI: .ci/run)
    scripts/test.sh lint unit              only these parts (their set-up always runs)
    scripts/test.sh molecule               every Molecule scenario
    scripts/test.sh molecule:slurm         one role's scenarios (or a stack's: molecule:storage)
    scripts/test.sh molecule:nvidia_driver/distro   one scenario
    scripts/test.sh lab                    the whole lab suite
    scripts/test.sh lab:storage            the lab and one module (tests/integration/test_storage_lab.py)
    scripts/test.sh --list                 the plan: parts, needs, budgets

Each part's output goes to .cache/test-logs/<part>.log; when a part ends the runner prints its
last lines (all of them when it failed). At the end it prints the table of times against budgets
and writes it as JSON (.cache/test-timings.json, or $CF_TEST_TIMINGS). A part over its budget is
flagged there, not failed.

Env: CF_TEST_SLOTS       how much may run at once, in cores' worth of work (default: 2 x cores)
     CF_TEST_MOLECULE    how many Molecule scenarios may run at once (default 2)
Exit: 0 every part passed, 1 a part failed, 2 bad arguments, 4 set-up failed (environment not ready).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / ".cache" / "test-logs"
TAIL_LINES = 25  # of a part that passed: enough for pytest's and Molecule's closing lines


@dataclass
class Part:
    name: str
    argv: list[str]
    needs: tuple[str, ...] = ()
    budget_s: int = 0
    cores: int = 1  # how much of the machine it keeps busy (the scheduler's unit)
    # The critical path (the lab) runs at normal priority; the parts beside it are niced (see
    # lower_priority), so they take the cores the lab leaves idle instead of slowing it down.
    nice: int = 10
    group: str = ""  # lint, unit, molecule, lab, setup: what the command line selects
    stack: str = ""  # the stack whose CI budget it counts towards (Molecule)
    lock: str = ""  # parts with the same lock never run at once (a role's scenarios share names)
    cwd: Path = ROOT
    env: dict[str, str] = field(default_factory=dict)
    setup: bool = False  # its failure stops the run: exit 4
    # runtime
    state: str = "waiting"  # waiting, running, ok, failed, skipped
    rc: int | None = None
    started: float = 0.0
    seconds: float = 0.0
    proc: subprocess.Popen | None = field(default=None, repr=False)


LINT = (
    "rc=0; yamllint -s . || rc=1; ruff check . || rc=1; ruff format --check . || rc=1; "
    # ansible.cfg makes an unparsed inventory fatal; give the syntax check one.
    "ANSIBLE_INVENTORY=inventories/example ansible-lint -q || rc=1; exit $rc"
)

# Molecule scenarios' budgets in seconds: their longest time in two full runs, niced beside the lab
# (fresh clones' `.ci/run` on 2 cores, plus a quarter; alone, each takes a third to a half of it). Every
# scenario under roles/*/molecule/ runs, listed or not (unlisted: DEFAULT_MOLECULE_BUDGET); the
# longest start first.
DEFAULT_MOLECULE_BUDGET = 600
MOLECULE_BUDGET = {
    ("nvidia_driver", "default"): 1250,
    ("ascend_driver", "default"): 1080,
    ("ceph", "default"): 970,
    ("prometheus", "default"): 510,
    ("slurm", "default"): 490,
    ("rdma", "default"): 480,
    ("base", "default"): 320,
    ("nvidia_driver", "distro"): 150,
}
# Each stack's Molecule CI budget (its issue's), the stack's unit and lab shares on top.
STACK_BUDGET = dict(nvidia=480, ascend=480, fabric=240, storage=480, schedulers=480, monitoring=300)
STACKS = {
    "nvidia": "nvidia_driver nvidia_fabricmanager nvidia_container_toolkit cuda_toolkit nccl tensorrt dcgm "
    "gpudirect",
    "ascend": "ascend_driver ascend_runtime cann hccn ppu",
    "fabric": "rdma ib_fabric roce",
    "storage": "ceph ceph_client juicefs juicefs_redis",
    "schedulers": "slurm node_healthcheck node_expectation scheduler_drain containerd kubernetes volcano",
    "monitoring": "exporters prometheus grafana",
}


def stack_of(role: str) -> str:
    return next((stack for stack, roles in STACKS.items() if role in roles.split()), role)


def setup_part(name: str, script: str, needs: tuple[str, ...], budget_s: int) -> Part:
    """A set-up step: everything waits on it, so it runs at normal priority and its failure is exit 4."""
    return Part(name, [f"scripts/{script}"], needs, budget_s, group="setup", setup=True, nice=0)


def plan(lab_modules: list[str] | None = None) -> list[Part]:
    """Every part of a full run, in the order the scheduler prefers when several are ready."""
    venv = ROOT / ".venv" / "bin"
    host, pyenv, tools, image, train = (
        "setup: host packages",
        "setup: python venv",
        "setup: promtool, amtool",
        "setup: node image",
        "setup: training venv",
    )
    lab_argv = [f"{venv}/pytest", "-q", "-m", "lab", "-p", "no:cacheprovider", "--durations=25"]
    parts = [
        setup_part(host, "setup-host.sh", (), 180),
        setup_part(pyenv, "setup-venv.sh", (host,), 180),
        setup_part(tools, "setup-tools.sh", (pyenv,), 60),
        setup_part(image, "build-node-image.sh", (host,), 300),
        # `lab up` mounts it on the accelerator nodes (test_framework_lab.py): built beside the venv.
        setup_part(train, "setup-train-venv.sh", (host,), 120),
        # The critical path: first in line once the image exists.
        Part(
            "lab integration",
            [*lab_argv, *(lab_modules or ["tests/integration"])],
            needs=(tools, image, train),
            budget_s=3450,
            group="lab",
            nice=0,
        ),
        # CPU-bound: both cores (measured 392 s -> 257 s on 2 cores), while the image builds.
        Part(
            "unit + conformance",
            [f"{venv}/pytest", "-q", "-n", "auto", "-p", "no:cacheprovider"],
            needs=(tools,),
            budget_s=1830,
            cores=2,
            group="unit",
        ),
        Part("lint", ["bash", "-c", LINT], needs=(pyenv,), budget_s=500, group="lint"),
    ]
    scenarios = [(p.parts[-4], p.parts[-2]) for p in sorted(ROOT.glob("roles/*/molecule/*/molecule.yml"))]
    scenarios.sort(key=lambda rs: -MOLECULE_BUDGET.get(rs, DEFAULT_MOLECULE_BUDGET))
    for role, scenario in scenarios:
        parts.append(
            Part(
                f"molecule {role}/{scenario}",
                [f"{venv}/molecule", "test", "-s", scenario],
                needs=(tools, image),
                budget_s=MOLECULE_BUDGET.get((role, scenario), DEFAULT_MOLECULE_BUDGET),
                group="molecule",
                stack=stack_of(role),
                lock=f"molecule {role}",
                cwd=ROOT / "roles" / role,
                # Molecule's own default (~/.ansible/tmp/molecule.<hash of the role folder's name>)
                # is shared by every checkout on the machine: one per checkout and scenario instead.
                env={
                    "MOLECULE_EPHEMERAL_DIRECTORY": str(ROOT / ".cache" / "molecule" / role / scenario),
                    # The nodes' share of the CPU against the lab's nodes (podman's default: 1024):
                    # containers live in cgroups of their own, out of reach of nice.
                    "CFMOL_CPU_SHARES": "128",
                },
            )
        )
    return parts


def bad_input(error: str, fix: str) -> None:
    print(f"error: {error}\n  fix: {fix}", file=sys.stderr)
    sys.exit(2)


def select(parts: list[Part], words: list[str]) -> list[Part]:
    """The parts the command line asks for, and the set-up they need. Exit 2 on a word it does not know."""
    if not words:
        return parts
    wanted: set[str] = set()
    for word in words:
        group, _, what = word.partition(":")
        found = []
        for part in parts:
            if part.group != group or part.setup:
                continue
            if group == "molecule" and what:
                role_scenario = part.name.split(" ", 1)[1]
                role = role_scenario.split("/")[0]
                if what not in (role_scenario, role, part.stack):
                    continue
            found.append(part.name)
        if not found:
            known = sorted({p.group for p in parts if not p.setup})
            bad_input(
                f"no part '{word}'",
                f"use one of {', '.join(known)}, molecule:ROLE[/SCENARIO], "
                "molecule:STACK or lab:MODULE (scripts/test.sh --list)",
            )
        wanted.update(found)
    by_name = {p.name: p for p in parts}
    todo = list(wanted)
    while todo:
        for need in by_name[todo.pop()].needs:
            if need not in wanted:
                wanted.add(need)
                todo.append(need)
    return [p for p in parts if p.name in wanted]


def lab_modules(words: list[str]) -> list[str] | None:
    """lab:storage -> tests/integration/test_storage_lab.py (exit 2 when there is no such module)."""
    modules = []
    for word in words:
        if word.startswith("lab:"):
            module = ROOT / "tests" / "integration" / f"test_{word[4:]}_lab.py"
            if not module.is_file():
                found = sorted(p.stem[5:-4] for p in (ROOT / "tests" / "integration").glob("test_*_lab.py"))
                bad_input(f"no lab module '{word[4:]}'", f"use one of {', '.join(found)}")
            modules.append(str(module.relative_to(ROOT)))
    return modules or None


def for_humans(path: Path) -> Path:
    return path.relative_to(ROOT) if path.is_relative_to(ROOT) else path


def log_path(part: Part) -> Path:
    return LOGS / (part.name.replace(": ", "-").replace(" ", "-").replace("/", "-").replace(",", "") + ".log")


def stamp(t0: float) -> str:
    return f"[{time.monotonic() - t0:6.0f} s]"


def lower_priority(nice: int) -> None:
    """In the part's child, before exec: nice it, and its autogroup too. Each part is a session of its
    own, and with autogroups (Debian's default) the kernel shares the CPU between sessions first,
    whatever their processes' nice values."""
    os.nice(nice)
    with contextlib.suppress(OSError), open("/proc/self/autogroup", "w") as autogroup:
        autogroup.write(str(nice))


def start(part: Part, env: dict) -> None:
    ephemeral = part.env.get("MOLECULE_EPHEMERAL_DIRECTORY")
    if ephemeral:  # an interrupted run's state makes Molecule skip create and prepare: start afresh
        (Path(ephemeral) / "state.yml").unlink(missing_ok=True)
    log = log_path(part).open("w")
    part.proc = subprocess.Popen(
        part.argv,
        cwd=part.cwd,
        env={**env, **part.env},
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        preexec_fn=(lambda: lower_priority(part.nice)) if part.nice else None,
        start_new_session=True,  # its own process group: stop() ends the part with all it started
    )
    log.close()
    part.state, part.started = "running", time.monotonic()


def stop(parts: list[Part]) -> None:
    """SIGTERM to every running part's process group, SIGKILL to what is left after 30 s. Molecule's
    and the lab's own clean-up runs on the next start (both replace what a killed run left)."""
    running = [p for p in parts if p.state == "running"]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for part in running:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(part.proc.pid, sig)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(p.proc.poll() is None for p in running):
            time.sleep(0.5)


def report(part: Part) -> None:
    lines = log_path(part).read_text(errors="replace").splitlines()
    shown = lines if part.state == "failed" else lines[-TAIL_LINES:]
    verdict = "ok" if part.state == "ok" else f"FAILED (rc={part.rc})"
    print(f"\n===== {part.name}: {verdict} in {part.seconds:.0f} s (log: {for_humans(log_path(part))})")
    if len(shown) < len(lines):
        print(f"... ({len(lines) - len(shown)} earlier lines in the log)")
    print("\n".join(shown), flush=True)


def run(parts: list[Part], slots: int, molecule_at_once: int, env: dict) -> None:
    t0 = time.monotonic()
    by_name = {p.name: p for p in parts}
    while True:
        for part in parts:  # skip what can no longer run
            if part.state == "waiting" and any(by_name[n].state in ("failed", "skipped") for n in part.needs):
                part.state = "skipped"
                print(f"{stamp(t0)} skip  {part.name}: a part it needs failed", flush=True)
        running = [p for p in parts if p.state == "running"]
        for part in parts:
            if part.state != "waiting" or any(by_name[n].state != "ok" for n in part.needs):
                continue
            busy = sum(p.cores for p in running)
            if running and busy + part.cores > slots:
                continue
            if part.lock and any(p.lock == part.lock for p in running):
                continue
            if part.group == "molecule" and sum(p.group == "molecule" for p in running) >= molecule_at_once:
                continue
            start(part, env)
            running.append(part)
            print(f"{stamp(t0)} start {part.name}", flush=True)
        if not running:
            return
        time.sleep(1)
        for part in running:
            rc = part.proc.poll()
            if rc is None:
                continue
            part.rc, part.seconds = rc, time.monotonic() - part.started
            part.state = "ok" if rc == 0 else "failed"
            print(f"{stamp(t0)} done  {part.name}: {part.state} in {part.seconds:.0f} s", flush=True)
            report(part)


def summary(parts: list[Part], wall: float, slots: int) -> dict:
    rows = []
    for part in parts:
        over = part.state in ("ok", "failed") and part.budget_s and part.seconds > part.budget_s
        rows.append(
            {
                "part": part.name,
                "status": part.state,
                "rc": part.rc,
                "seconds": round(part.seconds, 1),
                "started_s": round(part.started - T0, 1) if part.started else None,
                "budget_s": part.budget_s,
                "over_budget": bool(over),
                "stack": part.stack or None,
            }
        )
    stacks = {}
    for part in parts:
        if part.stack and part.state in ("ok", "failed"):
            stacks[part.stack] = stacks.get(part.stack, 0) + part.seconds
    return {
        "total_s": round(wall, 1),
        "slots": slots,
        "cores": os.cpu_count(),
        "parts": rows,
        "stacks": {
            s: {"molecule_s": round(t, 1), "budget_s": STACK_BUDGET.get(s)} for s, t in stacks.items()
        },
    }


def print_table(result: dict) -> None:
    print("\n===== timings (parts ran side by side: their times add up to more than the total)")
    print(f"{'part':34} {'start':>7} {'time':>7} {'budget':>7}  status")
    for row in result["parts"]:
        started = "" if row["started_s"] is None else f"{row['started_s']:.0f}s"
        flag = "  OVER BUDGET" if row["over_budget"] else ""
        status = row["status"] if row["status"] != "failed" else f"FAILED (rc={row['rc']})"
        print(f"{row['part']:34} {started:>7} {row['seconds']:>6.0f}s {row['budget_s']:>6}s  {status}{flag}")
    print(f"{'total (wall)':34} {'':>7} {result['total_s']:>6.0f}s")
    for stack, row in sorted(result["stacks"].items()):
        budget = f" (the stack's CI budget: {row['budget_s']} s, with its unit and lab share)"
        print(f"stack {stack:28} {row['molecule_s']:>6.0f}s  Molecule{budget if row['budget_s'] else ''}")


T0 = time.monotonic()


def main(argv: list[str]) -> int:
    if argv[:1] == ["--list"]:
        for part in plan():
            needs = ", ".join(part.needs) or "-"
            print(f"{part.name:34} budget {part.budget_s:>5} s  cores {part.cores}  needs: {needs}")
        return 0
    words = [w for w in argv if not w.startswith("lab:")]
    if len(words) < len(argv):
        words.append("lab")
    parts = select(plan(lab_modules(argv)), words)
    slots = int(os.environ.get("CF_TEST_SLOTS") or 2 * (os.cpu_count() or 1))
    molecule_at_once = int(os.environ.get("CF_TEST_MOLECULE") or 2)
    LOGS.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "CONTAINERS_CONF": str(ROOT / "images" / "node" / "containers.conf"),
        "PATH": f"{ROOT / '.venv' / 'bin'}:{os.environ.get('PATH', '')}",
        "PY_COLORS": "0",
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_FORCE_COLOR": "0",
        "NO_COLOR": "1",
    }
    print(
        f"parts: {', '.join(p.name for p in parts)}\nat once: {slots} cores' worth, "
        f"{molecule_at_once} Molecule scenarios; logs in {for_humans(LOGS)}",
        flush=True,
    )

    def interrupted(signum, _frame):
        print(f"\n{signal.Signals(signum).name}: stopping every running part", flush=True)
        stop(parts)
        sys.exit(128 + signum)

    signal.signal(signal.SIGTERM, interrupted)
    signal.signal(signal.SIGINT, interrupted)
    run(parts, slots, molecule_at_once, env)
    result = summary(parts, time.monotonic() - T0, slots)
    out = Path(os.environ.get("CF_TEST_TIMINGS") or ROOT / ".cache" / "test-timings.json")
    out.write_text(json.dumps(result, indent=2) + "\n")
    print_table(result)
    print(f"timings: {out}")
    if any(p.setup and p.state != "ok" for p in parts):
        print("FAILED: set-up (" + ", ".join(p.name for p in parts if p.setup and p.state != "ok") + ")")
        return 4
    failed = [p.name for p in parts if p.state != "ok"]
    if failed:
        print(f"FAILED: {', '.join(failed)}")
        return 1
    print("all parts passed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
