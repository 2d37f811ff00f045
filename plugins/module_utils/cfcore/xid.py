"""NVIDIA Xid error codes that node validation acts on, and why.

Source: NVIDIA, "Xid Errors" (https://docs.nvidia.com/deploy/xid-errors/, the
Xid catalog and its per-code "action" column) and "GPU Debug Guidelines"
(https://docs.nvidia.com/deploy/gpu-debug-guidelines/). Severity here is what
the node validator does with one occurrence since boot:

  fail  the GPU (or its memory/links) needs an operator action before it takes
        jobs again: a reset, a reboot, a reseat or an RMA
  warn  usually caused by the application that ran (illegal address, killed
        process); it points at hardware only when it recurs across jobs

Xids not listed here are reported as `warn` with a pointer to the catalog: an
unknown code is worth a look but no reason to block a node.
"""

from __future__ import annotations

FAIL = "fail"
WARN = "warn"

SOURCE = (
    "NVIDIA Xid catalog, https://docs.nvidia.com/deploy/xid-errors/ and "
    "https://docs.nvidia.com/deploy/gpu-debug-guidelines/"
)

_APP_FAULT = (
    "look at the job that ran when it was logged; if it recurs with other jobs, "
    "run dcgmi diag -r 3 and reset the GPU"
)

# code: (name, severity, why it has this severity, remedy)
XIDS = {
    13: (
        "Graphics Engine Exception",
        WARN,
        "mostly an application fault (illegal instruction, out-of-range access)",
        _APP_FAULT,
    ),
    31: (
        "GPU memory page fault",
        WARN,
        "mostly an application accessing an illegal address",
        _APP_FAULT,
    ),
    43: (
        "GPU stopped processing",
        WARN,
        "a user application hit a software-induced fault; the GPU stays healthy",
        _APP_FAULT,
    ),
    45: (
        "Preemptive cleanup, due to previous errors",
        WARN,
        "a process was killed or follows an earlier error; the earlier Xid is the cause",
        "look at the Xids logged before it on the same GPU",
    ),
    48: (
        "Double Bit ECC Error",
        FAIL,
        "uncorrectable memory error; the page must be retired or the row remapped",
        "drain the node and reset the GPU (nvidia-smi -r -i <index>) or reboot; RMA the GPU if it recurs",
    ),
    62: (
        "Internal micro-controller halt",
        FAIL,
        "the GPU's internal controller stopped; the GPU needs a reset",
        "drain the node and reset the GPU or reboot; update the driver and RMA if it recurs",
    ),
    63: (
        "ECC page retirement or row remapping recording event",
        FAIL,
        "a retirement/remap was recorded and only takes effect after a GPU reset",
        "drain the node and reset the GPU (or reboot) so the remap takes effect",
    ),
    64: (
        "ECC page retirement or row remapper recording failure",
        FAIL,
        "the memory error could not be recorded in the InfoROM",
        "drain the node and reset the GPU; RMA the GPU if it recurs",
    ),
    74: (
        "NVLink Error",
        FAIL,
        "an NVLink link failed; collective traffic over it stalls or corrupts",
        "drain the node, reset the GPUs and check the fabric manager log; RMA the GPU/baseboard if it recurs",
    ),
    79: (
        "GPU has fallen off the bus",
        FAIL,
        "the GPU is no longer reachable over PCIe",
        "drain the node, reseat or replace the GPU and check its PCIe power and riser; RMA if it recurs",
    ),
    92: (
        "High single-bit ECC error rate",
        FAIL,
        "memory is degrading faster than single-bit correction can be trusted",
        "drain the node, run dcgmi diag -r 3 and RMA the GPU if the rate persists",
    ),
    94: (
        "Contained ECC error",
        FAIL,
        "an uncorrectable error was contained to one application; a reset remaps the row",
        "drain the node and reset the GPU to remap the row",
    ),
    95: (
        "Uncontained ECC error",
        FAIL,
        "an uncorrectable error affected every application on the GPU",
        "drain the node and reset the GPU or reboot now; RMA if it recurs",
    ),
    119: (
        "GSP RPC timeout",
        FAIL,
        "the GPU System Processor stopped answering the driver",
        "drain the node and reset the GPU or reboot; update the driver and RMA if it recurs",
    ),
    120: (
        "GSP error",
        FAIL,
        "the GPU System Processor reported an internal error",
        "drain the node and reset the GPU or reboot; update the driver and RMA if it recurs",
    ),
    140: (
        "Unrecovered ECC error",
        FAIL,
        "an uncorrectable memory error the GPU could not recover from",
        "drain the node and reset the GPU; RMA the GPU if it recurs",
    ),
}


def classify(code: int) -> tuple:
    """(name, severity, why, remedy) for an Xid code; unknown codes are `warn`."""
    if code in XIDS:
        return XIDS[code]
    return (
        "not in ClusterForge's table",
        WARN,
        "unknown to this validator",
        f"look up Xid {code} in the NVIDIA Xid catalog (https://docs.nvidia.com/deploy/xid-errors/)",
    )
