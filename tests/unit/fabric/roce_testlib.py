"""What the RoCE tests share: fixtures' folder, a replayed node under tmp_path, the module runner.

A uniquely named module (not conftest), so the fabric tests of other areas keep their own.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import module_runner

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "unit" / "fixtures" / "roce"
HWREPLAY_DIR = ROOT / "tests" / "hwreplay"
if str(HWREPLAY_DIR) not in sys.path:
    sys.path.insert(0, str(HWREPLAY_DIR))
# The replay's private environment under tmp_path is the hardware replay tests' own.
sys.path.insert(0, str(ROOT / "tests" / "unit" / "hwreplay"))
from hwreplay_testlib import replay_env  # noqa: E402

IFACES = [
    "enp24s0np0",
    "enp64s0np0",
    "enp79s0np0",
    "enp94s0np0",
    "enp154s0np0",
    "enp192s0np0",
    "enp206s0np0",
    "enp220s0np0",
]
PLAN_VALUES = {"interfaces": IFACES}


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def replay_node(tmp_path, profile: str):
    """`hwreplay profile set PROFILE` into tmp_path; returns (Context, env for processes)."""
    from replaylib import control
    from replaylib.common import Context

    env = replay_env(tmp_path)
    ctx = Context(env=env)
    control.set_profile(ctx, profile)
    process_env = dict(os.environ, **env)
    process_env["PATH"] = env["HWREPLAY_BIN_DIR"] + os.pathsep + process_env.get("PATH", "")
    return ctx, process_env


def run_module(args: dict, env: dict, check_mode: bool = False, diff: bool = False) -> dict:
    """roce_qos as Ansible runs it, in check and diff mode as asked."""
    return module_runner.run_module(
        "roce_qos", dict(args, _ansible_check_mode=check_mode, _ansible_diff=diff), env
    )
