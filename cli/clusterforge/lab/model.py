"""What a lab is: its node roles, the node plan (names, addresses) and input validation.

A lab is a small cluster of podman containers that stand in for racked servers.
Everything here is pure data: no podman, no files (the GPU count of a node comes
from the SKU catalog, cfcore.catalog).
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field

from cfcore.catalog import sku_spec

from clusterforge.errors import InvalidInput

DEFAULT_LAB_NAME = "lab"
DEFAULT_IMAGE = "localhost/clusterforge-node:bookworm"
# Every podman object a lab creates carries this prefix and this label.
NAME_PREFIX = "cflab-"
LABEL = "org.clusterforge.lab"
LABEL_ROLE = "org.clusterforge.lab.role"
LABEL_HOST = "org.clusterforge.lab.host"
LABEL_INDEX = "org.clusterforge.lab.index"
LABEL_DISK = "org.clusterforge.lab.disk"  # the host loop device behind a storage node's data disk
RACK = "lab-r1"
SYSFS_ROOT = "/opt/hwreplay/sysroot"

# Node addresses start at .11 of the lab subnet: .1 is the bridge gateway and
# the low addresses stay free for things a test may want to add (a VIP, a proxy).
FIRST_NODE_OFFSET = 11
# Lab names end up in container names and hostnames (<name>-gpu-01, 63 chars max).
_NAME_RE = re.compile(r"^[a-z][a-z0-9]{0,15}(-[a-z0-9]{1,15})?$")
_PROFILE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
MAX_PER_ROLE = 99  # two-digit host numbers

# The Ascend NPU NIC plan (hccn_devices) of lab NPU nodes: Atlas 800T A2 puts
# all 8 device addresses in one subnet (design.md, subnet_rule single-subnet).
HCCN_NETWORK = ipaddress.IPv4Network("192.168.100.0/24")
HCCN_FIRST_OFFSET = 10
HCCN_DEVICES_PER_NODE = 8
MAX_NPU_NODES = (HCCN_NETWORK.num_addresses - 1 - HCCN_FIRST_OFFSET) // HCCN_DEVICES_PER_NODE


@dataclass(frozen=True)
class Role:
    """One kind of lab node and where it sits in the inventory model (design.md)."""

    name: str
    host_tag: str  # middle part of the hostname: <lab>-<host_tag>-01
    groups: tuple[str, ...]
    node_sku: str
    hwreplay_profile: str | None  # default hardware-replay profile (accelerator nodes)
    accelerator: bool
    default_count: int
    data_disk: bool = False  # gets a data disk (/dev/vdb) for Ceph OSDs
    # Mounts the shared file systems through FUSE (JuiceFS, ceph-fuse): its container gets
    # /dev/fuse and CAP_SYS_ADMIN (FUSE_CAPABILITIES), which FUSE mounts need in a container.
    storage_client: bool = False
    # The lab's ClusterForge controller: the checkout (the repository root with its .venv and the
    # lab's .cache state) is bind-mounted read-only at the same path, so `clusterforge` runs there
    # as on the host (scheduled inspection: `clusterforge inspect install --on <lab>-ctl-01`).
    clusterforge_checkout: bool = False

    @property
    def slurm_worker(self) -> bool:
        """Runs slurmd with cgroup enforcement: SLURM_WORKER_CAPABILITIES and the lab's
        bare-metal unit (bare_metal.py), and a device cgroup rule per NVIDIA GPU."""
        return "slurm_workers" in self.groups

    @property
    def nvidia_gpus(self) -> int:
        """The NVIDIA GPUs of the node's SKU (0 for other nodes): the replay's GPU count."""
        if "gpu_nvidia" not in self.groups:
            return 0
        accelerator = sku_spec(self.node_sku).get("accelerator") or {}
        return int(accelerator.get("count") or 0) if accelerator.get("vendor") == "nvidia" else 0

    @property
    def capabilities(self) -> tuple[str, ...]:
        """The capabilities its container gets on top of podman.NODE_CAPABILITIES (one list per
        reason, merged here: a FUSE client that is also a Slurm worker asks for SYS_ADMIN once)."""
        wanted = (FUSE_CAPABILITIES if self.storage_client else ()) + (
            SLURM_WORKER_CAPABILITIES if self.slurm_worker else ()
        )
        return tuple(dict.fromkeys(wanted))

    @property
    def device_cgroup_rules(self) -> tuple[str, ...]:
        """`--device-cgroup-rule`s of its container: each GPU's character device and nvidiactl,
        one rule per device (a wildcard `c 195:* rwm` would defeat Slurm's ConstrainDevices: a
        cgroup v1 device list cannot deny one device out of a wildcard rule)."""
        if not self.slurm_worker or not self.nvidia_gpus:
            return ()
        minors = (*range(self.nvidia_gpus), NVIDIACTL_MINOR)
        return tuple(f"c {NVIDIA_MAJOR}:{minor} rwm" for minor in minors)


ROLES: dict[str, Role] = {
    role.name: role
    for role in (
        Role(
            "control",
            "ctl",
            ("k8s_control_plane", "slurm_controller", "monitoring", "juicefs_meta"),
            "cpu-generic",
            None,
            False,
            1,
            clusterforge_checkout=True,
        ),
        Role(
            "gpu",
            "gpu",
            # Each accelerator node belongs to one scheduler (inventory check
            # warns otherwise): NVIDIA nodes to Slurm, Ascend nodes to
            # Kubernetes + Volcano, as mixed fleets commonly split them.
            ("gpu_nvidia", "slurm_workers"),
            "hgx-h100-8gpu",
            "h100-healthy",
            True,
            2,
            storage_client=True,
        ),
        Role(
            "npu",
            "npu",
            ("npu_ascend", "k8s_workers"),
            "atlas-800t-a2",
            "910b-healthy",
            True,
            1,
            storage_client=True,
        ),
        # A storage node is a whole one-node Ceph cluster (monitor, manager, OSD on its data
        # disk, MDS for CephFS, RADOS Gateway for JuiceFS's data). Not a FUSE client: it needs
        # no CAP_SYS_ADMIN (BlueStore goes straight on the device, ceph_osd_method raw).
        Role(
            "storage",
            "sto",
            ("storage", "ceph_mon", "ceph_osd", "ceph_mds", "ceph_rgw"),
            "cpu-generic",
            None,
            False,
            1,
            data_disk=True,
        ),
    )
}
ROLE_ORDER = tuple(ROLES)

# What a FUSE mount needs in a container: the device and CAP_SYS_ADMIN (mount(2)).
FUSE_DEVICE = "/dev/fuse"
FUSE_CAPABILITIES = ("SYS_ADMIN",)
# What slurmd with cgroup enforcement needs in a container (not --privileged, which would show
# the node every host device): SYS_ADMIN to remount the cgroup v1 controllers read-write at boot
# (bare_metal.py) and SYS_NICE for task/affinity (without it every job fails in
# task_g_set_affinity: Operation not permitted). Never --cgroupns=private on hybrid hosts: the
# node's systemd would land in the host's root name=systemd hierarchy, shared by all such nodes.
SLURM_WORKER_CAPABILITIES = ("SYS_ADMIN", "SYS_NICE")
# The NVIDIA driver's character devices: /dev/nvidiaN is 195:N, /dev/nvidiactl 195:255.
NVIDIA_MAJOR = 195
NVIDIACTL_MINOR = 255


@dataclass(frozen=True)
class Node:
    """One lab node: an inventory host backed by one container."""

    lab: str
    role: Role
    index: int  # 1-based within its role
    ip: str
    hwreplay_profile: str | None = None

    @property
    def host(self) -> str:
        return host_name(self.lab, self.role, self.index)

    @property
    def container(self) -> str:
        return NAME_PREFIX + self.host


@dataclass(frozen=True)
class LabSpec:
    """A lab as requested: name, node mix, network and image."""

    name: str
    counts: dict[str, int]
    subnet: str
    image: str
    profiles: dict[str, str] = field(default_factory=dict)  # host -> hwreplay profile overrides

    @property
    def network(self) -> str:
        return network_name(self.name)

    @property
    def gateway(self) -> str:
        return str(ipaddress.IPv4Network(self.subnet)[1])

    def mix(self) -> str:
        """The node mix in words, for messages: '1 control, 2 gpu, 1 npu, 1 storage'."""
        return ", ".join(f"{self.counts[role]} {role}" for role in ROLE_ORDER)


def network_name(lab: str) -> str:
    return NAME_PREFIX + lab


def host_name(lab: str, role: Role, index: int) -> str:
    return f"{lab}-{role.host_tag}-{index:02d}"


def check_name(name: str) -> str:
    if not _NAME_RE.match(name):
        raise InvalidInput(
            f"lab name {name!r} is not valid: it becomes part of container and host names",
            "use lowercase letters and digits, starting with a letter, optionally one '-' "
            "(at most 32 characters), e.g. --name lab2",
        )
    return name


def check_counts(counts: dict[str, int]) -> dict[str, int]:
    for role in ROLE_ORDER:
        count = counts[role]
        if not 0 <= count <= MAX_PER_ROLE:
            raise InvalidInput(
                f"--{role} {count}: a lab has between 0 and {MAX_PER_ROLE} {role} nodes",
                f"pass --{role} with a value from 0 to {MAX_PER_ROLE}",
            )
    if counts["npu"] > MAX_NPU_NODES:
        raise InvalidInput(
            f"--npu {counts['npu']}: the lab NPU NIC plan ({HCCN_NETWORK}) has room for "
            f"{MAX_NPU_NODES} NPU nodes of {HCCN_DEVICES_PER_NODE} devices",
            f"pass --npu {MAX_NPU_NODES} or less",
        )
    if sum(counts.values()) == 0:
        raise InvalidInput("a lab needs at least one node", "pass e.g. --control 1")
    return counts


def check_subnet(subnet: str, node_count: int) -> str:
    """Validate --subnet: an IPv4 network with room for the gateway and every node."""
    try:
        network = ipaddress.IPv4Network(subnet, strict=True)
    except ValueError as err:
        raise InvalidInput(
            f"--subnet {subnet!r} is not an IPv4 network in CIDR form ({err})",
            "pass the network address with its prefix length, e.g. --subnet 10.89.120.0/24",
        ) from None
    last_needed = FIRST_NODE_OFFSET + node_count - 1
    if last_needed >= network.num_addresses - 1:  # the broadcast address is not usable
        raise InvalidInput(
            f"--subnet {subnet} is too small for {node_count} nodes "
            f"(nodes take addresses from .{FIRST_NODE_OFFSET} on)",
            "pass a bigger network, e.g. a /24",
        )
    return str(network)


def parse_profiles(values: tuple[str, ...] | list[str]) -> dict[str, str]:
    """Parse repeated --profile HOST=PROFILE flags."""
    profiles: dict[str, str] = {}
    for value in values:
        host, sep, profile = value.partition("=")
        if not sep or not host or not _PROFILE_RE.match(profile):
            raise InvalidInput(
                f"--profile {value!r} is not HOST=PROFILE",
                "pass e.g. --profile lab-gpu-01=h100-xid79 (letters, digits, '.', '_', '-')",
            )
        profiles[host] = profile
    return profiles


def plan_nodes(spec: LabSpec) -> list[Node]:
    """The lab's nodes in a fixed order (control, gpu, npu, storage) with fixed addresses.

    Addresses depend only on the spec, so a lab brought up again (or reconciled)
    gets the same addresses and names.
    """
    network = ipaddress.IPv4Network(spec.subnet)
    nodes: list[Node] = []
    for role_name in ROLE_ORDER:
        role = ROLES[role_name]
        for index in range(1, spec.counts[role_name] + 1):
            ip = str(network[FIRST_NODE_OFFSET + len(nodes)])
            host = host_name(spec.name, role, index)
            profile = spec.profiles.get(host, role.hwreplay_profile)
            nodes.append(Node(spec.name, role, index, ip, profile))
    unknown = sorted(set(spec.profiles) - {node.host for node in nodes})
    if unknown:
        raise InvalidInput(
            f"--profile names host(s) not in this lab: {', '.join(unknown)}",
            f"use one of: {', '.join(node.host for node in nodes)}",
        )
    return nodes


def fabric_of(node: Node) -> dict[str, str]:
    """The node's place on the lab's compute fabric (docs/design.md, "Fabric topology"): every
    accelerator node on a leaf, all leaves under one spine. The GPU nodes alternate between two
    leaves (gpu-01, gpu-03, ... on leaf 1; gpu-02, gpu-04, ... on leaf 2), so name order is not
    topology order: a scheduler that picks nodes by name crosses leaves where a topology-aware one
    does not (tests/integration/test_slurm_lab.py). The NPU nodes have a leaf of their own; the
    control and storage nodes sit on the front-end network only (no leaf)."""
    if node.role.name == "gpu":
        leaf = 1 if node.index % 2 else 2
    elif node.role.name == "npu":
        leaf = 3
    else:
        return {}
    return {"leaf": f"{node.lab}-leaf-{leaf}", "spine": f"{node.lab}-spine-1"}


def hccn_devices(npu_index: int) -> list[dict[str, object]]:
    """The NPU NIC plan of the npu_index-th (1-based) lab NPU node: 8 devices in one /24."""
    base = HCCN_FIRST_OFFSET + (npu_index - 1) * HCCN_DEVICES_PER_NODE
    gateway = str(HCCN_NETWORK[1])
    return [
        {
            "id": device,
            "address": str(HCCN_NETWORK[base + device]),
            "netmask": str(HCCN_NETWORK.netmask),
            "gateway": gateway,
            "netdetect": gateway,
        }
        for device in range(HCCN_DEVICES_PER_NODE)
    ]
