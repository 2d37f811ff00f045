"""What the lab's Prometheus sees, for the demo's closing summary: targets up per job, alerts firing.

Asked from inside the monitoring node (podman exec), since Prometheus binds the lab network.
Right after a bring-up it waits (bounded) until Prometheus lists its targets and has scraped each
once, and one rule evaluation has passed, so the numbers are its first real view, not its start.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from clusterforge.lab.context import LabContext

# Runs on the node: its own Python, only the standard library.
_PROBE = r"""
import json, sys, time, urllib.request
def get(path):
    return json.load(urllib.request.urlopen("http://127.0.0.1:9090" + path, timeout=10))["data"]
def scraped(targets):  # a just (re)started Prometheus lists no target until file SD has run
    return targets and all(t["health"] != "unknown" for t in targets)
deadline = time.monotonic() + 60
targets = get("/api/v1/targets?state=active")["activeTargets"]
while not scraped(targets) and time.monotonic() < deadline:
    time.sleep(3)
    targets = get("/api/v1/targets?state=active")["activeTargets"]
time.sleep(float(sys.argv[1]))  # a rule evaluation after the first scrapes
targets = get("/api/v1/targets?state=active")["activeTargets"]
alerts = [a for a in get("/api/v1/alerts")["alerts"] if a["state"] == "firing"]
print(json.dumps({"targets": [[t["labels"].get("job"), t["health"]] for t in targets],
                  "alerts": [[a["labels"].get("severity", ""), a["labels"]["alertname"],
                              a["labels"].get("node", "")] for a in alerts]}))
"""


@dataclass
class MonitoringView:
    jobs: dict[str, tuple[int, int]] = field(default_factory=dict)  # job -> (up, total)
    alerts: list[tuple[str, str, str]] = field(default_factory=list)  # (severity, alertname, node)
    error: str | None = None

    def lines(self) -> list[str]:
        if self.error:
            return [f"Prometheus did not answer: {self.error}"]
        jobs = ", ".join(f"{job} {up}/{total}" for job, (up, total) in sorted(self.jobs.items()))
        out = [f"targets up: {jobs}"]
        out += [f"  {severity:8} {name:24} {node}" for severity, name, node in self.alerts]
        out.append(f"alerts firing: {len(self.alerts)}")
        return out


def monitoring_view(ctx: LabContext, container: str, settle_s: float = 20.0) -> MonitoringView:
    """Prometheus's targets and firing alerts, read on `container` (the lab's monitoring node)."""
    result = ctx.podman.exec(container, ["python3", "-", str(settle_s)], input=_PROBE, timeout=120)
    if not result.ok:
        return MonitoringView(error=result.last_error_line())
    try:
        data = json.loads(result.stdout)
    except ValueError:
        return MonitoringView(error=f"unexpected answer: {result.stdout[:200]!r}")
    view = MonitoringView()
    for job, health in data["targets"]:
        up, total = view.jobs.get(job, (0, 0))
        view.jobs[job] = (up + (health == "up"), total + 1)
    view.alerts = [tuple(alert) for alert in data["alerts"]]
    return view
