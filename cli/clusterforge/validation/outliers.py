"""Fleet outliers: nodes whose figures sit far from their same-SKU peers.

Fixed floors (PCIe width below the SKU's, a port below its rate) are node
checks. A node can pass every floor and still be the one slow node that drags a
collective down, or run 20 °C hotter than its rack mates: comparing it with the
fleet finds those. Robust statistics keep one bad node from hiding others:

    median, MAD = median(|x - median|), robust z = 0.6745 * (x - median) / MAD

(Iglewicz and Hoaglin) and |z| > 3.5 flags a node. When MAD is 0 (most of the
fleet reports the same figure, typical of link widths and rates) any value more
than REL_TOLERANCE away from the median is flagged instead. Fewer than
MIN_FLEET nodes of a SKU carry no statistics: the report says so.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from cfcore.robust import METHOD, deviation, numeric

from clusterforge.validation.results import worst

MIN_FLEET = 5
CHECK_PREFIX = "fleet.outlier."

# Which side of the median hurts, from the metric's name: a PCIe link wider
# than its peers, a cooler GPU or fewer Xids is no problem. Names matching
# neither list are flagged on both sides. The first list is checked first
# (gpu.xid_count: more is worse; ib.hca_count: fewer is worse).
_HIGHER_IS_WORSE = (
    "temperature",
    "temp_c",
    "error",
    "xid",
    "ecc",
    "retired",
    "remapped",
    "pending",
    "not_ok",
    "latency",
    "power",
)
_LOWER_IS_WORSE = (
    "bandwidth",
    "_bw",
    "gbps",
    "width",
    "gen",
    "rate",
    "throughput",
    "speed",
    "clock",
    "active",
    "_up",
    "count",
    "hbm",
    "_min",
)

_REMEDIES = {
    "temperature": "compare with its rack mates: check fans, airflow, inlet temperature and heatsink seating",
    "pcie": "reseat the device or riser, check BIOS PCIe settings, compare `lspci -vv` LnkSta with LnkCap",
    "ib": "check the cable and transceiver, the switch port and the HCA firmware; compare with `ibstat`",
    "bandwidth": "rerun the bandwidth test; check cabling, link training and firmware against healthy peers",
}


@dataclass
class OutlierReport:
    flagged: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "method": f"per SKU: {METHOD}",
            "min_fleet_size": MIN_FLEET,
            "flagged": self.flagged,
            "notes": self.notes,
        }


def bad_direction(metric: str) -> str:
    """'high', 'low' or 'both': which deviation from the median is a problem."""
    name = metric.lower()
    if any(word in name for word in _HIGHER_IS_WORSE):
        return "high"
    if any(word in name for word in _LOWER_IS_WORSE):
        return "low"
    return "both"


def find_outliers(results: list[dict[str, Any]]) -> OutlierReport:
    """Flag outliers per SKU and metric; does not change `results`."""
    report = OutlierReport()
    by_sku: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for result in results:
        if result.get("metrics"):
            by_sku[str(result.get("node_sku"))].append(result)
    for sku in sorted(by_sku):
        members = by_sku[sku]
        if len(members) < MIN_FLEET:
            report.notes.append(
                f"{sku}: {len(members)} node(s) with figures, fewer than {MIN_FLEET}: "
                "no fleet outlier analysis"
            )
            continue
        values: dict[str, list[tuple[str, float]]] = defaultdict(list)
        for result in members:
            for metric, raw in result["metrics"].items():
                number = numeric(raw)
                if number is not None:
                    values[metric].append((result["host"], number))
        for metric in sorted(values):
            samples = values[metric]
            if len(samples) < MIN_FLEET:
                report.notes.append(
                    f"{sku}: {metric} reported by {len(samples)} node(s), "
                    f"fewer than {MIN_FLEET}: not compared"
                )
                continue
            report.flagged.extend(_flag_metric(sku, metric, samples))
    return report


def _flag_metric(sku: str, metric: str, samples: list[tuple[str, float]]) -> list[dict[str, Any]]:
    numbers = [v for _, v in samples]
    direction = bad_direction(metric)
    flagged = []
    for host, value in samples:
        found = deviation(value, numbers, direction)
        if not found.deviates:
            continue
        flagged.append(
            {
                "host": host,
                "node_sku": sku,
                "metric": metric,
                "value": value,
                "median": found.median,
                "mad": found.mad,
                "robust_z": found.robust_z,
                "side": found.side,
                "fleet_size": len(samples),
            }
        )
    return flagged


def outlier_check(entry: dict[str, Any]) -> dict[str, Any]:
    """The `warn` check a flagged figure adds to its node's results."""
    score = f"robust z {entry['robust_z']:+.1f}" if entry["robust_z"] is not None else "fleet MAD 0"
    message = (
        f"{entry['metric']} = {entry['value']:g} is far {entry['side']} the {entry['node_sku']} "
        f"fleet median {entry['median']:g} ({score}, {entry['fleet_size']} nodes)"
    )
    return {
        "id": CHECK_PREFIX + entry["metric"],
        "status": "warn",
        "message": message,
        "evidence": {k: entry[k] for k in ("metric", "value", "median", "mad", "robust_z", "fleet_size")},
        "remedy": _remedy(entry["metric"]),
    }


def _remedy(metric: str) -> str:
    name = metric.lower()
    if "temp" in name:
        return _REMEDIES["temperature"]
    if "pcie" in name:
        return _REMEDIES["pcie"]
    if name.startswith("ib.") or "hca" in name:
        return _REMEDIES["ib"]
    return _REMEDIES["bandwidth"]


def apply_outliers(results: list[dict[str, Any]], report: OutlierReport) -> None:
    """Add each flagged figure as a `warn` check to its node and update the node's status."""
    by_host: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for entry in report.flagged:
        by_host[entry["host"]].append(entry)
    for result in results:
        entries = by_host.get(result["host"])
        if not entries:
            continue
        result["checks"] = [*result["checks"], *(outlier_check(e) for e in entries)]
        result["status"] = worst([result["status"], "warn"])
