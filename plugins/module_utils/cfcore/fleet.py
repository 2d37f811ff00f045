"""Fleet rules: what one node cannot tell about itself, found by comparing same-SKU nodes.

`fleet.hca_firmware`: the compute HCAs of nodes of one SKU run one firmware
version. Mixed firmware across a fabric is a known source of link flaps,
slow collectives and "works on most nodes" bugs; no single node looks wrong.

Input: node results (docs/design.md), each with `host`, `node_sku` and
`facts.hcas[]` (`name`, `type`, `firmware`, `compute`). Only compute HCAs count
(`compute: true`; results without the flag, from older modules, count every
CA). HCAs are compared per SKU and CA type (`MT4129`, ...), so a SKU with two
adapter models is not one mixed fleet.

The rule, per SKU and CA type, over the nodes that report firmware (at least
MIN_NODES of them, else a note and no verdict):

- each version's node count is the number of nodes with at least one such
  HCA on it;
- one version with the highest count is the majority: every node with an
  HCA on another version warns, naming its HCAs, their versions, the
  majority version and its node count;
- several versions tied for the highest count: there is no majority, and
  every node warns (evidence: each version with its node count), because
  nothing says which version the site meant: the site pins one;
- a node whose HCAs all run one version equal to the majority is fine.

Findings are `warn` check results (id `fleet.hca_firmware`), never `fail`: the
nodes work, the fleet is inconsistent. One implementation, used by
playbooks/validate.yml (filter `cf_fleet_hca_firmware`, once per run) and
`clusterforge validate` (cli/clusterforge/validation/workflow.py).
Stdlib only.
"""

from __future__ import annotations

from collections import defaultdict

from .results import evidence, warned, worst

CHECK_ID = "fleet.hca_firmware"
MIN_NODES = 2
MAX_HOSTS_NAMED = 5
REMEDY = (
    "bring the node's HCAs to the fleet's firmware: mlxfwmanager --online -u -d <device> (NVIDIA's "
    "latest for the board), or the site's pinned image (mlxfwmanager -i <image> -u -d <device>); "
    "then mlxfwreset -d <device> reset or reboot. Where the majority is the outdated version, update "
    "the majority instead"
)
TIE_REMEDY = (
    "pin one firmware version for these HCAs and update the nodes off it: mlxfwmanager --online -u "
    "-d <device>, or the pinned image with mlxfwmanager -i <image> -u -d <device>; then mlxfwreset "
    "-d <device> reset or reboot"
)


def compute_firmware(result: dict) -> list:
    """[(ca name, ca type, firmware)] of a node result's compute HCAs that report a firmware version."""
    hcas = ((result.get("facts") or {}).get("hcas")) or []
    entries = []
    for ca in hcas:
        if not isinstance(ca, dict) or ca.get("compute") is False:
            continue
        firmware = ca.get("firmware")
        if firmware in (None, ""):
            continue
        entries.append((str(ca.get("name")), str(ca.get("type") or "unknown type"), str(firmware)))
    return entries


def hca_firmware(results: list) -> dict:
    """{"findings": [{"host", "node_sku", "check"}], "notes": [...]}; `results` are not changed."""
    groups: dict = defaultdict(dict)  # (sku, type) -> host -> [(ca, firmware)]
    for result in results:
        if not isinstance(result, dict) or not result.get("host"):
            continue
        for name, ca_type, firmware in compute_firmware(result):
            key = (str(result.get("node_sku")), ca_type)
            groups[key].setdefault(str(result["host"]), []).append((name, firmware))
    findings, notes = [], []
    for (sku, ca_type), nodes in sorted(groups.items()):
        if len(nodes) < MIN_NODES:
            notes.append(
                f"{CHECK_ID}: {sku} {ca_type}: {len(nodes)} node(s) report HCA firmware, "
                f"fewer than {MIN_NODES}: not compared"
            )
            continue
        findings.extend(_compare(sku, ca_type, nodes))
    return {"findings": findings, "notes": notes}


def _compare(sku: str, ca_type: str, nodes: dict) -> list:
    holders: dict = defaultdict(list)  # version -> hosts
    for host, cas in sorted(nodes.items()):
        for version in sorted({firmware for _, firmware in cas}):
            holders[version].append(host)
    if len(holders) < 2:
        return []
    counts = {version: len(hosts) for version, hosts in holders.items()}
    top = max(counts.values())
    leaders = sorted(version for version, count in counts.items() if count == top)
    majority = leaders[0] if len(leaders) == 1 else None
    ranked = sorted(counts, key=lambda version: (-counts[version], version))
    versions_lines = [
        f"{version}: {counts[version]} of {len(nodes)} node(s)"
        + (f" ({_named(holders[version])})" if version != majority else "")
        for version in ranked
    ]
    findings = []
    for host, cas in sorted(nodes.items()):
        off = [(name, firmware) for name, firmware in cas if firmware != majority]
        if not off:
            continue
        mine = ", ".join(f"{name} {firmware}" for name, firmware in cas)
        found = evidence(
            f"{CHECK_ID}: {ca_type} firmware of {len(nodes)} {sku} node results (facts.hcas[].firmware)",
            [*versions_lines, f"this node: {mine}"],
        )
        found["versions"] = {version: counts[version] for version in ranked}
        if majority is None:
            message = (
                f"{ca_type} HCA firmware has no majority across {len(nodes)} {sku} nodes "
                f"({', '.join(f'{v} on {counts[v]}' for v in ranked)}); this node runs "
                + ", ".join(sorted({firmware for _, firmware in cas}))
            )
            check = warned(CHECK_ID, message, found, TIE_REMEDY)
        else:
            listed = ", ".join(f"{name} {firmware}" for name, firmware in off[:8])
            more = f" and {len(off) - 8} more" if len(off) > 8 else ""
            message = (
                f"{ca_type} HCA firmware differs from the {sku} fleet: {listed}{more}; "
                f"{counts[majority]} of {len(nodes)} nodes run {majority}"
            )
            check = warned(CHECK_ID, message, found, REMEDY)
        findings.append({"host": host, "node_sku": sku, "check": check})
    return findings


def _named(hosts: list) -> str:
    shown = ", ".join(hosts[:MAX_HOSTS_NAMED])
    return shown + (f" and {len(hosts) - MAX_HOSTS_NAMED} more" if len(hosts) > MAX_HOSTS_NAMED else "")


def apply(results: list, report: dict) -> None:
    """Add each finding's check to its node result and make the node's status at least `warn`."""
    by_host: dict = defaultdict(list)
    for finding in report.get("findings") or []:
        by_host[finding["host"]].append(finding["check"])
    for result in results:
        checks = by_host.get(result.get("host"))
        if not checks:
            continue
        result["checks"] = [*result.get("checks", []), *checks]
        result["status"] = worst([result.get("status") or "pass", *(c["status"] for c in checks)])


def summary_lines(report: dict, compared: int) -> list:
    """What validate.yml prints: one line per finding, then the notes; one line when all agree."""
    lines = [
        f"{finding['host']} ({finding['node_sku']}): {finding['check']['status']} {CHECK_ID}: "
        f"{finding['check']['message']}; fix: {finding['check']['remedy']}"
        for finding in report.get("findings") or []
    ]
    if not lines:
        lines.append(
            f"{CHECK_ID}: no node's compute HCA firmware differs from its SKU's ({compared} node results)"
        )
    return lines + list(report.get("notes") or [])
