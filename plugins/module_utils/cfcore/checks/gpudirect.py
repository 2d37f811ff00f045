"""`gpu.peermem`: GPUDirect RDMA's kernel module, `nvidia_peermem`, is loaded where it is required.

Without it the HCAs cannot read and write GPU memory directly: NCCL falls back
to staging through host memory and a 400G fabric delivers a fraction of it,
with no error anywhere. It is required (`peermem_required`, default: an NVIDIA
SKU with compute HCAs) where GPUs and HCAs share the node.

Inputs: `module` an Output whose data is `{"present": bool, "path": ...}` (the
module's directory `<sysfs_root>/sys/module/nvidia_peermem`, which the kernel
creates while the module is loaded) and `proc_modules` the text of
/proc/modules (`proc-modules.txt` in a capture), read when the directory is
absent. Either saying "loaded" passes; a capture with neither errs.
"""

from __future__ import annotations

from ..results import evidence, failed, passed, skipped
from .common import unavailable

MODULE = "nvidia_peermem"
REMEDY = (
    "load it: modprobe nvidia-peermem, and load it at boot (/etc/modules-load.d; the gpudirect role does "
    "both). If modprobe finds no module, the NVIDIA driver was built before DOCA-OFED/MLNX_OFED: install "
    "OFED first, then rebuild the driver's DKMS modules (playbooks/fabric.yml runs before the NVIDIA "
    "stack for this; the gpudirect role rebuilds stale modules or says how)"
)


def listed(proc_modules_text: str) -> str | None:
    """The /proc/modules line of nvidia_peermem, or None."""
    for line in (proc_modules_text or "").splitlines():
        if line.split(" ", 1)[0] == MODULE:
            return line.strip()
    return None


def gpu_peermem(module, proc_modules, required: bool, why_not: str = "") -> dict:
    check = "gpu.peermem"
    if not required:
        return skipped(check, why_not or "nvidia_peermem is not required on this node (peermem_required)")
    path = (module.data or {}).get("path") if module is not None else None
    if module is not None and module.ok and (module.data or {}).get("present"):
        return passed(check, f"{MODULE} loaded", evidence(module.command, [f"{path}: present"], module.file))
    if proc_modules is not None and proc_modules.ok:
        line = listed(proc_modules.text)
        if line:
            return passed(
                check, f"{MODULE} loaded", evidence(proc_modules.command, [line], proc_modules.file)
            )
        lines = [f"{path}: absent"] if path else []
        lines.append(f"{proc_modules.command}: no {MODULE} line")
        return failed(
            check,
            f"{MODULE} is not loaded: GPUDirect RDMA between the GPUs and the HCAs is off",
            evidence(
                f"{module.command}; {proc_modules.command}" if module else proc_modules.command,
                lines,
                proc_modules.file,
            ),
            REMEDY,
        )
    if module is not None and module.ok and module.data.get("live"):
        # A live node whose /proc/modules cannot be read: its sysfs says enough.
        return failed(
            check,
            f"{MODULE} is not loaded: GPUDirect RDMA between the GPUs and the HCAs is off",
            evidence(module.command, [f"{path}: absent"], module.file),
            REMEDY,
        )
    refused = module is not None and module.state == "refused"  # a capture's link out of it says more
    return unavailable(check, module if refused or proc_modules is None else proc_modules)
