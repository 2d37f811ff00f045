"""The GPU record every nvidia-smi parser fills, and nvidia-smi's own failure messages."""

from __future__ import annotations

from .common import ParseError, first_content_line

# Keys of one entry of `gpus[]`, the same for -q, -q -x and --query-gpu CSV (and
# topo/nvlink, which fill only what they print). The first block is the contract; the
# second block holds extras the validator may use. Every key is present, None when
# the output lacks it.
GPU_FIELDS = (
    "index",
    "name",
    "uuid",
    "serial",
    "pci_bus_id",
    "pcie_gen_max",
    "pcie_gen_current",
    "pcie_width_max",
    "pcie_width_current",
    "persistence_mode",
    "mig_mode",
    "ecc_mode",
    "ecc_uncorrected_volatile",
    "retired_pages_pending",
    "remapped_rows_pending",
    "remapped_rows_failure",
    "temperature_c",
    "power_draw_w",
    "memory_total_mib",
    # extras
    "ecc_corrected_volatile",
    "ecc_uncorrected_aggregate",
    "retired_pages_single_bit",
    "retired_pages_double_bit",
    "remapped_rows_correctable",
    "remapped_rows_uncorrectable",
    "memory_used_mib",
    "power_limit_w",
    "vbios_version",
    "fabric_state",
    "fabric_status",
    "pcie_replays",
)

# The --query-gpu field list the validator runs and the CSV parser maps (see nvidia_csv).
QUERY_GPU_FIELDS = (
    "index,name,uuid,serial,pci.bus_id,driver_version,pcie.link.gen.max,pcie.link.gen.current,"
    "pcie.link.width.max,pcie.link.width.current,persistence_mode,mig.mode.current,ecc.mode.current,"
    "ecc.errors.uncorrected.volatile.total,retired_pages.pending,temperature.gpu,power.draw,memory.total"
)

DRIVER_FIX = (
    "check the NVIDIA driver is installed and loaded (lsmod | grep nvidia; dmesg | grep NVRM), "
    "then capture the output again"
)
MISMATCH_FIX = (
    "the loaded nvidia kernel module and the user-space driver differ (usually after a driver "
    "upgrade): reboot the node or reload the nvidia modules, then capture again"
)

# Phrases nvidia-smi prints instead of its output when it cannot use the driver.
_DRIVER_FAILURES = (
    "nvidia-smi has failed because it couldn't communicate with the nvidia driver",
    "failed to initialize nvml",
    "couldn't find libnvidia-ml.so",
    "no devices were found",
    "nvml: driver/library version mismatch",
)


_FAILURE_SCAN_LINES = 40


def blank_gpu(index: int | None = None) -> dict:
    gpu = dict.fromkeys(GPU_FIELDS)
    gpu["index"] = index
    return gpu


def check_driver_failure(kind: str, text: str) -> None:
    """Raise ParseError when nvidia-smi printed a driver/NVML failure instead of its output.

    nvidia-smi prints these instead of any output, so the first lines are enough to look at.
    """
    for number, line in enumerate(text.splitlines()[:_FAILURE_SCAN_LINES], 1):
        lowered = line.strip().lower()
        if not any(phrase in lowered for phrase in _DRIVER_FAILURES):
            continue
        if "no devices were found" in lowered:
            message = "nvidia-smi found no GPU (the driver is loaded but sees no device)"
            fix = "check the GPUs are visible on the PCI bus (lspci -d 10de:) and dmesg for NVRM errors"
        else:
            message = "nvidia-smi could not talk to the NVIDIA driver"
            fix = MISMATCH_FIX if "mismatch" in lowered else DRIVER_FIX
        raise ParseError(kind, message, number, line, fix=fix)


def device_handle_errors(text: str) -> list[str]:
    """Lines like 'Unable to determine the device handle for GPU0000:3B:00.0: Unknown Error'."""
    return [
        line.strip() for line in text.splitlines() if "unable to determine the device handle" in line.lower()
    ]


def lost_gpus_only(kind: str, text: str, errors: list[str]) -> ParseError:
    """The output holds nothing but per-GPU errors: every GPU is unreachable."""
    number, line = first_content_line(text)
    return ParseError(
        kind,
        f"nvidia-smi could not reach any GPU ({len(errors)} device handle error(s))",
        number,
        line,
        fix="a GPU that fell off the bus needs a node reboot or reseat; check dmesg for Xid 79",
    )
