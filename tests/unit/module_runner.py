"""Run one of the collection's modules as Ansible does: its own process, arguments on stdin,
JSON on stdout. The one helper of every module test (a uniquely named module, not conftest).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from patience import HANG_S

ROOT = Path(__file__).resolve().parents[2]


def run_module(name: str, args: dict, env: dict | None = None, timeout: int = HANG_S) -> dict:
    code = (
        f"import sys; sys.path.insert(0, {str(ROOT / '.collections')!r});"
        f"from ansible_collections.clusterforge.cluster.plugins.modules import {name} as m;"
        "m.main()"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        input=json.dumps({"ANSIBLE_MODULE_ARGS": args}),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=env,
    )
    try:
        return json.loads(proc.stdout)
    except ValueError as exc:
        raise AssertionError(f"module {name} printed no JSON: {proc.stdout!r} {proc.stderr!r}") from exc
