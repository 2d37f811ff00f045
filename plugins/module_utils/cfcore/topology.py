"""The fabric's topology from the inventory (docs/design.md, "Fabric topology and topology-aware
placement"): the model, its rules and what the schedulers read from it. One implementation for
`clusterforge inventory check` (every host of an inventory), role slurm (topology.conf, filter
`cf_slurm_topology`) and the Kubernetes roles (node labels, Volcano HyperNodes).

Per host: `rack`, `leaf` (the leaf switch its compute ports land on), `spine` (the spine or pod
above that leaf, optional) and `nvlink_domain` (an NVLink/HCCS domain spanning several hosts: a
GB200 NVL72 rack, an Ascend A3 super-node; optional). Fleet-wide (group_vars/all/fabric.yml):
`topology_leaf_downlinks`, `topology_leaf_ports`, `topology_ports_per_host` (also per host),
`topology_spanning_domains`, `topology_root_name`.

A finding is a dict: rule (stable id such as "topology.unplaced"), severity ("error" |
"warning"), variable, message, fix, host (the host it is about, or None), hosts (every host a
fleet-wide finding is about) and value (the offending value as given: the CLI locates the
problem at the file and line it came from).

Stdlib only, Python 3.8-safe: the filters run it on the controller, the CLI imports it as cfcore.
"""

from __future__ import annotations

import re

from .inputs import InputError
from .slurm_conf import hostlist

ERROR = "error"
WARNING = "warning"
HOST_VARIABLES = ("leaf", "spine", "nvlink_domain")
# Hosts that must sit on a leaf once any host of the inventory declares one: the accelerator
# hosts (their jobs are the ones bound by communication) and every Slurm worker (topology.conf
# must connect every node to a switch, or Slurm cannot place a job across it).
PLACED_GROUPS = ("gpu_nvidia", "npu_ascend", "npu_ppu", "slurm_workers")
DEFAULT_LEAF_DOWNLINKS = 32  # a 64-port non-blocking leaf: 32 ports down, 32 up
DEFAULT_PORTS_PER_HOST = 1
DEFAULT_ROOT = "root"
LABEL_PREFIX = "topology.clusterforge.io/"
# Slurm reads topology.conf hostlist expressions ('[', ',', '-' ranges), '=' and spaces separate
# its keys; Kubernetes label values and HyperNode names are DNS-1123 labels. One rule for both:
# lower-case letters, digits and '-', 1-63 characters, starting and ending with a letter or digit.
NAME_RULE = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", re.ASCII)
NAME_WORDS = "lower-case letters, digits and '-', at most 63, starting and ending with a letter or digit"
# Slurm's topology/block plugin: first released in Slurm 23.11.
BLOCK_SINCE = (23, 11)
# Volcano's HyperNode (topology.volcano.sh/v1alpha1) and its network-topology-aware plugin: 1.12.
HYPERNODE_SINCE = (1, 12, 0)
HYPERNODE_API = "topology.volcano.sh/v1alpha1"
PLUGINS = ("auto", "tree", "block", "none")
_NATIVE_TYPES = (bool, int, float, str, list, dict)


def finding(rule, variable, message, fix, severity=ERROR, host=None, hosts=(), value=None) -> dict:
    return {
        "rule": rule,
        "severity": severity,
        "variable": variable,
        "message": message,
        "fix": fix,
        "host": host,
        "hosts": sorted(hosts),
        "value": value,
    }


def kind(value) -> str:
    if value is None:
        return "null"
    return next((t.__name__ for t in _NATIVE_TYPES if isinstance(value, t)), type(value).__name__)


def suggest(value, fallback: str = "leaf-01") -> str:
    """A valid name close to `value` (for the fix), e.g. 'Leaf 01' -> 'leaf-01'."""
    text = re.sub(r"[^a-z0-9]+", "-", str(value).lower()).strip("-")[:63].strip("-")
    return text or fallback


def name_problem(value) -> str:
    """'' when `value` is a valid topology name, else what is wrong with it."""
    if not isinstance(value, str):
        return f"must be a name (a string), got {kind(value)} {value!r}"
    if not NAME_RULE.fullmatch(value):
        return f"{value!r} is not a valid name for Slurm and Kubernetes ({NAME_WORDS})"
    return ""


def rack_problem(value) -> str:
    """'' when `value` is a valid rack: a topology name (NAME_RULE), or a whole number that reads
    as one (`rack: 2`); else what is wrong with it. The rack is a Kubernetes label value and a
    Prometheus label as written: no rewriting that would merge `r 1` and `r;1` into one rack."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return f"must be a name or number, got {kind(value)} {value!r}"
    return name_problem(str(value))


def _set(value) -> bool:
    return value is not None and value != ""


def _is_count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


# -- the model --------------------------------------------------------------------------------


def host_entry(host, variables, groups=()) -> dict:
    """One host as the rules read it, from its (templated) variables and its groups.

    {host, placed (must sit on a leaf once the site declares a topology), rack, leaf, spine,
     nvlink_domain, ports (topology_ports_per_host)}; unset values are None.
    """
    values = variables or {}
    entry = {"host": str(host), "placed": any(g in PLACED_GROUPS for g in groups or ())}
    for name in ("rack", *HOST_VARIABLES):
        value = values.get(name)
        entry[name] = value if _set(value) else None
    ports = values.get("topology_ports_per_host")
    entry["ports"] = DEFAULT_PORTS_PER_HOST if ports is None else ports
    return entry


def settings_of(variables) -> dict:
    """The fleet-wide settings from one host's variables (keep them in group_vars/all)."""
    values = variables or {}

    def get(name, default):
        value = values.get(name)
        return default if value is None or value == "" else value

    return {
        "leaf_downlinks": get("topology_leaf_downlinks", DEFAULT_LEAF_DOWNLINKS),
        "leaf_ports": get("topology_leaf_ports", {}),
        "spanning_domains": get("topology_spanning_domains", []),
        "root": get("topology_root_name", DEFAULT_ROOT),
    }


def declared(hosts) -> bool:
    """True when any host declares a leaf, spine or NVLink domain: the site has a topology."""
    return any(h.get(name) is not None for h in hosts for name in HOST_VARIABLES)


def leaves(hosts) -> dict:
    """{leaf: {"spines": set of the spines its hosts name (None: no spine), "hosts": [...]}}."""
    found = {}
    for h in hosts:
        leaf = h.get("leaf")
        if isinstance(leaf, str):
            item = found.setdefault(leaf, {"spines": set(), "hosts": []})
            item["spines"].add(h.get("spine") if isinstance(h.get("spine"), str) else None)
            item["hosts"].append(h["host"])
    return found


# -- the rules --------------------------------------------------------------------------------


def check(hosts, settings=None) -> list:
    """Every finding of the inventory's topology; [] for a site that declares none.

    hosts: host_entry() of every host; settings: settings_of() (fleet-wide values).
    """
    settings = settings or settings_of({})
    findings = _settings_findings(settings)
    if not declared(hosts):
        return findings  # no topology at all: a flat fabric, nothing to place
    findings += _names(hosts)
    findings += _placement(hosts)
    findings += _tree(hosts, settings)
    findings += _ports(hosts, settings)
    findings += _domains(hosts, settings)
    return findings


def _settings_findings(settings) -> list:
    findings = []
    downlinks = settings.get("leaf_downlinks")
    if not _is_count(downlinks):
        findings.append(
            finding(
                "topology.settings",
                "topology_leaf_downlinks",
                f"topology_leaf_downlinks must be a whole number >= 1 (host-facing ports of a leaf), "
                f"got {kind(downlinks)} {downlinks!r}",
                "set it to the leaf model's host-facing ports, e.g. 32 for a 64-port non-blocking leaf",
                value=downlinks,
            )
        )
    ports = settings.get("leaf_ports")
    if not isinstance(ports, dict):
        findings.append(
            finding(
                "topology.settings",
                "topology_leaf_ports",
                f"topology_leaf_ports must map leaf names to their host-facing ports, got {kind(ports)}",
                "write it as a mapping, e.g. topology_leaf_ports: {leaf-r1: 48}",
                value=ports,
            )
        )
    else:
        for leaf, count in ports.items():
            if not _is_count(count):
                findings.append(
                    finding(
                        "topology.settings",
                        f"topology_leaf_ports.{leaf}",
                        f"topology_leaf_ports.{leaf} must be a whole number >= 1, "
                        f"got {kind(count)} {count!r}",
                        f"set the host-facing ports of leaf {leaf}, e.g. 48",
                        value=count,
                    )
                )
    spanning = settings.get("spanning_domains")
    if not isinstance(spanning, list) or not all(isinstance(d, str) for d in spanning):
        findings.append(
            finding(
                "topology.settings",
                "topology_spanning_domains",
                f"topology_spanning_domains must be a list of NVLink domain names, got {kind(spanning)} "
                f"{spanning!r}",
                "write it as a YAML list, e.g. topology_spanning_domains: [nvl-a]",
                value=spanning,
            )
        )
    root = settings.get("root")
    wrong = name_problem(root)
    if wrong:
        findings.append(
            finding(
                "topology.name",
                "topology_root_name",
                f"topology_root_name {wrong}",
                f"set topology_root_name to e.g. {suggest(root)!r}, or leave it unset (root)",
                value=root,
            )
        )
    return findings


def _names(hosts) -> list:
    findings = []
    for h in hosts:
        for variable in HOST_VARIABLES:
            value = h.get(variable)
            wrong = None if value is None else name_problem(value)
            if wrong:
                findings.append(
                    finding(
                        "topology.name",
                        variable,
                        f"{variable} {wrong}: Slurm's topology.conf and Kubernetes labels use it as a name",
                        f"set {variable} of {h['host']} to e.g. {suggest(value)!r} (the same on every host "
                        "of that switch or domain)",
                        host=h["host"],
                        value=value,
                    )
                )
    return findings


def _placement(hosts) -> list:
    findings = []
    for h in hosts:
        if h.get("leaf") is not None:
            continue
        if h.get("spine") is not None:
            findings.append(
                finding(
                    "topology.spine_without_leaf",
                    "spine",
                    f"host {h['host']} names spine {h['spine']!r} but no leaf: a spine is reached "
                    "through a leaf",
                    f"set leaf of {h['host']} to the leaf switch its compute ports land on (or remove spine)",
                    host=h["host"],
                    value=h.get("spine"),
                )
            )
        elif h.get("placed"):
            findings.append(
                finding(
                    "topology.unplaced",
                    "leaf",
                    f"host {h['host']} has no leaf while other hosts of the inventory declare the fabric's "
                    "topology: the schedulers could not place jobs across it (Slurm's topology.conf must "
                    "connect every node to a switch)",
                    f"set leaf of {h['host']} to the leaf switch its compute ports land on (host_vars/ or "
                    "its hosts.yml entry)",
                    host=h["host"],
                )
            )
    return findings


def _tree(hosts, settings) -> list:
    findings = []
    tree = leaves(hosts)
    for leaf, item in sorted(tree.items()):
        spines = item["spines"]
        if len(spines) > 1:
            named = sorted(s for s in spines if s is not None)
            by_spine = {}
            for h in hosts:
                if h.get("leaf") == leaf:
                    spine = h.get("spine") if isinstance(h.get("spine"), str) else None
                    by_spine.setdefault(spine or "(none)", []).append(h["host"])
            detail = "; ".join(f"{s}: {', '.join(sorted(hs))}" for s, hs in sorted(by_spine.items()))
            findings.append(
                finding(
                    "topology.leaf_two_spines",
                    "spine",
                    f"leaf {leaf} is placed under {len(spines)} spines ({detail}): the topology is a tree, "
                    "each leaf has one parent",
                    f"give every host on leaf {leaf} the same spine ({' or '.join(named) or 'none'}), "
                    "in group_vars of the leaf's hosts or their host_vars",
                    hosts=item["hosts"],
                )
            )
    spine_names = {h.get("spine") for h in hosts if isinstance(h.get("spine"), str)}
    root = settings.get("root")
    for leaf in sorted(set(tree) & spine_names):
        findings.append(
            finding(
                "topology.name_clash",
                "leaf",
                f"{leaf!r} names a leaf and a spine: switch names must be unique (Slurm's SwitchName, "
                "Volcano's HyperNode names)",
                f"rename leaf or spine {leaf}",
                hosts=tree[leaf]["hosts"],
            )
        )
    if isinstance(root, str) and (root in tree or root in spine_names):
        findings.append(
            finding(
                "topology.name_clash",
                "topology_root_name",
                f"topology_root_name {root!r} is also the name of a leaf or spine: the root switch above "
                "the spines needs its own name",
                "set topology_root_name to a name no switch has, e.g. fabric-root",
                value=root,
            )
        )
    return findings


def _ports(hosts, settings) -> list:
    findings = []
    downlinks = settings.get("leaf_downlinks")
    overrides = settings.get("leaf_ports") if isinstance(settings.get("leaf_ports"), dict) else {}
    tree = leaves(hosts)
    by_host = {h["host"]: h for h in hosts}
    for h in hosts:
        ports = h.get("ports")
        if h.get("leaf") is not None and not _is_count(ports):
            findings.append(
                finding(
                    "topology.settings",
                    "topology_ports_per_host",
                    f"topology_ports_per_host must be a whole number >= 1 (ports of the host on its leaf), "
                    f"got {kind(ports)} {ports!r}",
                    "set it to how many of the host's compute ports land on one leaf (default 1)",
                    host=h["host"],
                    value=ports,
                )
            )
    for leaf, item in sorted(tree.items()):
        capacity = overrides.get(leaf, downlinks)
        if not _is_count(capacity):
            continue  # reported by the settings checks
        used = sum(p for p in (by_host[n].get("ports") for n in item["hosts"]) if _is_count(p))
        if used > capacity:
            source = (
                f"topology_leaf_ports.{leaf}" if leaf in overrides else "topology_leaf_downlinks (default)"
            )
            findings.append(
                finding(
                    "topology.leaf_ports",
                    "leaf",
                    f"leaf {leaf} has {used} host ports in use ({len(item['hosts'])} hosts x their "
                    f"topology_ports_per_host) but {capacity} host-facing ports ({source})",
                    f"move hosts of leaf {leaf} to another leaf, or set topology_leaf_ports.{leaf} to the "
                    "switch's real host-facing port count",
                    hosts=item["hosts"],
                )
            )
    for leaf in sorted(set(overrides) - set(tree)):
        findings.append(
            finding(
                "topology.unknown_leaf",
                f"topology_leaf_ports.{leaf}",
                f"topology_leaf_ports names leaf {leaf!r}, which no host is on",
                f"correct the leaf name (leaves: {', '.join(sorted(tree)) or 'none'}) or remove the entry",
                severity=WARNING,
                value=overrides[leaf],
            )
        )
    return findings


def _domains(hosts, settings) -> list:
    findings = []
    spanning = settings.get("spanning_domains")
    spanning = set(spanning) if isinstance(spanning, list) else set()
    domains = {}
    for h in hosts:
        domain = h.get("nvlink_domain")
        if isinstance(domain, str):
            domains.setdefault(domain, []).append(h)
    for domain, members in sorted(domains.items()):
        racks = {}
        for h in members:
            racks.setdefault(str(h.get("rack")), []).append(h["host"])
        if len(racks) > 1 and domain not in spanning:
            detail = "; ".join(f"rack {r}: {', '.join(sorted(hs))}" for r, hs in sorted(racks.items()))
            findings.append(
                finding(
                    "topology.domain_racks",
                    "nvlink_domain",
                    f"NVLink domain {domain} spans {len(racks)} racks ({detail}): an NVLink/HCCS domain "
                    "(a GB200 NVL72 rack, an A3 super-node) is cabled inside one rack",
                    f"correct rack or nvlink_domain of these hosts, or list {domain} in "
                    "topology_spanning_domains if it really spans racks",
                    hosts=[h["host"] for h in members],
                )
            )
    for domain in sorted(spanning - set(domains)):
        findings.append(
            finding(
                "topology.unknown_domain",
                "topology_spanning_domains",
                f"topology_spanning_domains names {domain!r}, which no host's nvlink_domain is",
                f"correct the name (domains: {', '.join(sorted(domains)) or 'none'}) or remove it",
                severity=WARNING,
                value=domain,
            )
        )
    return findings


def errors_of(findings) -> list:
    return [f for f in findings if f["severity"] == ERROR]


def require_valid(hosts, settings=None) -> None:
    """Raise InputError with every error finding (what the roles fail with, in check's words)."""
    wrong = errors_of(check(hosts, settings))
    if wrong:
        raise InputError(
            "the fabric topology of the inventory is invalid: "
            + "; ".join(
                (f"[host {f['host']}] " if f["host"] else "") + f"{f['message']} (fix: {f['fix']})"
                for f in wrong
            ),
            "correct it as said (`clusterforge inventory check` reports the same with file and line)",
        )


# -- Slurm ------------------------------------------------------------------------------------


def version_tuple(version, what="version") -> tuple:
    parts = re.findall(r"\d+", str(version or "").lstrip("vV").split("-")[0])
    if not parts:
        raise InputError(f"{what} {version!r} is not a version", f'quote it, e.g. {what}: "22.05.8"')
    return tuple(int(p) for p in [*parts, "0", "0"][:3])


def _block_sizes(sizes, blocks) -> list:
    if sizes in (None, "", []):
        return []
    values = sizes if isinstance(sizes, list) else str(sizes).split(",")
    try:
        numbers = [int(str(v).strip()) for v in values]
    except ValueError:
        numbers = []
    ok = bool(numbers) and all(n >= 1 for n in numbers)
    ok = ok and all(
        b > a and b % a == 0 and ((b // a) & (b // a - 1)) == 0 for a, b in zip(numbers, numbers[1:])
    )
    if not ok:
        raise InputError(
            f"slurm_topology_block_sizes {sizes!r}: a list of node counts, each a power of two times the one "
            "before (the first is the planning base block size)",
            "e.g. slurm_topology_block_sizes: [18, 36] for NVL72 racks of 18 compute trays, or [] for "
            "Slurm's default",
        )
    small = {name: len(nodes) for name, nodes in blocks.items() if len(nodes) < numbers[0]}
    if small:
        raise InputError(
            f"slurm_topology_block_sizes starts at {numbers[0]} nodes but blocks "
            f"{', '.join(f'{b} ({n})' for b, n in sorted(small.items()))} have fewer: Slurm needs every "
            "block to hold at least the planning base block size",
            "lower the first block size to the smallest NVLink domain's node count",
        )
    return numbers


def slurm_topology(entries, plugin="auto", slurm_version=None, block_sizes=None, root=DEFAULT_ROOT,
                   cluster_name=None) -> dict:  # fmt: skip
    """topology.conf and TopologyPlugin of the Slurm workers.

    entries: one per slurm_workers host, {host, name (its Slurm node name), leaf, spine,
    nvlink_domain}. plugin: auto (tree when a worker has a leaf, else none) | tree | block | none.

    tree: `SwitchName=<leaf> Nodes=<hostlist>` per leaf, `SwitchName=<spine> Switches=<leaves>`
    per spine, and `SwitchName=<root> Switches=...` above them when there are several top
    switches (Slurm places a job only inside one connected tree: without a root, no job could
    span two spines). Leaves and spines without Slurm workers are left out.
    block (Slurm 23.11+): `BlockName=<nvlink_domain> Nodes=<hostlist>` per domain, BlockSizes.

    Returns {plugin: "tree"|"block"|"none", slurm_plugin: "topology/tree"|"topology/block"|"",
    lines: [...], text: the file (header + lines, "" for none)}.
    """
    if plugin not in PLUGINS:
        raise InputError(f"slurm_topology_plugin {plugin!r} is not one of {', '.join(PLUGINS)}")
    entries = list(entries or [])
    if plugin == "auto":
        plugin = "tree" if any(e.get("leaf") for e in entries) else "none"
    if plugin == "none" or not entries:
        return {"plugin": "none", "slurm_plugin": "", "lines": [], "text": ""}
    for e in entries:
        for variable in HOST_VARIABLES:
            wrong = name_problem(e[variable]) if e.get(variable) is not None else ""
            if wrong:
                raise InputError(f"{e['host']}: {variable} {wrong}", f"rename it ({NAME_WORDS})")
    if plugin == "tree":
        lines = _tree_lines(entries, root)
    else:
        lines = _block_lines(entries, slurm_version, block_sizes)
    header = [
        f"# Managed by ClusterForge (role clusterforge.cluster.slurm): topology/{plugin} of cluster "
        f"{cluster_name or '(unnamed)'},",
        "# from the inventory's leaf, spine and nvlink_domain. Local edits are overwritten.",
    ]
    return {
        "plugin": plugin,
        "slurm_plugin": f"topology/{plugin}",
        "lines": lines,
        "text": "\n".join(header + lines) + "\n",
    }


def _tree_lines(entries, root) -> list:
    missing = sorted(e["host"] for e in entries if not e.get("leaf"))
    if missing:
        raise InputError(
            f"slurm_workers {', '.join(missing)} have no leaf: topology/tree must connect every node to a "
            "switch, or Slurm cannot place jobs across them",
            "set leaf for these hosts, or slurm_topology_plugin: none",
        )
    tree = leaves(entries)
    for leaf, item in sorted(tree.items()):
        if len(item["spines"]) > 1:
            raise InputError(
                f"leaf {leaf} is under several spines ({', '.join(sorted(map(str, item['spines'])))})",
                f"give every host on leaf {leaf} the same spine",
            )
    names = {e["host"]: e.get("name") or e["host"].split(".")[0] for e in entries}
    lines = [
        f"SwitchName={leaf} Nodes={hostlist(names[h] for h in item['hosts'])}"
        for leaf, item in sorted(tree.items())
    ]
    spines = {}
    for leaf, item in tree.items():
        spine = next(iter(item["spines"]))
        if spine is not None:
            spines.setdefault(spine, []).append(leaf)
    lines += [
        f"SwitchName={spine} Switches={hostlist(children)}" for spine, children in sorted(spines.items())
    ]
    tops = sorted(spines) + sorted(leaf for leaf, item in tree.items() if next(iter(item["spines"])) is None)
    if len(tops) > 1:
        if root in tree or root in spines:
            raise InputError(
                f"topology_root_name {root!r} is also a leaf or spine",
                "set topology_root_name to a free name",
            )
        lines.append(f"SwitchName={root} Switches={hostlist(tops)}")
    return lines


def _block_lines(entries, slurm_version, block_sizes) -> list:
    if slurm_version is not None and version_tuple(slurm_version, "slurm_version")[:2] < BLOCK_SINCE:
        raise InputError(
            f"slurm_topology_plugin block needs Slurm {'.'.join(map(str, BLOCK_SINCE))} or later "
            f"(topology/block), slurm_version is {slurm_version}",
            "use slurm_topology_plugin: tree (or auto), or install a newer Slurm",
        )
    missing = sorted(e["host"] for e in entries if not e.get("nvlink_domain"))
    if missing:
        raise InputError(
            f"slurm_workers {', '.join(missing)} have no nvlink_domain: topology/block allocates only nodes "
            "inside a block",
            "set nvlink_domain for these hosts, or use slurm_topology_plugin: tree",
        )
    blocks = {}
    for e in entries:
        blocks.setdefault(e["nvlink_domain"], []).append(e.get("name") or e["host"].split(".")[0])
    lines = [f"BlockName={name} Nodes={hostlist(nodes)}" for name, nodes in sorted(blocks.items())]
    sizes = _block_sizes(block_sizes, blocks)
    if sizes:
        lines.append("BlockSizes=" + ",".join(map(str, sizes)))
    return lines


# -- Kubernetes -------------------------------------------------------------------------------


def node_labels(rack=None, leaf=None, spine=None, nvlink_domain=None) -> dict:
    """The topology labels of one Kubernetes node: topology.clusterforge.io/{rack,leaf,spine,
    nvlink-domain}, for what is set; InputError for a value that is not a valid name (rack_problem,
    name_problem): one is never rewritten into another rack's or switch's label."""
    labels = {}
    if _set(rack):
        wrong = rack_problem(rack)
        if wrong:
            raise InputError(f"rack {wrong}", f"rename it ({NAME_WORDS})")
        labels[LABEL_PREFIX + "rack"] = str(rack)
    for key, value in (("leaf", leaf), ("spine", spine), ("nvlink-domain", nvlink_domain)):
        if _set(value):
            wrong = name_problem(value)
            if wrong:
                raise InputError(f"{key.replace('-', '_')} {wrong}", f"rename it ({NAME_WORDS})")
            labels[LABEL_PREFIX + key] = value
    return labels


def hypernodes(entries, volcano_version, root=DEFAULT_ROOT) -> list:
    """Volcano HyperNodes of the Kubernetes workers (Volcano 1.12+; [] for older or no topology).

    entries: {node (Kubernetes node name), leaf, spine}. Tier 1: one per leaf, its nodes as
    members (type Node, exactMatch); tier 2: one per spine, its leaves as members (type
    HyperNode); tier 3: `root` above the top HyperNodes when there are several.
    """
    parts = re.findall(r"\d+", str(volcano_version or "").lstrip("vV").split("-")[0])
    if not parts:
        raise InputError(
            f"volcano_version {volcano_version!r} is not a version", 'set volcano_version: "1.12.0"'
        )
    if tuple(int(p) for p in [*parts, "0", "0"][:3]) < HYPERNODE_SINCE:
        return []
    placed = [e for e in entries or [] if e.get("leaf")]
    if not placed:
        return []
    tree = leaves([{**e, "host": e["node"]} for e in placed])
    docs, spines = [], {}
    for leaf, item in sorted(tree.items()):
        if len(item["spines"]) > 1:
            raise InputError(
                f"leaf {leaf} is under several spines", f"give every host on leaf {leaf} the same spine"
            )
        docs.append(_hypernode(leaf, 1, "Node", sorted(item["hosts"])))
        spine = next(iter(item["spines"]))
        if spine is not None:
            spines.setdefault(spine, []).append(leaf)
    docs += [
        _hypernode(spine, 2, "HyperNode", sorted(children)) for spine, children in sorted(spines.items())
    ]
    tops = sorted(spines) + sorted(leaf for leaf, item in tree.items() if next(iter(item["spines"])) is None)
    if len(tops) > 1:
        if root in tree or root in spines:
            raise InputError(
                f"topology_root_name {root!r} is also a leaf or spine",
                "set topology_root_name to a free name",
            )
        docs.append(_hypernode(root, 3, "HyperNode", sorted(tops)))
    return docs


def _hypernode(name, tier, member_type, members) -> dict:
    return {
        "apiVersion": HYPERNODE_API,
        "kind": "HyperNode",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "clusterforge"}},
        "spec": {
            "tier": tier,
            "members": [{"type": member_type, "selector": {"exactMatch": {"name": m}}} for m in members],
        },
    }
