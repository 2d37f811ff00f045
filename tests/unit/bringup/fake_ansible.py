"""A stand-in for ansible-runner in the bring-up's unit tests: the events of a stage, scripted.

It replaces `run_playbook` in clusterforge.bringup.workflow and answers each stage with the
event stream ansible-runner gives (task start, per-host ok/changed/failed/unreachable, the play
recap), for the hosts of the stage's --limit file, as `outcomes[stage][host]` says (default
ok). Every call is appended to `log` (JSON lines), so a test reads what ran even from a
controller that was killed. Run as a script, it is that controller: `python fake_ansible.py LOG
KILL_AT ARGS...` runs `clusterforge ARGS...` and SIGKILLs itself when stage KILL_AT starts.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from clusterforge.bringup.stages import MEMBERS, STAGES
from clusterforge.validation.runner import PlaybookRun

STAGE_OF = {stage.playbook: stage.name for stage in (*STAGES, MEMBERS) if stage.playbook}
DIFF = {
    "before": "mode=old\n",
    "after": "mode=new\n",
    "before_header": "/etc/x.conf",
    "after_header": "/etc/x.conf",
}


class FakeAnsible:
    def __init__(
        self, log: Path, outcomes: dict[str, dict[str, str]] | None = None, kill_at: str | None = None
    ):
        self.log, self.outcomes, self.kill_at = log, outcomes or {}, kill_at

    def calls(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def __call__(
        self, playbook, inventory, private_dir, on_event, *, limit=None, check_mode=False, diff=False, **_
    ):
        stage = STAGE_OF[Path(playbook).name]
        hosts = Path(limit[1:]).read_text().split()
        with self.log.open("a") as out:
            out.write(json.dumps({"stage": stage, "hosts": hosts, "check": check_mode, "diff": diff}) + "\n")
        if stage == self.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        on_event("playbook_on_task_start", {"task": f"{stage}: the task", "role": stage})
        stats: dict[str, dict[str, int]] = {k: {} for k in ("ok", "changed", "failures", "dark", "processed")}
        for host in hosts:
            result = self.outcomes.get(stage, {}).get(host, "ok")
            if result == "none":
                continue
            stats["processed"][host] = 1
            event = {"host": host, "task": f"{stage}: the task", "role": stage}
            if result == "unreachable":
                on_event("runner_on_unreachable", {**event, "res": {"msg": "ssh: connect: No route to host"}})
                stats["dark"][host] = 1
            elif result == "failed":
                on_event("runner_on_failed", {**event, "res": {"msg": f"{stage} broke on {host}"}})
                stats["failures"][host] = 1
            else:
                changed = result == "changed"
                res = {"changed": changed, **({"diff": DIFF} if changed and diff else {})}
                on_event("runner_on_ok", {**event, "res": res})
                stats["ok"][host] = 1
                if changed:
                    stats["changed"][host] = 1
        on_event("playbook_on_stats", stats)
        rc = 2 if stats["failures"] or stats["dark"] else 0
        return PlaybookRun(rc=rc, status="failed" if rc else "successful", stdout_path=None, stats=stats)


if __name__ == "__main__":
    from clusterforge.bringup import workflow
    from clusterforge.main import main

    log, kill_at, *argv = sys.argv[1:]
    workflow.run_playbook = FakeAnsible(Path(log), kill_at=kill_at)
    main(argv)
