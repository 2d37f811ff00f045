"""The one lab every end-to-end test shares (run with `pytest -m lab tests/integration`).

Bringing a lab up and the site playbook on it cost minutes, so the whole
session uses one: `cftest` (its own name: a developer's `lab` is never
touched), a control node, three GPU and two NPU nodes, some of them faulty on
purpose (PROFILES), and a storage node (a one-node Ceph cluster the others
mount), brought up and then prepared by `clusterforge bringup` as in production
(killed with SIGKILL in one stage and resumed on the way: test_bringup_lab.py).
It is removed at the end whatever happens.

Modules run in the order of their LAB_ORDER (default 50): the ones that only
read the nodes or switch replay profiles first, the lab's own lifecycle
(reconcile, regenerate, down) last, since it stops and finally removes nodes.
Needs root, podman and the node image (scripts/test.sh sets all of them up).
"""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import signal
import subprocess
import time

import pytest
from labkit import (
    BIN,
    BUNDLE,
    BUNDLE_PORT,
    BUNDLE_VARS,
    COUNTS,
    ENV,
    HOSTS,
    INVENTORY,
    LAB,
    PROFILES,
    ROOT,
    STATE,
    Lab,
    explain,
    lab_cli,
    run,
)

# Figures worth seeing in CI's log (captured output is not): printed at the end of the session.
TIMINGS: list[str] = []


def pytest_terminal_summary(terminalreporter) -> None:
    if TIMINGS:
        terminalreporter.section("lab timings")
        for line in TIMINGS:
            terminalreporter.write_line(line)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the modules in LAB_ORDER (stable: tests keep their order inside a module)."""
    items.sort(key=lambda item: getattr(item.module, "LAB_ORDER", 50))


# The bring-up is killed (SIGKILL) once this stage has started, then resumed: the resumed run
# must redo neither the stages nor the hosts that were done (test_bringup_lab.py).
KILL_AT_STAGE = "storage"
# The lab's run ledger (its state folder: `lab down` removes it with the lab).
LEDGER = STATE / "runs"
# Its own validation would stop on the nodes that are faulty on purpose: the tests judge them.
BRINGUP_ARGS = ["-e", "validate_block_on_fail=false", "--skip", "validate", "--ledger", str(LEDGER)]


def killed_then_resumed_bringup() -> str:
    """`clusterforge bringup` of the lab, SIGKILLed in stage KILL_AT_STAGE, then `--resume`d; its run id."""
    argv = [str(BIN / "clusterforge"), "bringup", "-i", str(INVENTORY), *BRINGUP_ARGS]
    log = STATE / "bringup-killed.log"
    with log.open("w") as out:
        proc = subprocess.Popen(argv, cwd=ROOT, env=ENV, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 900
    stage_file = None
    while proc.poll() is None and time.monotonic() < deadline:
        stage_file = next(iter(LEDGER.glob(f"*/stages/*-{KILL_AT_STAGE}.json")), None)
        if stage_file is not None:
            break
        time.sleep(1)
    reached = stage_file is not None and proc.poll() is None
    assert reached, f"never reached {KILL_AT_STAGE}:\n{log.read_text()[-4000:]}"
    time.sleep(15)  # into the stage's tasks
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    run_id = stage_file.parent.parent.name
    # The killed stage's ansible-playbook outlives its controller until its current task ends (it
    # ignores SIGHUP): on a busy machine, minutes. The resume must stop it before it runs anything
    # (bringup.workflow, stop_leftover_processes), so the two never race.
    killed_stage = f"{run_id}/artifacts/{KILL_AT_STAGE}-1/"
    left = run("pgrep", "-f", killed_stage).stdout.split()
    resumed = run(BIN / "clusterforge", "bringup", "--resume", run_id, "--ledger", LEDGER, timeout=900)
    assert resumed.returncode == 0, explain(resumed)
    orphans = run("pgrep", "-af", killed_stage)
    assert orphans.returncode != 0, (
        f"the killed stage's ansible-playbook outlived the resume:\n{orphans.stdout}"
    )
    TIMINGS.append(f"processes the killed controller left, stopped by the resume: {len(left)}")
    return run_id


def offline_bundle() -> subprocess.Popen:
    """The lab air-gapped: its bundle built, served on the lab network's gateway, the lab cut off.

    From here on the nodes reach only the lab network and the bundle server (docs/design.md,
    "Air-gapped installs"): every bring-up of the session (and add-node, and the upgrades)
    installs from the bundle alone. BUNDLE is kept between local runs, so a rebuild fetches
    only what changed; CI starts from nothing.
    """
    clock = time.monotonic()
    built = run(BIN / "clusterforge", "bundle", "build", "-i", INVENTORY, "--out", BUNDLE, timeout=1800)
    assert built.returncode == 0, explain(built)
    TIMINGS.append(
        f"bundle build: {time.monotonic() - clock:.0f} s ({built.stdout.strip().splitlines()[-1]})"
    )
    status = lab_cli("status", "--name", LAB, "--format", "json")
    subnet = ipaddress.ip_network(json.loads(status.stdout)["subnet"])
    gateway = str(subnet.network_address + 1)
    BUNDLE_VARS.unlink(missing_ok=True)
    argv = [str(BIN / "clusterforge"), "bundle", "serve", str(BUNDLE), "--bind", gateway,
            "--port", str(BUNDLE_PORT), "--vars-out", str(BUNDLE_VARS)]  # fmt: skip
    log = (STATE / "bundle-serve.log").open("w")
    server = subprocess.Popen(argv, cwd=ROOT, env=ENV, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while not BUNDLE_VARS.is_file() and server.poll() is None and time.monotonic() < deadline:
        time.sleep(1)
    assert BUNDLE_VARS.is_file(), (
        f"bundle serve wrote no variables:\n{(STATE / 'bundle-serve.log').read_text()}"
    )
    cut = lab_cli("offline", "--name", LAB, "--vars", str(BUNDLE_VARS))
    assert cut.returncode == 0, explain(cut)
    return server


def add_to_bundle(*extra_vars: str) -> str:
    """A second build into the lab's bundle, with other versions (`-e VAR=VERSION`): what an
    air-gapped site does before an upgrade. The build reads the vendor stand-ins through the lab's
    online inventory, so the lab is reconnected for it; the bundle server keeps serving. Returns
    the build's summary line."""
    online = lab_cli("offline", "--name", LAB, "--online")
    assert online.returncode == 0, explain(online)
    try:
        extra = [arg for var in extra_vars for arg in ("-e", var)]
        built = run(
            BIN / "clusterforge", "bundle", "build", "-i", INVENTORY, "--out", BUNDLE, *extra, timeout=1800
        )
        assert built.returncode == 0, explain(built)
    finally:
        cut = lab_cli("offline", "--name", LAB, "--vars", str(BUNDLE_VARS))
        assert cut.returncode == 0, explain(cut)
    return built.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="session")
def lab():
    if os.geteuid() != 0 or shutil.which("podman") is None:
        pytest.skip("lab tests need root and podman (scripts/setup-host.sh)")
    lab_cli("down", "--name", LAB)  # a leftover of an interrupted run
    # The lab's training environment (a CPU PyTorch venv, cached in ~/.cache/clusterforge): `lab up`
    # mounts it on the accelerator nodes only when it exists; without it test_framework_lab.py fails
    # and says why, the other modules do not need it.
    clock = time.monotonic()
    venv = run(ROOT / "scripts" / "setup-train-venv.sh", timeout=900)
    said = (venv.stdout.strip() or venv.stderr.strip()).splitlines()[-1:] or ["no output"]
    TIMINGS.append(f"training venv (rc {venv.returncode}): {time.monotonic() - clock:.0f} s ({said[0]})")
    clock = time.monotonic()
    counts = [arg for role, count in COUNTS.items() for arg in (f"--{role}", str(count))]
    profiles = [arg for host, profile in PROFILES.items() for arg in ("--profile", f"{host}={profile}")]
    up = lab_cli("up", "--name", LAB, *counts, *profiles, timeout=900)
    server = None
    try:
        assert up.returncode == 0, explain(up)
        TIMINGS.append(f"lab up: {time.monotonic() - clock:.0f} s")
        server = offline_bundle()
        # Tests follow bring-up, as in production: `clusterforge bringup` takes the nodes through
        # every stage (chrony from the lab's time server, the NVIDIA stack from the lab's test
        # repositories, ...), killed once on the way and resumed.
        clock = time.monotonic()
        run_id = killed_then_resumed_bringup()
        stages = sorted((LEDGER / run_id / "stages").glob("*.json"))
        took = ", ".join(f"{p.stem[3:]} {json.loads(p.read_text()).get('duration_s', 0):.0f}" for p in stages)
        TIMINGS.append(
            f"bring-up, killed and resumed: {time.monotonic() - clock:.0f} s (per stage: {took} s)"
        )
        yield Lab(LAB, INVENTORY, STATE, HOSTS, up, run_id)
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        down = lab_cli("down", "--name", LAB)
        assert down.returncode == 0, explain(down)
