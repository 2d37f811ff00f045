"""Kubernetes node labels of the device plugins, and the Volcano inputs, from validated facts.

One implementation for roles k8s_device_plugins and volcano (filters in plugins/filter/k8s_labels.py):

- `worker_labels(accelerators, architecture, hcas)`: the labels one worker gets from its
  `clusterforge_accelerators` fact (module accelerator_facts), `ansible_facts.architecture` and its
  HCAs (module hca_facts' `hcas`, the rdma role's `rdma_hcas`, or the accelerator fact's `hcas` list):
  NVIDIA: `nvidia.com/gpu.present=true` and `nvidia.com/gpu.product` (the model as GPU feature
  discovery spells it: spaces become dashes); Ascend: the device plugin's labels from
  cfcore/ascend_labels.py (`accelerator`, `workerselector`, `host-arch`, `accelerator-type`);
  InfiniBand HCAs: `clusterforge.io/infiniband=true` (the RDMA shared device plugin's selector).
  A CPU-only node without IB gets no label.
- `cluster_labels(workers)`: every worker's labels, once (the roles call it run_once), with the
  fabric topology labels of cfcore/topology.py (`topology.clusterforge.io/{rack,leaf,spine,
  nvlink-domain}`) from the worker's `topology` ({rack, leaf, spine, nvlink_domain}).
- `label_argv(node, labels)`: `kubectl label --overwrite node NAME k=v...` as an argument vector.
- `volcano_queues(queues)`: the checked `volcano_queues`; `volcano_tiers(tiers, version)`: the
  scheduler's tiers, default or given, `network-topology-aware` only where the version has it.

Stdlib only, Python 3.8-safe.
"""

from __future__ import annotations

import re

from .ascend_labels import node_labels as ascend_node_labels
from .inputs import InputError
from .topology import node_labels as topology_labels

NVIDIA_PRESENT = "nvidia.com/gpu.present"
NVIDIA_PRODUCT = "nvidia.com/gpu.product"
INFINIBAND_LABEL = "clusterforge.io/infiniband"

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")
_QUANTITY = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([KMGTPE]i|[numkMGTPE]|[eE][+-]?(\d+(\.\d*)?|\.\d+))?$")

# The first Volcano release with the network-topology-aware plugin (HyperNode scheduling, alpha).
NETWORK_TOPOLOGY_SINCE = (1, 12, 0)
NETWORK_TOPOLOGY_PLUGIN = "network-topology-aware"
DEFAULT_ACTIONS = "enqueue, allocate, backfill"


def node_name(inventory_hostname, override=None) -> str:
    """The Kubernetes node name: `k8s_node_name` when set, else the inventory name in lower case."""
    name = str(override or inventory_hostname or "").strip().lower()
    if not name or len(name) > 253 or not _DNS1123_SUBDOMAIN.match(name):
        raise InputError(
            f"node name {name!r} (host {inventory_hostname}) is not a DNS-1123 subdomain",
            "set k8s_node_name for that host to the name its kubelet registers",
        )
    return name


def label_value(text) -> str:
    """`text` as a label value: runs of characters a value cannot hold become one dash, ends trimmed."""
    value = re.sub(r"[^A-Za-z0-9_.]+", "-", str(text or "").strip())
    value = value[:63].strip("-_.")
    return value


def infiniband_hcas(hcas) -> list:
    """Names of the HCAs with an InfiniBand port: hca_facts' {name: {ports: {n: {...}}}} or a list."""
    if isinstance(hcas, dict):
        items = [dict(value or {}, name=key) for key, value in hcas.items()]
    elif isinstance(hcas, list):
        items = [h for h in hcas if isinstance(h, dict)]
    else:
        items = []
    names = []
    for hca in items:
        ports = hca.get("ports") or []
        ports = list(ports.values()) if isinstance(ports, dict) else list(ports)
        if any(str((p or {}).get("link_layer") or "").lower() == "infiniband" for p in ports):
            names.append(str(hca.get("name")))
    return sorted(names)


def _ascend_accelerator(accelerators: dict) -> dict:
    """The SKU-shaped accelerator cfcore.ascend_labels reads, from the node's facts (npu-smi)."""
    models = accelerators.get("accelerator_models") or []
    count = int(accelerators.get("accelerator_count") or 0)
    chips = len(accelerators.get("npus") or [])
    per_device = chips // count if count and chips and chips % count == 0 else 1
    return {
        "vendor": "huawei",
        "model": models[0] if models else "",
        "count": count,
        "chips_per_device": per_device,
    }


def worker_labels(accelerators, architecture, hcas=None) -> dict:
    """{label: value} of one worker from its facts; {} for a CPU-only node without InfiniBand."""
    facts = accelerators or {}
    vendor = facts.get("vendor")
    count = int(facts.get("accelerator_count") or 0)
    labels: dict = {}
    if vendor == "nvidia" and count > 0:
        labels[NVIDIA_PRESENT] = "true"
        models = facts.get("accelerator_models") or []
        if len(models) > 1:
            raise InputError(
                f"the node reports several GPU models {models}: one product label cannot describe it",
                "fix the node (mixed GPUs in one server are not supported) or keep it out of k8s_workers",
            )
        product = label_value(models[0]) if models else ""
        if product:
            labels[NVIDIA_PRODUCT] = product
    elif vendor == "huawei" and count > 0:
        models = facts.get("accelerator_models") or []
        if len(models) > 1:
            raise InputError(
                f"the node reports several NPU models {models}: the device plugin labels one",
                "fix the node (mixed NPUs in one server are not supported) or keep it out of k8s_workers",
            )
        labels.update(ascend_node_labels({"accelerator": _ascend_accelerator(facts)}, architecture)["labels"])
    if infiniband_hcas(hcas):
        labels[INFINIBAND_LABEL] = "true"
    return labels


def cluster_labels(workers) -> list:
    """[{node, labels}] sorted by node, for [{host, node_name?, accelerators, architecture, hcas,
    topology?}]."""
    result = []
    seen: dict = {}
    for worker in workers or []:
        host = worker.get("host")
        if not isinstance(worker.get("accelerators"), dict):
            raise InputError(
                f"{host}: no clusterforge_accelerators fact",
                "run clusterforge.cluster.accelerator_facts on k8s_workers before the scheduler roles "
                "(playbooks/schedulers.yml does)",
            )
        name = node_name(host, worker.get("node_name"))
        if name in seen:
            raise InputError(
                f"hosts {seen[name]} and {host} both map to node name {name}",
                "set distinct k8s_node_name values",
            )
        seen[name] = host
        try:
            labels = worker_labels(worker["accelerators"], worker.get("architecture"), worker.get("hcas"))
            labels.update(topology_labels(**(worker.get("topology") or {})))
        except InputError as err:
            raise InputError(f"{host}: {err.message}", err.fix) from None
        result.append({"node": name, "host": host, "labels": labels})
    return sorted(result, key=lambda item: item["node"])


def label_argv(node, labels, kubectl="kubectl") -> list:
    """`kubectl label --overwrite node NODE k=v ...` (keys sorted); [] when there is nothing to set."""
    if not labels:
        return []
    return [kubectl, "label", "--overwrite", "node", str(node)] + [f"{k}={labels[k]}" for k in sorted(labels)]


def _quantity(value, where: str) -> object:
    if isinstance(value, bool) or not isinstance(value, (int, str)) or not _QUANTITY.match(str(value)):
        raise InputError(
            f"{where}: {value!r} is not a Kubernetes quantity",
            "write it as Kubernetes does: 64, 500m, 512Gi",
        )
    return value


def volcano_queues(queues) -> list:
    """The checked queues [{name, weight, capability?, reclaimable?}]: DNS-1123 names, weight >= 1, unique."""
    if not isinstance(queues, list):
        raise InputError("volcano_queues must be a list", "set volcano_queues: [{name: training, weight: 1}]")
    checked = []
    names: set = set()
    for index, queue in enumerate(queues):
        where = f"volcano_queues[{index}]"
        if not isinstance(queue, dict):
            raise InputError(f"{where} must be a mapping", "write {name: <queue>, weight: <n>}")
        unknown = sorted(set(queue) - {"name", "weight", "capability", "reclaimable"})
        if unknown:
            raise InputError(
                f"{where}: unknown keys {unknown}", "use only name, weight, capability, reclaimable"
            )
        name = queue.get("name")
        if not isinstance(name, str) or len(name) > 63 or not _DNS1123_LABEL.match(name):
            raise InputError(
                f"{where}: name {name!r} is not a DNS-1123 label",
                "use lower-case letters, digits and dashes, starting and ending alphanumeric, at most 63",
            )
        if name in names:
            raise InputError(f"{where}: queue {name} is defined twice", "give every queue its own name")
        names.add(name)
        weight = queue.get("weight")
        if isinstance(weight, bool) or not isinstance(weight, int) or weight < 1 or weight > 2**31 - 1:
            raise InputError(
                f"{where} ({name}): weight {weight!r} must be an integer >= 1", "set weight: 1 or more"
            )
        entry: dict = {"name": name, "weight": weight}
        if "capability" in queue and queue["capability"] is not None:
            capability = queue["capability"]
            if not isinstance(capability, dict) or not capability:
                raise InputError(
                    f"{where} ({name}): capability must be a mapping of resource to quantity",
                    "e.g. capability: {cpu: 512, memory: 4Ti, huawei.com/Ascend910: 16}",
                )
            entry["capability"] = {
                str(k): _quantity(v, f"{where} ({name}) capability.{k}") for k, v in capability.items()
            }
        if "reclaimable" in queue and queue["reclaimable"] is not None:
            if not isinstance(queue["reclaimable"], bool):
                raise InputError(
                    f"{where} ({name}): reclaimable must be true or false", "set reclaimable: true"
                )
            entry["reclaimable"] = queue["reclaimable"]
        checked.append(entry)
    return checked


def version_tuple(version) -> tuple:
    parts = re.findall(r"\d+", str(version or "").lstrip("vV").split("-")[0])
    if not parts:
        raise InputError(f"volcano_version {version!r} is not a version", 'set volcano_version: "1.10.0"')
    return tuple(int(p) for p in [*parts, "0", "0"][:3])


def default_tiers(version) -> list:
    """Gang first (priority, gang, conformance), then fairness and placement; topology where supported."""
    second = ["drf", "predicates", "proportion", "nodeorder", "binpack"]
    if version_tuple(version) >= NETWORK_TOPOLOGY_SINCE:
        second.append(NETWORK_TOPOLOGY_PLUGIN)
    return [
        {"plugins": [{"name": n} for n in ("priority", "gang", "conformance")]},
        {"plugins": [{"name": n} for n in second]},
    ]


def volcano_tiers(tiers, version) -> list:
    """`volcano_scheduler_tiers` checked (or the default tiers when empty) for `volcano_version`."""
    if not tiers:
        return default_tiers(version)
    if not isinstance(tiers, list) or not all(
        isinstance(t, dict) and isinstance(t.get("plugins"), list) for t in tiers
    ):
        raise InputError(
            "volcano_scheduler_tiers must be a list of {plugins: [{name, ...}]}",
            "set it as in Volcano's volcano-scheduler.conf, or leave it empty for the default tiers",
        )
    names = [p.get("name") if isinstance(p, dict) else None for t in tiers for p in t["plugins"]]
    if not all(isinstance(n, str) and n for n in names):
        raise InputError("volcano_scheduler_tiers: every plugin needs a name", "write - name: gang")
    if NETWORK_TOPOLOGY_PLUGIN in names and version_tuple(version) < NETWORK_TOPOLOGY_SINCE:
        raise InputError(
            f"volcano_scheduler_tiers names {NETWORK_TOPOLOGY_PLUGIN}, which Volcano {version} does not have "
            "(it arrived in 1.12)",
            f"remove {NETWORK_TOPOLOGY_PLUGIN} or raise volcano_version to 1.12 or later",
        )
    if len(names) != len(set(names)):
        raise InputError("volcano_scheduler_tiers names a plugin twice", "list every plugin once")
    return tiers


def volcano_actions(actions) -> str:
    """`volcano_scheduler_actions` (a list or a comma-separated string) as Volcano's "a, b, c"."""
    items = actions if isinstance(actions, list) else str(actions or DEFAULT_ACTIONS).split(",")
    names = [str(a).strip() for a in items if str(a).strip()]
    known = {"enqueue", "allocate", "backfill", "preempt", "reclaim", "shuffle"}
    wrong = [n for n in names if n not in known]
    if not names or wrong:
        raise InputError(
            f"volcano_scheduler_actions {actions!r}: unknown actions {wrong}" if wrong else "no action given",
            f"use actions among {sorted(known)}, e.g. {DEFAULT_ACTIONS}",
        )
    return ", ".join(names)


def plugin_targets(entries) -> dict:
    """Which device plugins the cluster needs, from cluster_labels(): nodes per plugin, Ascend families.

    {nvidia: [nodes], ascend: [nodes], ascend_families: ["Ascend910", ...], infiniband: [nodes],
     nvidia_label, infiniband_label}
    """
    nvidia, ascend, infiniband, families = [], [], [], set()
    for entry in entries or []:
        labels = entry.get("labels") or {}
        if labels.get(NVIDIA_PRESENT) == "true":
            nvidia.append(entry["node"])
        accelerator = str(labels.get("accelerator") or "")
        if accelerator.startswith("huawei-"):
            ascend.append(entry["node"])
            families.add(accelerator[len("huawei-") :])
        if labels.get(INFINIBAND_LABEL) == "true":
            infiniband.append(entry["node"])
    return {
        "nvidia": sorted(nvidia),
        "ascend": sorted(ascend),
        "ascend_families": sorted(families),
        "infiniband": sorted(infiniband),
        "nvidia_label": NVIDIA_PRESENT,
        "infiniband_label": INFINIBAND_LABEL,
    }
