"""The rolling-upgrade plan: which nodes upgrade a component, in which batch.

docs/design.md, "Rolling upgrades", is the contract. In short:

- A component (COMPONENTS) runs on the hosts of one inventory group; the
  hosts whose installed version already is the target are `current` and left
  out, the others are planned (an unknown version too: the upgrade's
  pre-check finds out).
- Each host serves one or more partitions (`slurm:<name>`, `k8s:<queue>`, or
  `unscheduled`) and sits in failure domains (the host variables `rack`,
  `leaf_switch`, `nvlink_domain`).
- Batches run one after the other; a batch's hosts are down together and
  back in service before the next starts. In every batch, per partition: down
  <= max_unavailable of its hosts and <= its hosts minus what its floor keeps
  in service; per failure domain: down <= domain_share of its hosts.
- Batch 1 is the canary (`canary` hosts); then greedy batches: the hosts in an
  order that spreads them over the failure domains, those of the partitions and
  domains with the most batches still to go first, each batch taking every
  host that still fits.

Used by the filter cf_upgrade_plan (plugins/filter/upgrade.py) and by
`clusterforge upgrade plan` (clusterforge.upgrade.plan); the run ledger keeps
`Plan.to_dict()` as plan.json. Stdlib only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .inputs import VERSION_FORM, InputError, plain_problem


@dataclass(frozen=True)
class Component:
    name: str
    group: str  # the inventory group whose hosts run it
    variable: str  # the BOM variable holding its version


COMPONENTS = {
    c.name: c
    for c in (
        Component("nvidia-driver", "gpu_nvidia", "nvidia_driver_version"),
        Component("ascend-driver", "npu_ascend", "ascend_driver_version"),
        Component("ascend-firmware", "npu_ascend", "ascend_firmware_version"),
        Component("cann", "npu_ascend", "cann_version"),
    )
}
DEFAULT_COMPONENT = "nvidia-driver"

# Failure domains: host variables, each naming the domain the host sits in.
DOMAIN_VARIABLES = ("rack", "leaf_switch", "nvlink_domain")
UNSCHEDULED = "unscheduled"  # the partition of a host no scheduler uses
SLURM_WORKERS = "slurm_workers"
K8S_WORKERS = "k8s_workers"
K8S_DEFAULT_QUEUE = "default"


def component_named(name: str) -> Component:
    if name not in COMPONENTS:
        raise InputError(f"unknown component {name!r}", f"use one of {', '.join(COMPONENTS)}")
    return COMPONENTS[name]


# ---------------------------------------------------------------------- limits ----

_LIMIT_TEXT = re.compile(r"\s*(\d{1,9})\s*(%?)\s*")


@dataclass(frozen=True)
class Limit:
    """A number of hosts, or a percent of a group's hosts (`Limit.parse("3")`, `Limit.parse("10%")`)."""

    value: int
    percent: bool = False

    @classmethod
    def parse(cls, text: object, what: str = "limit") -> Limit:
        """`text` as a Limit (a Limit passes through); InputError naming `what` when it is none."""
        if isinstance(text, Limit):
            return text
        if isinstance(text, int) and not isinstance(text, bool):
            text = str(text)
        match = _LIMIT_TEXT.fullmatch(text) if isinstance(text, str) else None
        if not match:
            raise InputError(
                f"{what} {text!r} is not a limit", "write a number of hosts (3) or a percent (10%), no sign"
            )
        limit = cls(int(match.group(1)), bool(match.group(2)))
        if limit.percent and limit.value > 100:
            raise InputError(
                f"{what} {text!r} is more than 100%",
                "write a percent from 0% to 100%, or a number of hosts (3)",
            )
        return limit

    def __str__(self) -> str:
        return f"{self.value}%" if self.percent else str(self.value)

    def of(self, total: int) -> int:
        """The most of `total` hosts this limit lets go down at once.

        A percent rounds down but lets at least one go (10% of 5 hosts: 1), so a
        percent never blocks a small group; a number is capped at `total`; 0 and
        0% let none go.
        """
        if total <= 0 or self.value == 0:
            return 0
        if not self.percent:
            return min(self.value, total)
        return max(1, total * self.value // 100)

    def kept_of(self, total: int) -> int:
        """The fewest of `total` hosts this floor keeps in service: a percent rounds up (75% of 10: 8)."""
        if self.percent:
            return -(-total * self.value // 100)
        return self.value


DEFAULT_MAX_UNAVAILABLE = Limit(10, percent=True)
DEFAULT_FLOOR = Limit(0)
DEFAULT_DOMAIN_SHARE = Limit(50, percent=True)


# ------------------------------------------------------------------ candidates ----


@dataclass(frozen=True)
class Candidate:
    host: str
    partitions: tuple  # sorted names: "slurm:<partition>", "k8s:<queue>", or ("unscheduled",)
    domains: tuple  # ((kind, name), ...) in DOMAIN_VARIABLES order, kinds the host has only


def candidates(hosts, hostvars, groups, slurm_partitions) -> list:
    """A Candidate per host of `hosts` (the component group's), in the order given.

    Slurm partitions hold the slurm_workers hosts of their `nodes_group` (as role
    slurm builds them); a k8s_workers host serves its `volcano_queue` (host
    variable), else the default queue.
    """
    slurm = _slurm_members(slurm_partitions, groups)
    k8s_workers = set(groups.get(K8S_WORKERS) or ())
    result = []
    for host in hosts:
        variables = hostvars.get(host) or {}
        partitions = [name for name, members in slurm.items() if host in members]
        if host in k8s_workers:
            partitions.append(f"k8s:{variables.get('volcano_queue') or K8S_DEFAULT_QUEUE}")
        domains = tuple(
            (kind, str(variables.get(kind)))
            for kind in DOMAIN_VARIABLES
            if variables.get(kind) not in (None, "")
        )
        result.append(Candidate(host, tuple(sorted(partitions)) or (UNSCHEDULED,), domains))
    return result


def _slurm_members(slurm_partitions, groups) -> dict:
    """{"slurm:<name>": set of hosts}: the slurm_workers hosts in each partition's nodes_group."""
    if not isinstance(slurm_partitions, (list, tuple, type(None))):
        raise InputError(
            f"slurm_partitions must be a list, got {type(slurm_partitions).__name__}",
            "write it as a YAML list of {name, nodes_group, ...} (clusterforge inventory check)",
        )
    workers = set(groups.get(SLURM_WORKERS) or ())
    members = {}
    for index, part in enumerate(slurm_partitions or ()):
        if not isinstance(part, dict) or not part.get("name") or not part.get("nodes_group"):
            raise InputError(
                f"slurm_partitions[{index}] has no name or nodes_group",
                "write each partition as {name, nodes_group, ...} (clusterforge inventory check)",
            )
        members[f"slurm:{part['name']}"] = workers & set(groups.get(part["nodes_group"]) or ())
    return members


def slurm_partitions_of(hostvars, groups) -> list:
    """`slurm_partitions` as role slurm reads it: on the first Slurm controller, else the first worker."""
    for group in ("slurm_controller", SLURM_WORKERS):
        hosts = groups.get(group) or ()
        if hosts:
            return (hostvars.get(hosts[0]) or {}).get("slurm_partitions") or []
    return []


# ------------------------------------------------------------------------ plan ----


@dataclass(frozen=True)
class Batch:
    index: int  # 1-based, the order batches run in
    hosts: tuple
    canary: bool = False
    partitions: tuple = ()  # the partitions it takes hosts from, sorted
    domains: dict = field(default_factory=dict)  # domain kind -> how many such domains it touches

    def to_dict(self) -> dict:
        return {
            "index": self.index,
            "canary": self.canary,
            "hosts": list(self.hosts),
            "partitions": list(self.partitions),
            "domains": dict(self.domains),
        }


@dataclass(frozen=True)
class Plan:
    component: str
    target: str
    batches: tuple  # of Batch
    current: tuple = ()  # hosts already at the target: left out
    blocked: dict = field(default_factory=dict)  # host -> why it can never go
    lower_bound: int = 0  # no plan under these limits has fewer batches (docs/design.md)
    limits: dict = field(default_factory=dict)  # the settings, as text (to_dict round trip)
    partitions: dict = field(default_factory=dict)  # name -> {"hosts": n, "per_batch": n}

    def hosts(self) -> list:
        """Every planned host, in the order the batches take them."""
        return [host for batch in self.batches for host in batch.hosts]

    def to_dict(self) -> dict:
        return {
            "component": self.component,
            "target": self.target,
            "batches": [batch.to_dict() for batch in self.batches],
            "current": list(self.current),
            "blocked": dict(self.blocked),
            "lower_bound": self.lower_bound,
            "limits": dict(self.limits),
            "partitions": {name: dict(info) for name, info in self.partitions.items()},
        }

    @classmethod
    def from_dict(cls, data) -> Plan:
        """The Plan of `to_dict()`'s output (plan.json); InputError when it is not one."""
        try:
            batches = tuple(
                Batch(
                    index=int(b["index"]),
                    hosts=tuple(str(h) for h in b["hosts"]),
                    canary=bool(b.get("canary", False)),
                    partitions=tuple(b.get("partitions") or ()),
                    domains=dict(b.get("domains") or {}),
                )
                for b in data["batches"]
            )
            return cls(
                component=str(data["component"]),
                target=str(data["target"]),
                batches=batches,
                current=tuple(data.get("current") or ()),
                blocked=dict(data.get("blocked") or {}),
                lower_bound=int(data.get("lower_bound") or 0),
                limits=dict(data.get("limits") or {}),
                partitions={k: dict(v) for k, v in (data.get("partitions") or {}).items()},
            )
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise InputError(
                f"not an upgrade plan: {type(err).__name__}: {err}", "write it with Plan.to_dict()"
            ) from None


def make_plan(
    candidates,
    installed,
    target,
    *,
    component=DEFAULT_COMPONENT,
    canary=1,
    max_unavailable=DEFAULT_MAX_UNAVAILABLE,
    partition_max_unavailable=None,
    floor=DEFAULT_FLOOR,
    partition_floor=None,
    domain_share=DEFAULT_DOMAIN_SHARE,
) -> Plan:
    """The batches that upgrade `candidates` to `target` under the limits (module docstring).

    `installed`: host -> installed version, or None when unknown. Limits are
    Limits or their text; the partition_* mappings override max_unavailable and
    floor for the partitions they name. InputError on a bad setting.
    """
    component_named(component)  # InputError naming the choices
    target = _checked_target(target)
    canary = _checked_canary(canary)
    hosts = _unique(list(candidates))
    limits = _Limits.checked(
        max_unavailable, partition_max_unavailable, floor, partition_floor, domain_share, hosts
    )
    current, blocked, eligible = _sort_out(hosts, installed, target, limits)
    counters = _Counters(limits, eligible)
    order = _spread_order(eligible)
    batches = _batches(order, counters, canary, {c.host: c for c in eligible})
    return Plan(
        component=component,
        target=target,
        batches=tuple(batches),
        current=tuple(sorted(c.host for c in current)),
        blocked=dict(sorted(blocked.items())),
        lower_bound=counters.lower_bound(canary),
        limits={"canary": canary, **limits.as_text()},
        partitions={
            name: {"hosts": size, "per_batch": limits.per_batch[name]}
            for name, size in sorted(limits.sizes.items())
        },
    )


def _sort_out(hosts: list, installed, target: str, limits: _Limits) -> tuple:
    """(current, blocked, eligible): at the target already; never allowed down ({host: why}); the rest."""
    current, blocked, eligible = [], {}, []
    for cand in hosts:
        reasons = [limits.blocking[p] for p in cand.partitions if p in limits.blocking]
        if _same_version(installed.get(cand.host), target):
            current.append(cand)
        elif reasons:
            blocked[cand.host] = "; ".join(reasons)
        else:
            eligible.append(cand)
    return current, blocked, eligible


def _checked_target(target) -> str:
    if not isinstance(target, (str, int, float)) or isinstance(target, bool) or not str(target).strip():
        raise InputError(
            f"target version {target!r} is empty or not a version", "name the version, e.g. 570.133.20"
        )
    problem = plain_problem(str(target).strip(), VERSION_FORM)
    if problem:
        raise InputError(f"target version {target!r} {problem}", "name the version, e.g. 570.133.20")
    return str(target).strip()


def _checked_canary(canary) -> int:
    if isinstance(canary, bool) or not isinstance(canary, int) or canary < 0:
        raise InputError(f"canary {canary!r} is not a number of hosts", "use 0 (no canary batch) or more")
    return canary


def _unique(hosts: list) -> list:
    seen = set()
    for cand in hosts:
        if cand.host in seen:
            raise InputError(f"host {cand.host} is a candidate twice", "list each host once")
        seen.add(cand.host)
    return hosts


def _same_version(installed, target: str) -> bool:
    # Case-insensitive like the roles' own checks (Ascend writes 24.1.RC2 and 24.1.rc2).
    return installed is not None and str(installed).strip().lower() == target.lower()


@dataclass
class _Limits:
    """The checked settings, and what they allow per partition and failure domain."""

    max_unavailable: Limit
    partition_max: dict  # partition -> Limit
    floor: Limit
    partition_floor: dict  # partition -> Limit
    domain_share: Limit
    sizes: dict  # partition -> hosts (all candidates: current and blocked ones serve too)
    domain_sizes: dict  # (kind, name) -> hosts

    def __post_init__(self):
        self.per_batch = {name: self._per_batch(name, size) for name, size in self.sizes.items()}
        # domain_share is above 0 (checked), so `of` lets at least one host of each domain go.
        self.domain_per_batch = {d: self.domain_share.of(n) for d, n in self.domain_sizes.items()}
        self.blocking = {name: self._why_blocked(name) for name, n in self.per_batch.items() if n == 0}

    @classmethod
    def checked(cls, max_unavailable, partition_max, floor, partition_floor, domain_share, hosts) -> _Limits:
        max_unavailable = Limit.parse(max_unavailable, "max_unavailable")
        if max_unavailable.value == 0:
            raise InputError(
                f"max_unavailable {max_unavailable} lets no host go down", "allow at least 1 host (or 1%)"
            )
        domain_share = Limit.parse(domain_share, "domain_share")
        if domain_share.value == 0:
            raise InputError(
                f"domain_share {domain_share} lets no host go down", "allow at least 1 host (or 1%)"
            )
        sizes, domain_sizes = {}, {}
        for cand in hosts:
            for name in cand.partitions:
                sizes[name] = sizes.get(name, 0) + 1
            for domain in cand.domains:
                domain_sizes[domain] = domain_sizes.get(domain, 0) + 1
        return cls(
            max_unavailable,
            _overrides(partition_max, "partition_max_unavailable", sizes),
            Limit.parse(floor, "floor"),
            _overrides(partition_floor, "partition_floor", sizes),
            domain_share,
            sizes,
            domain_sizes,
        )

    def _per_batch(self, name: str, size: int) -> int:
        most = self.partition_max.get(name, self.max_unavailable).of(size)
        kept = self.partition_floor.get(name, self.floor).kept_of(size)
        return max(0, min(most, size - kept))

    def _why_blocked(self, name: str) -> str:
        size = self.sizes[name]
        most = self.partition_max.get(name, self.max_unavailable)
        if most.of(size) == 0:
            return (
                f"partition {name}: max_unavailable {most} lets none of its {size} host(s) go down; "
                f"raise partition_max_unavailable of {name}"
            )
        floor = self.partition_floor.get(name, self.floor)
        return (
            f"partition {name}: floor {floor} keeps {floor.kept_of(size)} of its {size} host(s) in service, "
            f"so none may go down; lower the floor of {name} (partition_floor) or add hosts to it"
        )

    def as_text(self) -> dict:
        return {
            "max_unavailable": str(self.max_unavailable),
            "partition_max_unavailable": {k: str(v) for k, v in sorted(self.partition_max.items())},
            "floor": str(self.floor),
            "partition_floor": {k: str(v) for k, v in sorted(self.partition_floor.items())},
            "domain_share": str(self.domain_share),
        }


def _overrides(mapping, what: str, sizes: dict) -> dict:
    """{partition: Limit} of a partition_* setting; only partitions the candidates serve."""
    if not isinstance(mapping, (dict, type(None))):
        raise InputError(f"{what} must map partition names to limits", 'write e.g. {"slurm:h100": "25%"}')
    result = {}
    for name, text in (mapping or {}).items():
        if name not in sizes:
            known = ", ".join(sorted(sizes)) or "none"
            raise InputError(
                f"{what}: no host of this plan is in partition {name!r}",
                f"name one of the partitions: {known}",
            )
        result[name] = Limit.parse(text, f"{what} of {name}")
    return result


class _Counters:
    """Each eligible host's slots (its partitions and domains) as indexes into one list of caps.

    Integers instead of names keep the batch loop cheap: 10,000 hosts plan in well under 1 s.
    """

    def __init__(self, limits: _Limits, eligible: list):
        self.caps = []
        index = {}
        for name in sorted(limits.per_batch):
            index[("partition", name)] = len(self.caps)
            self.caps.append(limits.per_batch[name])
        for domain in sorted(limits.domain_per_batch):
            index[("domain", domain)] = len(self.caps)
            self.caps.append(limits.domain_per_batch[domain])
        self.slots = {
            c.host: tuple(index[("partition", p)] for p in c.partitions)
            + tuple(index[("domain", d)] for d in c.domains)
            for c in eligible
        }

    def need(self, hosts) -> list:
        """Per slot: how many of `hosts` it holds."""
        need = [0] * len(self.caps)
        for host in hosts:
            for i in self.slots[host]:
                need[i] += 1
        return need

    def lower_bound(self, canary: int) -> int:
        """The fewest batches any plan could use (docs/design.md, "Rolling upgrades")."""
        todo = len(self.slots)
        if todo == 0:
            return 0
        need = self.need(self.slots)
        if canary == 0:
            return max([1] + [-(-n // self.caps[i]) for i, n in enumerate(need) if n])
        # The canary batch holds at most `canary` hosts, and at most cap of any one slot.
        bound = 2 if todo > canary else 1
        for i, n in enumerate(need):
            if n:
                after = max(0, n - min(canary, self.caps[i]))
                bound = max(bound, 1 + -(-after // self.caps[i]))
        return bound

    def most_pressed_first(self, hosts: list, need: list) -> list:
        """`hosts` with those of the slots that still need the most batches first, else in their order.

        `need`: per slot, how many of `hosts` it holds. First fit in a fixed order
        would leave a bottleneck (a partition or rack with many hosts to go and a
        small allowance) for the last batches, each nearly empty; serving it first
        keeps the batches near the lower bound.
        """
        batches_left = [-(-n // cap) if cap else 0 for n, cap in zip(need, self.caps)]
        pressures = {}  # per distinct slots: hosts of one NVLink domain share theirs

        def pressure(host):
            slots = self.slots[host]
            if slots not in pressures:
                left = [batches_left[i] for i in slots]
                pressures[slots] = (-max(left), -sum(left))
            return pressures[slots]

        return sorted(hosts, key=pressure)  # stable: ties keep their order


def _spread_order(eligible: list) -> list:
    """Hosts round-robin over their failure domains: one of each domain, then a second of each, ...

    Consecutive hosts sit in different domains, so each batch fills up before a
    domain's share runs out. Sorted at every level: the order depends on the
    hosts only, not on the order they came in.
    """
    by_domains = {}
    for cand in sorted(eligible, key=lambda c: (c.domains, c.partitions, c.host)):
        by_domains.setdefault(cand.domains, []).append(cand.host)
    groups = [by_domains[key] for key in sorted(by_domains)]
    order = []
    for rank in range(max((len(g) for g in groups), default=0)):
        order.extend(g[rank] for g in groups if rank < len(g))
    return order


def _batches(order: list, counters: _Counters, canary: int, by_host: dict) -> list:
    """Batch 1 the canary (when canary > 0), then greedy batches until every host has one.

    `remaining` stays in the spread order, which breaks ties of pressure: ties stay spread.
    """
    batches = []
    remaining = order
    need = counters.need(remaining)
    while remaining:
        is_canary = not batches and canary > 0
        candidates_now = counters.most_pressed_first(remaining, need)
        taken = _fill(candidates_now, counters, canary if is_canary else None)
        for host in taken:
            for i in counters.slots[host]:
                need[i] -= 1
        placed = set(taken)
        remaining = [host for host in remaining if host not in placed]
        batches.append(_batch(len(batches) + 1, taken, is_canary, by_host))
    return batches


def _fill(hosts: list, counters: _Counters, most) -> list:
    """The batch: each host in turn joins it while none of its caps is reached (first fit), `most` at most.

    Every cap is at least 1 (blocked hosts never get here), so a batch always takes a host.
    """
    caps, slots_of = counters.caps, counters.slots
    used = [0] * len(caps)
    taken = []
    for host in hosts:
        if most is not None and len(taken) == most:
            break
        slots = slots_of[host]
        for i in slots:
            if used[i] == caps[i]:
                break
        else:  # no cap reached: the host joins
            for i in slots:
                used[i] += 1
            taken.append(host)
    return taken


def _batch(index: int, hosts: list, canary: bool, by_host: dict) -> Batch:
    partitions = sorted({p for h in hosts for p in by_host[h].partitions})
    domains = {}
    for kind, _name in {d for h in hosts for d in by_host[h].domains}:
        domains[kind] = domains.get(kind, 0) + 1
    ordered = {kind: domains[kind] for kind in DOMAIN_VARIABLES if kind in domains}
    return Batch(index, tuple(hosts), canary, tuple(partitions), ordered)
