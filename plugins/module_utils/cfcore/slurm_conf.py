"""Slurm configuration rules of role slurm (docs/design.md, "Schedulers"): one implementation.

- `parse_slurmd_c`: a worker's `slurmd -C` output -> its hardware shape (fails on other text);
- `parse_version` / `version_matches`: `slurmd -V` and friends against `slurm_version`;
- `real_memory`: RealMemory lowered by the reserve, floored at half the node's memory;
- `gres_type` / `node_gres`: the GRES (gpu:<type>:<n>, npu:<type>:<n>) from accelerator facts and SKU;
- `partition_members` / `partition_lines`: `slurm_partitions` -> PartitionName lines (an empty
  partition is an error naming it);
- `build_cluster`: every NodeName line, the partitions, GresTypes and each node's gres.conf lines,
  computed once for the whole cluster;
- `munge_key_bytes`: `slurm_munge_key` (base64 of at least 32 bytes) -> the key file's bytes;
- `hostlist`: node names -> a compressed Slurm hostlist expression (`gpu-[01-03,07]`);
- `restart_reasons` / `needs_restart`: does a slurm.conf change need the daemons restarted, or is
  `scontrol reconfigure` enough.

Stdlib only, Python 3.8-safe: the probe module runs it on the nodes, the filters on the controller.
"""

from __future__ import annotations

import base64
import binascii
import re

from .inputs import InputError

# The hardware keys `slurmd -C` prints, in its order, and their slurm.conf spelling.
HARDWARE_KEYS = ("CPUs", "Boards", "SocketsPerBoard", "CoresPerSocket", "ThreadsPerCore", "RealMemory")
MUNGE_KEY_MIN_BYTES = 32
# Longest munge key munge 0.5 accepts (MUNGE_MAXIMUM_KEY_LEN).
MUNGE_KEY_MAX_BYTES = 1024 * 1024
DEFAULT_MEMORY_RESERVE_MIB = 2048

# slurm.conf keys whose change needs slurmctld and slurmd restarted (scontrol reconfigure does not
# apply them): the controller's identity and ports, the cluster's identity, where state lives, and
# everything that loads a plugin. Lower case; besides these, every key ending in "type",
# "plugin" or "plugins" (AuthType, SelectType, ProctrackType, TaskPlugin, JobSubmitPlugins ...).
RESTART_KEYS = frozenset(
    {
        "slurmctldhost",
        "controlmachine",
        "controladdr",
        "backupcontroller",
        "backupaddr",
        "slurmctldport",
        "slurmdport",
        "clustername",
        "statesavelocation",
        "slurmdspooldir",
        "plugindir",
        "slurmuser",
        "slurmduser",
        "authinfo",
        "authalttypes",
        "selecttypeparameters",
        "grestypes",
        "mpidefault",
        "treewidth",
    }
)
_RESTART_SUFFIXES = ("type", "plugin", "plugins")
# Lines that describe one object by several key=value pairs; the first key names the object.
_OBJECT_KEYS = ("nodename", "partitionname", "nodeset", "downnodes", "frontendname", "switchname")

_GRES_NAME = {"nvidia": "gpu", "huawei": "npu"}
_DEVICE_PREFIX = {"nvidia": "/dev/nvidia", "huawei": "/dev/davinci"}
_NVIDIA_MODEL = re.compile(r"\b([A-Z]{1,2}\d{2,4}[A-Z]?)\b")
_GRES_TYPE = re.compile(r"[a-z0-9][a-z0-9_]{0,31}")
_SLURM_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}")
_MAX_TIME = re.compile(r"INFINITE|UNLIMITED|\d+|\d+:\d{1,2}(:\d{1,2})?|\d+-\d{1,2}(:\d{1,2}(:\d{1,2})?)?")
_VERSION = re.compile(r"^slurm(?:-wlm)?\s+(\d+\.\d+\.\d+)\S*\s*$", re.IGNORECASE)


def _pairs(line: str) -> list:
    """`A=1 b=2` -> [("A", "1"), ("b", "2")]; a token without '=' raises ValueError."""
    pairs = []
    for token in line.split():
        key, sep, value = token.partition("=")
        if not sep or not key:
            raise ValueError(token)
        pairs.append((key, value))
    return pairs


def parse_slurmd_c(text, source: str = "slurmd -C") -> dict:
    """A worker's `slurmd -C` output -> {node_name, CPUs, Boards, ..., RealMemory, extra}.

    Tolerant: any spacing, keys in any case and order, unknown keys (kept in `extra`, e.g.
    Gres= on builds with autodetection), an `UpTime=` line and blank lines. Strict about what
    matters: exactly one NodeName line holding CPUs and RealMemory as positive integers, so a
    shell error, a usage text or another command's output fails here instead of becoming a node.
    """
    lines = [line.strip() for line in str(text or "").splitlines() if line.strip()]
    node_lines = [line for line in lines if any(t.lower().startswith("nodename=") for t in line.split())]
    if len(node_lines) != 1:
        excerpt = " | ".join(lines[:3])[:200] or "(no output)"
        raise InputError(
            f"{source}: expected one 'NodeName=... CPUs=... RealMemory=...' line as slurmd -C prints, "
            f"got {len(node_lines)} in: {excerpt}",
            "install slurmd on the worker and check that `slurmd -C` runs there as root",
        )
    try:
        pairs = _pairs(node_lines[0])
    except ValueError as err:
        raise InputError(
            f"{source}: {err.args[0]!r} in {node_lines[0]!r} is not key=value: not slurmd -C output",
            "check that `slurmd -C` runs on the worker and prints its NodeName line",
        ) from None
    by_key = {}
    for key, value in pairs:
        by_key.setdefault(key.lower(), (key, value))
    result = {"node_name": by_key["nodename"][1], "extra": {}}
    known = {k.lower(): k for k in HARDWARE_KEYS}
    for lower, (key, value) in by_key.items():
        if lower == "nodename":
            continue
        if lower in known:
            if not value.isdigit():
                raise InputError(
                    f"{source}: {key}={value!r} is not a whole number",
                    "check the worker's `slurmd -C` output",
                )
            result[known[lower]] = int(value)
        else:
            result["extra"][key] = value
    for key in ("CPUs", "RealMemory"):
        if not result.get(key):
            raise InputError(
                f"{source}: the NodeName line has no positive {key}: {node_lines[0]!r}",
                "check the worker's `slurmd -C` output",
            )
    if not _SLURM_NAME.fullmatch(result["node_name"]):
        raise InputError(f"{source}: NodeName {result['node_name']!r} is not a host name")
    return result


def parse_version(text, source: str = "slurmd -V") -> str:
    """`slurm 22.05.8` (what `slurmd -V`, `slurmctld -V`, `sinfo -V` print) -> "22.05.8"."""
    lines = [line.strip() for line in str(text or "").splitlines() if line.strip()]
    match = _VERSION.match(lines[0]) if len(lines) == 1 else None
    if match is None:
        raise InputError(
            f"{source}: expected 'slurm <major>.<minor>.<patch>', got {' | '.join(lines)[:120]!r}",
            "check the installed Slurm packages",
        )
    return match.group(1)


def version_matches(planned, installed) -> bool:
    """slurm_version "22.05.8" (or "22.05": any patch release) against an installed "22.05.8"."""
    want = str(planned or "").strip().split(".")
    have = str(installed or "").strip().split(".")
    if not want or not all(part.isdigit() for part in want) or len(want) < 2:
        raise InputError(
            f"slurm_version {planned!r} is not a Slurm version",
            'quote it in the inventory, e.g. slurm_version: "22.05.8"',
        )
    return have[: len(want)] == want


def version_problems(versions, planned, allow_missing: bool = False) -> list:
    """The daemons of {daemon: installed version or None} that do not run `planned`, in words."""
    problems = []
    for daemon in sorted(versions):
        installed = versions[daemon]
        if installed is None:
            if not allow_missing:
                problems.append(f"{daemon} (not installed)")
        elif not version_matches(planned, installed):
            problems.append(f"{daemon} {installed}")
    return problems


def real_memory(mib, reserve_mib=DEFAULT_MEMORY_RESERVE_MIB) -> int:
    """RealMemory for slurm.conf: what slurmd -C reports less the OS's reserve, never below half."""
    total, reserve = int(mib), int(reserve_mib)
    if total <= 0 or reserve < 0:
        raise InputError(
            f"memory {total} MiB with a reserve of {reserve} MiB",
            "slurm_memory_reserve_mib must be 0 or more",
        )
    return max(total - reserve, total // 2)


def gres_type(vendor, model=None, chips_per_device=None) -> str:
    """The GRES type of an accelerator model: h100, h200, b200 (NVIDIA); 910b, 910c, 910 (Ascend).

    `model` is the SKU catalog's accelerator.model where the node has a SKU (H100, 910B, Ascend910
    with 2 chips per device = the A3's 910C), else what the vendor tool printed (NVIDIA H100 80GB
    HBM3, 910B3).
    """
    text = str(model or "").strip()
    if vendor == "nvidia":
        found = _NVIDIA_MODEL.search(re.sub(r"^NVIDIA\s+", "", text, flags=re.IGNORECASE))
        name = found.group(1).lower() if found else re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")
    elif vendor == "huawei":
        lower = text.lower()
        letter = re.match(r"(?:ascend)?910([a-c])", lower)
        if letter:
            name = "910" + letter.group(1)
        elif lower == "ascend910":
            # npu-smi 25.x names the A3's dies "Ascend910"; the older 910 prints 910A/910ProB.
            name = "910c" if int(chips_per_device or 2) >= 2 else "910"
        elif lower.startswith("910"):
            name = "910"
        else:
            name = re.sub(r"[^a-z0-9]+", "_", lower).strip("_")
    else:
        raise InputError(f"accelerator vendor {vendor!r} has no Slurm GRES in ClusterForge (nvidia, huawei)")
    if not _GRES_TYPE.fullmatch(name or ""):
        raise InputError(
            f"accelerator model {model!r} gives no usable GRES type",
            "set node_sku to a catalog SKU whose accelerator.model names the chip (H100, 910B)",
        )
    return name


def node_gres(accelerators, sku=None):
    """A node's GRES from its accelerator facts (count) and SKU (type): None without accelerators.

    {name: gpu|npu, type, count, files: "/dev/nvidia[0-7]"}. Ascend counts device files
    (chips: 16 on an A3, one /dev/davinciN per die); NVIDIA counts GPUs.
    """
    facts = accelerators or {}
    vendor = facts.get("vendor")
    count = int(facts.get("accelerator_count") or 0)
    if vendor == "huawei" and facts.get("npus"):
        count = len(facts["npus"])
    if vendor not in _GRES_NAME or count <= 0:
        return None
    accelerator = (sku or {}).get("accelerator") or {}
    if accelerator.get("vendor") == vendor and accelerator.get("model"):
        kind = gres_type(vendor, accelerator["model"], accelerator.get("chips_per_device"))
    else:
        models = facts.get("accelerator_models") or []
        if not models:
            raise InputError(
                f"{vendor} accelerators without a model name and no SKU to name them",
                "set node_sku for the worker (the catalog names its accelerator model)",
            )
        kind = gres_type(vendor, models[0])
    last = count - 1
    files = f"{_DEVICE_PREFIX[vendor]}{last}" if last == 0 else f"{_DEVICE_PREFIX[vendor]}[0-{last}]"
    return {"name": _GRES_NAME[vendor], "type": kind, "count": count, "files": files}


def node_line(name, hardware, gres=None, reserve_mib=DEFAULT_MEMORY_RESERVE_MIB, address=None) -> str:
    """One slurm.conf NodeName line: the worker's slurmd -C shape, its GRES, State=UNKNOWN."""
    parts = [f"NodeName={name}"]
    if hardware.get("node_name") and hardware["node_name"] != name:
        parts.append(f"NodeHostname={hardware['node_name']}")
    if address:
        parts.append(f"NodeAddr={address}")
    for key in HARDWARE_KEYS:
        if key == "RealMemory":
            parts.append(f"RealMemory={real_memory(hardware[key], reserve_mib)}")
        elif hardware.get(key):
            parts.append(f"{key}={hardware[key]}")
    if gres:
        parts.append(f"Gres={gres['name']}:{gres['type']}:{gres['count']}")
    parts.append("State=UNKNOWN")
    return " ".join(parts)


def gres_conf_lines(name, gres, nvml: bool = False) -> list:
    """A node's gres.conf lines: AutoDetect=nvml (NVIDIA, plugin and library present) or File=."""
    if not gres:
        return []
    if nvml and gres["name"] == "gpu":
        return [f"NodeName={name} AutoDetect=nvml Name=gpu Type={gres['type']} Count={gres['count']}"]
    return [f"NodeName={name} AutoDetect=off Name={gres['name']} Type={gres['type']} File={gres['files']}"]


def _partition_list(partitions) -> list:
    if partitions in (None, ""):
        return []
    if not isinstance(partitions, (list, tuple)):
        raise InputError(
            f"slurm_partitions must be a list of {{name, nodes_group, default, max_time}}, got "
            f"{type(partitions).__name__}",
            "write slurm_partitions as a YAML list",
        )
    return list(partitions)


def partition_members(partitions, workers, groups) -> dict:
    """{partition name: [inventory hosts]}: the slurm_workers that are in each nodes_group.

    `workers` are the slurm_workers hosts (inventory names), `groups` the inventory's groups
    (name -> hosts). Fails, naming it, on a partition whose group has no slurm_workers host.
    """
    result = {}
    defaults = []
    for index, part in enumerate(_partition_list(partitions)):
        where = f"slurm_partitions[{index}]"
        if not isinstance(part, dict):
            raise InputError(f"{where} must be a mapping {{name, nodes_group, default, max_time}}")
        unknown = sorted(set(part) - {"name", "nodes_group", "default", "max_time"})
        if unknown:
            raise InputError(f"{where}: unknown keys {unknown}", "use name, nodes_group, default, max_time")
        name, group = part.get("name"), part.get("nodes_group")
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]{0,39}", name):
            raise InputError(f"{where}.name {name!r} is not a partition name", "letters, digits, '_', '-'")
        if name in result:
            raise InputError(f"{where}: partition {name} is defined twice", "give each partition one entry")
        if not isinstance(group, str) or not group:
            raise InputError(f"{where} ({name}): nodes_group is missing", "name the inventory group it holds")
        max_time = str(part.get("max_time", "INFINITE"))
        if not _MAX_TIME.fullmatch(max_time):
            raise InputError(
                f"{where} ({name}): max_time {max_time!r} is not a Slurm time",
                'use INFINITE, minutes, "HH:MM:SS" or "D-HH:MM:SS" (quoted)',
            )
        if part.get("default"):
            defaults.append(name)
        members = [host for host in workers if host in set((groups or {}).get(group) or [])]
        if not members:
            raise InputError(
                f"slurm partition {name} is empty: no slurm_workers host is in its nodes_group {group}",
                f"add hosts of {group} to slurm_workers, or correct nodes_group of partition {name}",
            )
        result[name] = members
    if len(defaults) > 1:
        raise InputError(
            f"slurm_partitions: {', '.join(defaults)} are all default: true",
            "mark one partition as the default",
        )
    return result


def partition_lines(partitions, members, names) -> list:
    """PartitionName lines; `members` from partition_members, `names` maps host -> Slurm node name."""
    lines = []
    for part in _partition_list(partitions):
        nodes = ",".join(names[host] for host in members[part["name"]])
        lines.append(
            f"PartitionName={part['name']} Nodes={nodes} Default={'YES' if part.get('default') else 'NO'} "
            f"MaxTime={part.get('max_time', 'INFINITE')} State=UP"
        )
    return lines


def conf_node_lines(text) -> dict:
    """{node name: its NodeName line} of a slurm.conf (the lines an unprobed worker keeps)."""
    found = {}
    for _, line in _logical_lines(text):
        if line.lower().startswith("nodename="):
            name = line.split(None, 1)[0].split("=", 1)[1]
            found[name] = line
    return found


def unlisted_workers(workers, conf_text) -> list:
    """The workers ({host, name}) that have no NodeName line in `conf_text` (the controller's
    slurm.conf): the ones joining the cluster, whose hardware must be probed (add-node)."""
    listed = conf_node_lines(conf_text)
    return [w["host"] for w in workers if (w.get("name") or str(w["host"]).split(".")[0]) not in listed]


def controller_lines(controllers) -> list:
    """SlurmctldHost lines, primary first: `SlurmctldHost=name` or `SlurmctldHost=name(address)`."""
    if not 1 <= len(controllers or []) <= 2:
        raise InputError(
            f"slurm_controller has {len(controllers or [])} hosts",
            "put one host in slurm_controller, or two for a backup slurmctld "
            "(with a shared StateSaveLocation)",
        )
    lines = []
    for ctl in controllers:
        name = ctl.get("name") or str(ctl["host"]).split(".")[0]
        if not _SLURM_NAME.fullmatch(name):
            raise InputError(f"{ctl['host']}: controller name {name!r} is not a host name")
        lines.append(
            f"SlurmctldHost={name}({ctl['address']})" if ctl.get("address") else f"SlurmctldHost={name}"
        )
    return lines


def build_cluster(
    workers, partitions, groups, reserve_mib=DEFAULT_MEMORY_RESERVE_MIB, previous_conf="", controllers=None
) -> dict:
    """Everything slurm.conf and gres.conf say about the workers, computed once.

    `workers`: one entry per slurm_workers host, {host, name, address, probe, accelerators,
    sku, nvml}: probe is the parsed `slurmd -C` (None when the host was not probed in this run:
    left out by --limit, or unreachable), accelerators its accelerator facts, sku its SKU spec
    or None, nvml whether Slurm's NVML plugin and libnvidia-ml.so.1 are both on it.
    A worker without a probe keeps its NodeName line of `previous_conf` (the slurm.conf now on
    the nodes); a worker that has neither fails the run, naming it.

    `controllers`: the slurm_controller hosts, {host, name, address}, primary first.

    Returns {controllers: [SlurmctldHost lines], nodes: [NodeName lines], partitions: [PartitionName
    lines], gres_types: [...], gres_conf: {node name: [lines]}, names: {host: node name},
    kept: [hosts kept unprobed]}.
    """
    previous = conf_node_lines(previous_conf)
    names, nodes, gres_conf, kinds, kept, missing = {}, [], {}, set(), [], []
    for worker in workers:
        host, name = worker["host"], worker.get("name") or str(worker["host"]).split(".")[0]
        if not _SLURM_NAME.fullmatch(name):
            raise InputError(
                f"{host}: Slurm node name {name!r} is not valid", "set slurm_node_name to a short host name"
            )
        if name in names.values():
            raise InputError(f"{host}: Slurm node name {name} is used by another worker too")
        names[host] = name
        if worker.get("probe") is None:
            if name not in previous:
                missing.append(host)
                continue
            kept.append(host)
            line = previous[name]
            nodes.append(line)
            gres = re.search(r"\bGres=(\w+):", line)
            if gres:
                kinds.add(gres.group(1))
            continue
        gres = node_gres(worker.get("accelerators"), worker.get("sku"))
        nodes.append(node_line(name, worker["probe"], gres, reserve_mib, worker.get("address")))
        gres_conf[name] = gres_conf_lines(name, gres, bool(worker.get("nvml")))
        if gres:
            kinds.add(gres["name"])
    if missing:
        raise InputError(
            f"slurm_workers {', '.join(missing)} were not probed in this run and have no line in the "
            "current slurm.conf, so their NodeName lines cannot be written",
            "run the play on these hosts too (no --limit that leaves them out) once they are reachable",
        )
    members = partition_members(partitions, [w["host"] for w in workers], groups)
    return {
        "controllers": controller_lines(controllers) if controllers is not None else [],
        "nodes": nodes,
        "partitions": partition_lines(partitions, members, names),
        "gres_types": sorted(kinds),
        "gres_conf": gres_conf,
        "names": names,
        "kept": kept,
    }


_NUMBERED = re.compile(r"^(.*?)(\d+)$")


def hostlist(names) -> str:
    """Node names as one compressed Slurm hostlist expression: `gpu-01,gpu-02,gpu-03,gpu-07,ctl` ->
    `ctl,gpu-[01-03,07]`.

    Names are grouped by the text before their trailing number and by that number's digit count,
    so zero padding survives the round trip (`n[09-10]` is n09 and n10; n9 and n10 stay apart).
    Names without a trailing number are listed as they are. Sorted, duplicates dropped.
    """
    groups, plain = {}, set()
    for name in names or []:
        text = str(name)
        match = _NUMBERED.match(text)
        if match is None:
            plain.add(text)
            continue
        prefix, digits = match.groups()
        groups.setdefault((prefix, len(digits)), set()).add(int(digits))
    parts = sorted(plain)
    for (prefix, width), numbers in sorted(groups.items()):
        ordered = sorted(numbers)
        if len(ordered) == 1:
            parts.append(f"{prefix}{ordered[0]:0{width}d}")
            continue
        ranges, start, last = [], ordered[0], ordered[0]
        for number in [*ordered[1:], None]:
            if number is not None and number == last + 1:
                last = number
                continue
            ranges.append(f"{start:0{width}d}" if start == last else f"{start:0{width}d}-{last:0{width}d}")
            if number is not None:
                start = last = number
        parts.append(f"{prefix}[{','.join(ranges)}]")
    return ",".join(parts)


def munge_key_bytes(value) -> bytes:
    """The munge key file's bytes from `slurm_munge_key` (base64, whitespace and newlines allowed)."""
    text = re.sub(r"\s+", "", str(value or ""))
    try:
        key = base64.b64decode(text, validate=True) if text else b""
    except (binascii.Error, ValueError):
        raise InputError(
            "slurm_munge_key is not base64",
            "generate one with `head -c 1024 /dev/urandom | base64 -w0` and store it with ansible-vault",
        ) from None
    if not MUNGE_KEY_MIN_BYTES <= len(key) <= MUNGE_KEY_MAX_BYTES:
        raise InputError(
            f"slurm_munge_key decodes to {len(key)} bytes; munge needs {MUNGE_KEY_MIN_BYTES} to "
            f"{MUNGE_KEY_MAX_BYTES}",
            "generate one with `head -c 1024 /dev/urandom | base64 -w0` and store it with ansible-vault "
            "as vault_slurm_munge_key",
        )
    return key


def _logical_lines(text):
    """(lower-case first key, line) for each setting of a slurm.conf: comments dropped, '\\' joined."""
    joined, pending = [], ""
    for raw in str(text or "").splitlines():
        line = raw.split("#", 1)[0].rstrip()
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = (pending + line).strip()
        pending = ""
        if line:
            joined.append(line)
    if pending.strip():
        joined.append(pending.strip())
    for line in joined:
        line = " ".join(line.split())
        key = line.split("=", 1)[0].strip().lower()
        yield key, line


def _settings(text) -> dict:
    """{lower-case key: [values in order]} for the single-key settings; object lines by kind."""
    found = {}
    for key, line in _logical_lines(text):
        if key in _OBJECT_KEYS:
            found.setdefault(key, []).append(line)
        else:
            found.setdefault(key, []).append(line.split("=", 1)[1].strip() if "=" in line else line)
    return found


def _restart_key(key: str) -> bool:
    return key in RESTART_KEYS or key.endswith(_RESTART_SUFFIXES) or key == "nodename"


def restart_reasons(old_text, new_text) -> list:
    """The slurm.conf settings whose change needs the daemons restarted (sorted); [] = reconfigure.

    No previous slurm.conf (first run) is a restart. Node lines compare as a set per node name
    (their order does not matter, a changed, added or removed node does); everything else by key,
    case-insensitively, in its order of appearance (two SlurmctldHost lines swapped is a change).
    """
    if not str(old_text or "").strip():
        return ["no previous slurm.conf"]
    old, new = _settings(old_text), _settings(new_text)
    reasons = []
    for key in sorted(set(old) | set(new)):
        if not _restart_key(key):
            continue
        if key == "nodename":
            before, after = conf_node_lines(old_text), conf_node_lines(new_text)
            changed = sorted(n for n in set(before) | set(after) if before.get(n) != after.get(n))
            if changed:
                reasons.append("NodeName " + ",".join(changed))
        elif old.get(key) != new.get(key):
            reasons.append(key)
    return reasons


def needs_restart(old_text, new_text) -> bool:
    """True when slurmctld and slurmd must restart for the new slurm.conf; False: scontrol reconfigure."""
    return bool(restart_reasons(old_text, new_text))


def munge_key_problem(value) -> str:
    """ "" when `slurm_munge_key` is a usable key, else what is wrong and how to fix it (no key bytes)."""
    try:
        munge_key_bytes(value)
    except InputError as err:
        return f"{err.message} (fix: {err.fix})"
    return ""
