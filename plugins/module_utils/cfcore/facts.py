"""What accelerators, HCAs and versions a node really has.

`node_facts(...)` builds the `facts` of a node_result from outputs validation
already collected; `discover(source, sysfs_root)` is the `accelerator_facts`
module's entry point: it needs no SKU, tries the vendor tools that exist, and
looks at the PCI bus so a node whose driver is missing still shows its devices.

`hcas[].compute` says whether the CA is one of the SKU's compute-fabric HCAs
(cfcore.checks.infiniband.compute_cas), None where no SKU is known (discover):
the fleet rule `fleet.hca_firmware` (cfcore/fleet.py) compares those only.

    {"vendor": "nvidia" | "huawei" | None, "accelerator_count", "accelerator_models",
     "driver_version", "cuda_version", "firmware_versions", "kernel_module_flavour",
     "gpus": [...], "npus": [...], "hca_count", "hcas": [{name, type, firmware, compute, ports}],
     "pci_accelerators": {"nvidia": 8}, "tools": {"nvidia-smi": "ok", ...}}
"""

from __future__ import annotations

import os

from .checks.ascend import chips_of, npu_ids
from .checks.common import field
from .checks.infiniband import compute_cas
from .checks.nvidia import gpus_of, kernel_module_flavour
from .collect import Collector

# PCI vendor ids of the accelerators ClusterForge knows, and the PCI classes of
# their compute functions (0x0302 3D controller, 0x0300 VGA, 0x1200 processing accelerator).
PCI_VENDORS = {"0x10de": "nvidia", "0x19e5": "huawei"}
ACCELERATOR_CLASSES = ("0x0302", "0x0300", "0x1200")


def _gpu(gpu: dict) -> dict:
    keys = ("index", "name", "uuid", "serial", "pci_bus_id", "memory_total_mib", "vbios_version")
    return {key: gpu.get(key) for key in keys}


def _npu(chip: dict) -> dict:
    keys = ("npu_id", "chip_id", "name", "bus_id", "health", "hbm_total_mb")
    return {key: chip.get(key) for key in keys}


def _hca(ca: dict, compute) -> dict:
    ports = [
        {key: port.get(key) for key in ("port", "state", "physical_state", "rate_gbps", "link_layer")}
        for port in ca.get("ports") or []
    ]
    return {
        "name": ca.get("name"),
        "type": ca.get("type"),
        "firmware": ca.get("firmware"),
        "compute": compute,
        "ports": ports,
    }


def node_facts(vendor, smi=None, npu=None, boards=None, hcas=None, flavour=None, hca=None) -> dict:
    """`hca`: the SKU's compute-fabric spec, to mark the compute HCAs (None: unknown, `compute` is None)."""
    facts: dict = {
        "vendor": vendor,
        "accelerator_count": 0,
        "accelerator_models": [],
        "driver_version": None,
        "cuda_version": None,
        "firmware_versions": [],
        "kernel_module_flavour": flavour,
        "gpus": [],
        "npus": [],
        "hca_count": 0,
        "hcas": [],
    }
    if smi is not None and smi.usable:
        gpus = gpus_of(smi)
        facts.update(
            vendor=facts["vendor"] or "nvidia",
            accelerator_count=len(gpus),
            accelerator_models=sorted({str(g.get("name")) for g in gpus if g.get("name")}),
            driver_version=smi.data.get("driver_version"),
            cuda_version=smi.data.get("cuda_version"),
            gpus=[_gpu(g) for g in gpus],
        )
    if npu is not None and npu.usable:
        chips = chips_of(npu)
        facts.update(
            vendor=facts["vendor"] or "huawei",
            accelerator_count=len(npu_ids(npu)),
            accelerator_models=sorted({str(c.get("name")) for c in chips if c.get("name")}),
            driver_version=npu.data.get("version"),
            npus=[_npu(c) for c in chips],
        )
    firmware = set()
    for board in (boards or {}).values():
        if board.usable and field(board.data, "firmware_version"):
            firmware.add(str(field(board.data, "firmware_version")))
    facts["firmware_versions"] = sorted(firmware)
    if hcas is not None and hcas.usable:
        cas = (hcas.data or {}).get("cas") or []
        facts["hca_count"] = len(cas)
        chosen = {id(ca) for ca in compute_cas(hcas, hca)} if hca else None
        facts["hcas"] = [_hca(ca, None if chosen is None else id(ca) in chosen) for ca in cas]
    return facts


def pci_accelerators(root: str) -> dict:
    """Accelerator functions on the PCI bus by vendor, read from <root>/sys/bus/pci/devices."""
    base = os.path.join(root, "sys", "bus", "pci", "devices")
    counts: dict = {}
    try:
        names = os.listdir(base)
    except OSError:
        return counts
    for name in names:
        vendor = _read(os.path.join(base, name, "vendor"))
        klass = _read(os.path.join(base, name, "class"))
        if vendor in PCI_VENDORS and klass and klass[:6] in ACCELERATOR_CLASSES:
            counts[PCI_VENDORS[vendor]] = counts.get(PCI_VENDORS[vendor], 0) + 1
    return counts


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            return handle.read().strip().lower()
    except OSError:
        return None


def discover(source, sysfs_root: str = "/") -> dict:
    """Facts of this node without a SKU: what each vendor tool and the PCI bus report."""
    collector = Collector(source)
    collector.prefetch(
        [
            (("nvidia-smi", "-q", "-x"), "nvidia-smi-q-xml"),
            (("npu-smi", "info"), "npu-smi-info"),
            (("ibstat",), "ibstat"),
        ]
    )
    smi = collector.run(("nvidia-smi", "-q", "-x"), "nvidia-smi-q-xml")
    npu = collector.run(("npu-smi", "info"), "npu-smi-info")
    hcas = collector.run(("ibstat",), "ibstat")
    if not hcas.ok:
        sysfs = collector.sysfs_infiniband(source.sysfs_root(sysfs_root))
        hcas = sysfs if sysfs.ok else hcas
    boards = {}
    if npu.usable:
        board_argv = {n: ("npu-smi", "info", "-t", "board", "-i", str(n)) for n in npu_ids(npu)}
        collector.prefetch([(argv, "npu-smi-board") for argv in board_argv.values()])
        boards = {n: collector.run(argv, "npu-smi-board") for n, argv in board_argv.items()}
    flavour = None
    if smi.usable:
        proc_version = collector.read("/proc/driver/nvidia/version")
        modinfo = None if proc_version.ok else collector.run(("modinfo", "-F", "license", "nvidia"))
        flavour, _ = kernel_module_flavour(proc_version, modinfo)
    on_bus = pci_accelerators(source.sysfs_root(sysfs_root)) if source.kind == "live" else {}
    vendor = "nvidia" if smi.usable else "huawei" if npu.usable else None
    if vendor is None and on_bus:
        vendor = max(on_bus, key=on_bus.get)
    facts = node_facts(vendor, smi=smi, npu=npu, boards=boards, hcas=hcas, flavour=flavour)
    if not facts["accelerator_count"] and vendor:
        facts["accelerator_count"] = on_bus.get(vendor, 0)
    facts["pci_accelerators"] = on_bus
    facts["driver_loaded"] = smi.usable or npu.usable
    facts["tools"] = {"nvidia-smi": smi.state, "npu-smi": npu.state, "hcas": hcas.state}
    facts["errors"] = [o.error for o in (smi, npu) if o.state not in ("ok", "not_found") and o.error]
    return facts
