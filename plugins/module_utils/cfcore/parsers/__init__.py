"""Parsers of vendor tool outputs (nvidia-smi, npu-smi, hccn_tool, ibstat, lspci, kernel log)
and of benchmark outputs (nccl-tests, hccl_test, perftest, juicefs bench, nvbandwidth).

    from cfcore.parsers import parse, ParseError
    facts = parse("nvidia-smi-q-xml", text)     # -> dict, see each module's docstring

Every parser is a pure function of the text (read_sysfs_infiniband is the one that
reads files). They tolerate fields they do not know and version differences, and raise
ParseError (kind, message, line, fix) for input that is not the tool's output: empty
input, another tool's output, an HTML page, or the tool's own failure message (the
driver is not loaded, NVML failed). Shared conventions: see common.py.
"""

from __future__ import annotations

from . import ascend, hccn, infiniband, kernel_log, nvidia, pci, perf, ppu, storage
from .common import ParseError, normalize_pci_bus_id, strip_source_header
from .infiniband import read_sysfs_infiniband

MIB = 1024 * 1024
# The most input a parser reads. Real outputs are far smaller (nvidia-smi -q -x of 8 GPUs:
# ~300 KiB, nvlink -s: ~5 KiB); more is not the tool's normal output, and parsing it
# would cost seconds and gigabytes. A kernel log ring buffer holds at most 32 MiB.
MAX_INPUT_BYTES = 16 * MIB
MAX_KERNEL_LOG_BYTES = 64 * MIB


class Kind:
    """A KIND name: the tool command that captures it, its parser and its input limit."""

    __slots__ = ("capture", "description", "max_bytes", "name", "parser")

    def __init__(self, name: str, capture: str, description: str, parser, max_bytes: int = MAX_INPUT_BYTES):
        self.name = name
        self.capture = capture
        self.description = description
        self.parser = parser
        self.max_bytes = max_bytes


_KIND_LIST = (
    Kind("nvidia-smi-q", "nvidia-smi -q", "GPU inventory and health, text", nvidia.parse_nvidia_smi_q),
    Kind(
        "nvidia-smi-q-xml", "nvidia-smi -q -x", "GPU inventory and health, XML", nvidia.parse_nvidia_smi_q_xml
    ),
    Kind(
        "nvidia-smi-csv",
        f"nvidia-smi --query-gpu={nvidia.QUERY_GPU_FIELDS} --format=csv",
        "GPU inventory and health, CSV (any field list with a header row)",
        nvidia.parse_nvidia_smi_csv,
    ),
    Kind("nvidia-smi-topo", "nvidia-smi topo -m", "GPU/NIC connection matrix", nvidia.parse_nvidia_smi_topo),
    Kind(
        "nvidia-smi-nvlink",
        "nvidia-smi nvlink -s",
        "NVLink state and speed per link",
        nvidia.parse_nvidia_smi_nvlink,
    ),
    Kind("npu-smi-info", "npu-smi info", "Ascend NPU/chip table", ascend.parse_npu_smi_info),
    Kind(
        "npu-smi-board",
        "npu-smi info -t board -i NPU_ID",
        "Ascend board, firmware and driver versions",
        ascend.parse_npu_smi_board,
    ),
    Kind(
        "npu-smi-health",
        "npu-smi info -t health -i NPU_ID",
        "Ascend NPU health and error codes",
        ascend.parse_npu_smi_health,
    ),
    Kind("hccn-ip", "hccn_tool -i DEVICE_ID -ip -g", "NPU NIC address and netmask", hccn.parse_hccn_ip),
    Kind("hccn-link", "hccn_tool -i DEVICE_ID -link -g", "NPU NIC link status", hccn.parse_hccn_link),
    Kind(
        "hccn-net-health",
        "hccn_tool -i DEVICE_ID -net_health -g",
        "NPU NIC network health probe",
        hccn.parse_hccn_net_health,
    ),
    Kind(
        "hccn-ping",
        "hccn_tool -i DEVICE_ID -ping -g address PEER_ADDRESS",
        "NPU NIC reachability of a peer's NIC: replies, loss, round-trip times",
        hccn.parse_hccn_ping,
    ),
    Kind("ibstat", "ibstat", "InfiniBand/RoCE adapters and port states", infiniband.parse_ibstat),
    Kind(
        "lspci", "lspci -vvv -nn -D (as root)", "PCIe link capability and status per device", pci.parse_lspci
    ),
    Kind(
        "xid",
        "dmesg (or journalctl -k -b)",
        "NVIDIA Xid events in the kernel log",
        kernel_log.parse_xid,
        MAX_KERNEL_LOG_BYTES,
    ),
    Kind("ppu-smi-list", "ppu-smi -L", "Alibaba PPU list (index, name, UUID)", ppu.parse_ppu_smi_list),
    Kind("ppu-smi-q", "ppu-smi -q", "Alibaba PPU detail: memory, health, ECC, SDK", ppu.parse_ppu_smi_q),
    Kind(
        "juicefs-status",
        "juicefs status META-URL (META_PASSWORD in the environment)",
        "JuiceFS volume settings and mount sessions",
        storage.parse_juicefs_status,
    ),
    Kind(
        "ceph-health",
        "ceph health --format json (also ceph status --format json, ceph health [detail], ceph -s)",
        "Ceph cluster health status and its checks",
        storage.parse_ceph_health,
    ),
    Kind(
        "nccl-tests",
        "all_reduce_perf -b 8 -e 8G -f 2 -g 8 (or mpirun ... all_reduce_perf; also all_gather_perf, "
        "reduce_scatter_perf, alltoall_perf, broadcast_perf, sendrecv_perf)",
        "NCCL bandwidth per message size, ranks and devices, bus bandwidth, wrong results",
        perf.parse_nccl_tests,
    ),
    Kind(
        "hccl-test",
        "mpirun -n 8 ./bin/all_reduce_test -b 8K -e 1G -f 2 -p 8 (CANN hccl_test)",
        "HCCL bandwidth per message size and result checks",
        perf.parse_hccl_test,
    ),
    Kind(
        "ib-perftest",
        "ib_write_bw -d mlx5_0 --report_gbits SERVER (the client; also ib_read_bw, ib_send_bw, ib_*_lat)",
        "RDMA bandwidth (Gb/s) or latency per message size, device, link type, GPUDirect",
        perf.parse_ib_perftest,
    ),
    Kind(
        "nvbandwidth",
        "nvbandwidth -t host_to_device_memcpy_ce device_to_host_memcpy_ce (any testcases)",
        "GPU copy bandwidth matrices per testcase (GB/s), the slowest copy per GPU, devices, driver",
        perf.parse_nvbandwidth,
    ),
    Kind(
        "juicefs-bench",
        "juicefs bench MOUNTPOINT -p 4",
        "JuiceFS big/small file throughput and metadata/object operation costs",
        perf.parse_juicefs_bench,
    ),
)

KINDS = {kind.name: kind for kind in _KIND_LIST}
PARSERS = {kind.name: kind.parser for kind in _KIND_LIST}
HCCN_KINDS = ("hccn-ip", "hccn-link", "hccn-net-health", "hccn-ping")


def max_bytes(kind: str | None) -> int:
    """The input limit of KIND (the default limit for raw outputs no parser reads)."""
    return KINDS[kind].max_bytes if kind in KINDS else MAX_INPUT_BYTES


def too_large(limit: int) -> str:
    """The one wording of an over-limit input, used by the parsers and the sources alike."""
    return f"output over {limit // MIB} MiB, not the tool's normal output"


def parse(kind: str, text: str, device: int | None = None) -> dict:
    """Parse `text` as the output of KIND; `device` names the NPU for the hccn-* kinds.

    Raises KeyError for an unknown kind and ParseError for input that is not its output;
    the error's `fix` says how to capture a usable output.
    """
    if kind not in PARSERS:
        raise KeyError(f"unknown kind {kind!r}; known kinds: {', '.join(PARSERS)}")
    limit = KINDS[kind].max_bytes
    if text is not None and len(text) > limit:
        raise ParseError(kind, too_large(limit), fix=f"capture it with: {KINDS[kind].capture} > FILE")
    try:
        if kind in HCCN_KINDS:
            return PARSERS[kind](text, device=device)
        return PARSERS[kind](text)
    except ParseError as err:
        if err.fix is None:
            err.fix = f"capture it with: {KINDS[kind].capture} > FILE"
        raise


__all__ = [
    "HCCN_KINDS",
    "KINDS",
    "MAX_INPUT_BYTES",
    "MAX_KERNEL_LOG_BYTES",
    "PARSERS",
    "Kind",
    "ParseError",
    "max_bytes",
    "normalize_pci_bus_id",
    "parse",
    "read_sysfs_infiniband",
    "strip_source_header",
    "too_large",
]
