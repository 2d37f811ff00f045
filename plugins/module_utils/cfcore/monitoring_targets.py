"""Prometheus scrape targets from the inventory (docs/design.md, "Monitoring", "Scrape targets").

`targets(hostvars, groups)` -> {job: [target group]} for Prometheus' file-based service
discovery: one file `/etc/prometheus/file_sd/<job>.json` per job, each a list of
`{"targets": ["<ansible_host>:<port>"], "labels": {node, rack, node_sku, cluster_groups}}`.

- `node`: every managed host (node_exporter, port `exporters_node_exporter_port`, 9100);
- `dcgm`: the hosts of `gpu_nvidia` (dcgm-exporter, `exporters_dcgm_exporter_port`, 9400) unless
  `exporters_dcgm_exporter_enabled` is false;
- `npu`: the hosts of `npu_ascend` (npu-exporter, `npu_exporter_port`, 8082) unless
  `npu_exporter_enabled` is false.

`node` is the inventory name, `cluster_groups` the host's groups of the inventory model, sorted
and comma-joined with a leading and a trailing comma (",gpu_nvidia,slurm_workers,"), so a query
matches one group with `cluster_groups=~".*,gpu_nvidia,.*"`. Hosts with ansible_connection=local
(a controller entry) are no nodes and get no target. Pure: the caller passes the variables;
O(hosts + group memberships).
"""

from __future__ import annotations

from typing import Any, Mapping

from .groups import INVENTORY_GROUPS
from .inputs import InputError

# Exporter ports: the defaults of the roles that install the exporters (exporters,
# ascend_runtime); a host or group variable of the same name overrides them.
NODE_EXPORTER_PORT = 9100
DCGM_EXPORTER_PORT = 9400
NPU_EXPORTER_PORT = 8082

# job: (group whose hosts it scrapes, None for every host; port variable; default port;
# the variable that turns the exporter off on a host, None when it is always there)
JOBS = {
    "node": (None, "exporters_node_exporter_port", NODE_EXPORTER_PORT, None),
    "dcgm": (
        "gpu_nvidia",
        "exporters_dcgm_exporter_port",
        DCGM_EXPORTER_PORT,
        "exporters_dcgm_exporter_enabled",
    ),
    "npu": ("npu_ascend", "npu_exporter_port", NPU_EXPORTER_PORT, "npu_exporter_enabled"),
}

# Per-host identity every target carries as labels (the inventory model).
IDENTITY_VARIABLES = ("ansible_host", "rack", "node_sku")


def cluster_groups(names) -> str:
    """',a,b,' of the model groups in `names` (sorted); ',' when none."""
    return "," + "".join(g + "," for g in sorted(set(names) & set(INVENTORY_GROUPS)))


def _text(host: str, variable: str, value: Any, problems: list[str]) -> str:
    if isinstance(value, str) and value.strip() and value == value.strip():
        return value
    shown = "unset" if value is None else repr(value)
    problems.append(
        f"host {host}: {variable} is {shown}, the scrape targets need it "
        f"(fix: set {variable} to a non-empty string in the inventory)"
    )
    return ""


def _port(host: str, variable: str, value: Any, default: int, problems: list[str]) -> int:
    if value is None:
        return default
    port = None
    if isinstance(value, int) and not isinstance(value, bool):
        port = value
    elif isinstance(value, str) and value.strip().isdigit():
        port = int(value.strip())
    if port is None or not 1 <= port <= 65535:
        problems.append(
            f"host {host}: {variable} is {value!r}, not a TCP port "
            f"(fix: set {variable} to a number from 1 to 65535, default {default})"
        )
        return default
    return port


def _enabled(value: Any) -> bool:
    """A role's boolean switch as the inventory writes it (true/false, yes/no, 1/0)."""
    if isinstance(value, str):
        return value.strip().lower() not in ("false", "no", "off", "0", "")
    return bool(value)


def _address(host: str, port: int) -> str:
    # An IPv6 address needs brackets in host:port.
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def targets(hostvars: Mapping[str, Mapping[str, Any]], groups: Mapping[str, Any]) -> dict[str, list[dict]]:
    """{job: [{"targets": [address], "labels": {...}}]} for the jobs node, dcgm and npu, by host name.

    Raises InputError naming every host and variable that is missing or wrong.
    """
    if not isinstance(groups, Mapping) or not isinstance(groups.get("all"), (list, tuple)):
        raise InputError("groups has no list 'all'", "pass the magic variable groups")
    member_of: dict[str, list[str]] = {}
    for group in INVENTORY_GROUPS:
        for host in groups.get(group) or ():
            member_of.setdefault(host, []).append(group)

    problems: list[str] = []
    out: dict[str, list[dict]] = {job: [] for job in JOBS}
    for host in sorted(set(groups["all"])):
        try:
            hv = hostvars[host]
        except KeyError:
            problems.append(
                f"host {host}: in groups['all'] but not in hostvars (fix: pass the magic variable hostvars)"
            )
            continue
        if hv.get("ansible_connection") == "local":
            continue
        ident = {var: _text(host, var, hv.get(var), problems) for var in IDENTITY_VARIABLES}
        labels = {
            "node": host,
            "rack": ident["rack"],
            "node_sku": ident["node_sku"],
            "cluster_groups": cluster_groups(member_of.get(host, ())),
        }
        for job, (group, variable, default, enabled) in JOBS.items():
            if group is not None and group not in member_of.get(host, ()):
                continue
            # An exporter the host does not run is no target (it would only be ExporterDown).
            if enabled is not None and not _enabled(hv.get(enabled, True)):
                continue
            port = _port(host, variable, hv.get(variable), default, problems)
            out[job].append({"targets": [_address(ident["ansible_host"], port)], "labels": dict(labels)})
    if problems:
        raise InputError("; ".join(problems))
    return out
